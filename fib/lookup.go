package fib

import (
	"net/netip"
	"sync/atomic"
	"syscall"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/rulesops"
)

// Result is the answer of one lookup, by value (the kernel's struct
// fib_result for IPv4, the fib6_result behind the rt6_info for IPv6): the
// entry that matched, the table that produced it and the nexthop chosen so
// far. It holds no reference count and nothing a reader writes (seed 001):
// Entry points at the stored, immutable entry, as fib_result's fi points
// at the fib_info (kept alive by the garbage collector instead of RCU), so
// that a lookup copies 64 bytes instead of a 160-byte Route
// (BenchmarkLookup*).
type Result struct {
	// Table is the id of the table whose lookup answered
	// (res->table->tb_id): 254 for a hit on a local route while IPv4 local
	// and main are merged, as the kernel reports it (ROUTES-SPEC §6).
	Table uint32
	// Rule is the priority of the rule whose action produced the result;
	// RuleSet is false on the no-custom-rules path, where no rule is
	// walked.
	Rule uint32
	// NH is the index in Entry.Nexthops of the nexthop the lookup chose:
	// the first usable one (fib_table_lookup()'s nh_sel), until SelectPath
	// applies the multipath hash; -1 when the entry has no nexthop.
	NH int
	// Dst is the matched prefix (the entry's destination).
	Dst netip.Prefix
	// Entry is the matched entry as stored: read only, shared with the
	// table and every other reader. Its Dst is the zero Prefix (entries
	// are stored once per distinct attribute set; Dst above is the
	// prefix); Route returns the whole route. Never nil in a Result the
	// package returns: an answer without an entry (a rule's unreachable
	// action, no route) points at a zero Route.
	Entry   *Route
	RuleSet bool
}

// noRoute is the Entry of a Result without an entry.
var noRoute Route

// Route returns a copy of the matched route with its destination.
func (r *Result) Route() Route {
	if r.Entry == nil {
		return Route{}
	}
	x := *r.Entry
	x.Dst = r.Dst
	return x
}

// Nexthop returns the chosen nexthop, or the zero Nexthop.
func (r *Result) Nexthop() Nexthop {
	if r.Entry == nil || r.NH < 0 || r.NH >= len(r.Entry.Nexthops) {
		return Nexthop{}
	}
	return r.Entry.Nexthops[r.NH]
}

// FIB is one family of one namespace as a lookup sees it: the family's
// tables and its policy rules, linked as values by nsmgr at namespace
// creation (fib does not own the rules, rulesops does not know the tables).
//
// Concurrency: Lookup never locks; SetGroups may run concurrently.
type FIB struct {
	tables *Tables
	rules  *rulesops.Ops
	v6     bool
	// local6 and main6 are IPv6's local and main tables, which exist from
	// NewIPv6 on and, as every table, are never replaced (fib6_tables_init()):
	// fast6 reaches their stores in one load each instead of three (the
	// Tables, its registry, the registry's slot). nil: not yet created
	// when the FIB was linked; fast6 asks the registry.
	local6, main6 *table
	// groups answers the device group for suppress_ifgroup; nil means
	// every device is in group 0 (the default group).
	groups atomic.Pointer[groupHolder]
}

// GroupSource tells the group of a device (dev->group, IFLA_GROUP). The
// lookup asks it only for a rule with suppress_ifgroup whose table
// answered, never per rule.
type GroupSource interface {
	Group(ifindex int32) uint32
}

// GroupMap is a fixed GroupSource: ifindex → group, absent devices in
// group 0.
type GroupMap map[int32]uint32

// Group implements GroupSource.
func (m GroupMap) Group(ifindex int32) uint32 { return m[ifindex] }

type groupHolder struct{ src GroupSource }

// NewFIB links a family's tables and rules. rules must be the same family.
func NewFIB(tables *Tables, rules *rulesops.Ops) *FIB {
	f := &FIB{tables: tables, rules: rules, v6: rules.Family() == rtnl.AF_INET6}
	if f.v6 {
		set := tables.set.Load()
		f.local6, f.main6 = set.get(rtnl.RT_TABLE_LOCAL), set.get(rtnl.RT_TABLE_MAIN)
	}
	return f
}

// SetGroups sets where suppress_ifgroup finds device groups (nsmgr: the
// namespace's devices).
func (f *FIB) SetGroups(g GroupSource) { f.groups.Store(&groupHolder{g}) }

