package fib

import (
	"math/rand"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rtt "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// benchRoutes is the table size of the lookup benchmarks: seed 000's
// 40,000 routes in main.
const benchRoutes = 40000

// benchFIB returns a FIB of family fam with n random routes in main (IPv4
// /16–/32, mostly /24; IPv6 /32–/64, mostly /48) and up to 1,024 flows to
// addresses inside them, and, when rules, ten custom rules (fwmark
// selectors no flow carries) that every lookup walks past before the main
// rule answers.
func benchFIB(b testing.TB, fam uint8, n int, rules bool) (*FIB, []flow.Key) {
	f, tb, ops := lkNewFIB(b, fam)
	rng := rand.New(rand.NewSource(int64(fam)))
	keys := make([]flow.Key, 0, 1024)
	for len(keys) < n {
		var r Route
		var dst netip.Addr
		if fam == rtnl.AF_INET {
			bits := 24
			switch x := rng.Intn(20); {
			case x < 5:
				bits = 16 + rng.Intn(8)
			case x < 8:
				bits = 25 + rng.Intn(8)
			}
			a := [4]byte{byte(1 + rng.Intn(223)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}
			p := netip.PrefixFrom(netip.AddrFrom4(a), bits).Masked()
			r = lkUni(fam, 254, p.String(), "10.0.0.2", 3)
			dst = netip.AddrFrom4(a) // inside p
		} else {
			bits := 48
			switch x := rng.Intn(20); {
			case x < 5:
				bits = 32 + rng.Intn(16)
			case x < 8:
				bits = 49 + rng.Intn(16)
			}
			var a [16]byte
			a[0], a[1] = 0x20, 0x01
			for i := 2; i < 8; i++ {
				a[i] = byte(rng.Intn(256))
			}
			p := netip.PrefixFrom(netip.AddrFrom16(a), bits).Masked()
			r = lkUni(fam, 254, p.String(), "fe80::1", 3)
			a[15] = 7
			dst = netip.AddrFrom16(a)
		}
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			continue // a duplicate prefix
		}
		if len(keys) < cap(keys) {
			keys = append(keys, flow.Key{Dst: dst, IIF: 1, Proto: 17})
		} else {
			n--
		}
	}
	if rules {
		h := rtt.V4(0)
		if fam == rtnl.AF_INET6 {
			h = rtt.V6(0)
		}
		for i := 0; i < 10; i++ {
			lkRule(b, ops, rtnl.RTM_NEWRULE, rtt.Body(h, rtt.Pref(uint32(100+i)), rtt.Table(uint32(1000+i)), rtt.U32(rtnl.FRA_FWMARK, uint32(i+1))))
		}
	}
	for _, k := range keys {
		if _, err := f.Lookup(k); err != 0 {
			b.Fatalf("%v: %v", k.Dst, err)
		}
	}
	return f, keys
}

func benchLookup(b *testing.B, fam uint8, rules bool) {
	f, keys := benchFIB(b, fam, benchRoutes, rules)
	lookupLoop(b, f, keys)
}

// lookupLoop is the benchmark loop of f.Lookup over keys in turn.
func lookupLoop(b *testing.B, f *FIB, keys []flow.Key) {
	b.ReportAllocs()
	b.ResetTimer()
	// The flow index wraps with a compare: a modulo per lookup would be
	// a tenth of the figure.
	for i := 0; b.Loop(); {
		if _, err := f.Lookup(keys[i]); err != 0 {
			b.Fatal(err)
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
}

// BenchmarkLookup4NoRules is the merged fast path (main, then default)
// with 40,000 routes (seed 000).
func BenchmarkLookup4NoRules(b *testing.B) { benchLookup(b, rtnl.AF_INET, false) }

// BenchmarkLookup4Rules walks the local rule, ten non-matching rules and
// the main rule.
func BenchmarkLookup4Rules(b *testing.B) { benchLookup(b, rtnl.AF_INET, true) }

// BenchmarkLookup6NoRules is fib6_rule_lookup() without custom rules:
// local, then main (seed 000).
func BenchmarkLookup6NoRules(b *testing.B) { benchLookup(b, rtnl.AF_INET6, false) }

// BenchmarkLookup6Rules walks the local rule, ten non-matching rules and
// the main rule.
func BenchmarkLookup6Rules(b *testing.B) { benchLookup(b, rtnl.AF_INET6, true) }

// benchLocal6 gives an IPv6 FIB's table local what a namespace with a
// device and two global addresses holds: ::1, the link-local address and
// its anycast, the global addresses and their subnet anycasts, ff00::/8.
func benchLocal6(b *testing.B, f *FIB) {
	for _, d := range []string{"::1/128", "fe80::1/128", "fe80::/128", "2001:db8::1/128", "2001:db8::/128",
		"2001:db8:0:1::1/128", "2001:db8:0:1::/128", "ff00::/8"} {
		r := Route{Family: rtnl.AF_INET6, Table: rtnl.RT_TABLE_LOCAL, Dst: netip.MustParsePrefix(d),
			Type: rtnl.RTN_LOCAL, Protocol: rtnl.RTPROT_KERNEL, Nexthops: []Nexthop{{Dev: 1, Weight: 1}}}
		if d == "ff00::/8" {
			r.Type, r.Priority, r.Nexthops[0].Dev = rtnl.RTN_MULTICAST, 256, 2
		}
		if _, err := f.tables.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			b.Fatalf("%s: %v", d, err)
		}
	}
}

// BenchmarkLookup6NoRulesLocalAddrs is BenchmarkLookup6NoRules in a
// namespace whose table local holds addresses (benchLocal6): the fast path
// first asks whether local holds the destination (noPrefix6).
func BenchmarkLookup6NoRulesLocalAddrs(b *testing.B) {
	f, keys := benchFIB(b, rtnl.AF_INET6, benchRoutes, false)
	benchLocal6(b, f)
	b.ReportAllocs()
	for i := 0; b.Loop(); {
		if _, err := f.Lookup(keys[i]); err != 0 {
			b.Fatal(err)
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
}

// benchBatch times LookupBatch over bursts of 64 flows, to one destination
// (same) or to 64 (distinct), with or without hints (seed 003), and
// reports ns per lookup.
func benchBatch(b *testing.B, fam uint8, same, hints bool) {
	f, keys := benchFIB(b, fam, benchRoutes, false)
	const n = 64
	var bursts [][]flow.Key
	for i := 0; i+n <= len(keys); i += n {
		burst := make([]flow.Key, n)
		for j := range burst {
			burst[j] = keys[i+j]
			if same {
				burst[j] = keys[i]
			}
		}
		bursts = append(bursts, burst)
	}
	res := make([]Result, n)
	errs := make([]syscall.Errno, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if hints {
			f.LookupBatch(bursts[i%len(bursts)], res, errs)
		} else {
			f.LookupBatchNoHints(bursts[i%len(bursts)], res, errs)
		}
		if errs[n-1] != 0 {
			b.Fatal(errs[n-1])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/lookup")
}

// BenchmarkLookupBatch4SameDstHints: 64 flows to one destination, hints on.
func BenchmarkLookupBatch4SameDstHints(b *testing.B) { benchBatch(b, rtnl.AF_INET, true, true) }

// BenchmarkLookupBatch4SameDstNoHints: the same without hints.
func BenchmarkLookupBatch4SameDstNoHints(b *testing.B) { benchBatch(b, rtnl.AF_INET, true, false) }

// BenchmarkLookupBatch4DistinctHints: 64 distinct destinations, hints on
// (the hint check's cost).
func BenchmarkLookupBatch4DistinctHints(b *testing.B) { benchBatch(b, rtnl.AF_INET, false, true) }

// BenchmarkLookupBatch4DistinctNoHints: the same without hints.
func BenchmarkLookupBatch4DistinctNoHints(b *testing.B) { benchBatch(b, rtnl.AF_INET, false, false) }

// BenchmarkLookupBatch6SameDstHints is the IPv6 twin.
func BenchmarkLookupBatch6SameDstHints(b *testing.B) { benchBatch(b, rtnl.AF_INET6, true, true) }

// BenchmarkLookupBatch6SameDstNoHints is the IPv6 twin.
func BenchmarkLookupBatch6SameDstNoHints(b *testing.B) { benchBatch(b, rtnl.AF_INET6, true, false) }

// BenchmarkLookupBatch6DistinctHints is the IPv6 twin.
func BenchmarkLookupBatch6DistinctHints(b *testing.B) { benchBatch(b, rtnl.AF_INET6, false, true) }

// BenchmarkLookupBatch6DistinctNoHints is the IPv6 twin.
func BenchmarkLookupBatch6DistinctNoHints(b *testing.B) { benchBatch(b, rtnl.AF_INET6, false, false) }

// benchParallel runs the fast path from every core (b.RunParallel): with
// no reference count and nothing written on the read path (seed 001) the
// rate scales with the cores; compare ns/op with BenchmarkLookup*NoRules
// run with -cpu 1.
func benchParallel(b *testing.B, fam uint8) {
	f, keys := benchFIB(b, fam, benchRoutes, false)
	var mu sync.Mutex
	seed := 0
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		i := seed * 97 % len(keys)
		seed++
		mu.Unlock()
		for pb.Next() {
			if _, err := f.Lookup(keys[i]); err != 0 {
				b.Error(err)
				return
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}

// BenchmarkLookup4Parallel is the IPv4 fast path from every core.
func BenchmarkLookup4Parallel(b *testing.B) { benchParallel(b, rtnl.AF_INET) }

// BenchmarkLookup6Parallel is the IPv6 fast path from every core.
func BenchmarkLookup6Parallel(b *testing.B) { benchParallel(b, rtnl.AF_INET6) }

// BenchmarkLookupFloorBart is the floor under the fast path: bart's
// longest-prefix match alone on the same 40,000-route main table, without
// choosing an entry or building a Result.
func BenchmarkLookupFloorBart(b *testing.B) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		name := "4"
		if fam == rtnl.AF_INET6 {
			name = "6"
		}
		b.Run(name, func(b *testing.B) {
			f, keys := benchFIB(b, fam, benchRoutes, false)
			snap := f.tables.Snapshot()
			v, _ := snap.Table(rtnl.RT_TABLE_MAIN)
			if fam == rtnl.AF_INET {
				v, _ = snap.MergedMain()
			}
			bt := v.bt.big
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); {
				a := keys[i].Dst
				if _, _, ok := bt.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen())); !ok {
					b.Fatal("miss")
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkLookupIndex is the read index's probe alone (index.go) on the
// same table: the longest-prefix match the fast path pays instead of
// BenchmarkLookupFloorBart's.
func BenchmarkLookupIndex(b *testing.B) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		name := "4"
		if fam == rtnl.AF_INET6 {
			name = "6"
		}
		b.Run(name, func(b *testing.B) {
			f, keys := benchFIB(b, fam, benchRoutes, false)
			snap := f.tables.Snapshot()
			v, _ := snap.Table(rtnl.RT_TABLE_MAIN)
			if fam == rtnl.AF_INET {
				v, _ = snap.MergedMain()
			}
			x := v.bt.ix
			if x == nil || x.mode != ixFull {
				b.Fatalf("main has no full index: %+v", x)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); {
				if _, _, st := x.lookup(keys[i].Dst); st != ixHit {
					b.Fatalf("%v: state %d", keys[i].Dst, st)
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
}
