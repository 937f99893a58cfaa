package main

import (
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// profileFlags are the profiling flags Go programs conventionally have, so that anyone can
// measure where the shipped binary spends its time on their own machine and stream.
func profileFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cpuprofile", TakesFile: true, Category: catReporting, Usage: "write a CPU profile of the run to `FILE` (read it with go tool pprof)"},
		&cli.StringFlag{Name: "memprofile", TakesFile: true, Category: catReporting, Usage: "write a heap profile at the end of the run to `FILE` (read it with go tool pprof)"},
	}
}

// profiledProcess is the action of the descrambler and the scrambler: process, under the
// profiles the flags ask for.
func profiledProcess(env Env, mode pipeline.Mode) cli.ActionFunc {
	return func(c *cli.Context) error {
		return withLogFormat(c, env, func(env Env) error {
			return profiled(c, func() error { return process(c, env, mode) })
		})
	}
}

// profiled runs run under the profiles the flags ask for. The files are checked against the
// other file flags first (checkPaths), as the CPU profile is created before the run starts; a
// profile that cannot be written fails the run, which then still writes its stream.
func profiled(c *cli.Context, run func() error) (err error) {
	cpuPath, memPath := c.String("cpuprofile"), c.String("memprofile")
	if cpuPath == "" && memPath == "" {
		return run()
	}
	if err := checkPaths(c.String); err != nil {
		return err
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return failErr("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return failErr("-cpuprofile %s: %v", cpuPath, err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = failErr("-cpuprofile %s: %v", cpuPath, cerr)
			}
		}()
	}
	err = run()
	if memPath != "" {
		if merr := writeHeapProfile(memPath); merr != nil && err == nil {
			err = merr
		}
	}
	return err
}

// writeHeapProfile writes the heap profile, up to date as of a garbage collection, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return failErr("-memprofile: %v", err)
	}
	runtime.GC()
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failErr("-memprofile %s: %v", path, err)
	}
	return nil
}
