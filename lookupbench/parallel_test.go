package lookupbench

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// phaseOf builds a phase of workers on cpus, each with the given CPU
// share, n lookups each and wall ns from the common start to the end.
func phaseOf(n, wall int64, cpus []int, shares ...float64) Phase {
	p := Phase{Lookups: n * int64(len(shares)), Wall: wall}
	for i, s := range shares {
		p.Workers = append(p.Workers, Worker{CPU: cpus[i], Wall: wall, CPUTime: int64(s * float64(wall))})
	}
	return p
}

// round is one round of 1e6 lookups per worker: a one-core phase of
// oneMS milliseconds (share s1) and an all-cores phase of two workers on
// CPUs 0 and 1 of allMS (shares s2, s3).
func round(oneMS, allMS, s1, s2, s3 float64) Round {
	return Round{
		One: phaseOf(1e6, int64(oneMS*1e6), []int{0}, s1),
		All: phaseOf(1e6, int64(allMS*1e6), []int{0, 1}, s2, s3),
	}
}

// TestScalingStatistic: the best phase of each kind (each kind on its
// own: a round whose other phase was disturbed still counts for its good
// one), the median of the ratios of the rounds clean in both (of every
// round when none is), the clean counts, and pinning reported only when
// every worker has a CPU of its own.
func TestScalingStatistic(t *testing.T) {
	type got struct {
		CleanOne, CleanAll, CleanRounds int
		BestOne, BestAll, Best          float64
		Median, MinShare, StealMS       float64
		Pinned                          bool
	}
	const r105, r11, r12 = 2e6 / 10.5e-3 / 1e8, 2e6 / 11e-3 / 1e8, 2e6 / 12e-3 / 1e8 // ratios over 1e8/s
	for _, tc := range []struct {
		name   string
		rounds []Round
		want   got
	}{{
		// 1e6 lookups in 10 ms: 1e8/s; 2e6 in 10.5 ms; round ratios
		// 1.905, 2e6/11 ms over 1e6/12 ms = 2.182, and 1.818.
		name:   "all clean: best of each kind, median of the ratios",
		rounds: []Round{round(10, 10.5, 1, 0.99, 1), round(12, 11, 1, 1, 1), round(10, 11, 0.98, 1, 0.97)},
		want: got{CleanOne: 3, CleanAll: 3, CleanRounds: 3, BestOne: 1e8, BestAll: r105 * 1e8, Best: r105,
			Median: r105, MinShare: 0.99, Pinned: true},
	}, {
		// An unclean phase is slower than the hardware (a worker lost its
		// CPU): it never wins the best of its kind, and its round leaves
		// the median.
		name:   "an all-cores phase with a worker off its CPU leaves the median",
		rounds: []Round{round(10, 10.5, 1, 1, 1), round(10, 20, 1, 0.5, 1), round(10, 11, 1, 1, 1)},
		want: got{CleanOne: 3, CleanAll: 2, CleanRounds: 2, BestOne: 1e8, BestAll: r105 * 1e8, Best: r105,
			Median: (r105 + r11) / 2, MinShare: 1, Pinned: true},
	}, {
		// A disturbed one-core phase (share 0.9, 20 ms) would inflate its
		// round's ratio to 3.6: it leaves the median; its round's
		// all-cores phase is the best of its kind and counts.
		name:   "a disturbed one-core phase leaves the median, its round's all-cores phase counts",
		rounds: []Round{round(20, 11, 0.9, 1, 1), round(10, 12, 1, 1, 1)},
		want: got{CleanOne: 1, CleanAll: 2, CleanRounds: 1, BestOne: 1e8, BestAll: r11 * 1e8, Best: r11,
			Median: r12, MinShare: 1, Pinned: true},
	}, {
		// Every one-core phase was slowed without the guest seeing it (a
		// busy SMT sibling on the host): the best of each kind exceeds
		// the workers; the figure is what was measured, the report flags
		// it.
		name:   "one-core phases all slowed: above the workers, reported as measured",
		rounds: []Round{round(25, 10, 1, 1, 1), round(25, 11, 1, 1, 1)},
		want: got{CleanOne: 2, CleanAll: 2, CleanRounds: 2, BestOne: 4e7, BestAll: 2e8, Best: 5,
			Median: (5 + 2e6/11e-3/4e7) / 2, MinShare: 1, Pinned: true},
	}, {
		name:   "clean phases but no round clean in both: the median is over every round",
		rounds: []Round{round(10, 10, 1, 0.5, 1), round(10, 10, 0.5, 1, 1)},
		want:   got{CleanOne: 1, CleanAll: 1, BestOne: 1e8, BestAll: 2e8, Best: 2, Median: 2, MinShare: 0.5, Pinned: true},
	}, {
		name:   "no clean phase: the best of all, and their lowest share",
		rounds: []Round{round(10, 20, 0.5, 0.5, 1), round(20, 20, 0.9, 0.6, 0.4)},
		want:   got{BestOne: 1e8, BestAll: 1e8, Best: 1, Median: (1 + 2) / 2.0, MinShare: 0.5, Pinned: true},
	}, {
		name: "steal is added up over every phase",
		rounds: func() []Round {
			r := []Round{round(10, 10, 1, 1, 1), round(10, 10, 1, 1, 1)}
			r[0].One.StealMS, r[1].All.StealMS = 10, 20
			return r
		}(),
		want: got{CleanOne: 2, CleanAll: 2, CleanRounds: 2, BestOne: 1e8, BestAll: 2e8, Best: 2, Median: 2, MinShare: 1, StealMS: 30, Pinned: true},
	}, {
		name: "a worker whose affinity was refused: not pinned",
		rounds: func() []Round {
			r := []Round{round(10, 10, 1, 1, 1)}
			r[0].All.Workers[1].CPU = -1
			return r
		}(),
		want: got{CleanOne: 1, CleanAll: 1, CleanRounds: 1, BestOne: 1e8, BestAll: 2e8, Best: 2, Median: 2, MinShare: 1},
	}, {
		name: "two workers on one CPU (more workers than CPUs): not pinned",
		rounds: func() []Round {
			r := []Round{round(10, 10, 1, 1, 1)}
			r[0].All.Workers[1].CPU = 0
			return r
		}(),
		want: got{CleanOne: 1, CleanAll: 1, CleanRounds: 1, BestOne: 1e8, BestAll: 2e8, Best: 2, Median: 2, MinShare: 1},
	}, {
		name: "no rounds",
		want: got{MinShare: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := scalingOf(tc.rounds, CleanShare)
			g := got{s.CleanOne, s.CleanAll, s.CleanRounds, s.BestOne, s.BestAll, s.Best, s.Median, s.MinShare, s.StealMS, s.Pinned}
			if diff := cmp.Diff(tc.want, g, cmp.Comparer(approx)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(s.Rounds) != len(tc.rounds) {
				t.Errorf("%d rounds kept, want %d", len(s.Rounds), len(tc.rounds))
			}
		})
	}
}

// approx compares floats to 1e-9 relative: the wants above are computed
// in another order than scalingOf computes them.
func approx(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, -a, b, -b)
}

