package fib

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// iproute2's nlmsg flags per command (ip route add/append/prepend/replace/change).
const (
	fAdd     = rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	fAppend  = rtnl.NLM_F_CREATE | rtnl.NLM_F_APPEND
	fPrepend = rtnl.NLM_F_CREATE
	fReplace = rtnl.NLM_F_CREATE | rtnl.NLM_F_REPLACE
	fChange  = rtnl.NLM_F_REPLACE
)

// Devices of ROUTES-SPEC rs_4: v1 = 2, v0 = 3.
const (
	devV1 = 2
	devV0 = 3
)

func pf(s string) netip.Prefix {
	if !strings.Contains(s, "/") {
		a := netip.MustParseAddr(s)
		return netip.PrefixFrom(a, a.BitLen())
	}
	return netip.MustParsePrefix(s)
}

// rt builds a route from a compact description: "dst [tos N] [metric N]
// [proto N] [scope N] [type N] [src A] [via A] [dev N] [table N]
// [nexthop via A dev N]...".
func rt(desc string) Route {
	f := strings.Fields(desc)
	r := Route{Dst: pf(f[0]), Table: tableMain, Type: rtnl.RTN_UNICAST, Protocol: rtnl.RTPROT_BOOT}
	r.Family = afInet
	if r.Dst.Addr().Is6() {
		r.Family = afInet6
		r.Priority = 1024
	} else {
		r.Scope = rtnl.RT_SCOPE_LINK
	}
	var hop *Nexthop
	for i := 1; i+1 < len(f); i += 2 {
		k, v := f[i], f[i+1]
		var n uint64
		fmt.Sscan(v, &n)
		switch k {
		case "tos":
			fmt.Sscanf(v, "0x%x", &n)
			r.Tos = uint8(n)
		case "metric":
			r.Priority = uint32(n)
		case "proto":
			r.Protocol = uint8(n)
		case "scope":
			r.Scope = uint8(n)
		case "type":
			r.Type = uint8(n)
		case "table":
			r.Table = uint32(n)
		case "src":
			r.Prefsrc = netip.MustParseAddr(v)
		case "from":
			r.Src = pf(v)
		case "nexthop":
			r.Nexthops = append(r.Nexthops, Nexthop{Weight: 1})
			hop = &r.Nexthops[len(r.Nexthops)-1]
			i--
		case "via", "dev":
			if hop == nil {
				r.Nexthops = append(r.Nexthops, Nexthop{Weight: 1})
				hop = &r.Nexthops[0]
			}
			if k == "via" {
				hop.Gateway = netip.MustParseAddr(v)
				if r.Family == afInet {
					r.Scope = rtnl.RT_SCOPE_UNIVERSE
				}
			} else {
				hop.Dev = int32(n)
			}
		default:
			panic("rt: unknown key " + k)
		}
	}
	return r
}

// brief prints a route the way the tests compare them.
func brief(r Route) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", r.Dst)
	if r.Src.IsValid() {
		fmt.Fprintf(&b, " from %v", r.Src)
	}
	if r.Tos != 0 {
		fmt.Fprintf(&b, " tos 0x%02x", r.Tos)
	}
	fmt.Fprintf(&b, " t%d m%d p%d s%d y%d", r.Table, r.Priority, r.Protocol, r.Scope, r.Type)
	if r.Prefsrc.IsValid() {
		fmt.Fprintf(&b, " src %v", r.Prefsrc)
	}
	for _, h := range r.Nexthops {
		b.WriteString(" [")
		if h.Gateway.IsValid() {
			fmt.Fprintf(&b, "via %v ", h.Gateway)
		}
		fmt.Fprintf(&b, "dev %d", h.Dev)
		if h.Flags != 0 {
			fmt.Fprintf(&b, " f%#x", h.Flags)
		}
		b.WriteString("]")
	}
	return b.String()
}

func show(tb *Tables, table uint32, dst string) []string {
	v, ok := tb.Snapshot().Table(table)
	if !ok {
		return nil
	}
	e, ok := v.Get(pf(dst))
	if !ok {
		return nil
	}
	var out []string
	for r := range e.All() {
		out = append(out, brief(r))
	}
	return out
}

func dump(tb *Tables, table uint32) []string {
	v, ok := tb.Snapshot().Table(table)
	if !ok {
		return nil
	}
	var out []string
	for _, r := range v.Walk(Cursor{}) {
		out = append(out, brief(r))
	}
	return out
}

type step struct {
	add   string // route to insert with flags
	flags uint16
	del   *Match
	errno syscall.Errno
	msg   string
}

func run(t *testing.T, tb *Tables, steps []step) {
	t.Helper()
	for i, s := range steps {
		var err *rtnl.Error
		what := s.add
		if s.del != nil {
			_, err = tb.Delete(*s.del)
			what = "del " + brief(Route{Dst: s.del.Dst})
		} else {
			_, err = tb.Insert(rt(s.add), s.flags)
		}
		var got syscall.Errno
		var msg string
		if err != nil {
			got, msg = err.Errno, err.Msg
		}
		if got != s.errno || msg != s.msg {
			t.Fatalf("step %d (%s): got %v %q, want %v %q", i, what, got, msg, s.errno, s.msg)
		}
	}
}

