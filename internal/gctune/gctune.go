// Package gctune holds the garbage-collector settings that nlemu's load
// figures are measured with, so that the embedded server of `nlemu load` and
// a standalone `nlemu serve` run with the same ones.
//
// A rule load allocates far more (request and reply buffers, snapshots) than
// it keeps, so the collector should run rarely; a soft memory limit makes it
// run more often only as the heap nears a quarter of the machine's memory.
package gctune

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

const (
	// Percent is the GOGC value: collect when the heap has grown to 5×
	// the live heap.
	Percent = 400
	// MinMemoryLimit is the least soft heap limit (GOMEMLIMIT), 768 MiB.
	MinMemoryLimit = 768 << 20
)

// MemoryLimit is the soft heap limit Apply sets: a quarter of the
// machine's memory, at least MinMemoryLimit. A fixed 768 MiB made the
// collector run without pause once the seed's 4,096 × 1,024 IPv6 load held
// more than that (one table per rule, as fib6_rule_configure() creates
// them: a peak of 2.9 GB), tripling that family's time.
func MemoryLimit() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return MinMemoryLimit
	}
	return max(int64(si.Totalram)*int64(si.Unit)/4, MinMemoryLimit)
}

// Apply sets GOGC to Percent and the soft memory limit to MemoryLimit(), and
// returns a function that restores the previous settings. A GOGC or
// GOMEMLIMIT set in the environment wins: that setting is left as the
// runtime read it.
func Apply() (restore func()) {
	oldPct, oldLim := -2, int64(-1)
	if os.Getenv("GOGC") == "" {
		oldPct = debug.SetGCPercent(Percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		oldLim = debug.SetMemoryLimit(MemoryLimit())
	}
	return func() {
		if oldPct != -2 {
			debug.SetGCPercent(oldPct)
		}
		if oldLim >= 0 {
			debug.SetMemoryLimit(oldLim)
		}
	}
}
