package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nlemu/nlemu/loadgen"
	"github.com/nlemu/nlemu/rtnl"
)

// procHWM reads VmHWM (peak RSS, bytes) of process pid from
// /proc/PID/status (the kernel's task_mem()).
func procHWM(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
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
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestLoadServerReportsServerPeakRSS: `nlemu load --server` used to print
// its own (the client's) peak RSS where the README's table reads the
// server's memory. With a running server, the report's peak_rss_bytes must
// be that server process's VmHWM (from STATS): between the server's VmHWM
// before the load and after it.
func TestLoadServerReportsServerPeakRSS(t *testing.T) {
	serve := startServe(t)
	lo := procHWM(t, serve.cmd.Process.Pid)
	rep, err := loadgen.Execute(loadgen.Config{
		Netns: 16, Rules: 64, Families: []int{4, 6}, Modes: []rtnl.Mode{rtnl.ModeFirstIPv4},
		Server: serve.sock, Prefix: "rss-",
	})
	if err != nil {
		t.Fatal(err)
	}
	hi := procHWM(t, serve.cmd.Process.Pid)
	if rep.PeakRSSBytes < lo || rep.PeakRSSBytes > hi {
		t.Errorf("peak_rss_bytes %d, want the server's VmHWM, between %d and %d (this client's is %d)",
			rep.PeakRSSBytes, lo, hi, procHWM(t, os.Getpid()))
	}
}
