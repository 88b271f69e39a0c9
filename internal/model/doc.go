// Package model is the canonical, kernel-shaped description of host network
// state that both the desired (file) and the actual (kernel) stages produce.
//
// Both sides use the same types so that the diff is a pure comparison. Every
// object kind has an identity key that is exactly what the kernel identifies
// the object by (a link by name, a route by table/family/dst/tos/metric, a rule
// by all its selectors and action); the diff matches objects by that key.
package model
