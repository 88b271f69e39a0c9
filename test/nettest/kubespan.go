package nettest

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KubeSpanExample returns the text of examples/kubespan.yaml (at path) made
// to apply in namespace ns on this host: its key files written in dir (mode
// 0600), and the link renamed to a name unique on the host, since
// wireguard-go's control sockets are shared by every namespace. It returns
// the link's new name too. The link is deleted when the test ends, before
// the namespace, so that wireguard-go exits with it.
func KubeSpanExample(t testing.TB, path, dir, ns string) (conf, dev string) {
	t.Helper()
	RequireTool(t, "wireguard-go")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var key, psk [32]byte
	for i := range key {
		key[i], psk[i] = byte(i*5+1), byte(i*7+3)
	}
	for name, k := range map[string][32]byte{"kubespan.key": key, "node2.psk": psk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(base64.StdEncoding.EncodeToString(k[:])+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dev = fmt.Sprintf("nrks%d%d", os.Getpid()%100000, seq.Add(1)%1000)
	conf = strings.NewReplacer(
		"/etc/netreconcile/", dir+"/",
		"\n  kubespan:\n", "\n  "+dev+":\n",
		"dev: kubespan", "dev: "+dev,
		"wireguard: kubespan", "wireguard: "+dev,
	).Replace(string(data))
	t.Cleanup(func() { _ = ExecErr("ip", "-n", ns, "link", "del", dev) })
	return conf, dev
}
