package server

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestStatCPU(t *testing.T) {
	// Fields 3..38 are 36 fields before "processor" (field 39).
	rest := strings.Repeat("0 ", 36)
	for _, tc := range []struct {
		name, line string
		want       int
	}{
		{"plain", "1234 (ip) S " + rest[2:] + "1 0 0\n", 1},
		{"comm with spaces and parens", "77 (a) b (c) R " + rest[2:] + "3 0\n", 3},
		{"cpu 0 last field", "9 (x) S " + rest[2:] + "0", 0},
		{"truncated", "9 (x) S 1 2 3", -1},
		{"no comm", "9 x S " + rest + "1", -1},
		{"not a number", "9 (x) S " + rest[2:] + "z 0", -1},
	} {
		if got := statCPU([]byte(tc.line)); got != tc.want {
			t.Errorf("%s: statCPU(%q) = %d, want %d", tc.name, tc.line, got, tc.want)
		}
	}
}

// TestPidCPUOfSelf: pidCPU reads a real /proc/PID/stat (of this process)
// and gives a CPU it may run on.
func TestPidCPUOfSelf(t *testing.T) {
	cpu := pidCPU(int32(os.Getpid()))
	found := false
	for _, c := range loopCPUs() {
		found = found || c == cpu
	}
	if !found {
		t.Errorf("pidCPU(self) = %d, not one of %v", cpu, loopCPUs())
	}
	if got := pidCPU(0); got != -1 {
		t.Errorf("pidCPU(0) = %d, want -1", got)
	}
}

func TestParseLoopSched(t *testing.T) {
	for _, v := range []string{"auto", "fifo", "nice", "pin", "off"} {
		m, err := ParseLoopSched(v)
		if err != nil || string(m) != v {
			t.Errorf("ParseLoopSched(%q) = %q, %v", v, m, err)
		}
	}
	for _, v := range []string{"", "FIFO", "rt"} {
		if _, err := ParseLoopSched(v); err == nil {
			t.Errorf("ParseLoopSched(%q): no error", v)
		}
	}
}

// inLoopSchedChild runs test name in a child process of the test binary
// with env (the loops are started once per process, so a mode is tested in
// a process of its own), and reports whether this is that child.
func inLoopSchedChild(t *testing.T, name string, env ...string) bool {
	t.Helper()
	return inChildUnder(t, name, nil, env...)
}

// inChildUnder is inLoopSchedChild with the child started through the
// command prefix (taskset, setpriv...).
func inChildUnder(t *testing.T, name string, prefix []string, env ...string) bool {
	t.Helper()
	if os.Getenv("NLEMU_TEST_LOOPSCHED_CHILD") == name {
		return true
	}
	args := append(append([]string(nil), prefix...), os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(append([]string(nil), env...), "NLEMU_TEST_LOOPSCHED_CHILD="+name)...)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child %s: %v", name, err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatalf("child %s did not pass", name)
	}
	return false
}

// threadSched is each thread of this process as "policy N cpus LIST".
func threadSched(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		stat, err1 := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "stat"))
		status, err2 := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		if err1 != nil || err2 != nil {
			continue // exited meanwhile
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		cpus := ""
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				cpus = strings.TrimSpace(v)
			}
		}
		out = append(out, "policy "+f[38]+" cpus "+cpus) // field 41
	}
	return out
}

// TestLoopSchedFIFOThreads: with NLEMU_LOOP_SCHED=fifo there is one loop
// per CPU, each thread pinned to its CPU, SCHED_FIFO when the process may
// take it (root, CAP_SYS_NICE), else the fallback (nice, then pin); every
// request is answered in order as without it. The busy reader's spin is
// off: its thread, kept off the client's CPU (awayPin), would count as
// one more pinned thread.
func TestLoopSchedFIFOThreads(t *testing.T) {
	if !inLoopSchedChild(t, "TestLoopSchedFIFOThreads", "NLEMU_LOOP_SCHED=fifo", "NLEMU_LOOPS=", "NLEMU_LOOP_SPIN_US=0") {
		return
	}
	_, sock := listenTest(t)
	c := dialTest(t, sock)
	defer c.Close()
	ackRulesInOrder(t, c, 200, 1000)
	cpus := loopCPUs()
	got := LoopSchedInEffect()
	if len(startedLoops()) != len(cpus) {
		t.Errorf("%d loops for %d CPUs", len(startedLoops()), len(cpus))
	}
	policy := "1" // SCHED_FIFO
	if got != LoopSchedFIFO {
		policy = "0"
		if unix.Geteuid() == 0 {
			t.Errorf("root: loops run %q, want fifo", got)
		}
	}
	var want, pinned []string
	for _, cpu := range cpus {
		want = append(want, "policy "+policy+" cpus "+strconv.Itoa(cpu))
	}
	for _, s := range threadSched(t) {
		if !strings.Contains(s, "-") && !strings.Contains(s, ",") {
			pinned = append(pinned, s)
		}
	}
	if len(cpus) == 1 {
		// Every thread shows the one CPU: the loop is among them.
		pinned = pinned[:0]
		for _, s := range threadSched(t) {
			if strings.HasPrefix(s, "policy "+policy) && len(pinned) == 0 {
				pinned = append(pinned, s)
			}
		}
	}
	sort.Strings(pinned)
	sort.Strings(want)
	if d := cmp.Diff(want, pinned); d != "" {
		t.Errorf("pinned threads (-want +got):\n%s", d)
	}
	t.Logf("loops run %s: %v", got, threadSched(t))
}

