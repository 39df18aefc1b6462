package fib

import (
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	rtt "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/rulesops"
)

// The slow, obvious reference for FIB.Lookup: a linear walk over the rule
// list with its own matcher written from RULES-SPEC §7.3, and a linear
// longest-prefix scan over every route that was inserted. It shares no code
// with lookup.go or rulesops/match.go; it reads only the stored rules'
// fields.

// refAnswer is what either side answered, compared with cmp.Diff.
type refAnswer struct {
	Err      syscall.Errno
	Table    uint32
	Dst      string
	Type     uint8
	Tos      uint8
	Priority uint32
	NH       int
	Rule     uint32
	RuleSet  bool
}

func answerOf(r Result, err syscall.Errno) refAnswer {
	if err != 0 {
		return refAnswer{Err: err}
	}
	return refAnswer{Table: r.Table, Dst: r.Dst.String(), Type: r.Entry.Type, Tos: r.Entry.Tos,
		Priority: r.Entry.Priority, NH: r.NH, Rule: r.Rule, RuleSet: r.RuleSet}
}

type refFIB struct {
	v6     bool
	routes []Route // every route inserted, Dst masked
	ops    *rulesops.Ops
	groups GroupMap
}

func refPrefixBits(a, b []byte, bits int) bool {
	for i := 0; i < bits; i++ {
		if (a[i/8]>>(7-i%8))&1 != (b[i/8]>>(7-i%8))&1 {
			return false
		}
	}
	return true
}

func refBytes(a netip.Addr) []byte {
	if !a.IsValid() {
		return make([]byte, 16)
	}
	return a.AsSlice()
}

// refMatch: does rule i match the flow? (RULES-SPEC §7.3, read literally.)
func (f *refFIB) refMatch(r *rulesops.Rule, x *rulesops.Extra, k flow.Key) bool {
	m := true
	if x.IIFIndex() != 0 && x.IIFIndex() != k.IIF {
		m = false
	}
	if x.OIFIndex() != 0 && x.OIFIndex() != k.OIF {
		m = false
	}
	if (x.Mark^k.Mark)&x.MarkMask != 0 {
		m = false
	}
	if x.TunID != 0 && x.TunID != k.TunID {
		m = false
	}
	if x.L3MDev != 0 {
		m = false
	}
	if k.UID < x.UIDStart || k.UID > x.UIDEnd {
		m = false
	}
	n := 4
	if f.v6 {
		n = 16
	}
	if r.DstLen > 0 && !refPrefixBits(refBytes(k.Dst), x.Dst[:n], int(r.DstLen)) {
		m = false
	}
	if r.SrcLen > 0 {
		hasSrc := k.Src.IsValid() && !k.Src.IsUnspecified()
		if !f.v6 || hasSrc {
			if !refPrefixBits(refBytes(k.Src), x.Src[:n], int(r.SrcLen)) {
				m = false
			}
		} else {
			m = false // no FIND_SADDR rules in the random sets
		}
	}
	dscp := k.TOS >> 2
	if x.DSCPFull && (x.DSCP^dscp)&x.DSCPMask != 0 {
		m = false
	}
	if r.Tos != 0 {
		if f.v6 && r.Tos>>2 != dscp {
			m = false
		}
		if !f.v6 && r.Tos != k.TOS&0x1C {
			m = false
		}
	}
	if f.v6 && (x.FlowLabel^k.FlowLabel)&x.FlowLabelMask != 0 {
		m = false
	}
	if x.IPProto != 0 && x.IPProto != k.Proto {
		m = false
	}
	for _, p := range []struct {
		rng  [2]uint16
		mask uint16
		v    uint16
	}{{x.Sport, x.SportMask, k.Sport}, {x.Dport, x.DportMask, k.Dport}} {
		if p.mask != 0 && (p.rng[0]^p.v)&p.mask != 0 {
			m = false
		}
		if p.mask == 0 && p.rng[0] != 0 && p.rng[1] != 0 && (p.v < p.rng[0] || p.v > p.rng[1]) {
			m = false
		}
	}
	if r.Flags&rtnl.FIB_RULE_INVERT != 0 {
		return !m
	}
	return m
}

