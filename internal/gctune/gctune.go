// Package gctune holds the garbage-collector settings that nlemu's load
// figures are measured with, so that the embedded server of `nlemu load` and
// a standalone `nlemu serve` run with the same ones.
//
// A rule load allocates far more (request and reply buffers, snapshots) than
// it keeps (36 bytes per rule), so the collector should run rarely; a soft
// memory limit keeps the heap well under the 1 GiB budget of the seed's
// 4,096 × 1,024 load anyway.
package gctune

import (
	"os"
	"runtime/debug"
)

const (
	// Percent is the GOGC value: collect when the heap has grown to 5×
	// the live heap.
	Percent = 400
	// MemoryLimit is the soft heap limit (GOMEMLIMIT), 768 MiB.
	MemoryLimit = 768 << 20
)

// Apply sets GOGC to Percent and the soft memory limit to MemoryLimit, and
// returns a function that restores the previous settings. A GOGC or
// GOMEMLIMIT set in the environment wins: that setting is left as the
// runtime read it.
func Apply() (restore func()) {
	oldPct, oldLim := -2, int64(-1)
	if os.Getenv("GOGC") == "" {
		oldPct = debug.SetGCPercent(Percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		oldLim = debug.SetMemoryLimit(MemoryLimit)
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
