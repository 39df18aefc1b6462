package server

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// How the event-loop threads are scheduled (LoopSched).
//
// With a thousand `ip -batch` clients on two CPUs, the clients' cost was
// not the requests: each client blocked in recv once per request and was
// woken by the loop's send, often from the other CPU (an IPI), and the
// 1,024 processes switched among each other once per request (docs/
// PROTOCOL.md, "Loop scheduling"). The kernel answers inside the sender's
// syscall. A loop thread of real-time priority, pinned to one CPU and
// holding the connections whose clients run on that CPU, comes close: the
// client's send wakes the loop on the client's own CPU
// (select_task_rq_rt() keeps an RT task on its CPU), the wake-up preempts
// the client as its sendto returns (check_preempt_curr()), the loop reads,
// answers and sleeps again, and the client's recv finds the reply waiting:
// it never blocks.

// LoopSched names how the event-loop threads are scheduled.
type LoopSched string

const (
	// LoopSchedAuto is LoopSchedFIFO when the process may raise its
	// threads' priority, else LoopSchedOff.
	LoopSchedAuto LoopSched = "auto"
	// LoopSchedFIFO runs each loop thread SCHED_FIFO at priority 1 (the
	// lowest real-time one), pinned to one CPU, with the connections of
	// the clients that ran on that CPU when they connected.
	LoopSchedFIFO LoopSched = "fifo"
	// LoopSchedNice pins the loops as LoopSchedFIFO does, with nice -10
	// under SCHED_OTHER instead.
	LoopSchedNice LoopSched = "nice"
	// LoopSchedPin pins the loops, priority unchanged.
	LoopSchedPin LoopSched = "pin"
	// LoopSchedOff leaves the loop threads unpinned at the process's
	// priority, connections placed on the least-loaded loop.
	LoopSchedOff LoopSched = "off"
	// LoopSchedPoll runs one loop, SCHED_FIFO 1 and pinned to the last
	// CPU the process may use, holding every connection; while requests
	// keep coming it polls (epoll_wait with timeout 0) instead of
	// sleeping, and blocks again after pollIdle without one (loop.go,
	// runPoll). Clients told so in the HELLO answer spin for their
	// replies on the other CPUs. Without the privilege, or with one CPU,
	// it falls back to LoopSchedPin.
	LoopSchedPoll LoopSched = "poll"
)

// ParseLoopSched parses a --loop-sched value.
func ParseLoopSched(s string) (LoopSched, error) {
	switch v := LoopSched(s); v {
	case LoopSchedAuto, LoopSchedFIFO, LoopSchedNice, LoopSchedPin, LoopSchedOff, LoopSchedPoll:
		return v, nil
	}
	return "", fmt.Errorf("loop scheduling %q: want auto, poll, fifo, nice, pin or off", s)
}

var (
	loopSchedMu  sync.Mutex
	loopSchedSet LoopSched // "" until SetLoopSched or the first loop
	// loopSchedGot is what the loops run with, once started (for stats
	// and tests): the mode after fallbacks.
	loopSchedGot atomic.Value
)

// SetLoopSched chooses how the event loops are scheduled; it takes effect
// only before the first connection starts them (the loops live as long
// as the process). NLEMU_LOOP_SCHED overrides the default, not this.
func SetLoopSched(m LoopSched) {
	loopSchedMu.Lock()
	loopSchedSet = m
	loopSchedMu.Unlock()
}

// LoopSchedInEffect is how the started loops are scheduled ("" before the
// first connection).
func LoopSchedInEffect() LoopSched {
	v, _ := loopSchedGot.Load().(LoopSched)
	return v
}

// wantedLoopSched is SetLoopSched's mode, else NLEMU_LOOP_SCHED, else
// defaultLoopSched.
func wantedLoopSched() LoopSched {
	loopSchedMu.Lock()
	m := loopSchedSet
	loopSchedMu.Unlock()
	if m != "" {
		return m
	}
	if v, err := ParseLoopSched(os.Getenv("NLEMU_LOOP_SCHED")); err == nil {
		return v
	}
	return defaultLoopSched
}

