package walk

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// replay runs seq from a fresh namespace and returns its first failure.
func replay(g *Gen, foreign []string, seq []*Config, dir string) *Failure {
	r, err := newRunner(g, foreign, dir)
	if err != nil {
		return &Failure{Step: 0, Check: "setup", Msg: err.Error()}
	}
	defer r.close()
	for i, c := range seq {
		if f := r.step(i, c); f != nil {
			return f
		}
	}
	return nil
}

// shrink cuts a failing sequence down (delta debugging over the steps, then
// over the objects of each step) while it still fails the same check, and
// writes the result as files a person can apply by hand. It returns their
// directory.
func shrink(g *Gen, foreign []string, seq []*Config, f0 *Failure, opts Options) (string, error) {
	budget := opts.ShrinkTrials
	if budget == 0 {
		budget = 150
	}
	trial := filepath.Join(opts.Dir, "trial")
	fails := func(s []*Config) bool {
		if budget <= 0 || len(s) == 0 {
			return false
		}
		budget--
		_ = os.RemoveAll(trial)
		f := replay(g, foreign, s, trial)
		return f != nil && f.Check == f0.Check && f.Step == len(s)-1
	}
	seq = seq[:f0.Step+1]
	// ddmin over the steps; the last one (where it failed) stays.
	for n := 2; len(seq) > 1; {
		chunk := (len(seq) - 1 + n - 1) / n
		reduced := false
		for start := 0; start < len(seq)-1; start += chunk {
			end := start + chunk
			if end > len(seq)-1 {
				end = len(seq) - 1
			}
			cand := append(append([]*Config(nil), seq[:start]...), seq[end:]...)
			if fails(cand) {
				seq, reduced = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if chunk == 1 || budget <= 0 {
				break
			}
			n = min(n*2, len(seq)-1)
		}
	}
	// Then the objects of each step, last step first.
	for i := len(seq) - 1; i >= 0 && budget > 0; i-- {
		for _, rm := range removals(seq[i]) {
			c := seq[i].Clone()
			c.Meddle, c.Meddled, c.MeddleTables = seq[i].Meddle, seq[i].Meddled, seq[i].MeddleTables
			rm(c)
			g.Repair(c)
			cand := append(append(append([]*Config(nil), seq[:i]...), c), seq[i+1:]...)
			if fails(cand) {
				seq = cand
			}
		}
	}
	_ = os.RemoveAll(trial)
	out := filepath.Join(opts.Dir, "shrunk")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	f := replay(g, foreign, seq, filepath.Join(opts.Dir, "final"))
	var b strings.Builder
	fmt.Fprintf(&b, "# walk seed %d, defects %s: %d steps (from %d)\n", opts.Seed, opts.Defects, len(seq), f0.Step+1)
	// Every line of the message a comment: the file is a script.
	fmt.Fprintf(&b, "# failure: %s\n", strings.ReplaceAll(fmt.Sprint(f), "\n", "\n# "))
	b.WriteString("set -e\nns=nrwalk-repro\nip netns add $ns\n")
	fmt.Fprintf(&b, "ip netns add %s; ip netns add %s  # veth peers with peer-netns\n", g.PeerNS, g.PeerNS2)
	for _, c := range foreign {
		fmt.Fprintf(&b, "ip netns exec $ns sh -c %q\n", c)
	}
	// A step's apply exits 1 on a conflict and its diff 2 on what differs,
	// as the walk allows: the sequence runs whole, each exit code printed.
	b.WriteString("set +e\n")
	for i, c := range seq {
		name := fmt.Sprintf("step-%02d", i+1)
		file, d, err := writeFiles(out, name, c)
		if err != nil {
			return "", err
		}
		for _, m := range c.Meddle {
			fmt.Fprintf(&b, "ip netns exec $ns sh -c %q  # the foreign actor, before step %d\n", m, i+1)
		}
		for _, cmd := range []string{"apply", "diff"} {
			fmt.Fprintf(&b, "netreconcile %s --netns $ns --state-dir /tmp/nrwalk-repro-state -c %s --conf-dir %s; echo \"step %d %s: exit $?\"\n", cmd, file, d, i+1, cmd)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "repro.sh"), []byte(b.String()), 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// removals lists ways to remove one object from c.
func removals(c *Config) []func(*Config) {
	var rs []func(*Config)
	for _, n := range c.LinkNames() {
		n := n
		rs = append(rs, func(c *Config) {
			if l := c.Links[n]; l != nil && l.Kind == "veth" {
				delete(c.Links, l.Peer)
			}
			delete(c.Links, n)
		})
	}
	for i := range c.Routes {
		i := i
		rs = append(rs, func(c *Config) {
			if i < len(c.Routes) {
				c.Routes = append(c.Routes[:i:i], c.Routes[i+1:]...)
			}
		})
	}
	for i := range c.Rules {
		i := i
		rs = append(rs, func(c *Config) {
			if i < len(c.Rules) {
				c.Rules = append(c.Rules[:i:i], c.Rules[i+1:]...)
			}
		})
	}
	for i := range c.Tables {
		i := i
		rs = append(rs, func(c *Config) {
			if i < len(c.Tables) {
				c.Tables = append(c.Tables[:i:i], c.Tables[i+1:]...)
			}
		})
	}
	rs = append(rs, func(c *Config) { c.Fou = nil }, func(c *Config) { c.Pools = nil })
	for _, n := range c.LinkNames() {
		n := n
		for j := range c.Links[n].Addrs {
			j := j
			rs = append(rs, func(c *Config) {
				if l := c.Links[n]; l != nil && j < len(l.Addrs) {
					l.Addrs = append(l.Addrs[:j:j], l.Addrs[j+1:]...)
				}
			})
		}
	}
	return rs
}
