//go:build !unix

package ecmgtest

import (
	"os"
	"os/exec"
)

// inOwnGroup does nothing where there are no Unix process groups: socat, which the ECMG needs,
// is a Unix program, so these tests do not run there; the package only has to build.
func inOwnGroup(cmd *exec.Cmd) {}

// stopGroup kills the process pid.
func stopGroup(pid int, kill bool) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
