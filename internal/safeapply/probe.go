package safeapply

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// Probe is a check that the host is still reachable. Check is called once
// before the apply (a probe that fails then is not armed) and again after
// it; a probe may remember what it saw the first time (the SSH client's
// path).
type Probe interface {
	String() string
	Check(ctx context.Context) error
}

// ProbeResult is one probe's outcome, as the JSON output shows it.
type ProbeResult struct {
	Probe string `json:"probe"`
	OK    bool   `json:"ok"`
	Err   string `json:"error,omitempty"`
}

// ProbeEnv is what probes run with.
type ProbeEnv struct {
	// Netns is the namespace's path ("" for the caller's own): probes
	// connect and look routes up from inside it.
	Netns  string
	Getenv func(string) string
}

// ParseProbe reads a --probe value: tcp:HOST:PORT, gateway, ssh or
// wireguard:LINK.
func ParseProbe(spec string, env ProbeEnv) (Probe, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "tcp":
		if _, _, err := net.SplitHostPort(arg); err != nil || arg == "" {
			return nil, fmt.Errorf("--probe %s: expected tcp:HOST:PORT (an IPv6 host in brackets: tcp:[2001:db8::1]:22)", spec)
		}
		return &tcpProbe{env: env, addr: arg}, nil
	case "gateway":
		if arg != "" {
			return nil, fmt.Errorf("--probe %s: gateway takes no argument", spec)
		}
		return &gatewayProbe{env: env}, nil
	case "ssh":
		if arg != "" {
			return nil, fmt.Errorf("--probe %s: ssh takes no argument", spec)
		}
		return &sshProbe{env: env}, nil
	case "wireguard":
		if arg == "" {
			return nil, fmt.Errorf("--probe %s: expected wireguard:LINK", spec)
		}
		return &wireguardProbe{env: env, link: arg}, nil
	}
	return nil, fmt.Errorf("--probe %q: expected tcp:HOST:PORT, gateway, ssh or wireguard:LINK", spec)
}
