package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nlemu/nlemu/server"
)

// vmHWM reads this process's peak resident set size (VmHWM, in bytes) from
// /proc/self/status, as the kernel's task_mem() reports it.
func vmHWM(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestStatsReportsServerRSS: `nlemu load --server` used to report the load
// client's own peak RSS as if it were the server's, because `stats` had no
// memory figure at all. STATS must carry the server process's peak RSS
// (VmHWM): `nlemu stats --json` has peak_rss_bytes, and the text output a
// "peak RSS" line. The server runs in this process here, so the figure is
// bounded by this process's VmHWM read before and after (up to the per-CPU
// counters' slack).
func TestStatsReportsServerRSS(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	sock := filepath.Join(t.TempDir(), "nlemu.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	lo := vmHWM(t)
	var code int
	stdout, stderr := capture(t, func() { code = runStats([]string{"--socket", sock, "--json"}) })
	hi := vmHWM(t)
	if code != 0 {
		t.Fatalf("nlemu stats --json: exit %d: %s", code, stderr)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("nlemu stats --json: %v: %q", err, stdout)
	}
	v, ok := st["peak_rss_bytes"].(float64)
	if !ok {
		t.Fatalf("nlemu stats --json has no numeric peak_rss_bytes: %s", stdout)
	}
	// VmHWM is max(hiwater_rss, the current RSS) (task_mem()), and the
	// current RSS is read from per-CPU counters (percpu_counter_read_positive()
	// of mm->rss_stat), which lag by up to a batch of pages per CPU: three
	// readings can go down by that much (seen: 100 KiB). Allow it.
	const slack = 4 << 20
	if got := uint64(v); got+slack < lo || got > hi+slack {
		t.Errorf("peak_rss_bytes %d, want the server's VmHWM, between %d and %d (± %d)", got, lo, hi, slack)
	}

	stdout, stderr = capture(t, func() { code = runStats([]string{"--socket", sock}) })
	if code != 0 || !strings.Contains(stdout, "peak RSS") {
		t.Errorf("nlemu stats: exit %d, stdout %q, stderr %q; want a peak RSS line", code, stdout, stderr)
	}
}
