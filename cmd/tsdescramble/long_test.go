package main

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	moreParallel()
	// A whole run builds the command for the tests that run it as a process: building it now,
	// beside the tests that run one after another and mostly wait on timers and sockets, saves
	// the parallel ones, which all start with it, from waiting for it.
	early := !testing.Short() && flag.Lookup("test.run").Value.String() == ""
	if early {
		go buildOnce()
	}
	code := m.Run()
	if early {
		buildOnce() // the build has ended before its directory goes
	}
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

// moreParallel lets more tests run side by side than go test's default of one per CPU, unless
// -parallel is given. Most tests here run the built command, peers and key servers as
// processes, or Main with a fake ECMG or server, and spend their time waiting on them and on
// timers, not on this process's CPU. Those that measure time or throughput, or wait for a key
// within tens of milliseconds, do not call t.Parallel, nor do those that change what every run
// reads (the environment, the umask, a package-level hook or limit).
func moreParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
}
