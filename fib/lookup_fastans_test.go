package fib

import (
	"maps"
	"math/rand"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// fastAnsLeaf builds a leaf of the given entries (stored order).
func fastAnsLeaf(rs ...Route) leaf {
	s := make([]*attrs, len(rs))
	for i := range rs {
		s[i] = &attrs{r: rs[i]}
	}
	return leafOf(s)
}

// TestFastAnsCases: which entry lists get a precomputed answer (fastOf),
// case by case.
func TestFastAnsCases(t *testing.T) {
	gw4, gw6 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fe80::1")
	hop4 := func(dev int32, flags uint8) Nexthop { return Nexthop{Gateway: gw4, Dev: dev, Flags: flags, Weight: 1} }
	hop6 := func(dev int32, flags uint8) Nexthop { return Nexthop{Gateway: gw6, Dev: dev, Flags: flags, Weight: 1} }
	uni4 := func(hops ...Nexthop) Route {
		return Route{Family: rtnl.AF_INET, Type: rtnl.RTN_UNICAST, Nexthops: hops}
	}
	uni6 := func(hops ...Nexthop) Route {
		return Route{Family: rtnl.AF_INET6, Type: rtnl.RTN_UNICAST, Priority: 1024, Nexthops: hops}
	}
	dead := uint8(rtnl.RTNH_F_DEAD)
	tests := []struct {
		name string
		l    leaf
		want fastAns
	}{
		{"empty", leaf{}, noFast},
		{"v4 one hop", fastAnsLeaf(uni4(hop4(2, 0))), fastAns{nh: 0, aux: rtnl.RT_SCOPE_UNIVERSE}},
		{"v4 first hop dead", fastAnsLeaf(uni4(hop4(2, dead), hop4(3, 0))), fastAns{nh: 1}},
		{"v4 every hop dead", fastAnsLeaf(uni4(hop4(2, dead))), noFast},
		{"v4 link scope keeps its scope", fastAnsLeaf(func() Route { r := uni4(hop4(2, 0)); r.Scope = rtnl.RT_SCOPE_LINK; return r }()),
			fastAns{nh: 0, aux: rtnl.RT_SCOPE_LINK}},
		{"v4 tos entry first", fastAnsLeaf(func() Route { r := uni4(hop4(2, 0)); r.Tos = 0x10; return r }(), uni4(hop4(3, 0))), noFast},
		{"v4 first of several answers", fastAnsLeaf(uni4(hop4(2, 0)), uni4(hop4(3, 0))), fastAns{nh: 0}},
		{"v4 unreachable", fastAnsLeaf(Route{Family: rtnl.AF_INET, Type: rtnl.RTN_UNREACHABLE}), noFast},
		{"v4 blackhole with a hop", fastAnsLeaf(Route{Family: rtnl.AF_INET, Type: rtnl.RTN_BLACKHOLE, Nexthops: []Nexthop{hop4(2, 0)}}), noFast},
		{"v6 one hop", fastAnsLeaf(uni6(hop6(2, 0))), fastAns{nh: 0}},
		{"v6 first hop dead", fastAnsLeaf(uni6(hop6(2, dead), hop6(3, 0))), fastAns{nh: 1}},
		{"v6 every hop dead", fastAnsLeaf(uni6(hop6(2, dead))), noFast},
		{"v6 two entries", fastAnsLeaf(uni6(hop6(2, 0)), uni6(hop6(3, 0))), noFast},
		{"v6 source prefix", fastAnsLeaf(func() Route { r := uni6(hop6(2, 0)); r.Src = netip.MustParsePrefix("2001:db8::/64"); return r }()), noFast},
		{"v6 reject without hops", fastAnsLeaf(Route{Family: rtnl.AF_INET6, Type: rtnl.RTN_PROHIBIT}), noFast},
		{"v6 blackhole with a hop answers its error", fastAnsLeaf(Route{Family: rtnl.AF_INET6, Type: rtnl.RTN_BLACKHOLE, Nexthops: []Nexthop{hop6(1, 0)}}),
			fastAns{nh: 0, aux: uint8(TypeError(rtnl.RTN_BLACKHOLE))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fastOf(tc.l), cmp.AllowUnexported(fastAns{})); diff != "" {
				t.Errorf("fastOf (-want +got):\n%s", diff)
			}
		})
	}
}

