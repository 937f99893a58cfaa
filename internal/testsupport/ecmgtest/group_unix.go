//go:build unix

package ecmgtest

import (
	"os/exec"
	"syscall"
)

// inOwnGroup starts cmd in a process group of its own, which the ECMGs socat forks share.
func inOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup signals the process group led by pid: SIGTERM, or SIGKILL when kill is set.
func stopGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-pid, sig)
}
