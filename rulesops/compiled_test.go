package rulesops

import (
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rt "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// general returns s without its match program: the same rules walked by
// the general matcher (the slow obvious reference of the compiled one).
func general(s Snapshot) Snapshot {
	return Snapshot{fam: s.fam, l: &list{chunks: s.l.chunks, n: s.l.n, extras: s.l.extras}}
}

// flat returns a Pos of s as the rule's index in the list, whichever
// matcher produced it.
func flat(s Snapshot, p Pos) int {
	if s.l.comp != nil {
		return int(p.o)
	}
	i := int(p.o)
	for c := 0; c < int(p.c); c++ {
		i += len(s.l.chunks[c].rules)
	}
	return i
}

// step is one hit of a walk, positions as list indexes.
type step struct {
	At, Goto int
	H        Hit
}

// trajectory walks every rule k matches from the start, following
// resolved gotos as fib's walk does, and returns the hits.
func trajectory(s Snapshot, k *flow.Key) []step {
	var out []step
	m := s.Matcher(k)
	p := Pos{}
	for n := 0; n < 10000; n++ {
		h, ok := m.Next(p)
		if !ok {
			return out
		}
		st := step{At: flat(s, h.Pos), Goto: -1, H: h}
		st.H.Pos, st.H.Goto = Pos{}, Pos{}
		p = h.Next()
		if h.Action == rtnl.FR_ACT_GOTO && h.Resolved {
			st.Goto = flat(s, h.Goto)
			p = h.Goto
		}
		out = append(out, st)
	}
	panic("walk does not end")
}

// ruleGen draws random rules and flows that hit them: addresses from a few
// prefixes, marks, uids and ports near the rules' own.
type ruleGen struct {
	rng  *rand.Rand
	fam  uint8
	nets []netip.Addr
}

func newRuleGen(seed int64, fam uint8) *ruleGen {
	g := &ruleGen{rng: rand.New(rand.NewSource(seed)), fam: fam}
	for i := 0; i < 6; i++ {
		g.nets = append(g.nets, g.randAddr())
	}
	return g
}

func (g *ruleGen) randAddr() netip.Addr {
	if g.fam == rtnl.AF_INET {
		var b [4]byte
		g.rng.Read(b[:])
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	g.rng.Read(b[:])
	return netip.AddrFrom16(b)
}

// near returns an address sharing a random-length prefix with one of the
// generator's networks.
func (g *ruleGen) near() netip.Addr {
	base := g.nets[g.rng.Intn(len(g.nets))].AsSlice()
	r := g.randAddr().AsSlice()
	keep := g.rng.Intn(len(base)*8 + 1)
	for i := range base {
		switch {
		case keep >= (i+1)*8:
		case keep <= i*8:
			base[i] = r[i]
		default:
			m := byte(0xFF) << (8 - keep%8)
			base[i] = base[i]&m | r[i]&^m
		}
	}
	a, _ := netip.AddrFromSlice(base)
	return a
}

func (g *ruleGen) pick(n int) bool { return g.rng.Intn(n) == 0 }

var genNames = []string{"lo", "v0", "gone", "w7"}

// rule returns a random request; some are invalid, which NewRule rejects.
func (g *ruleGen) rule(pref uint32) *rtnl.RuleMsg {
	m := &rtnl.RuleMsg{Family: g.fam, Action: rtnl.FR_ACT_TO_TBL, Table32: uint32(1 + g.rng.Intn(300)), Priority: pref}
	m.Set(rtnl.FRA_TABLE)
	m.Set(rtnl.FRA_PRIORITY)
	bits := 32
	if g.fam == rtnl.AF_INET6 {
		bits = 128
	}
	switch g.rng.Intn(12) {
	case 0:
		m.Action = rtnl.FR_ACT_GOTO
		m.Goto = pref + 1 + uint32(g.rng.Intn(6))
		m.Set(rtnl.FRA_GOTO)
	case 1:
		m.Action = rtnl.FR_ACT_NOP
	case 2:
		m.Action = uint8(rtnl.FR_ACT_BLACKHOLE + g.rng.Intn(3))
	}
	if g.pick(3) {
		m.DstLen = uint8(g.rng.Intn(bits + 1))
		m.Dst = g.near().AsSlice()
		m.Set(rtnl.FRA_DST)
	}
	if g.pick(3) {
		m.SrcLen = uint8(g.rng.Intn(bits + 1))
		m.Src = g.near().AsSlice()
		m.Set(rtnl.FRA_SRC)
	}
	if g.pick(3) {
		m.FwMark = uint32(g.rng.Intn(8))
		m.Set(rtnl.FRA_FWMARK)
		if g.pick(2) {
			m.FwMask = uint32(g.rng.Intn(16))
			m.Set(rtnl.FRA_FWMASK)
		}
	} else if g.pick(20) {
		m.FwMask = 3
		m.Set(rtnl.FRA_FWMASK)
	}
	if g.pick(5) {
		m.Tos = uint8(g.rng.Intn(8)) << 2
		if g.fam == rtnl.AF_INET6 {
			m.Tos = uint8(g.rng.Intn(64)) << 2
		}
	} else if g.pick(10) {
		m.DSCP = uint8(g.rng.Intn(64))
		m.Set(rtnl.FRA_DSCP)
		if g.pick(2) {
			m.DSCPMask = m.DSCP | uint8(g.rng.Intn(64))
			m.Set(rtnl.FRA_DSCP_MASK)
		}
	}
	if g.pick(6) {
		m.IIFName = []byte(genNames[g.rng.Intn(len(genNames))])
		m.Set(rtnl.FRA_IIFNAME)
	}
	if g.pick(8) {
		m.OIFName = []byte(genNames[g.rng.Intn(len(genNames))])
		m.Set(rtnl.FRA_OIFNAME)
	}
	if g.pick(8) {
		s := uint32(g.rng.Intn(300))
		m.UIDRange = [2]uint32{s, s + uint32(g.rng.Intn(100))}
		m.Set(rtnl.FRA_UID_RANGE)
	}
	if g.pick(8) {
		m.IPProto = []uint8{6, 17}[g.rng.Intn(2)]
		m.Set(rtnl.FRA_IP_PROTO)
	}
	if g.pick(8) {
		s := uint16(1 + g.rng.Intn(2000))
		m.DportRange = [2]uint16{s, s + uint16(g.rng.Intn(3)*50)}
		m.Set(rtnl.FRA_DPORT_RANGE)
	}
	if g.pick(10) {
		s := uint16(1 + g.rng.Intn(2000))
		m.SportRange = [2]uint16{s, s}
		m.Set(rtnl.FRA_SPORT_RANGE)
	}
	if g.pick(15) {
		m.TunID = uint64(g.rng.Intn(3))
		m.Set(rtnl.FRA_TUN_ID)
	}
	if g.pick(30) {
		m.L3MDev = 1
		m.Set(rtnl.FRA_L3MDEV)
		m.Present &^= 1 << rtnl.FRA_TABLE
	}
	if g.pick(6) {
		m.SuppressPrefixlen = uint32(g.rng.Intn(bits + 1))
		m.Set(rtnl.FRA_SUPPRESS_PREFIXLEN)
	}
	if g.fam == rtnl.AF_INET6 && g.pick(10) {
		m.FlowLabelMask = uint32(g.rng.Intn(4)) << 18
		m.FlowLabel = m.FlowLabelMask & uint32(g.rng.Intn(1<<20))
		m.Set(rtnl.FRA_FLOWLABEL)
		m.Set(rtnl.FRA_FLOWLABEL_MASK)
	}
	if g.pick(6) {
		m.Flags |= rtnl.FIB_RULE_INVERT
	}
	if g.pick(5) {
		m.Flags |= rtnl.FIB_RULE_FIND_SADDR
	}
	return m
}

// flow returns a random key likely to meet some rules' selectors.
func (g *ruleGen) flow() flow.Key {
	k := flow.Key{Dst: g.near()}
	switch g.rng.Intn(4) {
	case 0:
	case 1:
		if g.fam == rtnl.AF_INET {
			k.Src = netip.IPv4Unspecified()
		} else {
			k.Src = netip.IPv6Unspecified()
		}
	default:
		k.Src = g.near()
	}
	devs := []int32{0, 1, 3, 7}
	k.IIF, k.OIF = devs[g.rng.Intn(4)], devs[g.rng.Intn(4)]
	k.Mark = uint32(g.rng.Intn(16))
	if g.pick(4) {
		k.Mark = g.rng.Uint32()
	}
	k.UID = uint32(g.rng.Intn(420))
	k.TOS = uint8(g.rng.Intn(256))
	k.Proto = []uint8{0, 6, 17}[g.rng.Intn(3)]
	k.Sport, k.Dport = uint16(g.rng.Intn(2200)), uint16(g.rng.Intn(2200))
	k.TunID = uint64(g.rng.Intn(3))
	if g.fam == rtnl.AF_INET6 {
		k.FlowLabel = uint32(g.rng.Intn(1 << 20))
	}
	return k
}

// TestCompiledMatcherAgainstGeneral is the compiled matcher against the
// general one (every rule through fib_rule_match()'s mirror) on random
// rule sets of both families, 100,000+ random flows each, with device
// events between flows: the same rules hit, in the same order, with the
// same Hit (goto targets, suppressors, FIND_SADDR source) every time.
func TestCompiledMatcherAgainstGeneral(t *testing.T) {
	const sets, flowsPerSet = 250, 450
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		t.Run(fmt.Sprint(fam), func(t *testing.T) {
			g := newRuleGen(int64(fam), fam)
			flows, compiledSets, hits := 0, 0, 0
			for set := 0; set < sets; set++ {
				o := newTestOps(t, fam)
				n := g.rng.Intn(40)
				if set%50 == 49 {
					n = compileMax + 10 // over the cap: both general
				}
				pref := uint32(1)
				for i := 0; i < n; i++ {
					if !g.pick(4) {
						pref += uint32(g.rng.Intn(3))
					}
					m := g.rule(pref)
					o.NewRule(m, 0) // invalid requests are rejected
				}
				if g.pick(3) && o.Len() > 3 {
					// A delete republishes the list (and its program).
					dm := &rtnl.RuleMsg{Family: fam, Priority: o.Snapshot().l.At(1).Pref}
					dm.Set(rtnl.FRA_PRIORITY)
					o.DelRule(dm)
				}
				s := o.Snapshot()
				if s.Len() <= compileMax {
					if s.l.comp == nil {
						t.Fatalf("set %d: %d rules, no match program", set, s.Len())
					}
					compiledSets++
				}
				ref := general(s)
				for i := 0; i < flowsPerSet; i++ {
					switch i {
					case flowsPerSet / 3:
						o.DevRegistered([]byte("gone"), 7)
					case flowsPerSet * 2 / 3:
						o.DevUnregistered(3)
					}
					k := g.flow()
					want := trajectory(ref, &k)
					got := trajectory(s, &k)
					if !slices.Equal(want, got) {
						t.Fatalf("set %d flow %+v (-general +compiled):\n%s", set, k, cmp.Diff(want, got, cmp.AllowUnexported(Pos{})))
					}
					flows++
					hits += len(got)
				}
			}
			if flows < 100000 || compiledSets < sets*9/10 {
				t.Fatalf("%d flows over %d compiled sets: too few", flows, compiledSets)
			}
			t.Logf("%d flows, %d compiled sets, %d hits", flows, compiledSets, hits)
		})
	}
}

// TestCompiledDetachedRuleSeesDeviceEvents: a rule naming a missing
// device never matches (RULES-SPEC A27) until the device appears; the
// device event changes no published list, so the compiled matcher must
// read the binding at match time.
func TestCompiledDetachedRuleSeesDeviceEvents(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET)
	addRule(t, o, rt.Body(rt.V4(0), rt.Pref(6), rt.Table(6), rt.Str(rtnl.FRA_IIFNAME, "gone")))
	s := o.Snapshot()
	if s.l.comp == nil {
		t.Fatal("no match program")
	}
	k := flow.Key{Dst: v4("8.8.8.8"), IIF: 9}
	if diff := cmp.Diff([]uint32{0, 32766, 32767}, prefs(s, &k)); diff != "" {
		t.Errorf("detached (-want +got):\n%s", diff)
	}
	o.DevRegistered([]byte("gone"), 9)
	if diff := cmp.Diff([]uint32{0, 6, 32766, 32767}, prefs(s, &k)); diff != "" {
		t.Errorf("attached (-want +got):\n%s", diff)
	}
	o.DevUnregistered(9)
	if diff := cmp.Diff([]uint32{0, 32766, 32767}, prefs(s, &k)); diff != "" {
		t.Errorf("detached again (-want +got):\n%s", diff)
	}
}