// TestInsert4FlagsE7b replays ROUTES-SPEC E7b: EXCL against any entry of
// the same tos and priority, APPEND after and prepend (CREATE alone)
// before the group, an exact duplicate failing either way, REPLACE of the
// first entry, REPLACE without CREATE on a missing group, and the entry
// order tos descending then priority ascending.
func TestInsert4FlagsE7b(t *testing.T) {
	tb := NewIPv4()
	kernel := "10.0.0.0/24 dev 3 proto 2 scope 253 src 10.0.0.1"
	run(t, tb, []step{
		{add: kernel, flags: fAdd},
		{add: "10.0.0.0/24 dev 3", flags: fAdd, errno: syscall.EEXIST},
		{add: kernel, flags: fAdd, errno: syscall.EEXIST},
		{add: kernel, flags: fAppend, errno: syscall.EEXIST},
		{add: "10.0.0.0/24 dev 3", flags: fAppend},
		{add: "10.0.0.0/24 dev 3", flags: fAppend, errno: syscall.EEXIST},
		{add: "10.0.0.0/24 via 10.0.0.3 dev 3", flags: fPrepend},
		{add: "10.99.0.0/16 dev 3", flags: fChange, errno: syscall.ENOENT},
		{add: "10.99.0.0/16 dev 3", flags: 0, errno: syscall.ENOENT},
		{add: "10.99.0.0/16 dev 3", flags: fReplace},
		{add: "10.99.0.0/16 via 10.0.0.2 dev 3", flags: fReplace},
		{add: "10.99.0.0/16 via 10.0.0.3 dev 3 metric 7", flags: fChange, errno: syscall.ENOENT},
		{add: "10.80.0.0/16 dev 3 metric 5", flags: fAdd},
		{add: "10.80.0.0/16 dev 3 metric 6", flags: fAdd},
		{add: "10.80.0.0/16 via 10.0.0.2 dev 3 metric 5", flags: fAdd, errno: syscall.EEXIST},
		{add: "10.80.0.0/16 dev 3 tos 0x10", flags: fAdd},
		{add: "10.80.0.0/16 dev 3 tos 0x08 metric 5", flags: fAdd},
	})
	for _, c := range []struct {
		dst  string
		want []string
	}{
		{"10.0.0.0/24", []string{
			"10.0.0.0/24 t254 m0 p3 s0 y1 [via 10.0.0.3 dev 3]",
			"10.0.0.0/24 t254 m0 p2 s253 y1 src 10.0.0.1 [dev 3]",
			"10.0.0.0/24 t254 m0 p3 s253 y1 [dev 3]",
		}},
		{"10.99.0.0/16", []string{"10.99.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.2 dev 3]"}},
		{"10.80.0.0/16", []string{
			"10.80.0.0/16 tos 0x10 t254 m0 p3 s253 y1 [dev 3]",
			"10.80.0.0/16 tos 0x08 t254 m5 p3 s253 y1 [dev 3]",
			"10.80.0.0/16 t254 m5 p3 s253 y1 [dev 3]",
			"10.80.0.0/16 t254 m6 p3 s253 y1 [dev 3]",
		}},
	} {
		if d := cmp.Diff(c.want, show(tb, tableMain, c.dst)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.dst, d)
		}
	}
}

