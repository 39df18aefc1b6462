package server

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The polling loop (LoopSchedPoll, loop.go runPoll). Each test runs in a
// child process of its own (the loops start once per process).

// pollerThread is the tid of this process's SCHED_FIFO thread pinned to
// cpu (the poller), 0 when there is none.
func pollerThread(t *testing.T, cpu int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		stat, err1 := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "stat"))
		status, err2 := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		if err1 != nil || err2 != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if f[38] != "1" { // field 41, policy: SCHED_FIFO
			continue
		}
		if bytes.Contains(status, []byte("Cpus_allowed_list:\t"+strconv.Itoa(cpu)+"\n")) {
			tid, _ := strconv.Atoi(e.Name())
			return tid
		}
	}
	return 0
}

// threadCPUTime is thread tid's time on a CPU (schedstat's first field).
func threadCPUTime(t *testing.T, tid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}

// pollChild runs test name in a child of the test binary with
// NLEMU_LOOP_SCHED=poll and env, through prefix (a command such as
// setpriv, empty for none); true in the child.
func pollChild(t *testing.T, name string, prefix []string, env ...string) bool {
	t.Helper()
	return inChildUnder(t, name, prefix, append([]string{"NLEMU_LOOP_SCHED=poll", "NLEMU_LOOPS="}, env...)...)
}

// wantPoll reports whether this process should get the polling loop (two
// CPUs and root); a child that may not checks the fallback instead.
func wantPoll() bool { return len(loopCPUs()) >= 2 && unix.Geteuid() == 0 }

// TestLoopPollAnswersInOrder: with the polling loop, one loop on the last
// CPU holds every connection, the HELLO answer's third word names it, and
// 16 connections × 300 requests at once are each answered in order.
func TestLoopPollAnswersInOrder(t *testing.T) {
	if !pollChild(t, "TestLoopPollAnswersInOrder", nil) {
		return
	}
	_, sock := listenTest(t)
	const conns, reqs = 16, 300
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialTest(t, sock)
			defer c.Close()
			for i := range uint32(reqs) {
				got, err := roundTrip(c, ruleRequest(i, uint32(1000+k)))
				if err != nil {
					errs <- err
					return
				}
				if want := []string{fmt.Sprintf("ack seq=%d errno=0", i)}; !cmp.Equal(got, want) {
					errs <- fmt.Errorf("connection %d request %d: %v, want %v", k, i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cpus := loopCPUs()
	if !wantPoll() {
		if got := LoopSchedInEffect(); got != LoopSchedPin {
			t.Errorf("%d CPUs, euid %d: loops run %q, want the fallback pin", len(cpus), unix.Geteuid(), got)
		}
		if w := pollWord(); w != 0 {
			t.Errorf("no poller: HELLO word %#x, want 0", w)
		}
		return
	}
	if got := LoopSchedInEffect(); got != LoopSchedPoll {
		t.Fatalf("loops run %q, want poll", got)
	}
	if n := len(startedLoops()); n != 1 {
		t.Errorf("%d loops, want 1", n)
	}
	last := cpus[len(cpus)-1]
	if w, want := pollWord(), uint32(1<<31|last); w != want {
		t.Errorf("HELLO word %#x, want %#x", w, want)
	}
	if pollerThread(t, last) == 0 {
		t.Errorf("no SCHED_FIFO thread pinned to CPU %d: %v", last, threadSched(t))
	}
}

// TestLoopPollBlocksWhenIdle: the poller polls only while requests come;
// after them it blocks again, so that an idle second costs it far less
// than 50 ms of CPU (polling, it would take the whole second), and it is
// counted going back to blocking.
func TestLoopPollBlocksWhenIdle(t *testing.T) {
	if !pollChild(t, "TestLoopPollBlocksWhenIdle", nil) {
		return
	}
	if !wantPoll() {
		t.Skip("no polling loop here (one CPU, or not root): TestLoopPollFallback")
	}
	_, sock := listenTest(t)
	c := dialTest(t, sock)
	defer c.Close()
	blocks0 := pollBlocks.Load()
	for i := range uint32(2000) {
		if _, err := roundTrip(c, ruleRequest(i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	cpus := loopCPUs()
	tid := pollerThread(t, cpus[len(cpus)-1])
	if tid == 0 {
		t.Fatalf("no poller thread: %v", threadSched(t))
	}
	// Past the idle window (200 us by default) before the measure starts.
	time.Sleep(50 * time.Millisecond)
	c0 := threadCPUTime(t, tid)
	time.Sleep(time.Second)
	used := threadCPUTime(t, tid) - c0
	t.Logf("poller: %v of CPU in an idle second; %d returns to blocking", used, pollBlocks.Load()-blocks0)
	if used >= 50*time.Millisecond {
		t.Errorf("poller used %v of CPU in an idle second, want < 50ms", used)
	}
	if pollBlocks.Load() == blocks0 {
		t.Error("the poller never went back to blocking")
	}
}

// TestLoopPollFallback: without the privilege to run a thread SCHED_FIFO
// (CAP_SYS_NICE dropped from the bounding set with setpriv, RLIMIT_RTPRIO
// 0), or with one CPU, poll falls back to pin: loops pinned per CPU, no
// thread real-time, HELLO word 0, requests answered as usual.
func TestLoopPollFallback(t *testing.T) {
	const name = "TestLoopPollFallback"
	if os.Getenv("NLEMU_TEST_LOOPSCHED_CHILD") != name {
		if unix.Geteuid() == 0 {
			sp, err := exec.LookPath("setpriv")
			if err != nil {
				t.Skip("no setpriv to drop CAP_SYS_NICE")
			}
			pollChild(t, name, []string{sp, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice"})
		}
		if len(loopCPUs()) >= 2 {
			// One CPU: run the child on the first only.
			first := loopCPUs()[0]
			pollChild(t, name, []string{"taskset", "-c", strconv.Itoa(first)})
		}
		return
	}
	if mayFIFO() && len(loopCPUs()) >= 2 {
		t.Skip("this child may run SCHED_FIFO threads on 2 CPUs: no fallback to test")
	}
	_, sock := listenTest(t)
	c := dialTest(t, sock)
	defer c.Close()
	ackRulesInOrder(t, c, 50, 1000)
	if got := LoopSchedInEffect(); got != LoopSchedPin {
		t.Errorf("loops run %q, want pin", got)
	}
	if w := pollWord(); w != 0 {
		t.Errorf("HELLO word %#x, want 0", w)
	}
	for _, s := range threadSched(t) {
		if strings.HasPrefix(s, "policy 1 ") {
			t.Errorf("a SCHED_FIFO thread: %s", s)
		}
	}
}
