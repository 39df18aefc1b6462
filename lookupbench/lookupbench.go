// Package lookupbench is seed 000's route-lookup micro-benchmark as a
// library, for `nlemu bench lookup`: it builds one namespace's tables with N
// random routes per family in main and K non-matching custom rules, times
// the lookup paths of package fib (the no-custom-rules fast path, the rule
// walk, LookupBatch with and without route hints, one core against all)
// and reports per-lookup percentiles and a text histogram in the seed's
// layout.
//
// Per-lookup times come from timing a group of lookups per sample and
// dividing: a sample is PerSample (default 256) consecutive lookups of
// distinct flows between two reads of the thread's CPU clock, so that the
// clock read (ClockRead, reported beside the figures: about 0.5 µs for
// CLOCK_THREAD_CPUTIME_ID, a system call, where a lookup costs tens of
// nanoseconds) adds ClockRead / PerSample to each sample instead of
// dominating it; nothing is subtracted. Thread CPU time, so that other
// processes on a shared machine inflate the figures less. The one-core
// against all-cores rates are wall-clock lookups per second of workers
// pinned to their CPUs, over interleaved rounds (parallel.go).
package lookupbench

import (
	"fmt"
	"math/rand"
	"net/netip"
	"runtime"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/rulesops"
)

// Config is what to build and how long to measure.
type Config struct {
	// Routes is the number of random routes per family in main.
	Routes int
	// Rules is the number of custom rules for the rule-walk case: fwmark
	// selectors no flow carries, so each lookup walks past all of them.
	Rules int
	// Samples is the number of timed samples per case (default 2,000).
	Samples int
	// PerSample is the number of lookups timed together (default 256; a
	// multiple of BatchLen for the batch cases, which time
	// max(PerSample, BatchLen) rounded down to whole bursts).
	PerSample int
	// Cores is the number of workers of the all-cores case (default
	// GOMAXPROCS).
	Cores int
	// ParallelRounds and ParallelPhase shape the scaling case: rounds of
	// a one-core and an all-cores phase of about ParallelPhase each
	// (defaults 61 and 5 ms; parallel.go).
	ParallelRounds int
	ParallelPhase  time.Duration
	// Seed makes the tables and flows reproducible.
	Seed int64
	// Progress, when set, is called while the tables are built.
	Progress func(family, done, total int)
}

// MaxFlows is the number of distinct flows the cases cycle through: 1,024
// destinations spread over the table, as the fib package's benchmarks use,
// so that the figures are those of a warm cache (seed 000's module times
// repeated lookups too) rather than of memory latency.
const MaxFlows = 1024

// BatchLen is the burst length of the LookupBatch cases (seed 003 measures
// list receive, whose bursts are up to 64 packets).
const BatchLen = 64

func (c *Config) defaults() {
	if c.Samples <= 0 {
		c.Samples = 2000
	}
	if c.PerSample <= 0 {
		c.PerSample = 256
	}
	if c.Cores <= 0 {
		c.Cores = runtime.GOMAXPROCS(0)
	}
}

// Stats are the per-lookup times of one case, in nanoseconds.
type Stats struct {
	Min, P50, P90, P95, Max, Mean float64
	// Samples are the sorted per-lookup times of every sample.
	Samples []float64
}

func statsOf(s []float64) Stats {
	sort.Float64s(s)
	st := Stats{Samples: s}
	if len(s) == 0 {
		return st
	}
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	st.Min, st.P50, st.P90, st.P95, st.Max, st.Mean = s[0], q(0.5), q(0.9), q(0.95), s[len(s)-1], sum/float64(len(s))
	return st
}

