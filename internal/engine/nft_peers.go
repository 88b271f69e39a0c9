package engine

import (
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// peersUp is, by link, the peers that are Up in this pass: what the sets
// fed by peers hold (diff.Inputs.PeersUp). Only those are recorded: a
// pass over ten thousand peers makes no map of the others.
type peersUp map[string]map[model.Key]bool

func (s *peersUp) set(link string, pub model.Key, st wgpeer.State) {
	if st != wgpeer.Up {
		return
	}
	if *s == nil {
		*s = peersUp{}
	}
	if (*s)[link] == nil {
		(*s)[link] = map[model.Key]bool{}
	}
	(*s)[link][pub] = true
}
