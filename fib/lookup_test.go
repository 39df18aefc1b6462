package fib

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rtt "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/rulesops"
)

// lkDevs: lo=1, v1=2, v0=3, w1=4, w0=5 (the ROUTES-SPEC rs_6 layout).
type lkDevs map[string]int32

func (d lkDevs) IndexByName(name []byte) int32 { return d[string(name)] }

var lkDevsRS6 = lkDevs{"lo": 1, "v1": 2, "v0": 3, "w1": 4, "w0": 5}

// lkNewFIB returns an empty FIB of family fam with its default rules.
func lkNewFIB(t testing.TB, fam uint8) (*FIB, *Tables, *rulesops.Ops) {
	t.Helper()
	tables := NewIPv4()
	if fam == rtnl.AF_INET6 {
		tables = NewIPv6()
	}
	ops := rulesops.NewOps(fam, rulesops.Env{Config: &rtnl.LockConfig{RTNL: &rtnl.RTNL{}}, Tables: tables, Devices: lkDevsRS6})
	return NewFIB(tables, ops), tables, ops
}

func lkRule(t testing.TB, o *rulesops.Ops, typ uint16, body []byte) {
	t.Helper()
	msgs := rtnl.SplitDatagram(rtt.Msg(typ, rtt.AddFlags, 1, body))
	m, err := rtnl.DecodeRuleHeader(&msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if typ == rtnl.RTM_NEWRULE {
		_, err = o.NewRule(m, uint16(msgs[0].Header.Flags))
	} else {
		_, err = o.DelRule(m)
	}
	if err != nil {
		t.Fatalf("rule change: %v", err)
	}
}

func lkP(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func lkA(s string) netip.Addr   { return netip.MustParseAddr(s) }

// lkUni is a unicast route via gw (or on-link when gw is "") on dev.
func lkUni(fam uint8, table uint32, dst, gw string, dev int32) Route {
	r := Route{Family: fam, Table: table, Dst: lkP(dst), Type: rtnl.RTN_UNICAST, Protocol: rtnl.RTPROT_BOOT}
	if fam == rtnl.AF_INET6 {
		r.Priority = 1024
	}
	h := Nexthop{Dev: dev, Weight: 1}
	if gw != "" {
		h.Gateway = lkA(gw)
	} else {
		r.Scope = rtnl.RT_SCOPE_LINK
	}
	r.Nexthops = []Nexthop{h}
	return r
}

func lkReject(fam uint8, table uint32, dst string, typ uint8) Route {
	r := Route{Family: fam, Table: table, Dst: lkP(dst), Type: typ, Protocol: rtnl.RTPROT_BOOT}
	if fam == rtnl.AF_INET6 {
		r.Priority = 1024
		r.Nexthops = []Nexthop{{Dev: 1, Weight: 1}}
	}
	return r
}

func lkInsert(t testing.TB, tb *Tables, rs ...Route) {
	t.Helper()
	for _, r := range rs {
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			t.Fatalf("insert %v: %v", r.Dst, err)
		}
	}
}

// lkOut is what a lookup answered, compared with cmp.Diff.
type lkOut struct {
	Err   syscall.Errno
	Table uint32
	Dst   netip.Prefix
	Gw    netip.Addr
	Dev   int32
	Rule  uint32
}

// lkCmp compares the netip values inside outcomes.
var lkCmp = []cmp.Option{
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
}

func lkGot(r Result, err syscall.Errno) lkOut {
	if err != 0 {
		return lkOut{Err: err}
	}
	nh := r.Nexthop()
	return lkOut{Table: r.Table, Dst: r.Dst, Gw: nh.Gateway, Dev: nh.Dev, Rule: r.Rule}
}

// lkRS6 builds ROUTES-SPEC §7.6's namespace at the FIB level: tables 100
// and 200, main's default and rejects, and the rules of E12b.
func lkRS6(t *testing.T) *FIB {
	f, tb, ops := lkNewFIB(t, rtnl.AF_INET)
	const v4 = rtnl.AF_INET
	lkInsert(t, tb,
		lkUni(v4, 254, "0.0.0.0/0", "10.0.0.2", 3),
		lkUni(v4, 254, "10.0.0.0/24", "", 3),
		lkUni(v4, 254, "10.9.0.0/24", "", 5),
		lkUni(v4, 100, "198.51.100.0/24", "10.9.0.2", 5),
		lkUni(v4, 100, "0.0.0.0/0", "10.9.0.2", 5),
		lkReject(v4, 200, "203.0.113.0/24", rtnl.RTN_UNREACHABLE),
		lkReject(v4, 200, "203.0.114.0/24", rtnl.RTN_PROHIBIT),
		lkReject(v4, 200, "203.0.115.0/24", rtnl.RTN_BLACKHOLE),
		lkReject(v4, 200, "203.0.116.0/24", rtnl.RTN_THROW),
		lkUni(v4, 200, "192.0.2.0/24", "10.0.0.3", 3),
	)
	h := rtt.V4(0)
	hs := h
	hs.SrcLen = 32
	hd := h
	hd.DstLen = 16
	htos := h
	htos.Tos = 0x10
	for _, b := range [][]byte{
		rtt.Body(h, rtt.Pref(100), rtt.Table(100), rtt.U32(rtnl.FRA_FWMARK, 0x10)),
		rtt.Body(hs, rtt.Pref(110), rtt.Table(100), rtt.Addr(rtnl.FRA_SRC, "10.0.0.77")),
		rtt.Body(h, rtt.Pref(120), rtt.Table(200), rtt.Str(rtnl.FRA_IIFNAME, "v1")),
		rtt.Body(h, rtt.Pref(130), rtt.Table(100), rtt.UIDRange(1000, 2000)),
		rtt.Body(h, rtt.Pref(140), rtt.Table(100), rtt.U8(rtnl.FRA_IP_PROTO, 6), rtt.PortRange(rtnl.FRA_DPORT_RANGE, 443, 443)),
		rtt.Body(hd, rtt.Pref(150), rtt.Table(200), rtt.Addr(rtnl.FRA_DST, "203.0.0.0")),
		rtt.Body(h, rtt.Pref(170), rtt.Table(100), rtt.Str(rtnl.FRA_OIFNAME, "w0")),
		rtt.Body(htos, rtt.Pref(180), rtt.Table(100)),
	} {
		lkRule(t, ops, rtnl.RTM_NEWRULE, b)
	}
	return f
}

// TestLookupRouteGetCases: the FIB side of ROUTES-SPEC §7.6 G1–G11, G17.
func TestLookupRouteGetCases(t *testing.T) {
	f := lkRS6(t)
	out := func(k flow.Key) flow.Key {
		k.IIF = 1
		if k.Proto == 0 {
			k.Proto = 17
		}
		return k
	}
	mainDef := lkOut{Table: 254, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.0.0.2"), Dev: 3, Rule: 32766}
	t100 := lkOut{Table: 100, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.9.0.2"), Dev: 5}
	with := func(o lkOut, rule uint32) lkOut { o.Rule = rule; return o }
	for _, tc := range []struct {
		name string
		k    flow.Key
		want lkOut
	}{
		{"G1 plain", out(flow.Key{Dst: lkA("8.8.8.8")}), mainDef},
		{"G2 mark", out(flow.Key{Dst: lkA("8.8.8.8"), Mark: 0x10}), with(t100, 100)},
		{"G3 mark mask exact", out(flow.Key{Dst: lkA("8.8.8.8"), Mark: 0x11}), mainDef},
		{"G4 from", out(flow.Key{Dst: lkA("8.8.8.8"), Src: lkA("10.0.0.77")}), with(t100, 110)},
		{"G5 uid in", out(flow.Key{Dst: lkA("8.8.8.8"), UID: 1500}), with(t100, 130)},
		{"G5 uid out", out(flow.Key{Dst: lkA("8.8.8.8"), UID: 2001}), mainDef},
		{"G6 tcp 443", out(flow.Key{Dst: lkA("8.8.8.8"), Proto: 6, Dport: 443}), with(t100, 140)},
		{"G6 udp 443", out(flow.Key{Dst: lkA("8.8.8.8"), Dport: 443}), mainDef},
		{"G6 tcp sport 443", out(flow.Key{Dst: lkA("8.8.8.8"), Proto: 6, Dport: 80, Sport: 443}), mainDef},
		{"G7 tos", out(flow.Key{Dst: lkA("8.8.8.8"), TOS: 0x10}), with(t100, 180)},
		{"G8 oif", out(flow.Key{Dst: lkA("8.8.8.8"), OIF: 5}), with(t100, 170)},
		{"G9 unreachable", out(flow.Key{Dst: lkA("203.0.113.1")}), lkOut{Err: syscall.EHOSTUNREACH}},
		{"G9 prohibit", out(flow.Key{Dst: lkA("203.0.114.1")}), lkOut{Err: syscall.EACCES}},
		{"G9 blackhole", out(flow.Key{Dst: lkA("203.0.115.1")}), lkOut{Err: syscall.EINVAL}},
		{"G10 throw falls through", out(flow.Key{Dst: lkA("203.0.116.1")}), mainDef},
		{"G11 iif rule not on output", out(flow.Key{Dst: lkA("192.0.2.1")}), mainDef},
		{"G13 iif v1", flow.Key{Dst: lkA("192.0.2.1"), Src: lkA("10.3.0.9"), IIF: 2},
			lkOut{Table: 200, Dst: lkP("192.0.2.0/24"), Gw: lkA("10.0.0.3"), Dev: 3, Rule: 120}},
		{"G17 iif w1 mark", flow.Key{Dst: lkA("8.8.8.8"), Src: lkA("10.3.0.9"), IIF: 4, Mark: 0x10}, with(t100, 100)},
		{"oif without a route through it", out(flow.Key{Dst: lkA("10.0.0.5"), OIF: 5, Mark: 0}),
			with(lkOut{Table: 100, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.9.0.2"), Dev: 5}, 170)},
	} {
		if diff := cmp.Diff(tc.want, lkGot(f.Lookup(tc.k)), lkCmp...); diff != "" {
			t.Errorf("%s (-want +lkGot):\n%s", tc.name, diff)
		}
	}
}

// TestLookupNoCustomRulesDefaultReplacesMainError: without custom rules
// fib_lookup() consults the default table after any failure of main, and
// an existing default's "no route" replaces main's unreachable route
// (RULES-SPEC §7.1); without a default table main's error stands (E11).
func TestLookupNoCustomRulesDefaultReplacesMainError(t *testing.T) {
	f, tb, _ := lkNewFIB(t, rtnl.AF_INET)
	lkInsert(t, tb, lkReject(rtnl.AF_INET, 254, "203.0.113.0/24", rtnl.RTN_UNREACHABLE))
	k := flow.Key{Dst: lkA("203.0.113.1"), IIF: 1}
	if diff := cmp.Diff(lkOut{Err: syscall.EHOSTUNREACH}, lkGot(f.Lookup(k)), lkCmp...); diff != "" {
		t.Errorf("no default table (-want +lkGot):\n%s", diff)
	}
	lkInsert(t, tb, lkUni(rtnl.AF_INET, 253, "192.0.2.0/24", "10.0.0.2", 3))
	if diff := cmp.Diff(lkOut{Err: syscall.ENETUNREACH}, lkGot(f.Lookup(k)), lkCmp...); diff != "" {
		t.Errorf("default without a route (-want +lkGot):\n%s", diff)
	}
	lkInsert(t, tb, lkUni(rtnl.AF_INET, 253, "203.0.0.0/8", "10.0.0.2", 3))
	want := lkOut{Table: 253, Dst: lkP("203.0.0.0/8"), Gw: lkA("10.0.0.2"), Dev: 3}
	if diff := cmp.Diff(want, lkGot(f.Lookup(k)), lkCmp...); diff != "" {
		t.Errorf("default answers (-want +lkGot):\n%s", diff)
	}
}

// TestLookupMergedLocalReportsMain: while merged, a local route is found
// in main's trie and the answering table is 254 (ROUTES-SPEC §6, G29).
func TestLookupMergedLocalReportsMain(t *testing.T) {
	f, tb, _ := lkNewFIB(t, rtnl.AF_INET)
	lkInsert(t, tb, Route{Family: rtnl.AF_INET, Table: 255, Dst: lkP("127.0.0.1/32"), Type: rtnl.RTN_LOCAL,
		Scope: rtnl.RT_SCOPE_HOST, Protocol: rtnl.RTPROT_KERNEL, Prefsrc: lkA("127.0.0.1"), Nexthops: []Nexthop{{Dev: 1, Weight: 1}}})
	r, err := f.Lookup(flow.Key{Dst: lkA("127.0.0.1"), IIF: 1})
	if err != 0 || r.Table != 254 || r.Entry.Type != rtnl.RTN_LOCAL {
		t.Errorf("lkGot table %d type %d err %v, want table 254 local", r.Table, r.Entry.Type, err)
	}
}

// TestLookupIPv6DeleteLocalRuleNoEffect is RULES-SPEC A19: deleting the
// IPv6 local rule leaves lookups on the local table until a rule is added.
func TestLookupIPv6DeleteLocalRuleNoEffect(t *testing.T) {
	f, tb, ops := lkNewFIB(t, rtnl.AF_INET6)
	const v6 = rtnl.AF_INET6
	lkInsert(t, tb, Route{Family: v6, Table: 255, Dst: lkP("::1/128"), Type: rtnl.RTN_LOCAL, Protocol: rtnl.RTPROT_KERNEL,
		Nexthops: []Nexthop{{Dev: 1, Weight: 1}}})
	lkRule(t, ops, rtnl.RTM_DELRULE, rtt.Body(rtt.V6(0), rtt.Pref(0)))
	k := flow.Key{Dst: lkA("::1"), IIF: 1}
	if diff := cmp.Diff(lkOut{Table: 255, Dst: lkP("::1/128"), Dev: 1}, lkGot(f.Lookup(k)), lkCmp...); diff != "" {
		t.Errorf("after deleting pref 0 (-want +lkGot):\n%s", diff)
	}
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(rtt.V6(0), rtt.Pref(500), rtt.Table(500)))
	if diff := cmp.Diff(lkOut{Err: syscall.ENETUNREACH}, lkGot(f.Lookup(k)), lkCmp...); diff != "" {
		t.Errorf("after adding a rule (-want +lkGot):\n%s", diff)
	}
}

// TestLookupSuppressPrefixlength is E12c / G20.
func TestLookupSuppressPrefixlength(t *testing.T) {
	f, tb, ops := lkNewFIB(t, rtnl.AF_INET)
	const v4 = rtnl.AF_INET
	lkInsert(t, tb,
		lkUni(v4, 254, "0.0.0.0/0", "10.0.0.2", 3),
		lkUni(v4, 254, "10.0.0.0/24", "", 3),
		lkUni(v4, 254, "10.0.0.128/25", "", 3),
		lkUni(v4, 300, "0.0.0.0/0", "10.9.0.2", 5),
	)
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(rtt.V4(0), rtt.Pref(10), rtt.Table(254), rtt.U32(rtnl.FRA_SUPPRESS_PREFIXLEN, 24)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(rtt.V4(0), rtt.Pref(20), rtt.Table(300)))
	for _, tc := range []struct {
		dst  string
		want lkOut
	}{
		{"8.8.8.8", lkOut{Table: 300, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.9.0.2"), Dev: 5, Rule: 20}},
		{"10.0.0.5", lkOut{Table: 300, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.9.0.2"), Dev: 5, Rule: 20}},
		{"10.0.0.200", lkOut{Table: 254, Dst: lkP("10.0.0.128/25"), Dev: 3, Rule: 10}},
	} {
		if diff := cmp.Diff(tc.want, lkGot(f.Lookup(flow.Key{Dst: lkA(tc.dst), IIF: 1})), lkCmp...); diff != "" {
			t.Errorf("%s (-want +lkGot):\n%s", tc.dst, diff)
		}
	}
}

// TestLookupGotoNopAndActions: goto skips the rules between it and its
// target, nop continues, and the rule actions give their errors.
func TestLookupGotoNopAndActions(t *testing.T) {
	f, tb, ops := lkNewFIB(t, rtnl.AF_INET)
	lkInsert(t, tb, lkUni(rtnl.AF_INET, 254, "0.0.0.0/0", "10.0.0.2", 3))
	g := rtt.V4(0)
	g.Action = rtnl.FR_ACT_GOTO
	nop := rtt.V4(0)
	nop.Action = rtnl.FR_ACT_NOP
	act := func(a uint8) rtt.Hdr { h := rtt.V4(0); h.Action = a; return h }
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(g, rtt.Pref(10), rtt.U32(rtnl.FRA_GOTO, 30), rtt.U32(rtnl.FRA_FWMARK, 1)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(act(rtnl.FR_ACT_PROHIBIT), rtt.Pref(20), rtt.U32(rtnl.FRA_FWMARK, 1)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(nop, rtt.Pref(30), rtt.U32(rtnl.FRA_FWMARK, 1)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(act(rtnl.FR_ACT_UNREACHABLE), rtt.Pref(40), rtt.U32(rtnl.FRA_FWMARK, 2)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(act(rtnl.FR_ACT_BLACKHOLE), rtt.Pref(41), rtt.U32(rtnl.FRA_FWMARK, 3)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(act(rtnl.FR_ACT_PROHIBIT), rtt.Pref(42), rtt.U32(rtnl.FRA_FWMARK, 4)))
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(g, rtt.Pref(43), rtt.U32(rtnl.FRA_GOTO, 99), rtt.U32(rtnl.FRA_FWMARK, 5)))
	mainDef := lkOut{Table: 254, Dst: lkP("0.0.0.0/0"), Gw: lkA("10.0.0.2"), Dev: 3, Rule: 32766}
	for _, tc := range []struct {
		mark uint32
		want lkOut
	}{
		{1, mainDef}, // goto 30 jumps over the prohibit at 20; 30 is a nop
		{2, lkOut{Err: syscall.ENETUNREACH}},
		{3, lkOut{Err: syscall.EINVAL}},
		{4, lkOut{Err: syscall.EACCES}},
		{5, mainDef}, // unresolved goto: a rule that does not match
	} {
		if diff := cmp.Diff(tc.want, lkGot(f.Lookup(flow.Key{Dst: lkA("8.8.8.8"), IIF: 1, Mark: tc.mark})), lkCmp...); diff != "" {
			t.Errorf("mark %d (-want +lkGot):\n%s", tc.mark, diff)
		}
	}
}

// TestLookupBacktracksPastUnusableEntries: a tos mismatch, a dead hop or
// an oif mismatch at the longest prefix falls back to a shorter prefix.
func TestLookupBacktracksPastUnusableEntries(t *testing.T) {
	f, tb, _ := lkNewFIB(t, rtnl.AF_INET)
	const v4 = rtnl.AF_INET
	tos := lkUni(v4, 254, "10.1.0.0/16", "10.0.0.9", 3)
	tos.Tos = 0x10
	dead := lkUni(v4, 254, "10.2.0.0/16", "10.0.0.9", 3)
	dead.Nexthops[0].Flags = rtnl.RTNH_F_DEAD
	lkInsert(t, tb, lkUni(v4, 254, "10.0.0.0/8", "10.0.0.2", 3), tos, dead, lkUni(v4, 254, "10.3.0.0/16", "10.9.0.9", 5))
	short := lkOut{Table: 254, Dst: lkP("10.0.0.0/8"), Gw: lkA("10.0.0.2"), Dev: 3}
	for _, tc := range []struct {
		name string
		k    flow.Key
		want lkOut
	}{
		{"tos mismatch", flow.Key{Dst: lkA("10.1.2.3")}, short},
		{"tos match (ECN ignored)", flow.Key{Dst: lkA("10.1.2.3"), TOS: 0x11}, lkOut{Table: 254, Dst: lkP("10.1.0.0/16"), Gw: lkA("10.0.0.9"), Dev: 3}},
		{"dead hop", flow.Key{Dst: lkA("10.2.2.3")}, short},
		{"oif mismatch", flow.Key{Dst: lkA("10.3.2.3"), OIF: 3}, short},
	} {
		if diff := cmp.Diff(tc.want, lkGot(f.Lookup(tc.k)), lkCmp...); diff != "" {
			t.Errorf("%s (-want +lkGot):\n%s", tc.name, diff)
		}
	}
}

// TestLookupIPv6RejectsAndThrow is G24.
func TestLookupIPv6RejectsAndThrow(t *testing.T) {
	f, tb, ops := lkNewFIB(t, rtnl.AF_INET6)
	const v6 = rtnl.AF_INET6
	lkInsert(t, tb,
		lkUni(v6, 254, "::/0", "2001:db8::2", 3),
		lkReject(v6, 200, "2001:db8:13::/48", rtnl.RTN_UNREACHABLE),
		lkReject(v6, 200, "2001:db8:14::/48", rtnl.RTN_PROHIBIT),
		lkReject(v6, 200, "2001:db8:15::/48", rtnl.RTN_BLACKHOLE),
		lkReject(v6, 200, "2001:db8:16::/48", rtnl.RTN_THROW),
	)
	lkRule(t, ops, rtnl.RTM_NEWRULE, rtt.Body(rtt.V6(0), rtt.Pref(100), rtt.Table(200)))
	for _, tc := range []struct {
		dst  string
		want lkOut
	}{
		{"2001:db8:13::1", lkOut{Err: syscall.EHOSTUNREACH}},
		{"2001:db8:14::1", lkOut{Err: syscall.EACCES}},
		{"2001:db8:15::1", lkOut{Err: syscall.EINVAL}},
		{"2001:db8:16::1", lkOut{Table: 254, Dst: lkP("::/0"), Gw: lkA("2001:db8::2"), Dev: 3, Rule: 32766}},
	} {
		if diff := cmp.Diff(tc.want, lkGot(f.Lookup(flow.Key{Dst: lkA(tc.dst), IIF: 1})), lkCmp...); diff != "" {
			t.Errorf("%s (-want +lkGot):\n%s", tc.dst, diff)
		}
	}
	// G27: a strict oif (no source) with no route through it.
	if diff := cmp.Diff(lkOut{Err: syscall.ENETUNREACH}, lkGot(f.Lookup(flow.Key{Dst: lkA("2001:db8:55::1"), IIF: 1, OIF: 5})), lkCmp...); diff != "" {
		t.Errorf("strict oif (-want +lkGot):\n%s", diff)
	}
}

// TestSelectPathWeights: with no oif, flows spread over live hops in
// proportion to their weights; a dead hop takes none.
func TestSelectPathWeights(t *testing.T) {
	r := Result{Entry: &Route{Nexthops: []Nexthop{{Dev: 3, Weight: 1}, {Dev: 5, Weight: 3}, {Dev: 7, Weight: 5, Flags: rtnl.RTNH_F_DEAD}}}}
	counts := map[int32]int{}
	for i := 0; i < 4000; i++ {
		k := flow.Key{Dst: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), Src: lkA("10.0.0.1")}
		x := r
		x.NH = 0
		x.SelectPath(&k)
		counts[x.Nexthop().Dev]++
		y := r
		y.SelectPath(&k)
		if y.NH != x.NH {
			t.Fatalf("flow %v: two choices %d and %d", k.Dst, x.NH, y.NH)
		}
	}
	if counts[7] != 0 || counts[3] < 700 || counts[3] > 1300 || counts[5] < 2700 {
		t.Errorf("hop counts %v, want about 1000/3000/0", counts)
	}
}

// TestLookupIPv6InputScoresInputDevice: ip6_pol_route_input() scores the
// routes against the input device, so of two fe80::/64 routes the one
// through the input device answers (`ip -6 route get fe80::1 iif w0` is
// `dev w0` on Linux 6.18), while an output lookup takes the first.
func TestLookupIPv6InputScoresInputDevice(t *testing.T) {
	f, tb, _ := lkNewFIB(t, rtnl.AF_INET6)
	for _, dev := range []int32{2, 5} {
		r := lkUni(rtnl.AF_INET6, 254, "fe80::/64", "", dev)
		r.Priority, r.Protocol = 256, rtnl.RTPROT_KERNEL
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_APPEND); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		k    flow.Key
		want int32
	}{
		{flow.Key{Dst: lkA("fe80::1"), Src: lkA("fe80::5"), IIF: 5}, 5},
		{flow.Key{Dst: lkA("fe80::1"), IIF: 2}, 2},
		{flow.Key{Dst: lkA("fe80::1"), IIF: 1}, 2},
		{flow.Key{Dst: lkA("fe80::1"), IIF: 1, OIF: 5}, 5},
	} {
		r, err := f.Lookup(tc.k)
		if err != 0 || r.Nexthop().Dev != tc.want {
			t.Errorf("%+v: dev %d err %v, want dev %d", tc.k, r.Nexthop().Dev, err, tc.want)
		}
	}
}