// Family is one family's results.
type Family struct {
	Family      int // 4 or 6
	Routes      int
	Rules       int
	FastPath    Stats // Lookup, no custom rules
	RuleWalk    Stats // Lookup with Rules custom rules
	SameHints   Stats // LookupBatch, 64 flows to one destination
	SameNoHints Stats // LookupBatchNoHints, the same flows
	DistHints   Stats // LookupBatch, 64 distinct destinations
	DistNoHints Stats // LookupBatchNoHints, the same flows
	// OneCore and AllCores are fast-path lookups per second from one
	// worker and from Cores workers: the best phase of each kind
	// (Scaling.BestOne, BestAll; parallel.go says why).
	OneCore, AllCores float64
	Cores             int
	// Scaling holds the rounds of the scaling case and their statistic;
	// RefScaling the same rounds of the reference work (spin), the
	// hardware's own scaling in this run.
	Scaling, RefScaling Scaling
	// Reference is the reference work sampled with the cases, ns per
	// spin step: a slow machine shows here as well (reference.go).
	Reference Stats
	// Sched is the sampling thread's migrations, preemptions and page
	// faults while it took the samples.
	Sched ThreadSched
	// ClockRead is the median cost of one read of the samples' clock,
	// measured back to back in the same run, in nanoseconds; PerSample
	// is the lookups per sample it is spread over (so each per-lookup
	// figure includes ClockRead / PerSample of it).
	ClockRead float64
	PerSample int
}

// HintSameDstSpeedup is the p50 time per lookup of a one-destination burst
// without hints over the time with hints.
func (f *Family) HintSameDstSpeedup() float64 { return ratio(f.SameNoHints.P50, f.SameHints.P50) }

// HintDistinctRatio is the same for distinct destinations: time without
// hints over time with hints (≥ 1: the hint check costs nothing).
func (f *Family) HintDistinctRatio() float64 { return ratio(f.DistNoHints.P50, f.DistHints.P50) }