func (f *FIB) group(dev int32) uint32 {
	if g := f.groups.Load(); g != nil && g.src != nil {
		return g.src.Group(dev)
	}
	return 0
}

// Lookup resolves one flow: fib_lookup() for IPv4, fib6_rule_lookup() for
// IPv6, with the rule walk (fib_rules_lookup()) when the namespace has
// custom rules. The error is 0 on success, else the kernel's: ENETUNREACH
// when nothing answered, EHOSTUNREACH / EACCES / EINVAL for an unreachable /
// prohibit / blackhole route, ENETUNREACH / EACCES / EINVAL for those rule
// actions.
//
// IPv4 keys carry the flow's scope (flow.Key.Scope); the multipath choice is
// left to SelectPath, as fib_select_path() follows fib_lookup() in the
// kernel.
//
// Cost: no lock, no allocation, no write to shared memory (seed 001), no
// interface or function-value call per rule (seed 002); the Result points
// at the stored entry instead of copying it (BenchmarkLookup*).
func (f *FIB) Lookup(k flow.Key) (res Result, err syscall.Errno) {
	// The custom-rules flag is read before the tables: the first custom
	// rule publishes the unmerged tables before it sets the flag.
	custom := f.rules.HasCustomRules()
	if !custom {
		var ok bool
		if f.v6 {
			err, ok = f.fast6(&k, &res)
		} else {
			err, ok = f.fast4(&k, &res)
		}
		if ok {
			return res, err
		}
	}
	snap := f.tables.Snapshot()
	switch {
	case custom:
		err = f.walk(&snap, f.rules.Snapshot(), &k, &res)
	case f.v6:
		err = f.lookupNoRules6(&snap, &k, &res)
	default:
		err = lookupNoRules4(&snap, &k, &res)
	}
	res.seal()
	return res, err
}

// lookup is Lookup into h.
func (f *FIB) lookup(k *flow.Key, h *hit) syscall.Errno {
	// The custom-rules flag is read before the tables: the first custom
	// rule publishes the unmerged tables before it sets the flag.
	custom := f.rules.HasCustomRules()
	snap := f.tables.Snapshot()
	if !custom {
		if f.v6 {
			return f.lookupNoRules6(&snap, k, h)
		}
		return lookupNoRules4(&snap, k, h)
	}
	return f.walk(&snap, f.rules.Snapshot(), k, h)
}

// hit is a Result while the lookup runs: Entry is nil until an entry
// answers, and seal gives it the zero Route at the end.
type hit = Result

// noHit is the answer carrying no entry.
var noHit = hit{NH: -1}

// seal makes a Result without an entry point at the zero Route.
func (h *hit) seal() {
	if h.Entry == nil {
		h.Entry = &noRoute
	}
}

// lookupNoRules4 is fib_lookup()'s no-custom-rules branch: main (which holds
// the local routes while merged), then on any failure the default table if
// it exists, whose outcome replaces main's — even an unreachable route in
// main gives way to "no route" from an existing default (RULES-SPEC §7.1).
func lookupNoRules4(snap *Snapshot, k *flow.Key, h *hit) syscall.Errno {
	*h = noHit
	err := syscall.ENETUNREACH
	if v, ok := snap.MergedMain(); ok {
		err = lookupView(&v, k, false, h)
	}
	if err != 0 {
		// Only an existing default table replaces main's answer: in a
		// namespace without one, main's unreachable route stands
		// (EHOSTUNREACH, ROUTES-SPEC E11).
		if v, ok := snap.Table(rtnl.RT_TABLE_DEFAULT); ok {
			*h = noHit
			err = lookupView(&v, k, false, h)
		}
	}
	if err == syscall.EAGAIN {
		err = syscall.ENETUNREACH
	}
	return err
}

// lookupNoRules6 is fib6_rule_lookup() without custom rules: local, then
// main unless local answered with something other than a throw; the rule
// list is not consulted at all, which is why deleting the IPv6 local rule
// changes nothing until a rule is added (RULES-SPEC §7.1, A19).
func (f *FIB) lookupNoRules6(snap *Snapshot, k *flow.Key, h *hit) syscall.Errno {
	*h = noHit
	err := f.lookupIn(snap, rtnl.RT_TABLE_LOCAL, k, h)
	if err == syscall.EAGAIN {
		*h = noHit
		err = f.lookupIn(snap, rtnl.RT_TABLE_MAIN, k, h)
	}
	if err == syscall.EAGAIN {
		*h = noHit
		return syscall.ENETUNREACH
	}
	return err
}

