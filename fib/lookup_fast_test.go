package fib

import (
	"math/rand"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestFastPathMatchesReference: the written-out common case of the
// no-custom-rules lookup (fast4, fast6: lookup_fast.go) answers, whenever
// it answers at all, what the slow reference (linear longest-prefix scan)
// answers; and it does answer most flows, so that the figures of nlemu
// bench lookup are this path's. Random tables of the reference test with
// the read index's thresholds lowered, so that main has a full index with
// buckets, covers and slow buckets, and entries of every kind (tos,
// scope, dead hops, reject and throw routes, IPv6 preferences and
// multipath).
func TestFastPathMatchesReference(t *testing.T) {
	saved := [4]int{tinyMax, fullMin, fullDrop, bucketMax}
	defer func() { tinyMax, fullMin, fullDrop, bucketMax = saved[0], saved[1], saved[2], saved[3] }()
	tinyMax, fullMin, fullDrop, bucketMax = 2, 6, 3, 4
	for _, v6 := range []bool{false, true} {
		fam := uint8(rtnl.AF_INET)
		if v6 {
			fam = rtnl.AF_INET6
		}
		g := &refGen{rng: rand.New(rand.NewSource(11)), v6: v6}
		flows, answered, mismatches := 0, 0, 0
		for round := 0; round < 120; round++ {
			f, ref := g.round(t, fam, 0) // round 0: the default rules only
			if f.rules.HasCustomRules() {
				t.Fatal("round 0 has custom rules")
			}
			for i := 0; i < 500; i++ {
				k := g.flow()
				var res Result
				var err syscall.Errno
				var ok bool
				if v6 {
					err, ok = f.fast6(&k, &res)
				} else {
					err, ok = f.fast4(&k, &res)
				}
				flows++
				if !ok {
					continue
				}
				answered++
				if diff := cmp.Diff(ref.refLookup(k), answerOf(res, err)); diff != "" {
					if mismatches++; mismatches <= 5 {
						t.Errorf("family %d round %d flow %+v (-reference +fast path):\n%s", fam, round, k, diff)
					}
				}
			}
		}
		t.Logf("family %d: the fast path answered %d of %d flows", fam, answered, flows)
		if answered < flows/5 {
			t.Errorf("family %d: the fast path answered only %d of %d flows", fam, answered, flows)
		}
		if mismatches > 0 {
			t.Errorf("family %d: %d answers differ", fam, mismatches)
		}
	}
}

// TestFastPathAnswersBenchmarkFlows: every flow of the lookup benchmarks
// (40,000 random routes) takes the fast path, with the answer of the
// general path, so that BenchmarkLookup*NoRules and nlemu bench lookup
// measure it.
func TestFastPathAnswersBenchmarkFlows(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		f, keys := benchFIB(t, fam, benchRoutes, false)
		for _, k := range keys {
			var fast, slow Result
			var err syscall.Errno
			var ok bool
			if fam == rtnl.AF_INET6 {
				err, ok = f.fast6(&k, &fast)
			} else {
				err, ok = f.fast4(&k, &fast)
			}
			if !ok || err != 0 {
				t.Fatalf("family %d %v: fast path ok %v err %v", fam, k.Dst, ok, err)
			}
			serr := f.lookup(&k, &slow)
			if diff := cmp.Diff(answerOf(slow, serr), answerOf(fast, err)); diff != "" {
				t.Fatalf("family %d %v (-general +fast):\n%s", fam, k.Dst, diff)
			}
		}
	}
}
