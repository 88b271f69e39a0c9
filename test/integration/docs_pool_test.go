package integration

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The pools example of docs/config.md applies as given in a fresh namespace,
// where lo is down: it once declared lo without state: up, so lo stayed
// down and every apply failed with "network is down".
func TestDocsPoolExampleApplies(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	var example string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.HasPrefix(m[1], "pools:\n") && strings.Contains(m[1], "pool: kubespan") {
			example = m[1]
		}
	}
	if example == "" {
		t.Fatal("no pools example taking an address in docs/config.md")
	}
	e := newEnv(t)
	if out := e.ip("-br", "link", "show", "lo"); !strings.Contains(out, "DOWN") {
		t.Fatalf("lo is not down in a fresh namespace: %s", out)
	}
	e.apply(e.file("f.yaml", "version: 1\n"+example))
	if r := e.cli("diff", "-c", e.file("f.yaml", "version: 1\n"+example)); r.Code != 0 {
		t.Errorf("second diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