// walk is fib_rules_lookup() with the family's action and suppress steps
// (fib4_rule_action() / fib4_rule_suppress(), fib6_rule_action() /
// fib6_rule_suppress()): a switch on the action, no callback per rule. The
// flow is unpacked for the rule matcher once for the whole walk.
func (f *FIB) walk(snap *Snapshot, rs rulesops.Snapshot, k *flow.Key, h *hit) syscall.Errno {
	m := rs.Matcher(k)
	p := rulesops.Pos{}
	for {
		// StepFast inline, Step when it cannot tell (rulesops): an
		// unmarked flow passes the benchmark's ten fwmark rules with no
		// call.
		r := m.StepFast(p)
		if r == nil {
			r = m.Step(p)
		}
		if r == nil {
			// -ESRCH from the walk: __fib_lookup() turns it into
			// ENETUNREACH; IPv6 returns the null entry, whose error is
			// the same.
			*h = noHit
			return syscall.ENETUNREACH
		}
		p = r.Next()
		switch r.Action {
		case rtnl.FR_ACT_GOTO:
			// An unresolved goto is a rule that did not match; a
			// resolved one continues at its target, whose own
			// selectors are evaluated again (RULES-SPEC §7.2, A17, A20).
			if r.Resolved {
				p = r.Goto
			}
			continue
		case rtnl.FR_ACT_NOP:
			continue
		case rtnl.FR_ACT_TO_TBL:
		case rtnl.FR_ACT_UNREACHABLE:
			*h = hit{NH: -1, Rule: r.Pref, RuleSet: true}
			return syscall.ENETUNREACH
		case rtnl.FR_ACT_PROHIBIT:
			*h = hit{NH: -1, Rule: r.Pref, RuleSet: true}
			return syscall.EACCES
		default: // FR_ACT_BLACKHOLE and every other value
			*h = hit{NH: -1, Rule: r.Pref, RuleSet: true}
			return syscall.EINVAL
		}
		if r.FindSaddr {
			// fib6_rule_saddr() would select a source address through
			// the result's device; no request nlemu answers sets
			// FIB_RULE_FIND_SADDR on a flow without a source, and the
			// source selection lives above fib: the rule gives EAGAIN,
			// as the kernel's does when no source fits.
			continue
		}
		table := r.Table
		if table == 0 {
			// fib_get_table() / fib6_get_table(): id 0 is main.
			table = rtnl.RT_TABLE_MAIN
		}
		// No reset of h here: lookupIn resets it before the general path,
		// and a probe that answers writes every field but the rule's,
		// which the return below sets (a 64-byte store per rule probed).
		err := f.lookupIn(snap, table, k, h)
		// Both suppressors off (-1) is every rule but a few: no call.
		if err == 0 && (r.SuppressPrefixlen >= 0 || r.SuppressIfgroup != -1) && f.suppressed(r, h) {
			continue
		}
		if err != syscall.EAGAIN {
			h.Rule, h.RuleSet = r.Pref, true
			return err
		}
	}
}

// LookupTable looks k up in table id alone (fib_table_lookup() /
// fib6_table_lookup(), no rules): EAGAIN when the table does not exist or
// has no answer, the route's error for a reject route, EAGAIN for a throw
// route. The gateway checks of route changes use it.
func (f *FIB) LookupTable(id uint32, k flow.Key) (Result, syscall.Errno) {
	return f.lookupTable(id, &k)
}

// lookupTable is LookupTable with the key by pointer.
func (f *FIB) lookupTable(id uint32, k *flow.Key) (Result, syscall.Errno) {
	snap := f.tables.Snapshot()
	h := noHit
	err := f.lookupIn(&snap, id, k, &h)
	h.seal()
	return h, err
}

