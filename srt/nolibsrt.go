//go:build !srt || !cgo

package srt

import "context"

// Built reports whether this build has SRT: it was built with the srt tag and cgo.
const Built = false

// LibraryVersion returns the version of the SRT library this build runs, "1.5.1", or "" in
// a build without SRT.
func LibraryVersion() string { return "" }

// library is what Open and NewWriter connect through: in this build, nothing.
var library transport = notBuilt{}

type notBuilt struct{}

func (notBuilt) dial(context.Context, *Address) (conn, error) { return nil, ErrNotBuilt }
func (notBuilt) listen(*Address) (listener, error)            { return nil, ErrNotBuilt }