// refTable returns the routes of the tables in ids containing dst, longest
// prefix first, each prefix's entries in stored order.
func (f *refFIB) refCandidates(ids []uint32, dst netip.Addr) [][]Route {
	byPrefix := map[netip.Prefix][]Route{}
	for _, r := range f.routes {
		if slices.Contains(ids, r.Table) && r.Dst.Contains(dst) {
			byPrefix[r.Dst] = append(byPrefix[r.Dst], r)
		}
	}
	var out [][]Route
	for bits := dst.BitLen(); bits >= 0; bits-- {
		p := netip.PrefixFrom(dst, bits).Masked()
		es := byPrefix[p]
		if len(es) == 0 {
			continue
		}
		slices.SortStableFunc(es, func(a, b Route) int {
			if f.v6 {
				return int(a.Priority) - int(b.Priority)
			}
			if a.Table != b.Table {
				return int(b.Table) - int(a.Table)
			}
			if a.Tos != b.Tos {
				return int(b.Tos) - int(a.Tos)
			}
			return int(a.Priority) - int(b.Priority)
		})
		out = append(out, es)
	}
	return out
}

func refErr(typ uint8) syscall.Errno {
	return map[uint8]syscall.Errno{rtnl.RTN_UNREACHABLE: syscall.EHOSTUNREACH, rtnl.RTN_PROHIBIT: syscall.EACCES,
		rtnl.RTN_BLACKHOLE: syscall.EINVAL, rtnl.RTN_THROW: syscall.EAGAIN}[typ]
}

func (f *refFIB) refTableExists(id uint32) bool {
	if f.v6 && (id == 254 || id == 255) {
		return true
	}
	for _, r := range f.routes {
		if r.Table == id {
			return true
		}
	}
	return false
}

// refLookupTables is one table lookup (ids: one table, or main+local
// while merged).
func (f *refFIB) refLookupTables(ids []uint32, reported uint32, k flow.Key) (refAnswer, syscall.Errno) {
	for _, es := range f.refCandidates(ids, k.Dst) {
		if !f.v6 {
			for _, e := range es {
				if e.Tos != 0 && e.Tos != k.TOS&0x1C {
					continue
				}
				// fib_table_lookup(): fib_scope < flowi4_scope skips.
				if e.Scope < k.Scope {
					continue
				}
				if err := refErr(e.Type); err != 0 {
					return refAnswer{}, err
				}
				for j, h := range e.Nexthops {
					if h.Flags&rtnl.RTNH_F_DEAD == 0 && (k.OIF == 0 || h.Dev == k.OIF) {
						return refAnswer{Table: reported, Dst: e.Dst.String(), Type: e.Type, Tos: e.Tos, Priority: e.Priority, NH: j}, 0
					}
				}
			}
			continue
		}
		// IPv6: per metric, the best hop by (oif match, router preference).
		// The device scored against: the oif on output, the input
		// device on input (iif other than lo, no oif).
		oif := k.OIF
		ll := k.Dst.IsLinkLocalUnicast() || k.Dst.IsMulticast() || k.Dst.IsLoopback()
		strict := k.OIF != 0 && (ll || !k.Src.IsValid() || k.Src.IsUnspecified())
		if k.OIF == 0 && k.IIF != 1 && k.IIF != 0 {
			oif, strict = k.IIF, ll
		}
		prefScore := map[uint8]int{0: 1, 1: 2, 3: 0, 2: 1}
		for g := 0; g < len(es); {
			end := g
			for end < len(es) && es[end].Priority == es[g].Priority {
				end++
			}
			best, bestNH, bestScore := -1, -1, -1
			for i := g; i < end; i++ {
				e := es[i]
				for j, h := range e.Nexthops {
					if h.Flags&rtnl.RTNH_F_DEAD != 0 {
						continue
					}
					oifOK := oif == 0 || h.Dev == oif
					if strict && !oifOK {
						continue
					}
					s := prefScore[e.Pref] * 4
					if oifOK {
						s += 2
					}
					if s > bestScore {
						best, bestNH, bestScore = i, j, s
					}
				}
			}
			if best >= 0 {
				e := es[best]
				if err := refErr(e.Type); err != 0 {
					return refAnswer{}, err
				}
				return refAnswer{Table: reported, Dst: e.Dst.String(), Type: e.Type, Priority: e.Priority, NH: bestNH}, 0
			}
			g = end
		}
	}
	return refAnswer{}, syscall.EAGAIN
}