// lookupIn is LookupTable in a given snapshot, into h: on EAGAIN h may be
// left as it was; otherwise its entry, nexthop, prefix and table are
// written (the probes write them; the general path starts from noHit),
// never its rule.
func (f *FIB) lookupIn(snap *Snapshot, id uint32, k *flow.Key, h *hit) syscall.Errno {
	t := snap.set.get(id)
	if t == nil {
		return syscall.EAGAIN
	}
	// Snapshot.view written out, so that a rule walk's table probe
	// builds no View unless the general path needs one.
	var s *store
	all := true
	if lm := snap.lm; lm != nil && (id == tableMain || id == tableLocal) {
		s, all = lm.main, !lm.merged
		if id == tableLocal {
			s = lm.local
		}
	} else {
		s = t.root.Load()
	}
	if s == nil {
		// An empty table (IPv6 local without addresses, a rule's
		// table that never had a route): no probe at all.
		return syscall.EAGAIN
	}
	if all && s.fx == nil && noPrefixTiny(s.ix, k) {
		// A tiny table, as the walk's table local is (the loopback
		// prefixes, the addresses and their broadcasts): its summary
		// tells most destinations that no prefix holds them, where the
		// probe cannot answer and the general path scans every entry.
		return syscall.EAGAIN
	}
	if all {
		var err syscall.Errno
		var ok bool
		if f.v6 {
			oif, strict := rt6Oif(k)
			err, ok = probe6(s, id, k, oif, strict, h)
		} else {
			err, ok = probe4(s, id, k, h)
		}
		if ok {
			return err
		}
	}
	*h = noHit
	v := View{family: snap.family, id: id, bt: s, all: all}
	return lookupView(&v, k, f.v6, h)
}

// lpm sets *e to the entries of the longest prefix of v containing addr:
// one probe of the table's read index (store.ix, index.go) when it has
// one, else one bart longest-prefix match; the merged main/local views
// through their table-id filter. The entries are written in place (no
// 64-byte result copied back per table).
func (v *View) lpm(addr netip.Addr, e *Entries) bool {
	s := v.bt
	if s == nil || !addr.IsValid() {
		return false
	}
	if !v.all {
		var ok bool
		*e, ok = v.Lookup(addr)
		return ok
	}
	if x := s.ix; x != nil {
		p, l, st := x.lookup(addr)
		switch st {
		case ixHit:
			*e = Entries{dst: p, l: l, hi: l.len()}
			return true
		case ixNone:
			return false
		}
	}
	p, l, found := s.LookupPrefixLPM(netip.PrefixFrom(addr, addr.BitLen()))
	if !found {
		return false
	}
	*e = Entries{dst: p, l: l, hi: l.len()}
	return true
}

// lookupView looks the flow up in one table: the longest prefix first,
// then shorter ones while no entry of the longer one answers (the trie's
// backtracking in fib_table_lookup(), fib6_backtrack() for IPv6). h is
// written only when an entry answers.
func lookupView(v *View, k *flow.Key, v6 bool, h *hit) syscall.Errno {
	if s := v.bt; s != nil && v.all {
		// The common case first (lookup_fast.go).
		var err syscall.Errno
		var ok bool
		if v6 {
			oif, strict := rt6Oif(k)
			err, ok = probe6(s, v.id, k, oif, strict, h)
		} else {
			err, ok = probe4(s, v.id, k, h)
		}
		if ok {
			return err
		}
	}
	var e Entries
	if !v.lpm(k.Dst, &e) {
		return syscall.EAGAIN
	}
	var oif int32
	strict := false
	if v6 {
		oif, strict = rt6Oif(k)
	}
	if err, ok := choose(&e, k, v6, oif, strict, h); ok {
		h.Table = v.id
		return err
	}
	return backtrack(v, k, v6, oif, strict, e.dst.Bits(), h)
}

// backtrack is lookupView's rare part: no entry of the longest prefix fits
// (tos, scope, oif, dead hops), so the shorter prefixes are tried, longest
// first. A function of its own, so that the iterator's closure stays off
// the common path.
func backtrack(v *View, k *flow.Key, v6 bool, oif int32, strict bool, first int, h *hit) syscall.Errno {
	// The iterator's body is a closure bart's iterator may keep: it works
	// on copies, so that only this rare path allocates and the caller's
	// view, key and hit stay on the stack.
	kc, hc, id := *k, *h, v.id
	err := syscall.EAGAIN
	for e := range v.Supernets(netip.PrefixFrom(kc.Dst, kc.Dst.BitLen())) {
		if e.dst.Bits() >= first {
			continue
		}
		if e2, ok := choose(&e, &kc, v6, oif, strict, &hc); ok {
			hc.Table = id
			err = e2
			break
		}
	}
	*h = hc
	return err
}

