# The transaction walk (test/txwalk): seeded sequences of safe-apply steps
# (begin with and without --candidate, extend, confirm in time and late,
# rollback, the deadline passing, commands SIGKILLed, the daemon stopped and
# started, the kernel edited by hand, a reboot) over file layouts with
# drop-ins and links, as root with every --netns form and as the service
# user, each walk on a fresh namespace named tx-….
#
#   make test-txwalk               the short walk of `make test`: six fixed seeds
#                                  (test/txwalk.TestSeeds), one per mode, TestSteps steps each
#   make soak-txwalk               random seeds for TXSOAK_DURATION (default 30m), walking on
#                                  after a failure and listing every one at the end
#   make test-txwalk TXWALK_SEEDS=N TXWALK_STEPS=S TXWALK_MODE=root/proc   replay a walk
#                                  (every failure prints this line)
#
# `make test` runs the short walk in test-go (`go test ./...`), once; `make soak` runs the
# long one.

TXWALK_SEEDS ?=
TXWALK_STEPS ?=
TXWALK_MODE ?=
TXSOAK_DURATION ?= 30m
TXSOAK_STEPS ?= 40

.PHONY: test-txwalk soak-txwalk
test-txwalk: test-deps
	TXWALK_SEEDS=$(TXWALK_SEEDS) TXWALK_STEPS=$(TXWALK_STEPS) TXWALK_MODE=$(TXWALK_MODE) \
		NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestTxWalk$$' -v -timeout 10m ./test/txwalk

soak: soak-txwalk
soak-txwalk: test-deps
	TXWALK_SEEDS=0 TXWALK_DURATION=$(TXSOAK_DURATION) TXWALK_STEPS=$(TXSOAK_STEPS) TXWALK_KEEPGOING=1 TXWALK_SHRINK_TRIALS=40 \
		NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -run '^TestTxWalk$$' -v -timeout 0 ./test/txwalk
