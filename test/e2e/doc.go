// Package e2e holds the end-to-end tests: they apply configurations to a real Linux kernel
// and read the result back. They run only inside the test VM (test/vm, `make vm-test`),
// which boots a Debian cloud kernel that has the modules this host lacks (WireGuard, FoU,
// IPIP, ip6tnl, dummy, macvlan, ipvlan); anywhere else TestMain skips the whole package.
//
// Contract between the VM and the tests:
//
//   - The guest lays out the repository under /repo and runs the test binary in
//     /repo/test/e2e, as `go test` would: ../../examples is the repository's examples/,
//     testdata/ is this package's testdata/.
//   - NETRECONCILE_VM=1 is set (the guard).
//   - NETRECONCILE_BIN is the netreconcile binary (/repo/bin/netreconcile, static); a test
//     that needs it fails when it is unset.
//   - NETRECONCILE_EXAMPLES is the examples directory (/repo/examples); use example(t, name).
//   - Real tools: /usr/sbin/ip (iproute2), /usr/sbin/nft, /usr/bin/wg. Everything else is
//     busybox; the helpers call the real tools by full path.
//   - Boot loads the modules listed in test/vm/modules.txt; more modules of the trees listed
//     there load on demand (requireModules, or the kernel's own autoloading).
//   - Every test gets its own network namespaces (withNetNS, newNetNS) and leaves the
//     initial namespace alone: tests share one boot.
//
// Run a subset with `make vm-test VMRUN=TestS4` (a -test.run regexp) and pass more test
// flags with VMFLAGS, e.g. VMFLAGS=-test.count=3.
package e2e
