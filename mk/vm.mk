# Real-kernel VM tests (test/vm/README.md): a Debian cloud kernel in qemu (TCG) runs the
# e2e tests of ./test/e2e.
#
#   make vm-deps                      host tools, busybox-static and the kernel into .cache/vm
#   make vm-test                      build, boot once, run every e2e test
#   make vm-test VMRUN=TestS4         only tests matching a -test.run regexp
#   make vm-test VMFLAGS=-test.count=2 VM_TIMEOUT=600
#   make vm-test VM_KERNEL_SUITE=bookworm-backports   a newer kernel (6.12)
#   make vm-shell                     the same image with a shell instead of the tests
#   make test VM_SKIP=1               leave the VM suite out of `make test`

VMRUN ?=
VMFLAGS ?=
VM_TIMEOUT ?= 720
VM_MEM ?= 1024
VM_SMP ?= 2
VM_KERNEL_PKG ?= linux-image-cloud-amd64
VM_KERNEL_SUITE ?=
VM_APPEND ?=
VM_SKIP ?=
VM_REFRESH ?=
export VMRUN VMFLAGS VM_TIMEOUT VM_MEM VM_SMP VM_KERNEL_PKG VM_KERNEL_SUITE VM_APPEND VM_REFRESH

VM_SH := test/vm/vm.sh

.PHONY: vm-deps vm-test vm-shell test

vm-deps:
ifeq ($(VM_SKIP),1)
	@echo "vm-deps: skipped (VM_SKIP=1)"
else
	@GO='$(GO)' $(VM_SH) deps
endif

vm-test: vm-deps
ifeq ($(VM_SKIP),1)
	@echo "vm-test: skipped (VM_SKIP=1)"
else
	@GO='$(GO)' $(VM_SH) test
endif

vm-shell: vm-deps
	@GO='$(GO)' $(VM_SH) shell

# In make test's side lane, after the host's Ansible: one core of TCG,
# which the Go tests' lane leaves (they wait more than they compute).
TEST_TARGETS += vm-test
TEST_SIDE += vm-test
TEST_PREPARE += vm-deps