func (f *refFIB) refLookup(k flow.Key) refAnswer {
	if !f.ops.HasCustomRules() {
		if f.v6 {
			a, err := f.refLookupTables([]uint32{255}, 255, k)
			if err == syscall.EAGAIN {
				a, err = f.refLookupTables([]uint32{254}, 254, k)
			}
			if err == syscall.EAGAIN {
				err = syscall.ENETUNREACH
			}
			a.Err = err
			if err != 0 {
				return refAnswer{Err: err}
			}
			return a
		}
		a, err := f.refLookupTables([]uint32{254, 255}, 254, k)
		if !f.refTableExists(254) && !f.refTableExists(255) {
			a, err = refAnswer{}, syscall.ENETUNREACH
		}
		if err != 0 && f.refTableExists(253) {
			a, err = f.refLookupTables([]uint32{253}, 253, k)
		}
		if err == syscall.EAGAIN {
			err = syscall.ENETUNREACH
		}
		if err != 0 {
			return refAnswer{Err: err}
		}
		return a
	}
	s := f.ops.Snapshot()
	for i := 0; i < s.Len(); i++ {
		r, x := s.Rule(i)
		if !f.refMatch(r, x, k) {
			continue
		}
		switch r.Action {
		case rtnl.FR_ACT_GOTO:
			for j := 0; j < s.Len(); j++ {
				if t, _ := s.Rule(j); t.Pref == r.Target {
					i = j - 1 // re-evaluate the target itself
					break
				}
			}
			continue
		case rtnl.FR_ACT_NOP:
			continue
		case rtnl.FR_ACT_UNREACHABLE:
			return refAnswer{Err: syscall.ENETUNREACH}
		case rtnl.FR_ACT_PROHIBIT:
			return refAnswer{Err: syscall.EACCES}
		case rtnl.FR_ACT_TO_TBL:
		default:
			return refAnswer{Err: syscall.EINVAL}
		}
		id := r.Table
		if id == 0 {
			id = 254
		}
		if !f.refTableExists(id) {
			continue
		}
		a, err := f.refLookupTables([]uint32{id}, id, k)
		if err == syscall.EAGAIN {
			continue
		}
		if err != 0 {
			return refAnswer{Err: err}
		}
		// Suppressors.
		plen, _ := netip.ParsePrefix(a.Dst)
		if x.SuppressPrefixlen >= 0 && int32(plen.Bits()) <= x.SuppressPrefixlen {
			continue
		}
		if x.SuppressIfgroup != -1 {
			var e Route
			for _, rr := range f.routes {
				if rr.Table == id && rr.Dst == plen && rr.Tos == a.Tos && rr.Priority == a.Priority {
					e = rr
				}
			}
			dev := int32(0)
			if len(e.Nexthops) > 0 {
				dev = e.Nexthops[0].Dev
				if f.v6 {
					dev = e.Nexthops[a.NH].Dev
				}
			}
			if dev != 0 && f.groups[dev] == uint32(x.SuppressIfgroup) {
				continue
			}
		}
		a.Rule, a.RuleSet = r.Pref, true
		return a
	}
	return refAnswer{Err: syscall.ENETUNREACH}
}