// TestInsert4Notifications: the flags of RTM_NEWROUTE notifications as
// fib_table_insert() sets them: NLM_F_EXCL|NLM_F_CREATE for a new
// tos/priority group, NLM_F_CREATE alone (prepend) or with NLM_F_APPEND
// in an existing group, NLM_F_REPLACE for a replace; a replace with an
// identical first entry changes and notifies nothing.
func TestInsert4Notifications(t *testing.T) {
	tb := NewIPv4()
	for _, c := range []struct {
		route string
		flags uint16
		want  uint16
		none  bool
	}{
		{"10.1.0.0/16 dev 3", fAdd, rtnl.NLM_F_EXCL | rtnl.NLM_F_CREATE, false},
		{"10.1.0.0/16 via 10.0.0.2 dev 3", fAppend, rtnl.NLM_F_CREATE | rtnl.NLM_F_APPEND, false},
		{"10.1.0.0/16 via 10.0.0.3 dev 3", fPrepend, rtnl.NLM_F_CREATE, false},
		{"10.1.0.0/16 via 10.0.0.4 dev 3", fReplace, rtnl.NLM_F_REPLACE, false},
		{"10.1.0.0/16 via 10.0.0.4 dev 3", fReplace, 0, true},
	} {
		ch, err := tb.Insert(rt(c.route), c.flags)
		if err != nil {
			t.Fatalf("%s: %v", c.route, err)
		}
		if c.none {
			if len(ch.Events) != 0 {
				t.Errorf("%s: events %+v, want none", c.route, ch.Events)
			}
			continue
		}
		if len(ch.Events) != 1 || ch.Events[0].Type != rtnl.RTM_NEWROUTE || ch.Events[0].Flags != c.want {
			t.Errorf("%s: events %+v, want one RTM_NEWROUTE flags %#x", c.route, ch.Events, c.want)
		}
	}
	want := []string{
		"10.1.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.4 dev 3]",
		"10.1.0.0/16 t254 m0 p3 s253 y1 [dev 3]",
		"10.1.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.2 dev 3]",
	}
	if d := cmp.Diff(want, show(tb, tableMain, "10.1.0.0/16")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func m4(dst string, f func(*Match)) *Match {
	m := &Match{Family: afInet, Table: tableMain, Dst: pf(dst), Scope: rtnl.RT_SCOPE_NOWHERE}
	if f != nil {
		f(m)
	}
	return m
}

// TestDelete4MatchingE8 replays ROUTES-SPEC E8: tos is never a wildcard,
// the first tos-0 entry in priority order goes, type/scope/protocol/
// prefsrc/device/gateway must match when given, multipath hop by hop
// against the route's hops (fewer hops in the request: no match), a
// missing table is ESRCH "FIB table does not exist".
func TestDelete4MatchingE8(t *testing.T) {
	tb := NewIPv4()
	setup := []step{
		{add: "10.80.0.0/16 dev 3 metric 5", flags: fAdd},
		{add: "10.80.0.0/16 dev 3 metric 6", flags: fAdd},
		{add: "10.80.0.0/16 dev 3 tos 0x10", flags: fAdd},
		{add: "10.80.0.0/16 dev 3 tos 0x08 metric 5", flags: fAdd},
		{add: "10.91.0.0/16 type 7 scope 0", flags: fAdd},
		{add: "10.120.0.0/16 nexthop via 10.0.0.2 dev 3 nexthop via 10.0.0.3 dev 3", flags: fAdd},
		{add: "10.121.0.0/16 nexthop via 10.0.0.2 dev 3 nexthop via 10.0.0.2 dev 3", flags: fAdd},
		{add: "10.82.0.0/16 dev 3 src 10.0.0.1", flags: fAdd},
	}
	run(t, tb, setup)
	gw := func(a string) func(*Match) { return func(m *Match) { m.Gateway = netip.MustParseAddr(a) } }
	run(t, tb, []step{
		{del: m4("10.80.0.0/16", nil)},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Tos = 0x10 })},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Priority = 5 }), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Tos = 0x08 })},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Oif = devV1 }), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Protocol = rtnl.RTPROT_KERNEL }), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", gw("10.0.0.2")), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Scope = rtnl.RT_SCOPE_HOST }), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Table = 55 }), errno: syscall.ESRCH, msg: "FIB table does not exist"},
		{del: m4("10.80.0.0/17", nil), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) {
			m.Oif, m.Scope, m.Priority, m.Protocol = devV0, rtnl.RT_SCOPE_LINK, 6, rtnl.RTPROT_BOOT
		})},
		{del: m4("10.91.0.0/16", func(m *Match) { m.Type = rtnl.RTN_BLACKHOLE }), errno: syscall.ESRCH},
		{del: m4("10.91.0.0/16", func(m *Match) { m.Type = rtnl.RTN_UNREACHABLE })},
		{del: m4("10.120.0.0/16", gw("10.0.0.3")), errno: syscall.ESRCH},
		{del: m4("10.120.0.0/16", gw("10.0.0.2"))},
		{del: m4("10.121.0.0/16", func(m *Match) {
			m.Multipath = []Nexthop{{Gateway: netip.MustParseAddr("10.0.0.2")}, {Gateway: netip.MustParseAddr("10.0.0.3")}}
		}), errno: syscall.ESRCH},
		{del: m4("10.121.0.0/16", func(m *Match) { m.Multipath = []Nexthop{{Gateway: netip.MustParseAddr("10.0.0.2")}} }), errno: syscall.ESRCH},
		{del: m4("10.121.0.0/16", func(m *Match) {
			m.Multipath = []Nexthop{{Gateway: netip.MustParseAddr("10.0.0.2")}, {Gateway: netip.MustParseAddr("10.0.0.2")}}
		})},
		{del: m4("10.82.0.0/16", func(m *Match) { m.Prefsrc = netip.MustParseAddr("10.0.0.77") }), errno: syscall.ESRCH},
		{del: m4("10.82.0.0/16", func(m *Match) { m.Prefsrc = netip.MustParseAddr("10.0.0.1") })},
		{del: m4("0.0.0.0/0", nil), errno: syscall.ESRCH},
	})
	if got := dump(tb, tableMain); len(got) != 0 {
		t.Errorf("left behind: %q", got)
	}
	if tb.Routes() != 0 {
		t.Errorf("Routes() = %d after deleting all", tb.Routes())
	}
	if len(tb.pool) != 0 {
		t.Errorf("intern pool keeps %d attrs after deleting all", len(tb.pool))
	}
}