func choose(e *Entries, k *flow.Key, v6 bool, oif int32, strict bool, h *hit) (syscall.Errno, bool) {
	if v6 {
		return choose6(e, k, oif, strict, h)
	}
	return choose4(e, k, h)
}

// suppressed is fib4_rule_suppress() / fib6_rule_suppress(): a result whose
// prefix is no longer than suppress_prefixlength, or whose (first) nexthop
// device is in the suppress_ifgroup group, is dropped and the walk goes on.
// The device group (an interface call) is asked only for a rule with
// suppress_ifgroup.
func (f *FIB) suppressed(r *rulesops.Hit, h *hit) bool {
	if int32(h.Dst.Bits()) <= r.SuppressPrefixlen {
		return true
	}
	if r.SuppressIfgroup != -1 && h.Entry != nil && len(h.Entry.Nexthops) > 0 {
		// fib4_rule_suppress() looks at fib_info_nhc(fi, 0); IPv6 at
		// the rt6_info's device (the chosen sibling; the same device
		// for the single-hop routes most tables hold).
		hops := h.Entry.Nexthops
		dev := hops[0].Dev
		if f.v6 && h.NH >= 0 {
			dev = hops[h.NH].Dev
		}
		if dev != 0 && f.group(dev) == uint32(r.SuppressIfgroup) {
			return true
		}
	}
	return false
}

// nhUsable is fib_lookup_good_nhc(): a dead nexthop never serves; nor one
// through another device than the flow's oif. Linkdown nexthops still
// serve: ignore_routes_with_linkdown is 0, its default, and nlemu has no
// such sysctl.
func nhUsable(nh *Nexthop, oif int32) bool {
	if nh.Flags&rtnl.RTNH_F_DEAD != 0 {
		return false
	}
	return oif == 0 || nh.Dev == oif
}

// choose4 is the per-prefix part of fib_table_lookup(): the entries of one
// prefix in their stored order (tos descending, then priority), the first
// whose tos matches (masked as fib_dscp_masked_match()), whose scope is at
// least the flow's, and that has a usable nexthop wins; a reject or throw
// entry answers with its error as soon as it qualifies by tos and scope.
// ok is false when no entry of this prefix answers (backtrack).
func choose4(es *Entries, k *flow.Key, h *hit) (err syscall.Errno, ok bool) {
	for i := es.lo; i < es.hi; i++ {
		a := es.l.at(i)
		e := &a.r
		if e.Tos != 0 && e.Tos != k.TOS&0x1C {
			continue
		}
		if e.Scope < k.Scope {
			continue
		}
		if err := TypeError(e.Type); err != 0 {
			h.Entry, h.Dst, h.NH = &a.r, es.dst, -1
			return err, true
		}
		if len(e.Nexthops) == 0 {
			h.Entry, h.Dst, h.NH = &a.r, es.dst, -1
			return 0, true
		}
		for j := range e.Nexthops {
			if nhUsable(&e.Nexthops[j], k.OIF) {
				h.Entry, h.Dst, h.NH = &a.r, es.dst, j
				return 0, true
			}
		}
	}
	return 0, false
}

// rt6Oif returns the device rt6_select() scores routes against and
// whether it is a requirement (RT6_LOOKUP_F_IFACE). An output lookup
// (iif lo) passes the flow's oif, strict when the flow has no source or the
// destination needs it (ip6_route_output_flags()); an input lookup passes
// the input device (ip6_pol_route_input()), strict only for destinations
// that need it (ip6_route_input_lookup()), so `ip -6 route get fe80::1 iif
// w0` answers through w0's fe80::/64.
func rt6Oif(k *flow.Key) (int32, bool) {
	if k.OIF == 0 && k.IIF > 1 {
		return k.IIF, needStrict6(k.Dst)
	}
	if k.OIF == 0 {
		return 0, false
	}
	return k.OIF, needStrict6(k.Dst) || !k.Src.IsValid() || k.Src.IsUnspecified()
}

// needStrict6 is rt6_need_strict(): multicast, link-local and loopback
// destinations.
func needStrict6(d netip.Addr) bool {
	return d.IsMulticast() || d.IsLinkLocalUnicast() || d.IsLoopback()
}

