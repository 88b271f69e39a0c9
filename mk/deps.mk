# Tools the tests drive, from Debian's packages. Installed only when missing.
TEST_TOOLS += ip:iproute2 nft:nftables wg:wireguard-tools wireguard-go:wireguard-go jq:jq
STATICCHECK_VERSION := v0.8.2

.PHONY: test-deps test-tools staticcheck-tool promtool-tool
test-deps: test-tools staticcheck-tool promtool-tool

test-tools:
	@missing=""; for pair in $(TEST_TOOLS); do \
		cmd=$${pair%%:*}; pkg=$${pair#*:}; \
		command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Through the Go module proxy into GOPATH/bin: no apt, no root (make check).
staticcheck-tool:
	@command -v staticcheck >/dev/null 2>&1 || [ -x "$$(go env GOPATH)/bin/staticcheck" ] || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# promtool, for `promtool check metrics` on a real scrape
# (TestScrapePassesPromtoolAndIsDocumented): taken out of Debian's
# prometheus package, which is downloaded and unpacked, not installed, so
# that no Prometheus server is set up and started on the machine.
promtool-tool:
	@command -v promtool >/dev/null 2>&1 || { \
		echo "installing: promtool (from Debian's prometheus package)"; \
		tmp=$$(mktemp -d) && cd $$tmp && \
		{ apt-get download prometheus >/dev/null 2>&1 || { apt-get update -qq && apt-get download prometheus >/dev/null 2>&1; }; } && \
		dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool && \
		install -m 0755 usr/bin/promtool /usr/local/bin/promtool; \
		rc=$$?; rm -rf $$tmp; exit $$rc; }
