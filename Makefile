# netreconcile — see README.md.
#   make check       the fast edit loop: gofmt, vet, staticcheck, unprivileged
#                    unit tests (-short); no apt, no root, no netns, no VM
#   sudo make demo   the main job on the built-in example, in a throwaway netns
#   make test        every test: unit, privileged (netns), real kernel (qemu)
GO ?= go
BIN := bin/netreconcile
STATICCHECK := $(shell command -v staticcheck 2>/dev/null || echo $$(go env GOPATH)/bin/staticcheck)
# Fragments append the targets `make test` and `make bench` run, and name
# in TEST_WAITING and TEST_SIDE those of them that run in a lane of their
# own beside the busy one (test/lanes.sh).
TEST_TARGETS := test-go
TEST_WAITING :=
TEST_SIDE :=
BENCH_TARGETS :=

.PHONY: all build check test test-prepare test-go lint demo bench clean
all: build

# The version and commit stamped into the binary (internal/buildinfo), which
# `netreconcile version` prints: the version as the Debian package numbers it
# (packaging/version.sh: packaging/changelog's top entry at its v* tag,
# 1.0.0~git<commits>.<hash> before it while the entry is UNRELEASED), the
# full commit hash. Either may be given: make VERSION=1.0.0.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell packaging/version.sh)
endif
ifeq ($(origin COMMIT),undefined)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
endif
BUILDINFO := github.com/netreconcile/netreconcile/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/netreconcile

lint: staticcheck-tool
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt -l:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

# The edit loop. -short makes every privileged test skip, even as root
# (nettest.RequireRoot), so this needs no root, no apt and no network
# namespace; NETRECONCILE_REQUIRE_PRIVILEGED is cleared because -short with it
# set is a failure by design. Test results are cached: a run after an edit
# re-runs the packages it touched (6 s of CPU; 21 s with no cached result).
# The only download is staticcheck, through the Go module proxy, when it is
# missing.
check: lint
	NETRECONCILE_REQUIRE_PRIVILEGED= $(GO) test -short ./...

# Privileged tests are required here: a skipped one fails the run.
test-go: test-deps lint
	NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -timeout 15m ./...

demo: build
	sh examples/demo.sh $(BIN)

clean:
	rm -rf bin .cache/vm/build

-include mk/*.mk

# Three lanes side by side (test/lanes.sh): the host's Go tests one after
# the other; the systemd guest (TEST_WAITING), the longest target; and the
# rest (TEST_SIDE, in its order): the host's Ansible, then the test guest.
# Measured with lanes.sh's CPU column on 2 cores, no target keeps both
# cores busy (test-go 337 CPU-s in 574 s, the systemd guest 786 in 1033,
# Ansible 213 in 471, the test guest 327 in 344): two lanes left the
# machine at 1.3 cores and took 1,504 s. What the lanes need is installed
# first, so that no two run apt or build the binary at once.
test: test-prepare
	@MAKE='$(MAKE)' test/lanes.sh "cpu $(filter-out $(TEST_WAITING) $(TEST_SIDE),$(TEST_TARGETS))" \
		"wait $(filter $(TEST_WAITING),$(TEST_TARGETS))" "side $(filter $(TEST_TARGETS),$(TEST_SIDE))"
test-prepare: test-deps build $(TEST_PREPARE)
bench: $(BENCH_TARGETS)