func m6(dst string, f func(*Match)) *Match {
	m := &Match{Family: afInet6, Table: tableMain, Dst: pf(dst)}
	if f != nil {
		f(m)
	}
	return m
}

// TestInsert6FlagsE9b replays ROUTES-SPEC E9b and §2.6 6-12..6-17: REPLACE
// without match is ENOENT "Can not replace route - no match found", no
// flags creates anyway, a replace takes the first same-metric route of
// the same ECMP-ability, a gateway route of an existing metric becomes an
// ECMP sibling (append or not), a dev route a second entry, EXCL fails on
// any same-metric route, a duplicate hop fails, and a multipath add whose
// hops collide leaves nothing behind.
func TestInsert6FlagsE9b(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{
		{add: "2001:db8:77::/64 dev 3", flags: fChange, errno: syscall.ENOENT, msg: "Can not replace route - no match found"},
		{add: "2001:db8:77::/64 dev 3", flags: 0},
		{add: "2001:db8:77::/64 dev 3 metric 5", flags: fChange, errno: syscall.ENOENT}, // the node exists: no extack (E9b's PRIORITY=5 transcript)
		{add: "2001:db8:77::/64 dev 2", flags: fChange},
		{add: "2001:db8:77::/64 dev 3", flags: fAdd, errno: syscall.EEXIST},
		{add: "2001:db8:77::/64 dev 3", flags: fAppend},
		{add: "2001:db8:77::/64 dev 3", flags: fAppend, errno: syscall.EEXIST},
		{add: "2001:db8:3::/64 dev 3 metric 2000", flags: fAdd},
		{add: "2001:db8:3::/64 via 2001:db8::5 dev 3 metric 10", flags: fAdd},
		{add: "2001:db8:3::/64 via 2001:db8::7 dev 3", flags: fAdd},
		{add: "2001:db8:3::/64 via 2001:db8::9 dev 3", flags: fReplace},
		{add: "2001:db8:4::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::3 dev 3", flags: fAdd},
		{add: "2001:db8:4::/64 via 2001:db8::4 dev 3", flags: fAppend},
		{add: "2001:db8:4::/64 via 2001:db8::5 dev 3", flags: fPrepend},
		{add: "2001:db8:4::/64 via 2001:db8::5 dev 3", flags: fAppend, errno: syscall.EEXIST},
		{add: "2001:db8:6::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::2 dev 3", flags: fAdd, errno: syscall.EEXIST},
	})
	for _, c := range []struct {
		dst  string
		want []string
	}{
		{"2001:db8:77::/64", []string{
			"2001:db8:77::/64 t254 m1024 p3 s0 y1 [dev 2]",
			"2001:db8:77::/64 t254 m1024 p3 s0 y1 [dev 3]",
		}},
		{"2001:db8:3::/64", []string{
			"2001:db8:3::/64 t254 m10 p3 s0 y1 [via 2001:db8::5 dev 3]",
			"2001:db8:3::/64 t254 m1024 p3 s0 y1 [via 2001:db8::9 dev 3]",
			"2001:db8:3::/64 t254 m2000 p3 s0 y1 [dev 3]",
		}},
		{"2001:db8:4::/64", []string{
			"2001:db8:4::/64 t254 m1024 p3 s0 y1 [via 2001:db8::2 dev 3] [via 2001:db8::3 dev 3] [via 2001:db8::4 dev 3] [via 2001:db8::5 dev 3]",
		}},
		{"2001:db8:6::/64", nil},
	} {
		if d := cmp.Diff(c.want, show(tb, tableMain, c.dst)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.dst, d)
		}
	}
}

// TestInsert6MultipathRollback: a multipath add with two equal hops
// (ROUTES-SPEC 6-17), or whose second hop collides with an existing
// route, is EEXIST, leaves nothing behind and notifies nothing (measured
// on Linux 6.18 with a raw RTNLGRP_IPV6_ROUTE listener: "ip -6 route
// prepend P nexthop via A nexthop via B" over "P via B").
func TestInsert6MultipathRollback(t *testing.T) {
	tb := NewIPv6()
	for _, c := range []struct {
		pre, add string
		flags    uint16
		want     []string
	}{
		{"", "2001:db8:6::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::2 dev 3", fAdd, nil},
		{"2001:db8:f03::/64 via fe80::2 dev 3", "2001:db8:f03::/64 nexthop via fe80::1 dev 3 nexthop via fe80::2 dev 3", fPrepend,
			[]string{"2001:db8:f03::/64 t254 m1024 p3 s0 y1 [via fe80::2 dev 3]"}},
	} {
		if c.pre != "" {
			run(t, tb, []step{{add: c.pre, flags: fAdd}})
		}
		r := rt(c.add)
		ch, err := tb.Insert(r, c.flags)
		if err == nil || err.Errno != syscall.EEXIST {
			t.Fatalf("%s: err = %v, want EEXIST", c.add, err)
		}
		if len(ch.Events) != 0 {
			t.Errorf("%s: events %+v, want none", c.add, ch.Events)
		}
		if d := cmp.Diff(c.want, show(tb, tableMain, r.Dst.String())); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.add, d)
		}
	}
	if tb.Routes() != 1 || len(tb.pool) != 1 {
		t.Errorf("left behind: routes %d pool %d, want 1 1", tb.Routes(), len(tb.pool))
	}
}

