// Package testsupport is the root of the packages that serve the tests only, and never a
// production build: the libdvbcsa oracle (dvbcsa, built with the dvbcsa tag) and the scrambler
// built on it (cmd/dvbcsa-scramble), the whole-stream tests (streamtest), test media made with
// ffmpeg (testmedia), key-server doubles (camdouble), SimulCrypt ECMGs (ecmgtest, fakeecmg),
// the PMT packets the PMT rewriter's tests share (pmtcorpus), HTTP responses cut short
// (httpcut), the processes the tests start
// (proc) and the ports they bind (ports).
// The other packages under internal/ are production code.
package testsupport
