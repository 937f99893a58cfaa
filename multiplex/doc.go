// Package multiplex reads and writes the config of a run over a whole multiplex: the input,
// and for each service (by its number, or by its name in the SDT) the source of its keys and
// the output its single-program stream goes to.
//
// The file is YAML (JSON, being YAML, reads too). Reading is strict: a field this package does
// not know, a value of the wrong type or a service named twice is an error that names its line,
// because a typo in a key file of a live head-end must stop the run, not drop a service quietly.
// What a key source or an output means is the command's business; this package checks only that
// each is given once and is not empty.
package multiplex