// TestLoopSchedFIFOClientNeverBlocks is the point of the mode: a client
// on the CPU of its SCHED_FIFO loop finds each reply waiting when its send
// returns (the loop, woken on that CPU, preempts it, answers and sleeps
// again), so its thread does not block once per request, as it does with
// the loops unprioritized. Counted in voluntary_ctxt_switches of the
// client's thread: fewer than one in ten requests (without the mode:
// about one per request).
func TestLoopSchedFIFOClientNeverBlocks(t *testing.T) {
	if !inLoopSchedChild(t, "TestLoopSchedFIFOClientNeverBlocks", "NLEMU_LOOP_SCHED=fifo", "NLEMU_BUSY=0", "NLEMU_LOOPS=") {
		return
	}
	cpus := loopCPUs()
	cpu := cpus[len(cpus)-1]
	clientCPU = func(int32) int { return cpu }
	_, sock := listenTest(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	c := dialTest(t, sock)
	defer c.Close()
	roundTrip(c, ruleRequest(0, 1000))
	const n = 1000
	v0 := voluntarySwitches(t)
	for i := range uint32(n) {
		got, err := roundTrip(c, ruleRequest(i+1, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{fmt.Sprintf("ack seq=%d errno=0", i+1)}; !cmp.Equal(got, want) {
			t.Fatalf("request %d: %v, want %v", i, got, want)
		}
	}
	v := voluntarySwitches(t) - v0
	if LoopSchedInEffect() != LoopSchedFIFO {
		if unix.Geteuid() == 0 {
			t.Fatalf("root: loops run %q (%d voluntary switches in %d requests), want fifo", LoopSchedInEffect(), v, n)
		}
		t.Logf("loops run %s (not permitted fifo): %d voluntary switches in %d requests", LoopSchedInEffect(), v, n)
		return
	}
	if v >= n/10 {
		t.Errorf("client thread blocked %d times in %d requests, want < %d", v, n, n/10)
	}
	t.Logf("client thread: %d voluntary switches in %d requests", v, n)
}

// voluntarySwitches is the calling thread's voluntary_ctxt_switches.
func voluntarySwitches(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", unix.Gettid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no voluntary_ctxt_switches")
	return 0
}

// TestLoopRehomeFollowsClientCPU: with pinned loops a connection starts on
// the loop of its client's CPU, and when the scheduler moves the client it
// follows within rehomeEvery requests, answers still in order.
func TestLoopRehomeFollowsClientCPU(t *testing.T) {
	if !inLoopSchedChild(t, "TestLoopRehomeFollowsClientCPU", "NLEMU_LOOP_SCHED=pin", "NLEMU_BUSY=0", "NLEMU_LOOPS=") {
		return
	}
	cpus := loopCPUs()
	if len(cpus) < 2 {
		t.Skip("one CPU: nothing to move to")
	}
	var cpu atomic.Int64
	cpu.Store(int64(cpus[0]))
	clientCPU = func(int32) int { return int(cpu.Load()) }
	_, sock := listenTest(t)
	c := dialTest(t, sock)
	defer c.Close()
	counts := func() []int64 {
		startedLoops() // ordered after the loops' start (loopOfCPU)
		return []int64{loopOfCPU[cpus[0]].conns.Load(), loopOfCPU[cpus[1]].conns.Load()}
	}
	seq := uint32(0)
	ask := func(k int) {
		t.Helper()
		for range k {
			got, err := roundTrip(c, ruleRequest(seq, 1000))
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{fmt.Sprintf("ack seq=%d errno=0", seq)}; !cmp.Equal(got, want) {
				t.Fatalf("request %d: %v, want %v", seq, got, want)
			}
			seq++
		}
	}
	ask(1)
	if d := cmp.Diff([]int64{1, 0}, counts()); d != "" {
		t.Errorf("placed (-want +got):\n%s", d)
	}
	r0 := loopRehomes.Load()
	cpu.Store(int64(cpus[1]))
	ask(rehomeEvery)
	if d := cmp.Diff([]int64{0, 1}, counts()); d != "" {
		t.Errorf("after the client moved (-want +got):\n%s", d)
	}
	if got := loopRehomes.Load() - r0; got != 1 {
		t.Errorf("%d moves, want 1", got)
	}
	ask(rehomeEvery) // stays put
	if got := loopRehomes.Load() - r0; got != 1 {
		t.Errorf("%d moves after the client stayed, want 1", got)
	}
}

// FuzzStatCPU: statCPU never panics and agrees with the obvious reading
// (the 37th space-separated field after the last ')', a non-negative
// decimal).
func FuzzStatCPU(f *testing.F) {
	f.Add([]byte("1234 (ip) S " + strings.Repeat("0 ", 35) + "1 0 0\n"))
	f.Add([]byte("77 (a) b (c) R " + strings.Repeat("7 ", 35) + "3"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := statCPU(b)
		want := -1
		if i := strings.LastIndex(string(b), ")"); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) >= 37 {
				if n, err := strconv.Atoi(f[36]); err == nil && n >= 0 {
					want = n
				}
			}
		}
		if got != want {
			t.Errorf("statCPU(%q) = %d, want %d", b, got, want)
		}
	})
}
