package lookupbench

import (
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

// TestScalingStatistic: the best clean phase of each kind (each kind on
// its own: a round whose other phase was disturbed still counts for its
// clean one), the median of the ratios of the rounds clean in both, the
// best of all when no phase of a kind is clean, and pinning reported only
// when every worker has a CPU of its own.
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
		// The second round's all-cores phase is the fastest, but a worker
		// had 0.5 of its CPU (its span is not the code's): excluded, and
		// its round from the median.
		name:   "an all-cores phase with a worker off its CPU is excluded",
		rounds: []Round{round(10, 10.5, 1, 1, 1), round(10, 9, 1, 0.5, 1), round(10, 11, 1, 1, 1)},
		want: got{CleanOne: 3, CleanAll: 2, CleanRounds: 2, BestOne: 1e8, BestAll: r105 * 1e8, Best: r105,
			Median: (r105 + r11) / 2, MinShare: 1, Pinned: true},
	}, {
		// A disturbed one-core phase (share 0.9, 20 ms) would inflate its
		// round's ratio to 3.6: excluded; its round's clean all-cores phase
		// is the best of its kind and counts.
		name:   "a disturbed one-core phase is excluded, its round's all-cores phase counts",
		rounds: []Round{round(20, 11, 0.9, 1, 1), round(10, 12, 1, 1, 1)},
		want: got{CleanOne: 1, CleanAll: 2, CleanRounds: 1, BestOne: 1e8, BestAll: r11 * 1e8, Best: r11,
			Median: r12, MinShare: 1, Pinned: true},
	}, {
		name:   "clean phases but no round clean in both: the median is over every round",
		rounds: []Round{round(10, 10, 1, 0.5, 1), round(10, 10, 0.5, 1, 1)},
		want:   got{CleanOne: 1, CleanAll: 1, BestOne: 1e8, BestAll: 2e8, Best: 2, Median: 2, MinShare: 1, Pinned: true},
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

// TestRoundsPinAndInterleave runs the rounds with a work function that
// records who ran, how much and on which CPUs its thread may run (no time
// is asserted): every phase gives each of its workers the same count, the
// one-core phase takes the workers in turn, the order alternates, the
// warm-up is not counted, and each worker's thread is pinned to its own
// CPU of the allowed set when the set is large enough.
func TestRoundsPinAndInterleave(t *testing.T) {
	type call struct {
		w      int
		n      int64
		cpus   []int
		thread int
	}
	var mu sync.Mutex
	var calls []call
	work := func(w int, n int64) {
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
		calls = append(calls, call{w, n, cpus, unix.Gettid()})
		mu.Unlock()
	}
	const g, rounds = 2, 4
	s := runRounds(ParallelConfig{Workers: g, Rounds: rounds, Phase: time.Millisecond}, work)
	if len(s.Rounds) != rounds {
		t.Fatalf("%d rounds, want %d", len(s.Rounds), rounds)
	}
	// Warm-up: two passes of (worker 0 alone, then all).
	const warm = 2 * (1 + g)
	if len(calls) != warm+rounds*(1+g) {
		t.Fatalf("%d calls, want %d", len(calls), warm+rounds*(1+g))
	}
	allowed := allowedCPUs()
	threads := map[int]int{}
	for _, c := range calls {
		if old, ok := threads[c.w]; ok && old != c.thread {
			t.Errorf("worker %d ran on threads %d and %d: not locked", c.w, old, c.thread)
		}
		threads[c.w] = c.thread
		if len(allowed) >= g && s.Pinned {
			if want := []int{allowed[c.w]}; !cmp.Equal(want, c.cpus) {
				t.Errorf("worker %d may run on %v, want %v", c.w, c.cpus, want)
			}
		}
	}
	if len(allowed) >= g && !s.Pinned {
		t.Logf("affinity refused here: workers ran unpinned (%v)", s.Rounds[0].All.Workers)
	}
	var gotOrder []string
	counted := calls[warm:]
	for r, rd := range s.Rounds {
		if rd.OneFirst != (r%2 == 0) {
			t.Errorf("round %d: OneFirst %v", r, rd.OneFirst)
		}
		one, all := counted[:1], counted[1:1+g]
		if !rd.OneFirst {
			all, one = counted[:g], counted[g:g+1]
		}
		counted = counted[1+g:]
		if one[0].w != r%g {
			t.Errorf("round %d: one-core phase on worker %d, want %d", r, one[0].w, r%g)
		}
		var ws []int
		for _, c := range all {
			ws = append(ws, c.w)
			if c.n != one[0].n {
				t.Errorf("round %d: worker %d did %d lookups, the one-core phase %d", r, c.w, c.n, one[0].n)
			}
		}
		slices.Sort(ws)
		if !cmp.Equal([]int{0, 1}, ws) {
			t.Errorf("round %d: all-cores phase on workers %v", r, ws)
		}
		if got := rd.All.Lookups; got != int64(g)*one[0].n {
			t.Errorf("round %d: all-cores phase counts %d lookups, want %d", r, got, int64(g)*one[0].n)
		}
		o := "all,1"
		if rd.OneFirst {
			o = "1,all"
		}
		gotOrder = append(gotOrder, o)
	}
	if diff := cmp.Diff("1,all all,1 1,all all,1", strings.Join(gotOrder, " ")); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
