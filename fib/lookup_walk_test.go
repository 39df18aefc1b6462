package fib

import (
	"maps"
	"math/rand"
	"net/netip"
	"slices"
	"testing"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// localRandPrefix4 returns a prefix an IPv4 table local holds (the
// loopback net and its addresses, a namespace's addresses and their
// broadcasts) or, now and then, any prefix, short ones (< /8) included.
func localRandPrefix4(rng *rand.Rand) netip.Prefix {
	a := [4]byte{10, byte(rng.Intn(3)), byte(rng.Intn(2)), byte(rng.Intn(256))}
	switch rng.Intn(6) {
	case 0:
		return netip.MustParsePrefix("127.0.0.0/8")
	case 1:
		a[0] = 127
	case 2:
		a[0] = byte(rng.Intn(256))
		return netip.PrefixFrom(netip.AddrFrom4(a), rng.Intn(33)).Masked()
	case 3:
		a[0] = 192
	}
	return netip.PrefixFrom(netip.AddrFrom4(a), 32)
}

// TestLocalSummary4MatchesScan: the rule walk's question whether an IPv4
// tiny table holds a prefix containing the destination (noPrefixTiny's
// summary: first octets, short prefixes) never says no where a linear scan
// of every stored prefix finds one, over random local tables and
// destinations (in, beside and far from their prefixes); it answers no for
// a good share, and the index's own scan agrees whenever it does.
func TestLocalSummary4MatchesScan(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	decided, compared := 0, 0
	for round := 0; round < 300; round++ {
		s, m := randTinyLocal(rng, rtnl.AF_INET, localRandPrefix4)
		if s.ix == nil || s.ix.mode != ixTiny || s.fx != nil {
			t.Fatalf("round %d: %d prefixes, no tiny index", round, len(m))
		}
		for range 100 {
			b := localRandPrefix4(rng).Addr().As4()
			switch rng.Intn(4) {
			case 0:
				b[3] ^= byte(1 + rng.Intn(255))
			case 1:
				b[0] = byte(1 + rng.Intn(223)) // the benchmark's destinations
			case 2:
				b[1] ^= 0x40
			}
			dst := netip.AddrFrom4(b)
			k := flow.Key{Dst: dst}
			_, _, inLocal := ixRefLPM(m, dst)
			got := noPrefixTiny(s.ix, &k)
			if got && inLocal {
				t.Fatalf("round %d: local %v, %v: the summary says no prefix, the scan finds one", round, slices.Collect(maps.Keys(m)), dst)
			}
			_, _, st := s.ix.lookup(dst)
			if (st == ixNone) != !inLocal {
				t.Fatalf("round %d: %v: index state %v, scan %v", round, dst, st, inLocal)
			}
			compared++
			if got {
				decided++
			}
		}
	}
	t.Logf("%d of %d answers decided by the summary", decided, compared)
	if decided < compared/5 {
		t.Errorf("the summary decided only %d of %d answers", decided, compared)
	}
}

// TestNoPrefixTinyOtherForms: the summary answers only for a tiny index of
// the destination's family; a missing or full index, or the other family,
// leave the question to the probe.
func TestNoPrefixTinyOtherForms(t *testing.T) {
	var s4, s6 *store
	l4 := leaf{head: &attrs{r: Route{Family: rtnl.AF_INET, Type: rtnl.RTN_LOCAL}}}
	l6 := leaf{head: &attrs{r: Route{Family: rtnl.AF_INET6, Type: rtnl.RTN_LOCAL}}}
	s4 = s4.with(netip.MustParsePrefix("127.0.0.0/8"), leaf{}, l4)
	s6 = s6.with(netip.MustParsePrefix("::1/128"), leaf{}, l6)
	k4, k6 := flow.Key{Dst: netip.MustParseAddr("8.8.8.8")}, flow.Key{Dst: netip.MustParseAddr("2001:db8::1")}
	full := &lpmIndex{mode: ixFull, full: &fullIndex{}}
	for _, c := range []struct {
		name string
		x    *lpmIndex
		k    *flow.Key
		want bool
	}{
		{"v4 tiny, v4 dst", s4.ix, &k4, true},
		{"v4 tiny, loopback dst", s4.ix, &flow.Key{Dst: netip.MustParseAddr("127.0.0.9")}, false},
		{"v4 tiny, v6 dst", s4.ix, &k6, false},
		{"v6 tiny, v6 dst", s6.ix, &k6, true},
		{"v6 tiny, v4 dst", s6.ix, &k4, false},
		{"nil index", nil, &k4, false},
		{"full index", full, &k4, false},
	} {
		if got := noPrefixTiny(c.x, c.k); got != c.want {
			t.Errorf("%s: noPrefixTiny %v, want %v", c.name, got, c.want)
		}
	}
}

// benchLocal4 gives an IPv4 FIB's table local what a namespace with lo
// and one address on a /24 holds: the loopback net, its address and
// broadcast, the address and the subnet's broadcast.
func benchLocal4(b *testing.B, f *FIB) {
	for _, d := range []string{"127.0.0.0/8", "127.0.0.1/32", "127.255.255.255/32", "10.0.0.1/32", "10.0.0.255/32"} {
		typ := uint8(rtnl.RTN_LOCAL)
		if d[len(d)-6:] == "255/32" {
			typ = rtnl.RTN_BROADCAST
		}
		r := Route{Family: rtnl.AF_INET, Table: rtnl.RT_TABLE_LOCAL, Dst: netip.MustParsePrefix(d),
			Type: typ, Scope: rtnl.RT_SCOPE_HOST, Protocol: rtnl.RTPROT_KERNEL, Nexthops: []Nexthop{{Dev: 1, Weight: 1}}}
		if _, err := f.tables.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			b.Fatalf("%s: %v", d, err)
		}
	}
}

// benchRulesLocal is BenchmarkLookup{4,6}Rules in a namespace whose table
// local holds addresses: the walk's probe of local asks the tiny index's
// summary (noPrefixTiny) before the general path would scan it.
func benchRulesLocal(b *testing.B, fam uint8) {
	f, keys := benchFIB(b, fam, benchRoutes, true)
	if fam == rtnl.AF_INET {
		benchLocal4(b, f)
	} else {
		benchLocal6(b, f)
	}
	if s := f.tables.Snapshot(); s.lm != nil && s.lm.merged {
		b.Fatal("local and main still merged with custom rules")
	}
	lookupLoop(b, f, keys)
}

// BenchmarkLookup4RulesLocalAddrs is BenchmarkLookup4Rules with a table
// local of five prefixes (benchLocal4).
func BenchmarkLookup4RulesLocalAddrs(b *testing.B) { benchRulesLocal(b, rtnl.AF_INET) }

// BenchmarkLookup6RulesLocalAddrs is BenchmarkLookup6Rules with a table
// local of eight prefixes (benchLocal6).
func BenchmarkLookup6RulesLocalAddrs(b *testing.B) { benchRulesLocal(b, rtnl.AF_INET6) }
