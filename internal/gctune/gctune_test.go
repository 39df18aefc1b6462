package gctune

import (
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// settings reads the current GOGC and memory limit without changing them
// (debug.SetMemoryLimit with a negative value only reads).
func settings() (pct int, lim int64) {
	pct = debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	return pct, debug.SetMemoryLimit(-1)
}

// TestApplyUnlessEnvironmentSets: `nlemu serve` and `nlemu load`'s embedded
// server must run with the same collector settings (the README's load
// figures depend on them), and a GOGC or GOMEMLIMIT the user set must win.
func TestApplyUnlessEnvironmentSets(t *testing.T) {
	for _, tc := range []struct {
		name, gogc, memlimit string
		wantPct              int
		wantLim              int64
	}{
		{"defaults", "", "", Percent, MemoryLimit()},
		{"GOGC set", "50", "", -1, MemoryLimit()},
		{"GOMEMLIMIT set", "", "1GiB", Percent, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			pct0, lim0 := settings()
			restore := Apply()
			pct, lim := settings()
			if tc.wantPct == -1 {
				tc.wantPct = pct0
			}
			if tc.wantLim == -1 {
				tc.wantLim = lim0
			}
			if pct != tc.wantPct || lim != tc.wantLim {
				t.Errorf("after Apply: GOGC %d, limit %d; want %d, %d", pct, lim, tc.wantPct, tc.wantLim)
			}
			restore()
			if pct, lim := settings(); pct != pct0 || lim != lim0 {
				t.Errorf("after restore: GOGC %d, limit %d; want %d, %d", pct, lim, pct0, lim0)
			}
		})
	}
}

// TestMemoryLimitQuarterOfMemory: the soft limit is a quarter of the
// machine's memory (unix.Sysinfo), never below MinMemoryLimit.
func TestMemoryLimitQuarterOfMemory(t *testing.T) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	want := max(int64(si.Totalram)*int64(si.Unit)/4, MinMemoryLimit)
	if got := MemoryLimit(); got != want || got < MinMemoryLimit {
		t.Errorf("MemoryLimit() = %d, want %d (memory %d)", got, want, int64(si.Totalram)*int64(si.Unit))
	}
}