// TestInsert6SiblingNotifications: the RTM_NEWROUTE of an appended ECMP
// sibling lists the new hop first, then the set from its first sibling
// (rt6_fill_node() from the new fib6_info); a multipath append lists the
// whole set from the first sibling (ip6_route_mpath_notify()); flags as
// fib6_add_rt2node() and ip6_route_multipath_add() set them. Measured on
// Linux 6.18 with a raw RTNLGRP_IPV6_ROUTE listener.
func TestInsert6SiblingNotifications(t *testing.T) {
	tb := NewIPv6()
	for _, c := range []struct {
		add   string
		flags uint16
		want  string
	}{
		{"2001:db8:f00::/64 via fe80::1 dev 3", fAdd, "0x600 2001:db8:f00::/64 t254 m1024 p3 s0 y1 [via fe80::1 dev 3]"},
		{"2001:db8:f00::/64 via fe80::2 dev 3", fAppend, "0xc00 2001:db8:f00::/64 t254 m1024 p3 s0 y1 [via fe80::2 dev 3] [via fe80::1 dev 3]"},
		{"2001:db8:f00::/64 via fe80::3 dev 3", fAppend, "0xc00 2001:db8:f00::/64 t254 m1024 p3 s0 y1 [via fe80::3 dev 3] [via fe80::1 dev 3] [via fe80::2 dev 3]"},
		{"2001:db8:f01::/64 nexthop via fe80::1 dev 3 nexthop via fe80::2 dev 3", fAdd, "0x400 2001:db8:f01::/64 t254 m1024 p3 s0 y1 [via fe80::1 dev 3] [via fe80::2 dev 3]"},
		{"2001:db8:f01::/64 nexthop via fe80::3 dev 3 nexthop via fe80::4 dev 3", fAppend,
			"0xc00 2001:db8:f01::/64 t254 m1024 p3 s0 y1 [via fe80::1 dev 3] [via fe80::2 dev 3] [via fe80::3 dev 3] [via fe80::4 dev 3]"},
		{"2001:db8:f01::/64 via fe80::9 dev 3", fReplace, "0x100 2001:db8:f01::/64 t254 m1024 p3 s0 y1 [via fe80::9 dev 3]"},
	} {
		ch, err := tb.Insert(rt(c.add), c.flags)
		if err != nil || len(ch.Events) != 1 {
			t.Fatalf("%s: %v %+v", c.add, err, ch)
		}
		if got := fmt.Sprintf("%#x %s", ch.Events[0].Flags, brief(ch.Events[0].Route)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.add, got, c.want)
		}
	}
	if d := cmp.Diff([]string{"2001:db8:f01::/64 t254 m1024 p3 s0 y1 [via fe80::9 dev 3]"}, show(tb, tableMain, "2001:db8:f01::/64")); d != "" {
		t.Errorf("replace of a set (-want +got):\n%s", d)
	}
}

