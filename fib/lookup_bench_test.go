package fib

import (
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rtt "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// benchFIB returns a FIB of family fam with n /24 (IPv4) or /64 (IPv6)
// routes in main and, when rules, ten custom rules that a flow walks past
// before the main rule answers.
func benchFIB(b *testing.B, fam uint8, n int, rules bool) (*FIB, []flow.Key) {
	f, tb, ops := lkNewFIB(b, fam)
	keys := make([]flow.Key, 0, 1024)
	for i := 0; i < n; i++ {
		var r Route
		var k flow.Key
		if fam == rtnl.AF_INET {
			a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0})
			r = lkUni(fam, 254, netip.PrefixFrom(a, 24).String(), "10.0.0.2", 3)
			k = flow.Key{Dst: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 7}), IIF: 1, Proto: 17}
		} else {
			var x [16]byte
			x[0], x[1], x[4], x[5] = 0x20, 0x01, byte(i>>8), byte(i)
			a := netip.AddrFrom16(x)
			r = lkUni(fam, 254, netip.PrefixFrom(a, 64).String(), "fe80::1", 3)
			x[15] = 7
			k = flow.Key{Dst: netip.AddrFrom16(x), IIF: 1, Proto: 17}
		}
		lkInsert(b, tb, r)
		if len(keys) < cap(keys) {
			keys = append(keys, k)
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
	return f, keys
}

func benchLookup(b *testing.B, fam uint8, rules bool) {
	f, keys := benchFIB(b, fam, 10000, rules)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := f.Lookup(keys[i%len(keys)]); err != 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup4NoRules is the merged fast path (main, then default).
func BenchmarkLookup4NoRules(b *testing.B) { benchLookup(b, rtnl.AF_INET, false) }

// BenchmarkLookup4Rules walks ten non-matching rules and the local rule.
func BenchmarkLookup4Rules(b *testing.B) { benchLookup(b, rtnl.AF_INET, true) }

// BenchmarkLookup6NoRules is fib6_rule_lookup() without custom rules.
func BenchmarkLookup6NoRules(b *testing.B) { benchLookup(b, rtnl.AF_INET6, false) }

// BenchmarkLookup6Rules walks ten non-matching rules and the local rule.
func BenchmarkLookup6Rules(b *testing.B) { benchLookup(b, rtnl.AF_INET6, true) }