// defaultLoopSched is the mode without a flag or environment: pin. In
// alternating runs of 128 parallel `ip -batch` on the shared 2-CPU machine
// (hack/loopsched-ab.sh) pinned loops, each holding its CPU's clients,
// used 8-20% less CPU per rule in 6 of 6 pairs (the clients' wake-ups are
// local: no IPI) and finished first in 4 of them; fifo made
// the clients' receive find its reply (0.1-0.2 blocks per rule instead of
// 1) but lost every wall-time comparison there (docs/PROTOCOL.md, "Loop
// scheduling").
var defaultLoopSched = LoopSchedPin

// DefaultLoopSched is the mode the loops take without SetLoopSched or
// NLEMU_LOOP_SCHED.
func DefaultLoopSched() LoopSched { return defaultLoopSched }

// loopCPUs are the CPUs the process may run on, in order (the loops are
// pinned one per CPU); nil when unknown.
func loopCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// setThreadSched applies m to the calling (locked) thread: pins it to cpu
// (when cpu >= 0) and raises its priority. It returns the mode in effect:
// a priority the process may not take falls back (fifo to nice to pin).
// SCHED_FLAG_RESET_ON_FORK: a thread the runtime would create from this
// one starts at the normal policy (the runtime creates threads from its
// template thread when the caller is locked, newm(), but that is its
// business).
func setThreadSched(m LoopSched, cpu int) LoopSched {
	if m == LoopSchedOff {
		return m
	}
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if unix.SchedSetaffinity(0, &set) != nil {
			return LoopSchedOff
		}
	}
	if m == LoopSchedPoll {
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if unix.SchedSetAttr(0, &a, 0) == nil {
			return m
		}
		return LoopSchedPin
	}
	if m == LoopSchedFIFO {
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if unix.SchedSetAttr(0, &a, 0) == nil {
			return m
		}
		m = LoopSchedNice
	}
	if m == LoopSchedNice {
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: -10, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if unix.SchedSetAttr(0, &a, 0) == nil {
			return m
		}
		m = LoopSchedPin
	}
	return m
}

// resolveLoopSched turns auto into the mode to try.
func resolveLoopSched(m LoopSched) LoopSched {
	if m == LoopSchedAuto {
		return LoopSchedFIFO
	}
	return m
}

// peerPID is the process at the other end of socket fd (SO_PEERCRED),
// 0 when unknown.
func peerPID(fd int) int32 {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return 0
	}
	return cred.Pid
}

// clientCPU is pidCPU (a variable for tests: which CPU a client runs on
// is the scheduler's choice).
var clientCPU = pidCPU

// pidCPU is the CPU process pid last ran on (field 39 of /proc/PID/stat,
// task_cpu()), -1 when unknown. Raw system calls into a stack buffer: it
// runs on a loop thread (rehome).
func pidCPU(pid int32) int {
	if pid <= 0 {
		return -1
	}
	var path [32]byte
	p := append(path[:0], "/proc/"...)
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat"...)
	fd, err := unix.Open(string(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var buf [1024]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return -1
	}
	return statCPU(buf[:n])
}

// statCPU is the "processor" field (39th) of a /proc/PID/stat line, -1
// when absent. The command name (field 2) is in parentheses and may hold
// spaces and parentheses: the fields are counted after its last ')'.
func statCPU(b []byte) int {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field 39 is f[36].
	if len(f) < 37 {
		return -1
	}
	n, err := strconv.Atoi(string(f[36]))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// schedRank orders the modes by what they give the loops.
func schedRank(m LoopSched) int {
	switch m {
	case LoopSchedPoll:
		return 4
	case LoopSchedFIFO:
		return 3
	case LoopSchedNice:
		return 2
	case LoopSchedPin:
		return 1
	}
	return 0
}

// mayFIFO reports whether this process may run a thread SCHED_FIFO: a
// trial on a locked thread, set back to SCHED_OTHER after (root,
// CAP_SYS_NICE, RLIMIT_RTPRIO or a cgroup without real-time runtime all
// answer here, where a capability check would miss some).
func mayFIFO() bool {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
		if unix.SchedSetAttr(0, &a, 0) != nil {
			ok <- false
			return
		}
		back := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
		if unix.SchedSetAttr(0, &back, 0) != nil {
			// Still real-time: the thread ends with this goroutine
			// (exiting locked), it does not go back to the runtime.
			ok <- true
			runtime.Goexit()
		}
		ok <- true
	}()
	return <-ok
}