// Random generation.

type refGen struct {
	rng *rand.Rand
	v6  bool
}

// addr returns an address in a small space, so that flows hit prefixes.
func (g *refGen) addr() netip.Addr {
	if g.v6 {
		var b [16]byte
		b[0], b[1] = 0x20, 0x01
		b[2] = byte(g.rng.Intn(4))
		b[3] = byte(g.rng.Intn(4))
		b[15] = byte(g.rng.Intn(256))
		return netip.AddrFrom16(b)
	}
	return netip.AddrFrom4([4]byte{10, byte(g.rng.Intn(4)), byte(g.rng.Intn(4)), byte(g.rng.Intn(256))})
}

func (g *refGen) prefix() netip.Prefix {
	a := g.addr()
	bits := []int{0, 8, 14, 16, 22, 24, 30, 32}
	if g.v6 {
		bits = []int{0, 16, 22, 24, 30, 32, 64, 120, 128}
	}
	return netip.PrefixFrom(a, bits[g.rng.Intn(len(bits))]).Masked()
}

func (g *refGen) route(tables []uint32) Route {
	fam := uint8(rtnl.AF_INET)
	if g.v6 {
		fam = rtnl.AF_INET6
	}
	r := Route{Family: fam, Table: tables[g.rng.Intn(len(tables))], Dst: g.prefix(), Type: rtnl.RTN_UNICAST, Protocol: rtnl.RTPROT_BOOT}
	r.Priority = uint32(g.rng.Intn(4))
	if g.v6 {
		r.Priority = uint32(1 + g.rng.Intn(3))
		r.Pref = []uint8{0, 1, 3}[g.rng.Intn(3)]
	} else if g.rng.Intn(4) == 0 {
		r.Tos = []uint8{0x04, 0x08, 0x10, 0x1c}[g.rng.Intn(4)]
	}
	switch g.rng.Intn(12) {
	case 0:
		r.Type = rtnl.RTN_UNREACHABLE
	case 1:
		r.Type = rtnl.RTN_PROHIBIT
	case 2:
		r.Type = rtnl.RTN_BLACKHOLE
	case 3:
		r.Type = rtnl.RTN_THROW
	}
	if r.Type != rtnl.RTN_UNICAST {
		if g.v6 {
			r.Nexthops = []Nexthop{{Dev: 1, Weight: 1}}
		}
		return r
	}
	if !g.v6 && r.Table == 255 {
		r.Type, r.Scope = rtnl.RTN_LOCAL, rtnl.RT_SCOPE_HOST
	}
	n := 1
	if !g.v6 && g.rng.Intn(5) == 0 {
		n = 2 + g.rng.Intn(2)
	}
	for i := 0; i < n; i++ {
		h := Nexthop{Dev: int32(2 + g.rng.Intn(4)), Weight: 1}
		if g.rng.Intn(2) == 0 {
			if g.v6 {
				h.Gateway = netip.MustParseAddr(fmt.Sprintf("fe80::%d", 1+g.rng.Intn(9)))
			} else {
				h.Gateway = netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + g.rng.Intn(9))})
			}
		}
		if g.rng.Intn(8) == 0 {
			h.Flags = rtnl.RTNH_F_DEAD
		}
		r.Nexthops = append(r.Nexthops, h)
	}
	return r
}

