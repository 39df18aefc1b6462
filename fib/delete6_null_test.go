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
