//go:build !race

package scrambling

// raceEnabled is set under -race (race_test.go).
const raceEnabled = false
