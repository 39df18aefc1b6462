package rulesops

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rt "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// devs is a fixed device table for the tests: lo=1, v0=3.
type devs map[string]int32

func (d devs) IndexByName(name []byte) int32 { return d[string(name)] }

func newTestOps(t testing.TB, fam uint8) *Ops {
	t.Helper()
	return NewOps(fam, Env{Config: &rtnl.LockConfig{RTNL: &rtnl.RTNL{}}, Devices: devs{"lo": 1, "v0": 3}})
}

// addRule adds the rule of body (a fib_rule_hdr and attributes) or fails.
func addRule(t testing.TB, o *Ops, body []byte) {
	t.Helper()
	msgs := rtnl.SplitDatagram(rt.Msg(rtnl.RTM_NEWRULE, rt.AddFlags, 1, body))
	m, err := rtnl.DecodeRuleHeader(&msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.NewRule(m, uint16(msgs[0].Header.Flags)); err != nil {
		t.Fatalf("NewRule: %v", err)
	}
}

// prefs walks a snapshot with Match from the start and returns the
// priorities of the matching rules.
func prefs(s Snapshot, k *flow.Key) []uint32 {
	var out []uint32
	p := Pos{}
	for {
		h, ok := s.Match(p, k)
		if !ok {
			return out
		}
		out = append(out, h.Pref)
		p = h.Next()
	}
}

func v4(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestMatchIPv4Selectors(t *testing.T) {
	h := rt.V4(0)
	o := newTestOps(t, rtnl.AF_INET)
	hs := h
	hs.SrcLen = 24
	hd := h
	hd.DstLen = 8
	htos := h
	htos.Tos = 0x10
	hinv := h
	hinv.Flags = rtnl.FIB_RULE_INVERT
	for _, b := range [][]byte{
		rt.Body(hs, rt.Pref(10), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "192.168.1.0")),
		rt.Body(hd, rt.Pref(11), rt.Table(11), rt.Addr(rtnl.FRA_DST, "10.0.0.0")),
		rt.Body(h, rt.Pref(12), rt.Table(12), rt.U32(rtnl.FRA_FWMARK, 0x10), rt.U32(rtnl.FRA_FWMASK, 0xf0)),
		rt.Body(h, rt.Pref(13), rt.Table(13), rt.Str(rtnl.FRA_IIFNAME, "v0")),
		rt.Body(h, rt.Pref(14), rt.Table(14), rt.Str(rtnl.FRA_OIFNAME, "v0")),
		rt.Body(h, rt.Pref(15), rt.Table(15), rt.UIDRange(100, 200)),
		rt.Body(h, rt.Pref(16), rt.Table(16), rt.U8(rtnl.FRA_IP_PROTO, 6), rt.PortRange(rtnl.FRA_DPORT_RANGE, 80, 80)),
		rt.Body(h, rt.Pref(17), rt.Table(17), rt.PortRange(rtnl.FRA_SPORT_RANGE, 1000, 2000)),
		rt.Body(htos, rt.Pref(18), rt.Table(18)),
		rt.Body(hinv, rt.Pref(19), rt.Table(19), rt.Str(rtnl.FRA_IIFNAME, "nosuch")),
		rt.Body(h, rt.Pref(20), rt.Table(20), rt.Str(rtnl.FRA_IIFNAME, "nosuch")),
		rt.Body(h, rt.Pref(21), rt.Table(21), rt.U8(rtnl.FRA_DSCP, 46)),
		rt.Body(h, rt.Pref(22), rt.Table(22), rt.PortRange(rtnl.FRA_DPORT_RANGE, 0x100, 0x100), rt.U16(rtnl.FRA_DPORT_MASK, 0xff00)),
	} {
		addRule(t, o, b)
	}
	s := o.Snapshot()
	base := []uint32{0, 19, 32766, 32767}
	with := func(p ...uint32) []uint32 {
		out := append([]uint32{0, 19, 32766, 32767}, p...)
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		k    flow.Key
		want []uint32
	}{
		{"plain", flow.Key{Dst: v4("1.2.3.4")}, base},
		{"from", flow.Key{Dst: v4("1.2.3.4"), Src: v4("192.168.1.77")}, with(10)},
		{"from outside", flow.Key{Dst: v4("1.2.3.4"), Src: v4("192.168.2.77")}, base},
		{"to", flow.Key{Dst: v4("10.200.0.1")}, with(11)},
		{"mark under mask", flow.Key{Dst: v4("1.2.3.4"), Mark: 0x1f}, with(12)},
		{"mark outside mask", flow.Key{Dst: v4("1.2.3.4"), Mark: 0x20}, base},
		{"iif", flow.Key{Dst: v4("1.2.3.4"), IIF: 3}, with(13)},
		{"oif", flow.Key{Dst: v4("1.2.3.4"), OIF: 3}, with(14)},
		{"uid in range", flow.Key{Dst: v4("1.2.3.4"), UID: 200}, with(15)},
		{"uid above range", flow.Key{Dst: v4("1.2.3.4"), UID: 201}, base},
		{"proto+dport", flow.Key{Dst: v4("1.2.3.4"), Proto: 6, Dport: 80}, with(16)},
		{"dport without proto", flow.Key{Dst: v4("1.2.3.4"), Proto: 17, Dport: 80}, base},
		{"sport range edges", flow.Key{Dst: v4("1.2.3.4"), Sport: 2000}, with(17)},
		{"sport outside", flow.Key{Dst: v4("1.2.3.4"), Sport: 2001}, base},
		// TOS mode masks the flow's TOS with 0x1C: 0xb0 & 0x1c = 0x10.
		{"tos masked 0x1c", flow.Key{Dst: v4("1.2.3.4"), TOS: 0xb0}, with(18)},
		{"dscp full", flow.Key{Dst: v4("1.2.3.4"), TOS: 46 << 2}, with(21)},
		{"dport mask", flow.Key{Dst: v4("1.2.3.4"), Dport: 0x1ff}, with(22)},
	} {
		if diff := cmp.Diff(tc.want, prefs(s, &tc.k)); diff != "" {
			t.Errorf("%s: matching prefs (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestMatchInvertDetachedMatchesEverything: RULES-SPEC A27, a rule on a
// missing device never matches, `not iif <missing>` matches every flow.
func TestMatchInvertDetachedMatchesEverything(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET)
	h := rt.V4(0)
	h.Flags = rtnl.FIB_RULE_INVERT
	addRule(t, o, rt.Body(h, rt.Pref(5), rt.Table(5), rt.Str(rtnl.FRA_IIFNAME, "gone")))
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(6), rt.Table(6), rt.Str(rtnl.FRA_IIFNAME, "gone")))
	for _, iif := range []int32{0, 1, 3} {
		k := flow.Key{Dst: v4("8.8.8.8"), IIF: iif}
		if diff := cmp.Diff([]uint32{0, 5, 32766, 32767}, prefs(o.Snapshot(), &k)); diff != "" {
			t.Errorf("iif %d (-want +got):\n%s", iif, diff)
		}
	}
}

func TestMatchIPv6Selectors(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET6)
	h := rt.V6(0)
	hs := h
	hs.SrcLen = 64
	hfs := hs
	hfs.Flags = rtnl.FIB_RULE_FIND_SADDR
	htos := h
	htos.Tos = 0xb8
	for _, b := range [][]byte{
		rt.Body(hs, rt.Pref(10), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "2001:db8:1::")),
		rt.Body(hfs, rt.Pref(11), rt.Table(11), rt.Addr(rtnl.FRA_SRC, "2001:db8:2::")),
		rt.Body(h, rt.Pref(12), rt.Table(12), rt.BE32(rtnl.FRA_FLOWLABEL, 0x12345), rt.BE32(rtnl.FRA_FLOWLABEL_MASK, 0xfffff)),
		// IPv6 TOS mode compares the whole DSCP.
		rt.Body(htos, rt.Pref(13), rt.Table(13)),
	} {
		addRule(t, o, b)
	}
	s := o.Snapshot()
	a := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		k    flow.Key
		want []uint32
	}{
		{"no source: only FIND_SADDR rules", flow.Key{Dst: a("2001:db8::1")}, []uint32{0, 11, 32766}},
		{"source in prefix", flow.Key{Dst: a("2001:db8::1"), Src: a("2001:db8:1::5")}, []uint32{0, 10, 32766}},
		{"flowlabel", flow.Key{Dst: a("2001:db8::1"), FlowLabel: 0x12345}, []uint32{0, 11, 12, 32766}},
		{"tclass full dscp", flow.Key{Dst: a("2001:db8::1"), TOS: 0xb9}, []uint32{0, 11, 13, 32766}},
		{"tclass other dscp", flow.Key{Dst: a("2001:db8::1"), TOS: 0x98}, []uint32{0, 11, 32766}},
	} {
		if diff := cmp.Diff(tc.want, prefs(s, &tc.k)); diff != "" {
			t.Errorf("%s: matching prefs (-want +got):\n%s", tc.name, diff)
		}
	}
	h11, ok := s.Match(Pos{}, &flow.Key{Dst: a("2001:db8::1")})
	if h11, ok = s.Match(h11.Next(), &flow.Key{Dst: a("2001:db8::1")}); !ok || !h11.FindSaddr || h11.SrcLen != 64 {
		t.Errorf("rule 11 hit = %+v, want FindSaddr with /64", h11)
	}
}

func TestMatchGotoResolution(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET)
	g := rt.V4(0)
	g.Action = rtnl.FR_ACT_GOTO
	addRule(t, o, rt.Body(g, rt.Pref(10), rt.U32(rtnl.FRA_GOTO, 30)))
	addRule(t, o, rt.Body(g, rt.Pref(11), rt.U32(rtnl.FRA_GOTO, 31)))
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(30), rt.Table(30)))
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(30), rt.Table(31)))
	s := o.Snapshot()
	k := flow.Key{Dst: v4("1.1.1.1")}
	h, _ := s.Match(Pos{}, &k)
	h, _ = s.Match(h.Next(), &k)
	if h.Pref != 10 || !h.Resolved {
		t.Fatalf("hit %+v, want resolved goto at 10", h)
	}
	// The target is the first rule of priority 30.
	t30, _ := s.Match(h.Goto, &k)
	if t30.Pref != 30 || t30.Table != 30 {
		t.Errorf("goto target %+v, want the first rule of pref 30 (table 30)", t30)
	}
	h, _ = s.Match(h.Next(), &k)
	if h.Pref != 11 || h.Resolved {
		t.Errorf("hit %+v, want unresolved goto at 11", h)
	}
}
