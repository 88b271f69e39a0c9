# Tools the tests drive, from Debian's packages. Installed only when missing.
TEST_TOOLS := ip:iproute2 nft:nftables wg:wireguard-tools wireguard-go:wireguard-go
STATICCHECK_VERSION := v0.8.2

.PHONY: test-deps test-tools staticcheck-tool
test-deps: test-tools staticcheck-tool

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
