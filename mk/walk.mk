# The randomized convergence walk (test/walk): seeded sequences
# of configurations applied to a fresh namespace holding foreign objects,
# checked after every step by an independent oracle (ip, nft, wg).
#
#   make test-walk                 the bounded walk of `make test`: one walk of 150 steps
#                                  (WALK_STEPS=150 WALK_LENGTH=200, one namespace; two walks of 100 took 27 s
#                                  and 7 min in one CI run: the second's namespace churn met the
#                                  kernel's cleanup of the run's earlier namespaces)
#   make soak                      a long walk on the host (SOAK_STEPS=10000, or SOAK_DURATION=2h)
#                                  and in the guest (SOAK_GUEST_STEPS=2000); it walks on after a
#                                  failure and lists every one at the end (SOAK_KEEPGOING=0: stop)
#   make soak-host / soak-guest    one of the two
#   make test-walk WALK_SEED=N     replay a walk (the seed is printed by every run); make test
#                                  walks a fixed seed (test/walk.TestSeed), make soak random
#                                  ones (SOAK_SEED=0)
#   make soak-host WALK_SHRINK_TRIALS=12   fewer shrinker replays per failure (default 150)
#   make test-walk WALK_DEFECTS=foreign-children,nft-table-takeover   (or all)
#                                  turn on known-defect switches (test/walk/gen.go)
#   WALK_NETNS_PREFIX=sys-nrw make test-walk   name the walk's namespaces sys-nrw-… (default
#                                  nrw): two walks on one machine keep theirs apart
#
# `go test ./...` (test-go) runs a 20-step smoke walk; the guest runs the same
# harness for the kinds this kernel lacks (test/e2e/walk_test.go).
TEST_TARGETS += test-walk

WALK_STEPS ?= 150
WALK_LENGTH ?= 200
WALK_SEED ?= 90934393032559
SOAK_SEED ?= 0
WALK_DEFECTS ?=
SOAK_STEPS ?= 10000
SOAK_DURATION ?=
SOAK_GUEST_STEPS ?= 2000
SOAK_KEEPGOING ?= 1
# TCG runs the guest walk at about 1.5 s a step; the VM's timeout follows.
SOAK_GUEST_TIMEOUT ?= $(shell echo $$(( $(SOAK_GUEST_STEPS) * 4 + 600 )))

.PHONY: test-walk soak soak-host soak-guest
test-walk: test-deps
	NETRECONCILE_WALK=1 WALK_STEPS=$(WALK_STEPS) WALK_LENGTH=$(WALK_LENGTH) WALK_SEED=$(WALK_SEED) WALK_DEFECTS=$(WALK_DEFECTS) \
		NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestWalk$$' -v -timeout 10m ./test/walk

soak: soak-host soak-guest

soak-host: test-deps
	NETRECONCILE_WALK=1 WALK_STEPS=$(SOAK_STEPS) WALK_DURATION=$(SOAK_DURATION) WALK_SEED=$(SOAK_SEED) WALK_DEFECTS=$(WALK_DEFECTS) \
		WALK_KEEPGOING=$(SOAK_KEEPGOING) NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestWalk$$' -v -timeout 0 ./test/walk

soak-guest:
	$(MAKE) vm-test VMRUN='^TestWalkVM$$' VM_TIMEOUT=$(SOAK_GUEST_TIMEOUT) \
		VMFLAGS='-test.v -walk.seed=$(SOAK_SEED) -walk.steps=$(SOAK_GUEST_STEPS) -walk.keepgoing=$(if $(filter 1,$(SOAK_KEEPGOING)),true,false) $(if $(WALK_DEFECTS),-walk.defects=$(WALK_DEFECTS))'
