package main

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir) // the command buildBinary built
	}
	os.Exit(code)
}

// longTests reports whether the long tests run: those that stream gigabytes or start hundreds
// of processes, which would keep go test ./... from finishing in a minute. TSD_LONG=1 asks for
// them; .ci/run runs them in a step of their own.
func longTests() bool { return os.Getenv("TSD_LONG") == "1" }

// needLong skips a long test unless TSD_LONG=1.
func needLong(t *testing.T, what string) {
	t.Helper()
	if !longTests() {
		t.Skip(what + ": a long test, run with TSD_LONG=1")
	}
}