// TestDelete6MatchingE8b replays ROUTES-SPEC E8b: the lowest metric goes
// first, metric/device/protocol/gateway must match when given, type is
// ignored, a gateway removes one hop of an ECMP set and no gateway the
// whole set, host bits are ignored, a missing table is ESRCH "FIB table
// does not exist", and ::/0 without a default route is ENOENT.
func TestDelete6MatchingE8b(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{
		{add: "2001:db8:3::/64 dev 3 metric 2000", flags: fAdd},
		{add: "2001:db8:3::/64 via 2001:db8::5 dev 3 metric 10", flags: fAdd},
		{add: "2001:db8:3::/64 via 2001:db8::9 dev 3", flags: fAdd},
		{add: "2001:db8:4::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::3 dev 3", flags: fAdd},
		{add: "2001:db8:c::/64 type 8 dev 1", flags: fAdd},
		{add: "2001:db8:2::/64 dev 3", flags: fAdd},
		{add: "2001:db8:2::/64 dev 2", flags: fAppend},
	})
	gw := func(a string) func(*Match) { return func(m *Match) { m.Gateway = netip.MustParseAddr(a) } }
	run(t, tb, []step{
		{del: m6("2001:db8:3::/64", nil)},
		{del: m6("2001:db8:3::/64", func(m *Match) { m.Priority, m.Oif = 2000, devV1 }), errno: syscall.ESRCH},
		{del: m6("2001:db8:3::/64", func(m *Match) { m.Priority, m.Protocol = 2000, rtnl.RTPROT_KERNEL }), errno: syscall.ESRCH},
		{del: m6("2001:db8:3::/64", func(m *Match) { m.Priority, m.Gateway = 2000, netip.MustParseAddr("2001:db8::9") }), errno: syscall.ESRCH},
		{del: m6("2001:db8:3::/64", func(m *Match) { m.Priority = 2000 })},
		{del: m6("2001:db8:4::/64", gw("2001:db8::3"))},
	})
	if d := cmp.Diff([]string{"2001:db8:4::/64 t254 m1024 p3 s0 y1 [via 2001:db8::2 dev 3]"}, show(tb, tableMain, "2001:db8:4::/64")); d != "" {
		t.Errorf("after one-hop delete (-want +got):\n%s", d)
	}
	run(t, tb, []step{
		{add: "2001:db8:4::/64 via 2001:db8::3 dev 3", flags: fAppend},
		{add: "2001:db8:4::/64 via 2001:db8::4 dev 3", flags: fAppend},
		// ip6_route_multipath_del(): each hop alone, the last error wins.
		{del: m6("2001:db8:4::/64", gw("2001:db8::4"))},
		{del: m6("2001:db8:4::/64", gw("2001:db8::99")), errno: syscall.ESRCH},
	})
	if d := cmp.Diff([]string{"2001:db8:4::/64 t254 m1024 p3 s0 y1 [via 2001:db8::2 dev 3] [via 2001:db8::3 dev 3]"}, show(tb, tableMain, "2001:db8:4::/64")); d != "" {
		t.Errorf("after multipath delete (-want +got):\n%s", d)
	}
	run(t, tb, []step{
		{del: m6("2001:db8:4::/64", nil)},
		{del: m6("2001:db8:99::/64", nil), errno: syscall.ESRCH},
		{del: m6("2001:db8:2::/64", func(m *Match) { m.Table = 77 }), errno: syscall.ESRCH, msg: "FIB table does not exist"},
		{del: m6("2001:db8:c::/64", func(m *Match) { m.Type = rtnl.RTN_UNREACHABLE })},
		{del: m6("2001:db8:2::5/64", func(m *Match) { m.Oif = devV1 })},
		{del: m6("::/0", nil), errno: syscall.ENOENT},
	})
	want := []string{
		"2001:db8:2::/64 t254 m1024 p3 s0 y1 [dev 3]",
		"2001:db8:3::/64 t254 m1024 p3 s0 y1 [via 2001:db8::9 dev 3]",
	}
	if d := cmp.Diff(want, dump(tb, tableMain)); d != "" {
		t.Errorf("left (-want +got):\n%s", d)
	}
}

// TestDelete6SiblingsNotification: deleting an ECMP set without a
// gateway sends one multipath RTM_DELROUTE starting at the matched hop
// (__ip6_del_rt_siblings() fills it from that sibling); with a gateway,
// a single-path RTM_DELROUTE of the hop.
func TestDelete6SiblingsNotification(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{{add: "2001:db8:4::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::3 dev 2 nexthop via 2001:db8::4 dev 3", flags: fAdd}})
	ch, err := tb.Delete(*m6("2001:db8:4::/64", func(m *Match) { m.Gateway = netip.MustParseAddr("2001:db8::4") }))
	if err != nil || len(ch.Events) != 1 {
		t.Fatalf("delete hop: %v %+v", err, ch)
	}
	if got, want := brief(ch.Events[0].Route), "2001:db8:4::/64 t254 m1024 p3 s0 y1 [via 2001:db8::4 dev 3]"; got != want {
		t.Errorf("hop delete notifies %q, want %q", got, want)
	}
	ch, err = tb.Delete(*m6("2001:db8:4::/64", func(m *Match) { m.Oif = devV1 }))
	if err != nil || len(ch.Events) != 1 {
		t.Fatalf("delete set: %v %+v", err, ch)
	}
	if got, want := brief(ch.Events[0].Route), "2001:db8:4::/64 t254 m1024 p3 s0 y1 [via 2001:db8::3 dev 2] [via 2001:db8::2 dev 3]"; got != want {
		t.Errorf("set delete notifies %q, want %q", got, want)
	}
}

