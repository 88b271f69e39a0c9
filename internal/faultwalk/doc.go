// Package faultwalk holds the failure-injection walk (issue 13, point 3):
// the convergence walk's generator of configurations (internal/walk) run
// against the in-memory kernel of kernel/kerneltest, a pass with failures
// injected at random, then a pass without: the second must converge from
// wherever the first stopped, and nothing foreign may change. It needs no
// privileges and runs in go test ./... in seconds.
//
//	go test ./internal/faultwalk -faultwalk.seed=0 -faultwalk.steps=2000
//
// walks a random seed (printed) for longer; FAULTWALK_SEED and
// FAULTWALK_STEPS do the same from the environment.
package faultwalk
