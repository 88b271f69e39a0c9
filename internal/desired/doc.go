// Package desired reads the configuration file (and its drop-in directory),
// validates it completely, and normalises it into a model.State.
//
// Nothing here touches the kernel: a file that does not validate produces a
// list of every error, each with file:line:col, the field's path and what would
// be accepted, and no State.
package desired