// TestIPv6SourceRoutesDumpBeforePlain: source-specific routes of a
// destination dump before its plain routes, their sources in post-order
// (more specific first), metric order inside a source; "from ::/0" is a
// plain route; a delete names the source group. Measured on Linux 6.18:
// ip -6 route add 2001:db8:9::/64 [from S] dev D [metric M], then show.
func TestIPv6SourceRoutesDumpBeforePlain(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{
		{add: "2001:db8:9::/64 dev 3", flags: fAdd},
		{add: "2001:db8:9::/64 from 2001:db8:aa::/64 dev 3", flags: fAdd},
		{add: "2001:db8:9::/64 from 2001:db8:aa::/48 dev 3", flags: fAdd},
		{add: "2001:db8:9::/64 from 2001:db8:bb::/64 dev 3", flags: fAdd},
		{add: "2001:db8:9::/64 from 2001:db8:aa::/64 dev 2 metric 5", flags: fAdd},
		{add: "2001:db8:9::/48 from ::/0 dev 2 metric 7", flags: fAdd},
	})
	want := []string{
		"2001:db8:9::/64 from 2001:db8:aa::/64 t254 m5 p3 s0 y1 [dev 2]",
		"2001:db8:9::/64 from 2001:db8:aa::/64 t254 m1024 p3 s0 y1 [dev 3]",
		"2001:db8:9::/64 from 2001:db8:aa::/48 t254 m1024 p3 s0 y1 [dev 3]",
		"2001:db8:9::/64 from 2001:db8:bb::/64 t254 m1024 p3 s0 y1 [dev 3]",
		"2001:db8:9::/64 t254 m1024 p3 s0 y1 [dev 3]",
		"2001:db8:9::/48 t254 m7 p3 s0 y1 [dev 2]",
	}
	if d := cmp.Diff(want, dump(tb, tableMain)); d != "" {
		t.Errorf("(-kernel +ours):\n%s", d)
	}
	run(t, tb, []step{{del: m6("2001:db8:9::/64", func(m *Match) { m.Src = pf("2001:db8:aa::/64") })}})
	if d := cmp.Diff(append(want[:0:0], want[1:]...), dump(tb, tableMain)); d != "" {
		t.Errorf("after deleting from the source group (-want +got):\n%s", d)
	}
}

// TestIPv6DeleteDefaultWithoutRouteIsENOENT: the fib6 root node always
// exists, holding the null entry, so deleting ::/0 without a default
// route is ENOENT where any other missing prefix is ESRCH (ROUTES-SPEC
// E8b).
func TestIPv6DeleteDefaultWithoutRouteIsENOENT(t *testing.T) {
	tb := NewIPv6()
	run(t, tb, []step{
		{del: m6("::/0", nil), errno: syscall.ENOENT},
		{del: m6("2001:db8::/32", nil), errno: syscall.ESRCH},
		{add: "::/0 via fe80::1 dev 3", flags: fAdd},
		{del: m6("::/0", nil)},
		{del: m6("::/0", nil), errno: syscall.ENOENT},
	})
}

// TestIPv4DeleteTosIsNeverAWildcard: a delete without tos cannot remove a
// tos route, and one with a tos only removes that tos (ROUTES-SPEC 3.1).
func TestIPv4DeleteTosIsNeverAWildcard(t *testing.T) {
	tb := NewIPv4()
	run(t, tb, []step{
		{add: "10.80.0.0/16 dev 3 tos 0x10", flags: fAdd},
		{del: m4("10.80.0.0/16", nil), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Tos = 0x08 }), errno: syscall.ESRCH},
		{del: m4("10.80.0.0/16", func(m *Match) { m.Tos = 0x10 })},
	})
}

// TestIPv6AppendOnlyChangesTheNotification: for IPv6, NLM_F_APPEND does not
// move the new route (it always goes after the routes of its metric); only
// the notification carries the flag (fib6_add_rt2node()). Without
// NLM_F_CREATE the route is created anyway (ROUTES-SPEC 6-15).
func TestIPv6AppendOnlyChangesTheNotification(t *testing.T) {
	for _, flags := range []uint16{fPrepend, fAppend, 0} {
		tb := NewIPv6()
		run(t, tb, []step{
			{add: "2001:db8:1::/64 dev 3", flags: fAdd},
			{add: "2001:db8:1::/64 dev 2", flags: flags},
		})
		want := []string{"2001:db8:1::/64 t254 m1024 p3 s0 y1 [dev 3]", "2001:db8:1::/64 t254 m1024 p3 s0 y1 [dev 2]"}
		if d := cmp.Diff(want, show(tb, tableMain, "2001:db8:1::/64")); d != "" {
			t.Errorf("flags %#x (-want +got):\n%s", flags, d)
		}
	}
}

// TestIPv4ReplaceMatchingLaterEntryIsEEXIST: a replace whose route equals a
// later entry of the group is EEXIST, one equal to the first succeeds
// without change (fib_table_insert()'s fa_match check; measured on Linux
// 6.18: "ip route replace P via G" over "P dev D; P via G" fails with
// "File exists", "ip route replace P dev D" succeeds).
func TestIPv4ReplaceMatchingLaterEntryIsEEXIST(t *testing.T) {
	tb := NewIPv4()
	run(t, tb, []step{
		{add: "10.230.0.0/16 dev 3", flags: fAdd},
		{add: "10.230.0.0/16 via 10.0.0.2 dev 3", flags: fAppend},
		{add: "10.230.0.0/16 via 10.0.0.2 dev 3", flags: fReplace, errno: syscall.EEXIST},
		{add: "10.230.0.0/16 dev 3", flags: fReplace},
	})
	want := []string{"10.230.0.0/16 t254 m0 p3 s253 y1 [dev 3]", "10.230.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.2 dev 3]"}
	if d := cmp.Diff(want, show(tb, tableMain, "10.230.0.0/16")); d != "" {
		t.Errorf("(-kernel +ours):\n%s", d)
	}
}