// choose6 is rt6_select() / find_rr_leaf() over one node's entries (metric
// order): the first metric group with a usable hop wins; within it the hop
// with the best score (rt6_score_route(): the oif match, then the router
// preference), the first of equal scores. A strict oif mismatch or a dead
// hop disqualifies. Reject routes answer with their error.
func choose6(es *Entries, k *flow.Key, oif int32, strict bool, h *hit) (err syscall.Errno, ok bool) {
	n := es.hi
	for g := es.lo; g < n; {
		metric := es.l.at(g).r.Priority
		var best *attrs
		bestNH, bestScore := -1, -1
		end := g
		for ; end < n; end++ {
			a := es.l.at(end)
			e := &a.r
			if e.Priority != metric {
				break
			}
			// A source-specific entry serves only flows from its
			// source prefix (the node's subtree in fib6_node_lookup()).
			if e.Src.Bits() > 0 && !e.Src.Contains(k.Src) {
				continue
			}
			pref := int(decodePref(e.Pref)) << 2
			if len(e.Nexthops) == 0 {
				// Reject routes sit on the loopback device, which a
				// strict oif never matches.
				if strict {
					continue
				}
				if s := pref; s > bestScore {
					best, bestNH, bestScore = a, -1, s
				}
				continue
			}
			for j := range e.Nexthops {
				nh := &e.Nexthops[j]
				if nh.Flags&rtnl.RTNH_F_DEAD != 0 {
					continue
				}
				m := 0
				if oif == 0 || nh.Dev == oif {
					m = 2
				}
				if m == 0 && strict {
					continue
				}
				if s := m | pref; s > bestScore {
					best, bestNH, bestScore = a, j, s
				}
			}
		}
		if best != nil {
			h.Entry, h.Dst, h.NH = &best.r, es.dst, bestNH
			return TypeError(best.r.Type), true
		}
		g = end
	}
	return 0, false
}

// decodePref is IPV6_DECODE_PREF(): the score of a router preference,
// low 0 < medium 1 < high 2, from the RTA_PREF values
// ICMPV6_ROUTER_PREF_LOW 3, MEDIUM 0, HIGH 1 (the invalid value 2 is stored
// as medium at insert, rtm_to_fib6_config()).
func decodePref(p uint8) uint8 {
	switch p {
	case 1: // high
		return 2
	case 3: // low
		return 0
	}
	return 1
}

// SelectPath picks the nexthop of a multipath result as fib_select_path()
// / fib6_select_path() do when the flow names no oif: the hash of the flow
// (its addresses, hash policy 0) against each live hop's upper bound
// (fib_rebalance(): cumulative weights scaled to 31 bits). The kernel seeds
// its hash with a random key at boot, so which hop a given flow takes on
// the kernel cannot be predicted; nlemu's hash is deterministic (the same
// flow always takes the same hop) and weights split flows as the kernel's.
func (r *Result) SelectPath(k *flow.Key) {
	if r.Entry == nil {
		return
	}
	hops := r.Entry.Nexthops
	if len(hops) < 2 || k.OIF != 0 {
		return
	}
	var total uint64
	for i := range hops {
		if hops[i].Flags&rtnl.RTNH_F_DEAD == 0 {
			total += uint64(max(hops[i].Weight, 1))
		}
	}
	if total == 0 {
		return
	}
	h := int64(flowHash(k) >> 1)
	var w uint64
	for i := range hops {
		if hops[i].Flags&rtnl.RTNH_F_DEAD != 0 {
			continue
		}
		w += uint64(max(hops[i].Weight, 1))
		upper := int64((w<<31+total/2)/total) - 1
		if h <= upper {
			r.NH = i
			return
		}
	}
}

// flowHash is a deterministic stand-in for fib_multipath_hash() /
// rt6_multipath_hash() with policy 0 (source and destination address):
// FNV-1a over the two addresses.
func flowHash(k *flow.Key) uint32 {
	h := uint32(2166136261)
	mix := func(a netip.Addr) {
		if !a.IsValid() {
			a = netip.IPv6Unspecified()
			if k.Dst.Is4() {
				a = netip.IPv4Unspecified()
			}
		}
		b := a.As16()
		for _, c := range b {
			h ^= uint32(c)
			h *= 16777619
		}
	}
	mix(k.Src)
	mix(k.Dst)
	return h
}
