// Package ipam hands out addresses from pools, the way Coil does on a node.
//
// A pool is a list of subnets (IPv4, IPv6 or both, of the same size) cut into fixed-size blocks
// numbered across the subnets in order. A host takes the lowest free block it may hold when it
// needs one and gives it back when the block's last address is released; each block it holds is
// exported as a route so a routing daemon can announce it. Addresses are handed out from the held
// blocks, next after the last one handed out, and a released address waits a reuse delay before
// it is handed out again.
//
// The registry of a pool is one file in the state directory, rewritten atomically and durably by
// every change, under a lock that lets many processes (a CNI plugin, scripts, the daemon)
// allocate at once. See format.go for the file and registry.go for the protocol.
package ipam
