//go:build race

package scrambling

// raceEnabled is set under -race, whose sync.Pool drops a share of what it is given on
// purpose: tests that count allocations around a pool skip then.
const raceEnabled = true
