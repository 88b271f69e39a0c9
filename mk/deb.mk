# make deb: bin/netreconcile_<version>_<arch>.deb with the binary, the systemd
# unit, the sysusers entry and /etc/netreconcile/netreconcile.yaml as a
# conffile. Built with nfpm (pinned, installed into .cache/tools through the
# Go module proxy); where nfpm cannot be fetched, the same tree is packed
# with dpkg-deb, which needs nothing else (make deb-dpkg).
NFPM_VERSION := v2.41.3
NFPM := .cache/tools/nfpm
DEB_ARCH ?= $(shell $(GO) env GOARCH)
# Debian versions must start with a digit: VERSION (the Makefile) is computed
# so; untagged trees get 0.0.0~git<n>.<hash>.
DEB_VERSION ?= $(VERSION)
DEB := bin/netreconcile_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_LDFLAGS := -X $(BUILDINFO).version=$(DEB_VERSION) -X $(BUILDINFO).commit=$(COMMIT)

.PHONY: deb deb-bin deb-dpkg
deb-bin:
	CGO_ENABLED=0 GOARCH=$(DEB_ARCH) $(GO) build -trimpath -ldflags '$(DEB_LDFLAGS)' -o $(BIN) ./cmd/netreconcile

$(NFPM):
	GOBIN=$(abspath .cache/tools) $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

deb: deb-bin
	@if $(MAKE) --no-print-directory $(NFPM); then \
		rm -f $(DEB); \
		VERSION=$(DEB_VERSION) ARCH=$(DEB_ARCH) $(NFPM) package --packager deb --config packaging/nfpm.yaml --target $(DEB) && \
		echo "built $(DEB) with nfpm $(NFPM_VERSION)"; \
	else \
		echo "nfpm unavailable; packing with dpkg-deb"; \
		$(MAKE) --no-print-directory deb-dpkg; \
	fi

# The same package from a staged tree, with dpkg-deb only.
DEB_ROOT := .cache/deb/root
deb-dpkg: deb-bin
	rm -rf $(DEB_ROOT) && mkdir -p $(DEB_ROOT)/DEBIAN
	install -D -m 0755 $(BIN) $(DEB_ROOT)/usr/sbin/netreconcile
	install -D -m 0644 packaging/netreconcile.service $(DEB_ROOT)/usr/lib/systemd/system/netreconcile.service
	install -D -m 0644 packaging/sysusers.conf $(DEB_ROOT)/usr/lib/sysusers.d/netreconcile.conf
	install -D -m 0644 packaging/netreconcile.yaml $(DEB_ROOT)/etc/netreconcile/netreconcile.yaml
	install -d -m 0755 $(DEB_ROOT)/etc/netreconcile/conf.d
	install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm $(DEB_ROOT)/DEBIAN/
	echo /etc/netreconcile/netreconcile.yaml > $(DEB_ROOT)/DEBIAN/conffiles
	{ echo "Package: netreconcile"; echo "Version: $(DEB_VERSION)"; echo "Architecture: $(DEB_ARCH)"; \
	  echo "Maintainer: netreconcile developers <netreconcile@example.invalid>"; \
	  echo "Installed-Size: $$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1)"; \
	  echo "Section: net"; echo "Priority: optional"; echo "Depends: procps"; echo "Recommends: iproute2"; echo "Suggests: nftables, wireguard-tools"; \
	  echo "Homepage: https://github.com/netreconcile/netreconcile"; \
	  echo "Description: Declarative host network reconciler"; \
	  echo " netreconcile keeps a Linux host's network equal to one YAML file."; } > $(DEB_ROOT)/DEBIAN/control
	cd $(DEB_ROOT) && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum > DEBIAN/md5sums
	dpkg-deb --root-owner-group --build $(DEB_ROOT) $(DEB)
