//go:build !unix

package main

import "os"

// pollable is a no-op where pipes cannot be read with deadlines: a run with an idle input then
// stops when the input sends data or ends.
func pollable(f *os.File) *os.File { return nil }
