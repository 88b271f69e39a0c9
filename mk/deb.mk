# make deb: bin/netreconcile_<version>_<arch>.deb, the Debian package:
# the stripped static binary, the systemd unit, the sysusers entry,
# /etc/netreconcile/netreconcile.yaml as a conffile, manual pages and shell
# completion generated from the binary's help, the documentation, the
# copyright and changelog (packaging/deb/build.sh lists it all). Staged and
# packed with dpkg-deb: the package is for Debian, where dpkg-deb always is,
# so it takes no download and no second way of building the same thing.
# The version is the Makefile's VERSION: packaging/changelog's and git's
# (packaging/version.sh), the one `netreconcile version` prints too.
#
#   make deb            build it
#   make deb-check      lintian on it (an error or warning not overridden
#                       fails; info tags are shown) and systemd-analyze
#                       verify on its unit, in the package's tree; part of
#                       make test
DEB_ARCH ?= $(shell $(GO) env GOARCH)
DEB_VERSION ?= $(VERSION)
DEB := bin/netreconcile_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_BIN := .cache/deb/netreconcile
# -s -w: no symbol table and no DWARF (Debian policy's stripped binary);
# -B gobuildid: an ELF build ID derived from Go's, as debuggers and
# debuginfod look binaries up by it.
DEB_LDFLAGS := -s -w -B gobuildid -X $(BUILDINFO).version=$(DEB_VERSION) -X $(BUILDINFO).commit=$(COMMIT)

# Tools of the tests of the package and of its man pages and completion
# (internal/cli/gendoc, internal/cli/completion_test.go).
TEST_TOOLS += groff:groff-base man:man-db lexgrog:man-db zsh:zsh fish:fish lintian:lintian

TEST_TARGETS += deb-check

.PHONY: deb deb-check
# One build at a time (make test's lanes both build it): under a lock, the
# binary and the package are written by one process.
deb:
	@mkdir -p $(dir $(DEB_BIN))
	flock $(DEB_BIN).lock sh -c "CGO_ENABLED=0 GOARCH=$(DEB_ARCH) $(GO) build -trimpath -ldflags '$(DEB_LDFLAGS)' -o $(DEB_BIN) ./cmd/netreconcile && \
		GO='$(GO)' packaging/deb/build.sh $(DEB_BIN) $(DEB_VERSION) $(DEB_ARCH) $(DEB)"

deb-check: test-tools deb
	GO='$(GO)' packaging/deb/check.sh $(DEB)

# The tests that run the command line as root, again where the machine looks
# as it does with the package installed (the user and group netreconcile,
# /var/lib/netreconcile theirs), in a mount namespace of their own
# (test/packaged-host.sh): make test holds them without the package, this
# with it. Needs root.
TEST_TARGETS += test-packaged-host
PACKAGED_HOST_TESTS := ./internal/cli/... ./test/command/ ./test/integration/ ./internal/safeapply/

.PHONY: test-packaged-host
test-packaged-host: test-deps
	test/packaged-host.sh env NETRECONCILE_REQUIRE_PRIVILEGED=1 $(GO) test -count=1 -timeout 15m $(PACKAGED_HOST_TESTS)