// ruleBody returns a random rule request.
func (g *refGen) ruleBody(pref uint32, tables []uint32) []byte {
	h := rtt.V4(0)
	n := 4
	if g.v6 {
		h, n = rtt.V6(0), 16
	}
	attrs := []rtt.Attr{rtt.Pref(pref)}
	switch g.rng.Intn(10) {
	case 0:
		h.Action = rtnl.FR_ACT_GOTO
		attrs = append(attrs, rtt.U32(rtnl.FRA_GOTO, pref+uint32(1+g.rng.Intn(6))*10))
	case 1:
		h.Action = rtnl.FR_ACT_NOP
	case 2:
		h.Action = []uint8{rtnl.FR_ACT_UNREACHABLE, rtnl.FR_ACT_PROHIBIT, rtnl.FR_ACT_BLACKHOLE}[g.rng.Intn(3)]
	default:
		attrs = append(attrs, rtt.Table(tables[g.rng.Intn(len(tables))]))
	}
	addrAttr := func(t uint16, a netip.Addr) rtt.Attr { return rtt.Attr{Type: t, Data: a.AsSlice()[:n]} }
	for sel := g.rng.Intn(4); sel > 0; sel-- {
		switch g.rng.Intn(14) {
		case 0:
			p := g.prefix()
			h.SrcLen = uint8(p.Bits())
			attrs = append(attrs, addrAttr(rtnl.FRA_SRC, p.Addr()))
		case 1:
			p := g.prefix()
			h.DstLen = uint8(p.Bits())
			attrs = append(attrs, addrAttr(rtnl.FRA_DST, p.Addr()))
		case 2:
			attrs = append(attrs, rtt.U32(rtnl.FRA_FWMARK, uint32(g.rng.Intn(4))), rtt.U32(rtnl.FRA_FWMASK, uint32(g.rng.Intn(4))))
		case 3:
			attrs = append(attrs, rtt.Str(rtnl.FRA_IIFNAME, []string{"lo", "v0", "v1", "w0", "gone"}[g.rng.Intn(5)]))
		case 4:
			attrs = append(attrs, rtt.Str(rtnl.FRA_OIFNAME, []string{"v0", "w0", "gone"}[g.rng.Intn(3)]))
		case 5:
			lo := uint32(g.rng.Intn(3000))
			attrs = append(attrs, rtt.UIDRange(lo, lo+uint32(g.rng.Intn(2000))))
		case 6:
			attrs = append(attrs, rtt.U8(rtnl.FRA_IP_PROTO, []uint8{6, 17}[g.rng.Intn(2)]))
		case 7:
			a := uint16(1 + g.rng.Intn(1000))
			b := a
			if g.rng.Intn(2) == 0 {
				b += uint16(g.rng.Intn(500))
			}
			attrs = append(attrs, rtt.PortRange(rtnl.FRA_DPORT_RANGE, a, b))
		case 8:
			a := uint16(1 + g.rng.Intn(1000))
			attrs = append(attrs, rtt.PortRange(rtnl.FRA_SPORT_RANGE, a, a+uint16(g.rng.Intn(300))))
		case 9:
			h.Tos = []uint8{0x04, 0x08, 0x10, 0x1c}[g.rng.Intn(4)]
		case 10:
			if h.Tos == 0 {
				attrs = append(attrs, rtt.U8(rtnl.FRA_DSCP, uint8(g.rng.Intn(64))))
			}
		case 11:
			h.Flags |= rtnl.FIB_RULE_INVERT
		case 12:
			attrs = append(attrs, rtt.U32(rtnl.FRA_SUPPRESS_PREFIXLEN, uint32([]int{0, 8, 16, 24}[g.rng.Intn(4)])))
		case 13:
			if g.v6 {
				v := uint32(g.rng.Intn(4))
				attrs = append(attrs, rtt.BE32(rtnl.FRA_FLOWLABEL, v), rtt.BE32(rtnl.FRA_FLOWLABEL_MASK, 0x3))
			} else {
				attrs = append(attrs, rtt.U32(rtnl.FRA_SUPPRESS_IFGROUP, uint32(g.rng.Intn(3))))
			}
		}
	}
	return rtt.Body(h, attrs...)
}