// TestInsertToMatchesInsert: InsertTo, appending to one Change reused
// from request to request as nsmgr's handler reuses it, reports what
// Insert reports in a fresh Change (events, their flags and routes, the
// replaced routes, the error), appends nothing when it fails, and leaves
// the same table behind; both families, multipath included.
func TestInsertToMatchesInsert(t *testing.T) {
	render := func(c *Change) []string {
		var out []string
		for _, e := range c.Events {
			out = append(out, fmt.Sprintf("ev %d %#x %s", e.Type, e.Flags, brief(e.Route)))
		}
		for _, r := range c.Replaced {
			out = append(out, "replaced "+brief(r))
		}
		return out
	}
	for _, tc := range []struct {
		v6    bool
		steps []step
	}{
		{false, []step{
			{add: "10.1.0.0/16 dev 3", flags: fAdd},
			{add: "10.1.0.0/16 dev 3", flags: fAdd}, // EEXIST
			{add: "10.1.0.0/16 via 10.0.0.2 dev 3", flags: fAppend},
			{add: "10.1.0.0/16 via 10.0.0.3 dev 3", flags: fPrepend},
			{add: "10.1.0.0/16 via 10.0.0.4 dev 3", flags: fReplace},
			{add: "10.1.0.0/16 via 10.0.0.4 dev 3", flags: fReplace}, // itself: nothing
			{add: "10.2.0.0/16 dev 3", flags: fChange},               // ENOENT
			{add: "10.3.0.0/24 nexthop via 10.0.0.2 dev 3 nexthop via 10.0.0.3 dev 3", flags: fAdd},
		}},
		{true, []step{
			{add: "2001:db8:f00::/64 via fe80::1 dev 3", flags: fAdd},
			{add: "2001:db8:f00::/64 via fe80::1 dev 3", flags: fAdd}, // EEXIST
			{add: "2001:db8:f00::/64 via fe80::2 dev 3", flags: fAppend},
			{add: "2001:db8:f01::/64 nexthop via fe80::1 dev 3 nexthop via fe80::2 dev 3", flags: fAdd},
			{add: "2001:db8:f01::/64 nexthop via fe80::3 dev 3 nexthop via fe80::4 dev 3", flags: fAppend},
			{add: "2001:db8:f01::/64 via fe80::9 dev 3", flags: fReplace},
			{add: "2001:db8:6::/64 nexthop via 2001:db8::2 dev 3 nexthop via 2001:db8::2 dev 3", flags: fAdd}, // EEXIST
			{add: "2001:db8:f02::/64 dev 3", flags: fChange},                                                  // ENOENT
		}},
	} {
		fresh, reused := NewIPv4(), NewIPv4()
		if tc.v6 {
			fresh, reused = NewIPv6(), NewIPv6()
		}
		var c Change
		for _, s := range tc.steps {
			r := rt(s.add)
			mp := len(r.Nexthops) > 1 && tc.v6
			var want Change
			var werr *rtnl.Error
			if mp {
				want, werr = fresh.InsertMultipath(r, s.flags)
			} else {
				want, werr = fresh.Insert(r, s.flags)
			}
			c.Events, c.Replaced = append(c.Events[:0], Event{Type: 99}), c.Replaced[:0]
			var gerr *rtnl.Error
			if mp {
				gerr = reused.InsertMultipathTo(&c, r, s.flags)
			} else {
				gerr = reused.InsertTo(&c, r, s.flags)
			}
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Fatalf("%s: InsertTo error %v, Insert's %v", s.add, gerr, werr)
			}
			if c.Events[0].Type != 99 {
				t.Fatalf("%s: InsertTo replaced what the Change held before", s.add)
			}
			c.Events = c.Events[1:]
			if d := cmp.Diff(render(&want), render(&c)); d != "" {
				t.Errorf("%s: InsertTo's change (-Insert +InsertTo):\n%s", s.add, d)
			}
		}
		for _, p := range []string{"10.1.0.0/16", "10.3.0.0/24", "2001:db8:f00::/64", "2001:db8:f01::/64"} {
			if pf(p).Addr().Is6() != tc.v6 {
				continue
			}
			if d := cmp.Diff(show(fresh, tableMain, p), show(reused, tableMain, p)); d != "" {
				t.Errorf("%s stored (-Insert +InsertTo):\n%s", p, d)
			}
		}
	}
}
