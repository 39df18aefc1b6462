package lookupbench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The reference work tells the machine from the code. A lookup's time on
// this shared VM moves with things no lookup controls: the host may run
// the vCPU on a core whose SMT sibling is busy (with the other vCPU or
// another guest), at another clock, beside a neighbour that evicts the
// shared cache. spin does a fixed amount of integer work that touches no
// memory and needs more of a core's integer units than one thread can
// fill, so anything that takes a core's issue slots or changes its clock
// slows it as well: sampled beside the lookups (reference_ns) it shows
// whether a slow run was a slow machine, and run in the scaling rounds
// (parallel_scaling_reference) it is the scaling the hardware gives a
// code that shares nothing, the bound of parallel_scaling.

// spin runs n steps of 6 independent add/xor-shift chains (18 integer
// operations a step, 3 cycles deep: as many as the integer units of one
// core issue per cycle, so that an SMT sibling's work shows; 6 chains
// keep every value in a register) and returns their fold, which the caller
// keeps so the loop is not removed.
func spin(n int64) uint64 {
	y0, y1, y2, y3, y4, y5 := uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6)
	const c = 0x7f4a7c15
	for i := int64(0); i < n; i++ {
		y0 += c
		y0 ^= y0 >> 29
		y1 += c
		y1 ^= y1 >> 29
		y2 += c
		y2 ^= y2 >> 29
		y3 += c
		y3 ^= y3 >> 29
		y4 += c
		y4 ^= y4 >> 29
		y5 += c
		y5 ^= y5 >> 29
	}
	return y0 ^ y1 ^ y2 ^ y3 ^ y4 ^ y5
}

// spinSink keeps spin's results, one cache line per worker so that the
// workers' single store at their end shares nothing.
var spinSink [64 * 8]uint64

// spinWork is spin as a worker of the scaling rounds.
func spinWork(w int, n int64) { spinSink[w%64*8] = spin(n) }

// ThreadSched is what the kernel counted for the sampling thread while it
// took the samples (from /proc/thread-self/sched and getrusage
// RUSAGE_THREAD; zero where the kernel does not provide it).
type ThreadSched struct {
	// Migrations is the times the thread moved to another CPU (each move
	// starts on cold private caches).
	Migrations int64
	// Involuntary is the times another task preempted it.
	Involuntary int64
	// Faults is the page faults it took (minor and major: a first touch
	// of a page of the tables or the flows would be one).
	Faults int64
}

// threadSched reads the calling thread's counters; the caller holds its
// OS thread locked.
func threadSched() ThreadSched {
	var t ThreadSched
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) == nil {
		t.Faults = ru.Minflt + ru.Majflt
	}
	b, err := os.ReadFile("/proc/thread-self/sched")
	if err != nil {
		return t
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			continue
		}
		switch string(bytes.TrimSpace(k)) {
		case "se.nr_migrations":
			t.Migrations = n
		case "nr_involuntary_switches":
			t.Involuntary = n
		}
	}
	return t
}