func (g *refGen) flow() flow.Key {
	k := flow.Key{Dst: g.addr(), IIF: int32(1 + g.rng.Intn(5)), Mark: uint32(g.rng.Intn(4)), UID: uint32(g.rng.Intn(5000)),
		TOS: uint8(g.rng.Intn(256)), Proto: []uint8{6, 17, 1}[g.rng.Intn(3)], Sport: uint16(g.rng.Intn(1400)), Dport: uint16(g.rng.Intn(1400))}
	if g.rng.Intn(2) == 0 {
		k.Src = g.addr()
	} else if g.v6 {
		k.Src = netip.IPv6Unspecified()
	} else {
		k.Src = netip.IPv4Unspecified()
	}
	if g.rng.Intn(4) == 0 {
		k.OIF = int32(2 + g.rng.Intn(4))
	}
	if g.v6 {
		k.FlowLabel = uint32(g.rng.Intn(8))
	}
	return k
}

// batchFlows returns n flows in bursts: each flow repeats the previous
// one, keeps its destination and changes one other key field (so that
// LookupBatch's hint must tell them apart exactly), or is new.
func (g *refGen) batchFlows(n int) []flow.Key {
	out := make([]flow.Key, 0, n)
	for len(out) < n {
		if len(out) == 0 || g.rng.Intn(4) == 0 {
			out = append(out, g.flow())
			continue
		}
		k := out[len(out)-1]
		switch g.rng.Intn(12) {
		case 0:
			k.TOS = uint8(g.rng.Intn(256))
		case 1:
			k.OIF = int32(g.rng.Intn(6))
		case 2:
			k.IIF = int32(g.rng.Intn(6))
		case 3:
			k.Scope = []uint8{0, rtnl.RT_SCOPE_LINK, rtnl.RT_SCOPE_HOST}[g.rng.Intn(3)]
		case 4:
			if g.rng.Intn(2) == 0 {
				k.Src = g.addr()
			} else {
				k.Src = netip.Addr{}
			}
		case 5:
			k.Mark = uint32(g.rng.Intn(4))
		case 6:
			k.UID = uint32(g.rng.Intn(5000))
		case 7:
			k.Dport = uint16(g.rng.Intn(1400))
		case 8:
			k.FlowLabel = uint32(g.rng.Intn(8))
		}
		out = append(out, k)
	}
	return out
}

// checkBatch compares LookupBatch and LookupBatchNoHints over flows with
// the answers want (one per flow); it returns the number of mismatches.
func checkBatch(t *testing.T, f *FIB, flows []flow.Key, want []refAnswer, what string) int {
	t.Helper()
	res := make([]Result, len(flows))
	errs := make([]syscall.Errno, len(flows))
	bad := 0
	for _, hints := range []bool{true, false} {
		clear(res)
		clear(errs)
		if hints {
			f.LookupBatch(flows, res, errs)
		} else {
			f.LookupBatchNoHints(flows, res, errs)
		}
		for i := range flows {
			if diff := cmp.Diff(want[i], answerOf(res[i], errs[i])); diff != "" {
				bad++
				if bad <= 3 {
					t.Errorf("%s hints=%v flow %d %+v (-want +LookupBatch):\n%s", what, hints, i, flows[i], diff)
				}
			}
		}
	}
	return bad
}

// TestLookupMatchesReference is the randomized acceptance test: 100,000
// random flows per family over random rule sets and random tables, each
// answered by FIB.Lookup and by the reference, compared with cmp.Diff; the
// same flows, in bursts of 1–64 that repeat destinations with one other
// key field changed, through LookupBatch with and without hints.
func TestLookupMatchesReference(t *testing.T) { lookupMatchesReference(t) }

