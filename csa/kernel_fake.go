//go:build csafake

package csa

// With the csafake build tag the package registers a kernel of a width no
// real kernel has (see fake512 in fake512.go), so that the tests of
// the packages above csa (the pipeline, the command's -group, bench and
// -version) can show that they take a new width with no edit of their own.
// Production builds never carry the tag.
func init() { register(fake512) }
