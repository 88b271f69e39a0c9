# systemd VM test (test/vm/README.md): a Debian root (debootstrap, cached in
# .cache/vm/sysroot) boots with systemd as PID 1 on the VM kernel, installs the
# .deb and checks netreconcile.service through systemctl.
#
#   make vm-systemd-test                  build the .deb, boot, run the checks
#   make vm-systemd-test VM_SYSTEMD_SUITE=trixie   another Debian release as the root
#   make vm-systemd-shell                 the same boot with a root shell
#   make test VM_SKIP=1                   leave both VM suites out of `make test`

VM_SYSTEMD_TIMEOUT ?= 1800
VM_SYSTEMD_SUITE ?=
VM_SYSTEMD_MIRROR ?=
VM_SYSTEMD_PACKAGES ?=
export VM_SYSTEMD_TIMEOUT VM_SYSTEMD_SUITE VM_SYSTEMD_MIRROR VM_SYSTEMD_PACKAGES

TEST_TARGETS += vm-systemd-test
# Safe-apply windows and timers in the guest, Ansible over SSH.
TEST_WAITING += vm-systemd-test

.PHONY: vm-systemd-test vm-systemd-shell

vm-systemd-test: vm-deps ansible-deps
ifeq ($(VM_SKIP),1)
	@echo "vm-systemd-test: skipped (VM_SKIP=1)"
else
	@$(MAKE) --no-print-directory deb >/dev/null
	@GO='$(GO)' VM_SYSTEMD_DEB='$(DEB)' test/vm/systemd.sh test
endif

vm-systemd-shell: vm-deps
	@$(MAKE) --no-print-directory deb >/dev/null
	@GO='$(GO)' VM_SYSTEMD_DEB='$(DEB)' test/vm/systemd.sh shell