// TestLookupMatchesReferenceIndexed is TestLookupMatchesReference with the
// read index's thresholds lowered (index.go) so that the random tables of a
// few dozen routes use every index mode: tiny lists, full indexes, slow
// buckets answered by bart, and the switches between them under the
// rounds' churn.
func TestLookupMatchesReferenceIndexed(t *testing.T) {
	saved := [4]int{tinyMax, fullMin, fullDrop, bucketMax}
	defer func() { tinyMax, fullMin, fullDrop, bucketMax = saved[0], saved[1], saved[2], saved[3] }()
	tinyMax, fullMin, fullDrop, bucketMax = 2, 6, 3, 2
	lookupMatchesReference(t)
}

func lookupMatchesReference(t *testing.T) {
	const rounds, flowsPerRound = 100, 1000
	for _, v6 := range []bool{false, true} {
		fam := uint8(rtnl.AF_INET)
		if v6 {
			fam = rtnl.AF_INET6
		}
		seed := int64(1)
		if v6 {
			seed = 2
		}
		g := &refGen{rng: rand.New(rand.NewSource(seed)), v6: v6}
		flows, mismatches := 0, 0
		for round := 0; round < rounds; round++ {
			f, ref := g.round(t, fam, round)
			for done := 0; done < flowsPerRound; {
				batch := g.batchFlows(min(1+g.rng.Intn(64), flowsPerRound-done))
				want := make([]refAnswer, len(batch))
				for i, k := range batch {
					want[i] = ref.refLookup(k)
					gotA := answerOf(f.Lookup(k))
					flows++
					if diff := cmp.Diff(want[i], gotA); diff != "" {
						mismatches++
						if mismatches <= 5 {
							t.Errorf("family %d round %d flow %+v (-reference +Lookup):\n%s", fam, round, k, diff)
						}
					}
				}
				mismatches += checkBatch(t, f, batch, want, fmt.Sprintf("family %d round %d", fam, round))
				done += len(batch)
			}
		}
		if mismatches > 0 {
			t.Errorf("family %d: %d of %d flows differ", fam, mismatches, flows)
		}
		if flows < 100000 {
			t.Fatalf("family %d: only %d flows", fam, flows)
		}
	}
}

// round builds one random FIB and its reference.
func (g *refGen) round(t *testing.T, fam uint8, round int) (*FIB, *refFIB) {
	f, tb, ops := lkNewFIB(t, fam)
	ref := &refFIB{v6: g.v6, ops: ops}
	tables := []uint32{254, 100, 200, 300}
	if !g.v6 {
		tables = append(tables, 253, 255)
	}
	for i, n := 0, 5+g.rng.Intn(60); i < n; i++ {
		r := g.route(tables)
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL); err == nil {
			r.Dst = r.Dst.Masked()
			ref.routes = append(ref.routes, r)
		}
	}
	// Churn: a quarter of the routes go again (RemoveIf), chosen by a
	// function of the route both sides agree on, so that the tables'
	// indexes have seen deletions too.
	salt := g.rng.Intn(1 << 20)
	gone := func(r *Route) bool {
		a := r.Dst.Addr().As16()
		return (int(a[15])+int(a[3])+r.Dst.Bits()+int(r.Table)+int(r.Priority)+int(r.Tos)+salt)%4 == 0
	}
	tb.RemoveIf(gone, false)
	kept := ref.routes[:0]
	for i := range ref.routes {
		if !gone(&ref.routes[i]) {
			kept = append(kept, ref.routes[i])
		}
	}
	ref.routes = kept
	// A quarter of the rounds keep the default rules (the fast
	// paths); the rest get custom rules.
	if round%4 != 0 {
		for i, n := 0, 1+g.rng.Intn(12); i < n; i++ {
			pref := uint32(1 + g.rng.Intn(40)*10)
			msgs := rtnl.SplitDatagram(rtt.Msg(rtnl.RTM_NEWRULE, rtt.AddFlags, 1, g.ruleBody(pref, tables)))
			m, err := rtnl.DecodeRuleHeader(&msgs[0])
			if err == nil {
				ops.NewRule(m, uint16(msgs[0].Header.Flags)) // invalid random rules are refused; fine
			}
		}
		if round%8 == 1 {
			lkRule(t, ops, rtnl.RTM_DELRULE, rtt.Body(rtt.Hdr{Family: fam, Action: rtnl.FR_ACT_TO_TBL}, rtt.Pref(0)))
		}
	}
	if round%3 == 0 {
		grp := GroupMap{2: 1, 3: 2, 4: 0, 5: 1}
		f.SetGroups(grp)
		ref.groups = grp
	}
	return f, ref
}

