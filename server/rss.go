package server

import (
	"os"
	"strconv"
	"strings"
)

// peakRSSBytes returns this process's peak resident set size: VmHWM from
// /proc/self/status (the kernel's task_mem(), in kB), or 0 when it cannot be
// read. STATS reports it so that a load driven from another process
// (`nlemu load --server`) can print the server's memory, not its own.
func peakRSSBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