// TestCompiledRecordSelectors checks what compileRule encodes for the
// common selectors, and that the rare ones go to the general path.
func TestCompiledRecordSelectors(t *testing.T) {
	o4 := newTestOps(t, rtnl.AF_INET)
	o6 := newTestOps(t, rtnl.AF_INET6)
	hs := rt.V4(0)
	hs.SrcLen = 24
	htos := rt.V4(0)
	htos.Tos = 0x10
	hinv := rt.V4(0)
	hinv.Flags = rtnl.FIB_RULE_INVERT
	h6s := rt.V6(0)
	h6s.SrcLen = 64
	h6fs := h6s
	h6fs.Flags = rtnl.FIB_RULE_FIND_SADDR
	h6tos := rt.V6(0)
	h6tos.Tos = 0xb8
	for _, tc := range []struct {
		name string
		o    *Ops
		body []byte
		want testRec
	}{
		{"fwmark", o4, rt.Body(rt.V4(0), rt.Pref(10), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, 7)),
			testRec{mark: 7, markMask: 0xFFFFFFFF}},
		{"fwmark/mask", o4, rt.Body(rt.V4(0), rt.Pref(11), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, 0x17), rt.U32(rtnl.FRA_FWMASK, 0xf0)),
			testRec{mark: 0x10, markMask: 0xf0}},
		{"from v4", o4, rt.Body(hs, rt.Pref(12), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "192.168.1.0")),
			testRec{sel: selAddr}},
		{"tos v4", o4, rt.Body(htos, rt.Pref(13), rt.Table(10)), testRec{tos: 0x10, tosMask: 0xFF}},
		{"uid", o4, rt.Body(rt.V4(0), rt.Pref(14), rt.Table(10), rt.UIDRange(1, 2)), testRec{sel: selSlow}},
		{"iif", o4, rt.Body(rt.V4(0), rt.Pref(15), rt.Table(10), rt.Str(rtnl.FRA_IIFNAME, "lo")), testRec{sel: selSlow}},
		{"not fwmark", o4, rt.Body(hinv, rt.Pref(16), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, 7)), testRec{sel: selSlow}},
		{"suppress only", o4, rt.Body(rt.V4(0), rt.Pref(17), rt.Table(10), rt.U32(rtnl.FRA_SUPPRESS_PREFIXLEN, 0)), testRec{}},
		{"from v6", o6, rt.Body(h6s, rt.Pref(10), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "2001:db8:1::")),
			testRec{sel: selAddr | selNeedSrc}},
		{"from v6 find_saddr", o6, rt.Body(h6fs, rt.Pref(11), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "2001:db8:1::")),
			testRec{sel: selSlow}},
		{"tos v6 is the dscp", o6, rt.Body(h6tos, rt.Pref(12), rt.Table(10)), testRec{tos: 0xb8 >> 2, tosMask: 0xFF}},
		{"flowlabel", o6, rt.Body(rt.V6(0), rt.Pref(13), rt.Table(10), rt.BE32(rtnl.FRA_FLOWLABEL, 1), rt.BE32(rtnl.FRA_FLOWLABEL_MASK, 1)),
			testRec{sel: selSlow}},
	} {
		addRule(t, tc.o, tc.body)
		s := tc.o.Snapshot()
		var got testRec
		found := false
		for i := 0; i < s.Len(); i++ {
			r, _ := s.Rule(i)
			if r.Pref == pref(tc.body) {
				c := s.l.comp
				v, m := c.recs[i].val, c.recs[i].mask
				got = testRec{mark: uint32(v), markMask: uint32(m), tos: uint8(v >> 32), tosMask: uint8(m >> 32), sel: c.hits[i].sel}
				got.hi = v>>40 | m>>40
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: rule not found", tc.name)
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(testRec{})); diff != "" {
			t.Errorf("%s: record (-want +got):\n%s", tc.name, diff)
		}
	}
}