// ParallelScaling is the all-cores lookup rate over the one-core rate.
func (f *Family) ParallelScaling() float64 { return ratio(f.AllCores, f.OneCore) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// JSON returns the family's figures as `nlemu bench lookup --json` prints
// them (ratios as plain numbers).
func (f *Family) JSON() map[string]any {
	m := map[string]any{
		"routes":                            f.Routes,
		"rules":                             f.Rules,
		"cores":                             f.Cores,
		"hint_same_dst_speedup":             round3(f.HintSameDstSpeedup()),
		"hint_distinct_ratio":               round3(f.HintDistinctRatio()),
		"parallel_scaling":                  round3(f.ParallelScaling()),
		"rule_walk_ratio":                   round3(ratio(f.RuleWalk.P50, f.FastPath.P50)),
		"one_core_lookups_per_s":            round3(f.OneCore),
		"all_cores_lookups_per_s":           round3(f.AllCores),
		"clock_read_ns":                     round3(f.ClockRead),
		"parallel_rounds":                   len(f.Scaling.Rounds),
		"parallel_rounds_clean":             f.Scaling.CleanRounds,
		"parallel_one_core_clean":           f.Scaling.CleanOne,
		"parallel_all_cores_clean":          f.Scaling.CleanAll,
		"parallel_scaling_median":           round3(f.Scaling.Median),
		"parallel_cpu_share_min":            round3(f.Scaling.MinShare),
		"parallel_pinned":                   b2i(f.Scaling.Pinned),
		"parallel_steal_ms":                 round3(f.Scaling.StealMS),
		"parallel_scaling_reference":        round3(f.RefScaling.Best),
		"parallel_scaling_reference_median": round3(f.RefScaling.Median),
		"reference_ns_p50":                  round3(f.Reference.P50),
		"reference_ns_p90":                  round3(f.Reference.P90),
		"sample_migrations":                 f.Sched.Migrations,
		"sample_involuntary_switches":       f.Sched.Involuntary,
		"sample_page_faults":                f.Sched.Faults,
		"lookups_per_sample":                f.PerSample,
	}
	for _, c := range f.cases() {
		for _, p := range []struct {
			k string
			v float64
		}{{"min", c.s.Min}, {"p50", c.s.P50}, {"p90", c.s.P90}, {"p95", c.s.P95}, {"max", c.s.Max}} {
			m[c.key+"_ns_"+p.k] = round3(p.v)
		}
	}
	return m
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// b2i is 1 for true: the --json object holds numbers only.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type namedStats struct {
	key, title string
	s          *Stats
}

func (f *Family) cases() []namedStats {
	return []namedStats{
		{"fast_path", "(a) Lookup, no custom rules (fast path)", &f.FastPath},
		{"rule_walk", fmt.Sprintf("(b) Lookup, %d non-matching custom rules (rule walk)", f.Rules), &f.RuleWalk},
		{"batch_same_dst_hints", "(c) LookupBatch, 64 flows to one destination, hints", &f.SameHints},
		{"batch_same_dst_no_hints", "(c) LookupBatch, 64 flows to one destination, no hints", &f.SameNoHints},
		{"batch_distinct_hints", "(d) LookupBatch, 64 distinct destinations, hints", &f.DistHints},
		{"batch_distinct_no_hints", "(d) LookupBatch, 64 distinct destinations, no hints", &f.DistNoHints},
	}
}

// Namespace is one family's lookup plane of a benchmark namespace.
type Namespace struct {
	FIB    *fib.FIB
	Tables *fib.Tables
	Rules  *rulesops.Ops
	// Flows are flows to addresses inside the routes (every lookup hits).
	Flows []flow.Key
}

// noDevices resolves no device name: the benchmark's rules name none.
type noDevices struct{}

// IndexByName implements rulesops.Devices.
func (noDevices) IndexByName([]byte) int32 { return 0 }

// Build returns a namespace of family fam (4 or 6) with n random routes in
// main: IPv4 /16–/32 (mostly /24), IPv6 /32–/64 (mostly /48) under
// 2001::/16, all through one gateway; and up to MaxFlows flows into them.
func Build(fam, n int, seed int64, progress func(done, total int)) (*Namespace, error) {
	af := uint8(rtnl.AF_INET)
	tb := fib.NewIPv4()
	if fam == 6 {
		af, tb = rtnl.AF_INET6, fib.NewIPv6()
	}
	ops := rulesops.NewOps(af, rulesops.Env{Config: &rtnl.LockConfig{RTNL: &rtnl.RTNL{}}, Tables: tb, Devices: noDevices{}})
	ns := &Namespace{FIB: fib.NewFIB(tb, ops), Tables: tb, Rules: ops}
	rng := rand.New(rand.NewSource(seed + int64(fam)))
	gw4, gw6 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fe80::1")
	for added := 0; added < n; {
		r := fib.Route{Family: af, Table: rtnl.RT_TABLE_MAIN, Type: rtnl.RTN_UNICAST, Protocol: rtnl.RTPROT_STATIC}
		var dst netip.Addr
		if fam == 4 {
			a := [4]byte{byte(1 + rng.Intn(223)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}
			dst = netip.AddrFrom4(a)
			r.Dst = netip.PrefixFrom(dst, length(rng, 24, 16, 32)).Masked()
			r.Nexthops = []fib.Nexthop{{Gateway: gw4, Dev: 2, Weight: 1}}
		} else {
			var a [16]byte
			a[0], a[1] = 0x20, 0x01
			for i := 2; i < 16; i++ {
				a[i] = byte(rng.Intn(256))
			}
			dst = netip.AddrFrom16(a)
			r.Dst = netip.PrefixFrom(dst, length(rng, 48, 32, 64)).Masked()
			r.Priority = 1024
			r.Nexthops = []fib.Nexthop{{Gateway: gw6, Dev: 2, Weight: 1}}
		}
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			if err.Errno == syscall.EEXIST {
				continue
			}
			return nil, fmt.Errorf("insert %v: %v", r.Dst, err)
		}
		added++
		if len(ns.Flows) < MaxFlows {
			ns.Flows = append(ns.Flows, flow.Key{Dst: dst, IIF: 1, Proto: 17})
		}
		if progress != nil && (added%1024 == 0 || added == n) {
			progress(added, n)
		}
	}
	// Shuffle the flows: consecutive flows go to unrelated prefixes.
	rng.Shuffle(len(ns.Flows), func(i, j int) { ns.Flows[i], ns.Flows[j] = ns.Flows[j], ns.Flows[i] })
	for _, k := range ns.Flows {
		if _, err := ns.FIB.Lookup(k); err != 0 {
			return nil, fmt.Errorf("lookup %v: %v", k.Dst, err)
		}
	}
	return ns, nil
}

// length draws a prefix length: usual 60 % of the time, else uniform in
// [lo, usual) or (usual, hi].
func length(rng *rand.Rand, usual, lo, hi int) int {
	switch x := rng.Intn(20); {
	case x < 5:
		return lo + rng.Intn(usual-lo)
	case x < 8:
		return usual + 1 + rng.Intn(hi-usual)
	}
	return usual
}

// AddRules adds k custom rules (priorities 100…, tables 1000…, fwmark
// 1… that no benchmark flow carries).
func (ns *Namespace) AddRules(k int) error {
	fam := ns.Rules.Family()
	for i := 0; i < k; i++ {
		m := &rtnl.RuleMsg{Family: fam, Action: rtnl.FR_ACT_TO_TBL, Table: 0,
			Priority: uint32(100 + i), Table32: uint32(1000 + i), FwMark: uint32(i + 1)}
		m.Present = 1<<rtnl.FRA_PRIORITY | 1<<rtnl.FRA_TABLE | 1<<rtnl.FRA_FWMARK
		if _, err := ns.Rules.NewRule(m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			return fmt.Errorf("rule %d: %v", i, err)
		}
	}
	return nil
}

// Run builds both families' namespaces and measures every case.
func Run(cfg Config) ([]*Family, error) {
	cfg.defaults()
	var out []*Family
	for _, fam := range []int{4, 6} {
		var progress func(done, total int)
		if cfg.Progress != nil {
			// Two namespaces per family: without rules and with them.
			progress = func(done, total int) { cfg.Progress(fam, done, total) }
		}
		ns, err := Build(fam, cfg.Routes, cfg.Seed, progress)
		if err != nil {
			return nil, err
		}
		withRules, err := Build(fam, cfg.Routes, cfg.Seed, progress)
		if err != nil {
			return nil, err
		}
		if err := withRules.AddRules(cfg.Rules); err != nil {
			return nil, err
		}
		f, err := Measure(ns, withRules, fam, &cfg)
		if err != nil {
			return nil, err
		}
		f.Routes = cfg.Routes
		out = append(out, f)
	}
	return out, nil
}

// Measure times every case: ns has no custom rules, withRules the same
// routes and flows and cfg.Rules custom rules (the rule walk). The cases
// are interleaved in blocks (sample), so that a change in the machine's
// load during the run shifts them all alike and their ratios stay
// meaningful.
func Measure(ns, withRules *Namespace, fam int, cfg *Config) (*Family, error) {
	cfg.defaults()
	f := &Family{Family: fam, Rules: cfg.Rules, Cores: cfg.Cores}
	flows := ns.Flows
	if len(flows) < BatchLen || len(withRules.Flows) != len(flows) {
		return nil, fmt.Errorf("%d flows: need %d routes or more", len(flows), BatchLen)
	}
	per := cfg.PerSample
	perB := max(BatchLen, per/BatchLen*BatchLen) // whole bursts
	// Bursts: one destination (the first flow of each window repeated) and
	// distinct destinations.
	same := make([]flow.Key, len(flows))
	for i := range flows {
		same[i] = flows[i/BatchLen*BatchLen]
	}
	res := make([]fib.Result, BatchLen)
	errs := make([]syscall.Errno, BatchLen)
	var bad syscall.Errno
	single := func(x *fib.FIB) func(int) {
		return func(off int) {
			// The flow index wraps with a compare, not a modulo: a
			// division per lookup would be a tenth of the figure.
			j := off % len(flows)
			for i := 0; i < per; i++ {
				if _, err := x.Lookup(flows[j]); err != 0 {
					bad = err
				}
				if j++; j == len(flows) {
					j = 0
				}
			}
		}
	}
	batch := func(src []flow.Key, hints bool) func(int) {
		bursts := len(src) / BatchLen
		return func(off int) {
			for i := 0; i < perB; i += BatchLen {
				o := (off + i) / BatchLen % bursts * BatchLen
				b := src[o : o+BatchLen]
				if hints {
					ns.FIB.LookupBatch(b, res, errs)
				} else {
					ns.FIB.LookupBatchNoHints(b, res, errs)
				}
				if errs[BatchLen-1] != 0 {
					bad = errs[BatchLen-1]
				}
			}
		}
	}
	cases := []struct {
		fn  func(int)
		out *Stats
	}{
		{single(ns.FIB), &f.FastPath},
		{single(withRules.FIB), &f.RuleWalk},
		{batch(same, true), &f.SameHints},
		{batch(same, false), &f.SameNoHints},
		{batch(flows, true), &f.DistHints},
		{batch(flows, false), &f.DistNoHints},
		// The reference work, interleaved with the cases like one.
		{func(int) { spinSink[0] = spin(int64(per)) }, &f.Reference},
	}
	fns := make([]func(int), len(cases))
	pers := make([]int, len(cases))
	for i, c := range cases {
		fns[i], pers[i] = c.fn, per
		if i >= 2 {
			pers[i] = perB
		}
	}
	var sts []Stats
	sts, f.Sched = sample(cfg.Samples, pers, fns)
	for i, st := range sts {
		*cases[i].out = st
	}
	f.ClockRead, f.PerSample = ClockRead(), per
	f.Scaling, f.RefScaling = parallel(ns.FIB, flows, ParallelConfig{Workers: cfg.Cores, Rounds: cfg.ParallelRounds, Phase: cfg.ParallelPhase})
	f.OneCore, f.AllCores = f.Scaling.BestOne, f.Scaling.BestAll
	if bad != 0 {
		return nil, fmt.Errorf("a lookup failed: %v", bad)
	}
	return f, nil
}

// sample times n samples of each of the cases fns, in blocks (see below),
// each sample of case c doing pers[c] lookups, and returns each case's
// per-lookup times, and the migrations and preemptions of the sampling
// thread meanwhile. A warm-up pass runs first. A sample is the goroutine's
// thread CPU time (CLOCK_THREAD_CPUTIME_ID, on a locked OS thread), not
// wall time: on a shared machine it does not count the time other
// processes ran, and on an idle one the two agree.
func sample(n int, pers []int, fns []func(off int)) ([]Stats, ThreadSched) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s0 := threadSched()
	for i := 0; i < n/10+1; i++ {
		for c, fn := range fns {
			fn(i * pers[c])
		}
	}
	out := make([][]float64, len(fns))
	for i := range out {
		out[i] = make([]float64, n)
	}
	// Blocks of samples per case, the cases of a round in a random order:
	// a block runs on the caches its own first samples warmed (the rule
	// walk's namespace is a second table of the same size), and a change
	// in the machine's load is spread over every case.
	rng := rand.New(rand.NewSource(int64(n)))
	const block = 50
	for start := 0; start < n; start += block {
		for _, c := range rng.Perm(len(fns)) {
			per := pers[c]
			for i := start; i < min(start+block, n); i++ {
				// A sample whose clock did not advance (seen once on
				// this VM: a minimum of 0 ns) is the clock's artifact,
				// not a measurement: it is taken again.
				for try := 0; ; try++ {
					t0 := threadCPU()
					fns[c](i * per)
					d := threadCPU() - t0
					if d > 0 || try == 3 {
						out[c][i] = float64(d) / float64(per)
						break
					}
				}
			}
		}
	}
	st := make([]Stats, len(fns))
	for i := range out {
		st[i] = statsOf(out[i])
	}
	s1 := threadSched()
	return st, ThreadSched{s1.Migrations - s0.Migrations, s1.Involuntary - s0.Involuntary, s1.Faults - s0.Faults}
}

// ClockRead returns the median cost of one threadCPU call in nanoseconds,
// from back-to-back reads on a locked thread: the part of a sample that is
// the clock, not the lookups.
func ClockRead() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := make([]float64, 2001)
	for i := range d {
		t0 := threadCPU()
		d[i] = float64(threadCPU() - t0)
	}
	sort.Float64s(d)
	return d[len(d)/2]
}

// threadCPU returns the calling thread's CPU time in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
