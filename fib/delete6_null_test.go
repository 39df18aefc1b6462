package fib

import (
	"net/netip"
	"syscall"
	"testing"
)

// TestIPv6DeleteDefaultFilteredOutOfNullEntryIsESRCH: ip6_route_del() runs
// its filters over the root node's null entry (dev lo, no gateway, metric
// 0xffffffff, proto kernel) before __ip6_del_rt() refuses it with ENOENT,
// so deleting ::/0 without a default route with a device other than lo, a
// gateway, another metric or another protocol is ESRCH (measured on Linux
// 6.18: `ip -6 route del ::/0 dev v0` says "No such process", `... dev lo`
// and `... proto kernel` say "No such file or directory").
func TestIPv6DeleteDefaultFilteredOutOfNullEntryIsESRCH(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{
		{del: m6("::/0", func(m *Match) { m.Oif = 1 }), errno: syscall.ENOENT},
		{del: m6("::/0", func(m *Match) { m.Priority = 0xffffffff }), errno: syscall.ENOENT},
		{del: m6("::/0", func(m *Match) { m.Protocol = 2 }), errno: syscall.ENOENT},
		{del: m6("::/0", func(m *Match) { m.Oif = 3 }), errno: syscall.ESRCH},
		{del: m6("::/0", func(m *Match) { m.Priority = 1024 }), errno: syscall.ESRCH},
		{del: m6("::/0", func(m *Match) { m.Protocol = 4 }), errno: syscall.ESRCH},
		{del: m6("::/0", func(m *Match) { m.Gateway = netip.MustParseAddr("fe80::1"); m.Oif = 1 }), errno: syscall.ESRCH},
	})
}

// TestIPv6ReplaceWithoutCreateOnExistingNodeHasNoExtack: NLM_F_REPLACE
// without NLM_F_CREATE and no route to replace is ENOENT "Can not replace
// route - no match found" only when fib6_add_1() finds no node for the
// prefix; the root (::/0, holding the null entry) and a node with routes
// of another metric reach fib6_add_rt2node(), whose ENOENT has no
// message (`ip -6 route change default dev lo` on Linux 6.18; found by
// TestDiffRand).
func TestIPv6ReplaceWithoutCreateOnExistingNodeHasNoExtack(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{{add: "2001:db8:5::/64 dev 3 metric 10", flags: fAdd}})
	for _, tc := range []struct {
		dst  string
		want string
	}{{"::/0", ""}, {"2001:db8:5::/64", ""}, {"2001:db8:6::/64", "Can not replace route - no match found"}} {
		_, err := tb.Insert(rt(tc.dst+" dev 3 metric 20"), fChange)
		if err == nil || err.Errno != syscall.ENOENT || err.Msg != tc.want {
			t.Errorf("replace %s without create: %v, kernel ENOENT %q", tc.dst, err, tc.want)
		}
	}
}
