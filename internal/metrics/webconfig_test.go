package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "netreconcile test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, filepath.Join(dir, "key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func hash(t *testing.T, password string) string {
	t.Helper()
	// The lowest cost: the test checks the wiring, not bcrypt.
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// With the exporter toolkit's web configuration: TLS with the file's
// certificate, basic auth with its users (checked against their bcrypt
// hashes), both read again at each connection and request, so a user
// removed from the file is refused without a restart.
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	cfg := filepath.Join(dir, "web.yml")
	write(t, cfg, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prom: "+hash(t, "s3cret")+"\n")
	addr := serve(t, testRegistry(), cfg)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	scrape := func(scheme, user, pass string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := scrape("https", "prom", "s3cret"); code != http.StatusOK || !strings.Contains(body, `t_events_total{kind="nft_chain"} 7`) {
		t.Errorf("https with the user's password: %d %.200s", code, body)
	}
	for _, c := range []struct{ user, pass string }{{"", ""}, {"prom", "wrong"}, {"nobody", "s3cret"}} {
		if code, body := scrape("https", c.user, c.pass); code != http.StatusUnauthorized {
			t.Errorf("https as %q/%q: %d %.200s, want 401", c.user, c.pass, code, body)
		}
	}
	if code, body := scrape("http", "prom", "s3cret"); code == http.StatusOK {
		t.Errorf("plain http to the TLS port: %d %.200s", code, body)
	}
	// Another user instead: read at the next request.
	write(t, cfg, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  other: "+hash(t, "n3w")+"\n")
	if code, _ := scrape("https", "prom", "s3cret"); code != http.StatusUnauthorized {
		t.Errorf("a user removed from the file: %d, want 401", code)
	}
	if code, _ := scrape("https", "other", "n3w"); code != http.StatusOK {
		t.Errorf("a user added to the file: %d, want 200", code)
	}
}

// A web configuration that the toolkit cannot use fails Listen, so the
// daemon does not start with an endpoint other than the one configured.
func TestWebConfigRefused(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unknown key":   "tls_server_config:\n  cert: x\n  colour: blue\n",
		"missing cert":  "tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.key\n",
		"not a bcrypt":  "basic_auth_users:\n  prom: plaintext\n",
		"not yaml":      "{{{",
		"missing file":  "",
		"bad client CA": "tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.key\n  client_auth_type: Sometimes\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yml")
		if content != "" {
			write(t, path, content)
		}
		reg := prometheus.NewRegistry()
		s, err := Listen(Options{Addr: "127.0.0.1:0", WebConfig: path, Log: slog.New(slog.DiscardHandler)}, reg, reg)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error without the file's path: %v", name, err)
		}
	}
}