// TestMedian against sorting by hand: odd and even counts, unsorted input.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1}, 2},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 100}, 3.5},
		{[]float64{2, 2, 2, 9, 1}, 2},
	} {
		if got := median(slices.Clone(tc.in)); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRoundsPinAndInterleave runs the rounds of two works that record who
// ran, how much and on which CPUs the thread may run (no time is
// asserted): every phase gives each of its workers the same count, the
// one-core phase takes the workers in turn, the phase order alternates
// every round and the works' order every two, the warm-up is not counted,
// and each worker's thread is locked and pinned to its own CPU of the
// allowed set when the set is large enough.
func TestRoundsPinAndInterleave(t *testing.T) {
	type call struct {
		k, w   int
		n      int64
		cpus   []int
		thread int
	}
	var mu sync.Mutex
	var calls []call
	record := func(k int) func(w int, n int64) {
		return func(w int, n int64) {
			var set unix.CPUSet
			var cpus []int
			if unix.SchedGetaffinity(0, &set) == nil {
				for c := 0; c < len(set)*64; c++ {
					if set.IsSet(c) {
						cpus = append(cpus, c)
					}
				}
			}
			mu.Lock()
			calls = append(calls, call{k, w, n, cpus, unix.Gettid()})
			mu.Unlock()
		}
	}
	const g, rounds = 2, 4
	sc := runRounds(ParallelConfig{Workers: g, Rounds: rounds, Phase: time.Millisecond}, record(0), record(1))
	if len(sc) != 2 || len(sc[0].Rounds) != rounds || len(sc[1].Rounds) != rounds {
		t.Fatalf("%d statistics, want 2 of %d rounds", len(sc), rounds)
	}
	// Warm-up: per work, two passes of (worker 0 alone, then all).
	const perRound = 2 * (1 + g)
	const warm = 2 * 2 * (1 + g)
	if len(calls) != warm+rounds*perRound {
		t.Fatalf("%d calls, want %d", len(calls), warm+rounds*perRound)
	}
	allowed := allowedCPUs()
	threads := map[int]int{}
	for _, c := range calls {
		if old, ok := threads[c.w]; ok && old != c.thread {
			t.Errorf("worker %d ran on threads %d and %d: not locked", c.w, old, c.thread)
		}
		threads[c.w] = c.thread
		if len(allowed) >= g && sc[0].Pinned {
			if want := []int{allowed[c.w]}; !cmp.Equal(want, c.cpus) {
				t.Errorf("worker %d may run on %v, want %v", c.w, c.cpus, want)
			}
		}
	}
	if len(allowed) >= g && !sc[0].Pinned {
		t.Logf("affinity refused here: workers ran unpinned (%v)", sc[0].Rounds[0].All.Workers)
	}
	// Each round as a string: per phase the work and its workers, e.g.
	// "0:1 0:01 1:1 1:01" (work 0 on worker 1, then work 0 on both, ...).
	var got []string
	counted := calls[warm:]
	for r := range rounds {
		var phases []string
		for range 2 {
			// The one-core and all-cores phases of one work, in order.
			first, second := 1, g
			if r%2 == 1 {
				first, second = g, 1
			}
			for _, size := range []int{first, second} {
				ph := counted[:size]
				counted = counted[size:]
				var ws []int
				for _, c := range ph {
					ws = append(ws, c.w)
					if c.k != ph[0].k || c.n != ph[0].n {
						t.Errorf("round %d: a phase mixes %v and %v", r, c, ph[0])
					}
				}
				slices.Sort(ws)
				phases = append(phases, fmt.Sprintf("%d:%s", ph[0].k, strings.Trim(fmt.Sprint(ws), "[]")))
			}
		}
		got = append(got, strings.Join(phases, " "))
		for k := range 2 {
			if rd := sc[k].Rounds[r]; rd.OneFirst != (r%2 == 0) || rd.All.Lookups != g*rd.One.Lookups {
				t.Errorf("work %d round %d: OneFirst %v, lookups %d and %d", k, r, rd.OneFirst, rd.One.Lookups, rd.All.Lookups)
			}
		}
	}
	want := []string{
		"0:0 0:0 1 1:0 1:0 1", // one then all; work 0 first; worker 0 alone
		"0:0 1 0:1 1:0 1 1:1", // all then one; worker 1 alone
		"1:0 1:0 1 0:0 0:0 1", // work 1 first from round 2
		"1:0 1 1:1 0:0 1 0:1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases per round (-want +got):\n%s", diff)
	}
}
