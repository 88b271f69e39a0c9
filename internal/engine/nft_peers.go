package engine

import (
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// peerStates is every peer's state in this pass, by link and public key.
type peerStates map[string]map[model.Key]wgpeer.State

func (s peerStates) set(link string, pub model.Key, st wgpeer.State) {
	if s[link] == nil {
		s[link] = map[model.Key]wgpeer.State{}
	}
	s[link][pub] = st
}

// up returns the peers that are Up, by link: what the sets fed by peers
// hold (diff.Inputs.PeersUp).
func (s peerStates) up() map[string]map[model.Key]bool {
	var out map[string]map[model.Key]bool
	for link, peers := range s {
		for pub, st := range peers {
			if st != wgpeer.Up {
				continue
			}
			if out == nil {
				out = map[string]map[model.Key]bool{}
			}
			if out[link] == nil {
				out[link] = map[model.Key]bool{}
			}
			out[link][pub] = true
		}
	}
	return out
}
