package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cpu is a snapshot of this process's CPU (the embedded server, and the
// inproc driver's clients) and of its waited-for children's (the ip
// driver's `nlemu exec` and `ip` processes).
type cpu struct {
	selfU, selfS, kidsU, kidsS time.Duration
}

func cpuNow() cpu {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return cpu{tv(self.Utime), tv(self.Stime), tv(kids.Utime), tv(kids.Stime)}
}

// perRule is d in µs per rule.
func perRule(d time.Duration, rules int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(rules)
}

var (
	perfOnce sync.Once
	perfOK   bool
)

// havePerf reports whether `perf stat -e raw_syscalls:sys_enter` works here
// (installed, and the tracepoint readable: root or perf_event_paranoid).
func havePerf() bool {
	perfOnce.Do(func() {
		perfOK = exec.Command("perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", os.DevNull, "--", "true").Run() == nil
	})
	return perfOK
}

// parsePerf returns the raw_syscalls:sys_enter count of `perf stat -x,`
// output.
func parsePerf(out []byte) (uint64, bool) {
	for _, l := range bytes.Split(out, []byte("\n")) {
		f := strings.Split(string(l), ",")
		if len(f) >= 3 && strings.Contains(string(l), "raw_syscalls:sys_enter") {
			n, err := strconv.ParseUint(f[0], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// sampleSyscalls loads one more namespace alone, after the timed run, with
// perf counting system calls: the `nlemu exec` + `ip` process tree (perf
// stat's counters are inherited by children) and, for an embedded server,
// this process (perf stat -p, every thread). Counting is done by the
// kernel per task, so the sample runs at full speed; it is a separate
// namespace so that the timed figures carry no perf at all. perf stat -p
// counts only the threads that exist when it attaches (measured: 1.3-2.1
// system calls per request against the 2.1-2.2 that perf stat around
// `nlemu serve` counts), so the server's figure is a lower bound;
// hack/loadtest.sh and hack/routeload.sh count the server exactly. It
// returns system calls per rule on each side (server 0 when not
// measurable).
func (c *Config) sampleSyscalls(t *target, fam int, batch string) (client, server float64, err error) {
	if c.Driver != "ip" || !havePerf() {
		return 0, 0, nil
	}
	name := c.Prefix + "sample"
	if err := t.addNS(name); err != nil {
		return 0, 0, err
	}
	defer t.delNS(name)
	dir, err := os.MkdirTemp("", "nlemu-perf-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	var srv *exec.Cmd
	if t.srv != nil {
		// perf stat -p counts the threads there are when it attaches: load
		// a namespace once uncounted first, so that every thread the
		// sample needs (the runtime keeps them) exists already.
		warm := c.Prefix + "sample-warm"
		if err := t.addNS(warm); err != nil {
			return 0, 0, err
		}
		out, err := exec.Command(c.bin(), "exec", "--socket", t.path, "-n", warm, "--", "ip", "-"+strconv.Itoa(fam), "-batch", batch).CombinedOutput()
		t.delNS(warm)
		if err != nil {
			return 0, 0, fmt.Errorf("sample: %v: %s", err, strings.TrimSpace(string(out)))
		}
		// --no-inherit: not the exec and ip processes this process starts.
		srv = exec.Command("perf", "stat", "--no-inherit", "-x,", "-e", "raw_syscalls:sys_enter", "-o", dir+"/server", "-p", strconv.Itoa(os.Getpid()))
		if err := srv.Start(); err != nil {
			return 0, 0, err
		}
		time.Sleep(time.Second) // attached to every thread (perf opens a counter per thread)
	}
	cmd := exec.Command("perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", dir+"/client", "--",
		c.bin(), "exec", "--socket", t.path, "-n", name, "--", "ip", "-"+strconv.Itoa(fam), "-batch", batch)
	out, cerr := cmd.CombinedOutput()
	if srv != nil {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}
	if cerr != nil {
		return 0, 0, fmt.Errorf("sample: %v: %s", cerr, strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile(dir + "/client"); err == nil {
		if n, ok := parsePerf(b); ok {
			client = float64(n) / float64(c.Rules)
		}
	}
	if srv != nil {
		if b, err := os.ReadFile(dir + "/server"); err == nil {
			if n, ok := parsePerf(b); ok {
				server = float64(n) / float64(c.Rules)
			}
		}
	}
	return client, server, nil
}

// bin is the nlemu binary the ip driver runs.
func (c *Config) bin() string {
	if c.NlemuBin != "" {
		return c.NlemuBin
	}
	exe, _ := os.Executable()
	return exe
}

// phase reports progress of a phase other than the load itself.
func (c *Config) phase(name string, done, total int) {
	if c.Phase != nil {
		c.Phase(name, done, total)
	}
}