// fastAnsRand draws a random entry list of family v6: types, tos, scope,
// dead hops, several hops and entries, source prefixes, preferences.
func fastAnsRand(rng *rand.Rand, v6 bool) leaf {
	types := []uint8{rtnl.RTN_UNICAST, rtnl.RTN_UNICAST, rtnl.RTN_UNICAST, rtnl.RTN_LOCAL, rtnl.RTN_BLACKHOLE, rtnl.RTN_UNREACHABLE, rtnl.RTN_PROHIBIT, rtnl.RTN_THROW}
	n := 1 + rng.Intn(3)
	if rng.Intn(2) == 0 {
		n = 1
	}
	rs := make([]Route, n)
	for i := range rs {
		r := Route{Family: rtnl.AF_INET, Type: types[rng.Intn(len(types))]}
		if v6 {
			r.Family, r.Priority, r.Pref = rtnl.AF_INET6, uint32(1024*(1+rng.Intn(2))), uint8(rng.Intn(4))
			if rng.Intn(5) == 0 {
				r.Src = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(rng.Intn(2))}), 40)
			}
		} else {
			if rng.Intn(4) == 0 {
				r.Tos = byte(rng.Intn(8)) << 2
			}
			r.Scope = []uint8{rtnl.RT_SCOPE_UNIVERSE, rtnl.RT_SCOPE_LINK, rtnl.RT_SCOPE_HOST}[rng.Intn(3)]
		}
		if rng.Intn(6) != 0 {
			for j := 0; j < 1+rng.Intn(3); j++ {
				h := Nexthop{Dev: int32(2 + rng.Intn(3)), Weight: 1}
				if rng.Intn(3) == 0 {
					h.Flags = rtnl.RTNH_F_DEAD
				}
				r.Nexthops = append(r.Nexthops, h)
			}
		}
		rs[i] = r
	}
	return fastAnsLeaf(rs...)
}

// TestFastAnsMatchesChoose: a precomputed answer (fastAns) is what the
// per-prefix choice the fast path otherwise runs (choose4, choose6: the
// slow, obvious reading of every entry) answers for every flow it is used
// for — no output device, and for IPv4 a flow scope up to the entry's —
// over random entry lists and random flows (tos, scope, source).
func TestFastAnsMatchesChoose(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, v6 := range []bool{false, true} {
		used := 0
		for i := 0; i < 20000; i++ {
			l := fastAnsRand(rng, v6)
			fa := fastOf(l)
			k := flow.Key{Dst: netip.MustParseAddr("10.1.2.3"), TOS: byte(rng.Intn(256)) &^ 3,
				Scope: []uint8{rtnl.RT_SCOPE_UNIVERSE, rtnl.RT_SCOPE_LINK, rtnl.RT_SCOPE_HOST}[rng.Intn(3)]}
			if v6 {
				k = flow.Key{Dst: netip.MustParseAddr("2001:db8:1::7"), Src: netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(rng.Intn(2)), 9})}
			}
			if fa.nh < 0 || !v6 && k.Scope > fa.aux {
				continue // the fast path reads the entries
			}
			used++
			es := Entries{l: l, hi: l.len()}
			var h hit = noHit
			var err syscall.Errno
			var ok bool
			if v6 {
				err, ok = choose6(&es, &k, 0, false, &h)
			} else {
				err, ok = choose4(&es, &k, &h)
			}
			wantErr := syscall.Errno(0)
			if v6 {
				wantErr = syscall.Errno(fa.aux)
			}
			if !ok || h.Entry != &l.head.r || h.NH != int(fa.nh) || err != wantErr {
				t.Fatalf("v6 %v entries %+v flow %+v: choose ok %v entry first %v nh %d err %v; fastAns %+v",
					v6, l.head.r, k, ok, h.Entry == &l.head.r, h.NH, err, fa)
			}
		}
		// Most random lists qualify for neither; a third or so must, or
		// the comparison tests nothing.
		if used < 2000 {
			t.Errorf("v6 %v: only %d of 20000 random entry lists had a precomputed answer", v6, used)
		}
		t.Logf("v6 %v: %d precomputed answers compared", v6, used)
	}
}