// testRec is a compiled record unpacked; hi is the record's bits above
// the TOS, which must be 0.
type testRec struct {
	mark, markMask    uint32
	tos, tosMask, sel uint8
	hi                uint64
}

// pref returns the FRA_PRIORITY of a rule body built by rtnltest.
func pref(body []byte) uint32 {
	m := rtnl.SplitDatagram(rt.Msg(rtnl.RTM_NEWRULE, rt.AddFlags, 1, body))
	r, err := rtnl.DecodeRuleHeader(&m[0])
	if err != nil || r.ParseAttrs() != nil {
		panic("bad body")
	}
	return r.Priority
}

// TestCompiledOverCapUsesGeneral: a list longer than compileMax has no
// program and still matches.
func TestCompiledOverCapUsesGeneral(t *testing.T) {
	o := newTestOps(t, rtnl.AF_INET)
	for i := 0; i < compileMax; i++ {
		addRule(t, o, rt.Body(rt.V4(0), rt.Pref(uint32(10+i)), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, uint32(i+1))))
	}
	s := o.Snapshot()
	if s.l.comp != nil {
		t.Fatalf("%d rules compiled, want the general path", s.Len())
	}
	k := flow.Key{Dst: v4("1.2.3.4"), Mark: 5}
	if diff := cmp.Diff([]uint32{0, 14, 32766, 32767}, prefs(s, &k)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// benchOps returns a namespace's rules as lookupbench builds them: the
// defaults and k fwmark rules no benchmark flow carries.
func benchOps(b testing.TB, fam uint8, k int) *Ops {
	o := newTestOps(b, fam)
	for i := 0; i < k; i++ {
		m := &rtnl.RuleMsg{Family: fam, Action: rtnl.FR_ACT_TO_TBL,
			Priority: uint32(100 + i), Table32: uint32(1000 + i), FwMark: uint32(i + 1)}
		m.Present = 1<<rtnl.FRA_PRIORITY | 1<<rtnl.FRA_TABLE | 1<<rtnl.FRA_FWMARK
		if _, err := o.NewRule(m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err != nil {
			b.Fatal(err)
		}
	}
	return o
}

// benchMatcher times the matcher part of fib's rule walk (StepFast and
// Step, as fib.walk calls them) over the
// benchmark's rules: the walk stops at local (whose table misses), then
// resumes and passes the k custom rules to reach main. ns/rule is the
// time divided by the rules looked at.
// walkStep is one step as fib.walk takes it: StepFast, then Step.
func walkStep(m *Matcher, p Pos) *Hit {
	if h := m.StepFast(p); h != nil {
		return h
	}
	return m.Step(p)
}

func benchMatcher(b *testing.B, fam uint8, compiled bool) {
	const k = 10
	s := benchOps(b, fam, k).Snapshot()
	if !compiled {
		s = general(s)
	}
	g := newRuleGen(1, fam)
	keys := make([]flow.Key, 1024)
	for i := range keys {
		keys[i] = flow.Key{Dst: g.randAddr(), IIF: 1}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := s.Matcher(&keys[i&1023])
		h := walkStep(&m, Pos{})
		if h = walkStep(&m, h.Next()); h.Table != rtnl.RT_TABLE_MAIN {
			b.Fatalf("hit %+v, want main", *h)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(k+2), "ns/rule")
}

func BenchmarkMatcher4(b *testing.B)        { benchMatcher(b, rtnl.AF_INET, true) }
func BenchmarkMatcher6(b *testing.B)        { benchMatcher(b, rtnl.AF_INET6, true) }
func BenchmarkMatcherGeneral4(b *testing.B) { benchMatcher(b, rtnl.AF_INET, false) }
func BenchmarkMatcherGeneral6(b *testing.B) { benchMatcher(b, rtnl.AF_INET6, false) }

// TestCompiledDefaultsShared: a namespace's default rules use the shared
// program; the first change gives the list its own, and deleting the rule
// again returns to the shared one.
func TestCompiledDefaultsShared(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		o := newTestOps(t, fam)
		if c := o.Snapshot().l.comp; c == nil || c != defaultPrograms[o.fam] {
			t.Fatalf("family %d: default list program %p, want the shared %p", fam, c, defaultPrograms[o.fam])
		}
		h := rt.V4(0)
		if fam == rtnl.AF_INET6 {
			h = rt.V6(0)
		}
		addRule(t, o, rt.Body(h, rt.Pref(5), rt.Table(5)))
		if c := o.Snapshot().l.comp; c == nil || c == defaultPrograms[o.fam] {
			t.Fatalf("family %d: changed list program %p", fam, c)
		}
		dm := &rtnl.RuleMsg{Family: fam, Priority: 5}
		dm.Set(rtnl.FRA_PRIORITY)
		if _, err := o.DelRule(dm); err != nil {
			t.Fatal(err)
		}
		if c := o.Snapshot().l.comp; c != defaultPrograms[o.fam] {
			t.Errorf("family %d: defaults again, program %p, want the shared one", fam, c)
		}
	}
}

// BenchmarkCompileList is what compiling adds to a rule change at the cap:
// a list of compileMax fwmark and source rules.
func BenchmarkCompileList(b *testing.B) {
	o := newTestOps(b, rtnl.AF_INET)
	hs := rt.V4(0)
	hs.SrcLen = 24
	for i := 0; o.Len() < compileMax; i++ {
		body := rt.Body(rt.V4(0), rt.Pref(uint32(10+i)), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, uint32(i+1)))
		if i%2 == 1 {
			body = rt.Body(hs, rt.Pref(uint32(10+i)), rt.Table(10), rt.Addr(rtnl.FRA_SRC, "192.168.1.0"))
		}
		addRule(b, o, body)
	}
	l := o.Snapshot().l
	b.ReportAllocs()
	for b.Loop() {
		compile(o.fam, l)
	}
}

// BenchmarkRuleChange is one rule added and deleted on a list of n fwmark
// rules: under the cap each change compiles the list, over it none does
// (side by side, the cost compiling adds to a change).
func BenchmarkRuleChange(b *testing.B) {
	for _, n := range []int{10, compileMax - 8, compileMax + 8} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			o := newTestOps(b, rtnl.AF_INET)
			for i := 0; o.Len() < n; i++ {
				addRule(b, o, rt.Body(rt.V4(0), rt.Pref(uint32(10+i)), rt.Table(10), rt.U32(rtnl.FRA_FWMARK, uint32(i+1))))
			}
			add := &rtnl.RuleMsg{Family: rtnl.AF_INET, Action: rtnl.FR_ACT_TO_TBL, Priority: 5, Table32: 7, FwMark: 9}
			add.Present = 1<<rtnl.FRA_PRIORITY | 1<<rtnl.FRA_TABLE | 1<<rtnl.FRA_FWMARK
			del := &rtnl.RuleMsg{Family: rtnl.AF_INET, Priority: 5}
			del.Set(rtnl.FRA_PRIORITY)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := o.NewRule(add, 0); err != nil {
					b.Fatal(err)
				}
				if _, err := o.DelRule(del); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// skip0Scan is skip0's obvious definition: the first record at or after i
// whose fwmark and TOS test a flow with kv 0 passes.
// The entry is -(i+1) for a record with further selectors (sel not 0).
func skip0Scan(recs []mrec, hits []chit, i int) int {
	for ; i < len(recs); i++ {
		if (0^recs[i].val)&recs[i].mask == 0 {
			if hits[i].sel != 0 {
				return -i - 1
			}
			break
		}
	}
	return i
}

// TestSkip0MatchesScan: every entry of a program's skip table is the
// scan's answer, on random rule lists of both families, the default
// programs included.
func TestSkip0MatchesScan(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		g := newRuleGen(int64(fam)+40, fam)
		progs, skipped := 0, 0
		for set := 0; set < 300; set++ {
			o := newTestOps(t, fam)
			for i, n := 0, g.rng.Intn(40); i < n; i++ {
				o.NewRule(g.rule(uint32(1+i)), 0)
			}
			c := o.Snapshot().l.comp
			if c == nil {
				t.Fatalf("family %d set %d: no match program", fam, set)
			}
			progs++
			if len(c.skip0) != len(c.recs)+1 {
				t.Fatalf("family %d set %d: %d skip entries for %d records", fam, set, len(c.skip0), len(c.recs))
			}
			got, want := make([]int, len(c.skip0)), make([]int, len(c.skip0))
			for i := range c.skip0 {
				got[i], want[i] = int(c.skip0[i]), skip0Scan(c.recs, c.hits, i)
				if j, _ := skipAt(int32(want[i])); j > i {
					skipped++
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("family %d set %d skip0 (-scan +table):\n%s", fam, set, diff)
			}
		}
		if skipped == 0 {
			t.Fatalf("family %d: %d programs, no record ever skipped", fam, progs)
		}
	}
}

// TestCompiledUnmarkedFlows is TestCompiledMatcherAgainstGeneral for the
// flows the skip table serves: no fwmark and a TOS that masks to 0 (for
// IPv4 the ECN bits and bit 0x20 may be set, fib4_rule_match() masks
// them off; IPv6 compares the DSCP, so only the ECN bits), over random
// rule sets with fwmark rules (some of mark 0 under a mask, which such a
// flow passes) and TOS rules.
func TestCompiledUnmarkedFlows(t *testing.T) {
	const sets, flowsPerSet = 250, 420
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		t.Run(fmt.Sprint(fam), func(t *testing.T) {
			g := newRuleGen(int64(fam)+80, fam)
			flows, zero := 0, 0
			for set := 0; set < sets; set++ {
				o := newTestOps(t, fam)
				pref := uint32(1)
				for i, n := 0, g.rng.Intn(40); i < n; i++ {
					if !g.pick(4) {
						pref += uint32(g.rng.Intn(3))
					}
					o.NewRule(g.rule(pref), 0)
				}
				s := o.Snapshot()
				if s.l.comp == nil {
					t.Fatalf("set %d: no match program", set)
				}
				ref := general(s)
				for i := 0; i < flowsPerSet; i++ {
					k := g.flow()
					k.Mark = 0
					k.TOS = uint8(g.rng.Intn(4))
					if fam == rtnl.AF_INET && g.pick(2) {
						k.TOS |= 0x20 // outside IPTOS_RT_MASK &^ ECN
					}
					if i%7 == 6 {
						k.Mark = uint32(1 + g.rng.Intn(8)) // the record loop
					}
					if s.Matcher(&k).kv == 0 {
						zero++
					}
					want := trajectory(ref, &k)
					got := trajectory(s, &k)
					if !slices.Equal(want, got) {
						t.Fatalf("set %d flow %+v (-general +compiled):\n%s", set, k, cmp.Diff(want, got, cmp.AllowUnexported(Pos{})))
					}
					flows++
				}
			}
			if zero < flows*3/4 {
				t.Fatalf("%d of %d flows with kv 0: the skip table is not what is tested", zero, flows)
			}
			t.Logf("%d flows, %d with kv 0", flows, zero)
		})
	}
}

// TestStepFastMatchesStep: wherever StepFast answers, it answers Step's
// hit (the same record, by pointer); it answers for kv-0 flows on
// compiled lists only, and it does answer most of their steps on rule
// sets of fwmark rules like the benchmark's.
func TestStepFastMatchesStep(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		g := newRuleGen(int64(fam)+120, fam)
		fast, steps := 0, 0
		for set := 0; set < 200; set++ {
			o := newTestOps(t, fam)
			if set%2 == 0 {
				o = benchOps(t, fam, 1+g.rng.Intn(12))
			}
			for i, n := 0, g.rng.Intn(20); i < n; i++ {
				o.NewRule(g.rule(uint32(50+i)), 0)
			}
			for _, s := range []Snapshot{o.Snapshot(), general(o.Snapshot())} {
				for f := 0; f < 50; f++ {
					k := g.flow()
					if f%4 != 3 {
						k.Mark, k.TOS = 0, 0
					}
					m := s.Matcher(&k)
					for p := 0; p <= s.Len(); p++ {
						at := Pos{0, int32(p)}
						if s.l.comp == nil {
							break // general Pos values are chunked: Step alone
						}
						want := m.Step(at)
						got := m.StepFast(at)
						steps++
						if got == nil {
							continue
						}
						fast++
						if m.kv != 0 || s.l.comp == nil {
							t.Fatalf("family %d set %d: StepFast answered with kv %#x, program %v", fam, set, m.kv, s.l.comp != nil)
						}
						if got != want {
							t.Fatalf("family %d set %d flow %+v at %d: StepFast %+v, Step %+v", fam, set, k, p, got, want)
						}
					}
					if s.l.comp == nil {
						if h := m.StepFast(Pos{}); h != nil {
							t.Fatalf("family %d set %d: StepFast answered on a general list", fam, set)
						}
					}
				}
			}
		}
		if fast < steps/4 {
			t.Fatalf("family %d: StepFast answered %d of %d steps", fam, fast, steps)
		}
		t.Logf("family %d: StepFast answered %d of %d steps", fam, fast, steps)
	}
}
