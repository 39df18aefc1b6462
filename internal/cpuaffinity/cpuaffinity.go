// Package cpuaffinity runs a child process on one CPU, for tests of what a
// program does when it may use only one (the spin then block of the shim
// and of the server's busy readers never spins there).
package cpuaffinity

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// CombinedOutput runs cmd as exec.Cmd.CombinedOutput does, restricted to CPU
// cpu when cpu >= 0: the calling thread's affinity is set to that CPU for
// the fork (a child inherits the affinity of the thread that forks it) and
// restored afterwards.
func CombinedOutput(cmd *exec.Cmd, cpu int) (string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		var saved, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &saved); err != nil {
			return "", err
		}
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return "", err
		}
		defer unix.SchedSetaffinity(0, &saved)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