// TestLookupBatchSourceRoutesNoHint: with IPv6 source-specific routes in
// main the answer depends on the flow's source, so LookupBatch must not
// reuse a result across flows that differ only in their source; random
// tables with source routes, bursts to one destination from varying
// sources, compared with Lookup flow by flow (the reference does not model
// source subtrees). A route with a source prefix in a table other than
// local and main leaves the hints on.
func TestLookupBatchSourceRoutesNoHint(t *testing.T) {
	g := &refGen{rng: rand.New(rand.NewSource(9)), v6: true}
	total, bad := 0, 0
	for round := 0; round < 60; round++ {
		f, tb, _ := lkNewFIB(t, rtnl.AF_INET6)
		for i, n := 0, 5+g.rng.Intn(40); i < n; i++ {
			tb.Insert(g.route([]uint32{254, 255}), rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
		}
		for i, n := 0, 1+g.rng.Intn(8); i < n; i++ {
			r := g.route([]uint32{254})
			src := g.prefix()
			if src.Bits() == 0 {
				src = netip.PrefixFrom(src.Addr(), 64).Masked()
			}
			r.Src = src
			tb.Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
		}
		snap := tb.Snapshot()
		if v, _ := snap.Table(254); !hasSrcRoutes(&v) {
			t.Fatalf("round %d: no source route counted in main", round)
		}
		for range 20 {
			flows := g.batchFlows(64)
			for i := 1; i < len(flows); i++ {
				if g.rng.Intn(2) == 0 {
					flows[i] = flows[i-1]
					flows[i].Src = g.addr()
				}
			}
			want := make([]refAnswer, len(flows))
			for i, k := range flows {
				want[i] = answerOf(f.Lookup(k))
			}
			bad += checkBatch(t, f, flows, want, fmt.Sprintf("round %d", round))
			total += len(flows)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d flows differ", bad, total)
	}
}

// TestSourceRouteCount: the per-table count of source-specific entries
// follows inserts and deletes (it gates LookupBatch's IPv6 hints).
func TestSourceRouteCount(t *testing.T) {
	_, tb, _ := lkNewFIB(t, rtnl.AF_INET6)
	count := func() int {
		s := tb.Snapshot()
		v, _ := s.Table(254)
		if v.bt == nil {
			return 0
		}
		return v.bt.srcRoutes
	}
	r := lkUni(rtnl.AF_INET6, 254, "2001:db8::/64", "fe80::1", 3)
	lkInsert(t, tb, r)
	rs := r
	rs.Src = lkP("2001:db8:1::/48")
	lkInsert(t, tb, rs)
	rs2 := r
	rs2.Dst, rs2.Src = lkP("2001:db8:5::/64"), lkP("2001:db8:2::/48")
	lkInsert(t, tb, rs2)
	if got := count(); got != 2 {
		t.Fatalf("after two source routes: %d", got)
	}
	if _, err := tb.Delete(Match{Family: rtnl.AF_INET6, Table: 254, Dst: rs.Dst, Src: rs.Src, Scope: rtnl.RT_SCOPE_NOWHERE}); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 1 {
		t.Fatalf("after deleting one: %d", got)
	}
	if _, err := tb.Delete(Match{Family: rtnl.AF_INET6, Table: 254, Dst: rs2.Dst, Src: rs2.Src, Scope: rtnl.RT_SCOPE_NOWHERE}); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 0 {
		t.Fatalf("after deleting both: %d", got)
	}
}