// localRandPrefix draws a prefix of an IPv6 local table: mostly /128
// addresses in a few /64s (global, link-local, loopback), ff00::/8, and now
// and then a shorter prefix of any length.
func localRandPrefix(rng *rand.Rand) netip.Prefix {
	var a [16]byte
	switch rng.Intn(4) {
	case 0:
		a[0], a[1] = 0xfe, 0x80
	case 1:
		a[15] = 1 // ::1
		return netip.PrefixFrom(netip.AddrFrom16(a), 128)
	default:
		a[0], a[1], a[2], a[3], a[7] = 0x20, 0x01, 0x0d, 0xb8, byte(rng.Intn(3))
	}
	a[15] = byte(rng.Intn(4))
	switch rng.Intn(8) {
	case 0:
		return netip.MustParsePrefix("ff00::/8")
	case 1:
		return netip.PrefixFrom(netip.AddrFrom16(a), rng.Intn(129)).Masked()
	}
	return netip.PrefixFrom(netip.AddrFrom16(a), 128)
}

// randTinyLocal is a random local table of 1 to tinyMax distinct prefixes
// of family fam drawn by prefix, as a store and as a map of its leaves.
func randTinyLocal(rng *rand.Rand, fam uint8, prefix func(*rand.Rand) netip.Prefix) (*store, map[netip.Prefix]leaf) {
	var s *store
	m := map[netip.Prefix]leaf{}
	for range 1 + rng.Intn(tinyMax) {
		p := prefix(rng)
		if _, ok := m[p]; ok {
			continue
		}
		l := leaf{head: &attrs{r: Route{Family: fam, Type: rtnl.RTN_LOCAL}}}
		s = s.with(p, leaf{}, l)
		m[p] = l
	}
	return s, m
}

// TestLocalSummaryMatchesScan: fast6's question whether table local holds
// a prefix containing the destination (noPrefix6) answers, with the tiny
// index's summary (bloom, short), what a linear scan of every stored prefix
// answers, over random local tables and destinations (in, beside and far
// from their prefixes, multicast); the summary alone decides a good share.
func TestLocalSummaryMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	decided, compared := 0, 0
	for round := 0; round < 300; round++ {
		s, m := randTinyLocal(rng, rtnl.AF_INET6, localRandPrefix)
		if s.ix == nil || s.ix.mode != ixTiny {
			t.Fatalf("round %d: %d prefixes, no tiny index", round, len(m))
		}
		for range 100 {
			dst := localRandPrefix(rng).Addr()
			b := dst.As16()
			switch rng.Intn(4) {
			case 0:
				b[15] ^= byte(1 + rng.Intn(255))
			case 1:
				b[0], b[1] = 0xff, 0x02 // multicast
			case 2:
				b[5] ^= 0x40 // another /64
			}
			dst = netip.AddrFrom16(b)
			k := flow.Key{Dst: dst}
			_, _, inLocal := ixRefLPM(m, dst)
			if got := noPrefix6(s.ix, &k); got == inLocal {
				t.Fatalf("round %d: local %v, %v: noPrefix6 %v, the scan finds a prefix: %v", round, slices.Collect(maps.Keys(m)), dst, got, inLocal)
			}
			compared++
			hi, _ := addrWords(dst)
			if s.ix.bloom&(1<<bloomBit(hi)) == 0 {
				decided++
			}
		}
	}
	t.Logf("%d of %d answers decided by the summary", decided, compared)
	if decided < compared/5 {
		t.Errorf("the summary decided only %d of %d answers", decided, compared)
	}
}
