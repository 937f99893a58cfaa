package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// profiled runs run under the profiles the flags ask for. The files are checked against the
// other file flags first (checkPaths), as the CPU profile is created before the run starts; a
// profile that cannot be written fails the run, which then still writes its stream.
func profiled(c *config, run func() error) (err error) {
	cpuPath, memPath := c.profile.cpu, c.profile.mem
	if cpuPath == "" && memPath == "" {
		return run()
	}
	if err := checkPaths(c); err != nil {
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
