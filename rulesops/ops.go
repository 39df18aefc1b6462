package rulesops

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// Tables is what a rule family needs from its namespace's routing tables.
// rulesops declares it (as fib_rules_ops calls back into its family) so that
// it imports neither fib nor netdev.
type Tables interface {
	// Unmerge splits the IPv4 local table from main (fib_unmerge()); it is a
	// no-op once done. Called with RTNL held.
	Unmerge() error
	// AllocEmpty creates the lowest-numbered table (id >= 1) that does not
	// exist yet and returns its id (fib_empty_table()); false when none is free.
	AllocEmpty() (uint32, bool)
	// Create creates table id if it does not exist (fib6_new_table()).
	Create(id uint32) error
}

// Devices resolves interface names in the rule's namespace.
type Devices interface {
	// IndexByName returns the ifindex of the device called name, or 0.
	IndexByName(name []byte) int32
}

// Env is what one Ops reaches outside its rule list.
type Env struct {
	Config  *rtnl.LockConfig // the server's RTNL and when rule changes take it
	Tables  Tables           // the family's tables; nil for the mroute families
	Devices Devices          // may be nil: no device exists
}

// Ops is one rule family of one namespace: struct fib_rules_ops. Writers
// serialize on its own mutex (the seed's ops->lock); readers take the
// current immutable list without locking.
type Ops struct {
	fam        *family
	env        Env
	mu         sync.Mutex // ops->lock; guards writes of cur
	cur        atomic.Pointer[list]
	dups       dupIndex // guarded by mu
	liveExtras int      // guarded by mu: rules with an Extra
	// custom is fib_has_custom_rules (IPv4) / fib6_has_custom_rules (IPv6):
	// set by the first successful change and never cleared.
	custom atomic.Bool
}

// NewOps returns the ops of family id (2, 10, 128, 129) with its default
// rules, or nil for an unknown family.
func NewOps(id uint8, env Env) *Ops {
	for _, f := range families {
		if f.id == id {
			o := &Ops{fam: f, env: env}
			o.cur.Store(compileList(f, newList(f.defaults)))
			return o
		}
	}
	return nil
}

// Families returns the rule family ids in AF_UNSPEC dump order.
func Families() []uint8 {
	ids := make([]uint8, len(families))
	for i, f := range families {
		ids[i] = f.id
	}
	return ids
}

// Family returns the family id.
func (o *Ops) Family() uint8 { return o.fam.id }

// Group returns the notification group (RTNLGRP_IPV4_RULE or _IPV6_RULE).
func (o *Ops) Group() uint32 { return o.fam.group }

// HasCustomRules reports fib_has_custom_rules / fib6_has_custom_rules.
func (o *Ops) HasCustomRules() bool { return o.custom.Load() }

// Len returns the number of rules.
func (o *Ops) Len() int { return o.cur.Load().Len() }

// Change is a successful NEWRULE or DELRULE: the rule added or removed and
// the list after the change, from which its notification is built.
type Change struct {
	Rule Rule
	x    *Extra
	fam  *family
	l    *list
}

// Msg returns the notification message content of the change (the dump
// format of fib_nl_fill_rule()). A goto rule is unresolved exactly when no
// rule has its target priority: the kernel resolves a goto to the first
// rule of that priority, re-points it to the next equal-priority rule when
// that one is deleted, and resolves every unresolved goto when a rule of
// that priority is added (which always lands after the existing ones), so
// its pointer is never needed to tell the state.
func (c *Change) Msg() *rtnl.RuleMsg {
	return fill(c.fam, &c.Rule, c.x, c.Rule.Action == rtnl.FR_ACT_GOTO && !c.l.hasPref(c.Rule.Target))
}

// needRTNL decides whether a change takes the global lock: always in
// ModeAlways; otherwise only IPv4 while the namespace has no custom rule,
// because that change unmerges the local and main tables
// (fib4_rule_need_rtnl() in the seed).
func (o *Ops) needRTNL() bool {
	if o.env.Config.Mode == rtnl.ModeAlways {
		return true
	}
	return o.fam.id == rtnl.AF_INET && !o.custom.Load()
}

// lock takes RTNL when needed, then the ops mutex (lock order: RTNL first);
// it returns whether RTNL is held.
func (o *Ops) lock() bool {
	rtnlHeld := o.env.Config.RTNL != nil && o.needRTNL()
	if rtnlHeld {
		o.env.Config.RTNL.Lock()
	}
	o.mu.Lock()
	return rtnlHeld
}

func (o *Ops) unlock(rtnlHeld bool) {
	o.mu.Unlock()
	if rtnlHeld {
		o.env.Config.RTNL.Unlock()
	}
}

// nl2rule is fib_nl2rule(): the request's generic fields and every check
// that needs no lock (RULES-SPEC §2.1 V3–V19). m's header is decoded; its
// attributes are parsed here.
func (o *Ops) nl2rule(m *rtnl.RuleMsg, r *Rule, x *Extra) *rtnl.Error {
	if err := m.ParseAttrs(); err != nil {
		return err
	}
	as := o.fam.addrSize
	if m.SrcLen != 0 && (!m.Has(rtnl.FRA_SRC) || int(m.SrcLen) > as*8 || len(m.Src) != as) {
		return rtnl.Errorf(syscall.EINVAL, "Invalid source address")
	}
	if m.DstLen != 0 && (!m.Has(rtnl.FRA_DST) || int(m.DstLen) > as*8 || len(m.Dst) != as) {
		return rtnl.Errorf(syscall.EINVAL, "Invalid dst address")
	}
	*r = Rule{Pref: m.Priority, Protocol: m.Protocol, Action: m.Action, Flags: m.Flags, Table: uint32(m.Table)}
	*x = plainExtra
	if m.Has(rtnl.FRA_IIFNAME) {
		x.iifIndex = -1
		strscpy(&x.IIFName, m.IIFName)
	}
	if m.Has(rtnl.FRA_OIFNAME) {
		x.oifIndex = -1
		strscpy(&x.OIFName, m.OIFName)
	}
	if m.Has(rtnl.FRA_FWMARK) {
		x.Mark = m.FwMark
		if x.Mark != 0 {
			x.MarkMask = 0xFFFFFFFF
		}
	}
	if m.Has(rtnl.FRA_FWMASK) {
		x.MarkMask = m.FwMask
	}
	if m.Has(rtnl.FRA_TUN_ID) {
		x.TunID = m.TunID
	}
	if m.Has(rtnl.FRA_L3MDEV) {
		if m.L3MDev != 1 {
			return rtnl.Errorf(syscall.EINVAL, "Invalid l3mdev attribute")
		}
		x.L3MDev = 1
	}
	if m.Has(rtnl.FRA_TABLE) {
		r.Table = m.Table32
	}
	if m.Has(rtnl.FRA_SUPPRESS_PREFIXLEN) {
		x.SuppressPrefixlen = int32(m.SuppressPrefixlen)
	}
	if m.Has(rtnl.FRA_SUPPRESS_IFGROUP) {
		x.SuppressIfgroup = int32(m.SuppressIfgroup)
	}
	if m.Has(rtnl.FRA_GOTO) {
		if r.Action != rtnl.FR_ACT_GOTO {
			return rtnl.Errorf(syscall.EINVAL, "Unexpected goto")
		}
		r.Target = m.Goto
	} else if r.Action == rtnl.FR_ACT_GOTO {
		return rtnl.Errorf(syscall.EINVAL, "Missing goto target for action goto")
	}
	if x.L3MDev != 0 && r.Table != 0 {
		return rtnl.Errorf(syscall.EINVAL, "l3mdev and table are mutually exclusive")
	}
	if m.Has(rtnl.FRA_UID_RANGE) {
		s, e := m.UIDRange[0], m.UIDRange[1]
		if !uidRangeSet(s, e) || s > e {
			return rtnl.Errorf(syscall.EINVAL, "Invalid uid range")
		}
		x.UIDStart, x.UIDEnd = s, e
	}
	if m.Has(rtnl.FRA_IP_PROTO) {
		x.IPProto = m.IPProto
	}
	var err *rtnl.Error
	if x.Sport, x.SportMask, err = portSelector(m, rtnl.FRA_SPORT_RANGE, rtnl.FRA_SPORT_MASK, m.SportRange, m.SportMask, "Invalid sport range"); err != nil {
		return err
	}
	if x.Dport, x.DportMask, err = portSelector(m, rtnl.FRA_DPORT_RANGE, rtnl.FRA_DPORT_MASK, m.DportRange, m.DportMask, "Invalid dport range"); err != nil {
		return err
	}
	return nil
}

// portSelector validates one port range and its mask (fib_nl2rule() and
// fib_nl2rule_port_mask()).
func portSelector(m *rtnl.RuleMsg, rangeAttr, maskAttr int, pr [2]uint16, mask uint16, msg string) ([2]uint16, uint16, *rtnl.Error) {
	var rng [2]uint16
	if m.Has(rangeAttr) {
		if !portRangeValid(pr) {
			return rng, 0, rtnl.Errorf(syscall.EINVAL, msg)
		}
		rng = pr
	}
	off := m.Off(maskAttr)
	switch {
	case m.Has(maskAttr):
		if !portRangeValid(rng) {
			return rng, 0, rtnl.AttrError(syscall.EINVAL, "Cannot specify port mask without port value", off)
		}
		if rng[0] != rng[1] {
			return rng, 0, rtnl.AttrError(syscall.EINVAL, "Cannot specify port mask for port range", off)
		}
		if rng[0]&^mask != 0 {
			return rng, 0, rtnl.AttrError(syscall.EINVAL, "Invalid port mask", off)
		}
		return rng, mask, nil
	case portRangeValid(rng) && rng[0] == rng[1]:
		return rng, 0xFFFF, nil
	}
	return rng, 0, nil
}

// strscpy is nla_strscpy() into an IFNAMSIZ buffer.
func strscpy(dst *[16]byte, src []byte) {
	n := copy(dst[:15], src)
	for i := n; i < 16; i++ {
		dst[i] = 0
	}
}

// nl2ruleLocked is fib_nl2rule_locked(): automatic priority, the backward
// goto check and interface name resolution, under the ops lock.
func (o *Ops) nl2ruleLocked(l *list, r *Rule, x *Extra, m *rtnl.RuleMsg) *rtnl.Error {
	if !m.Has(rtnl.FRA_PRIORITY) {
		r.Pref = defaultPref(l)
	}
	if m.Has(rtnl.FRA_GOTO) && r.Target <= r.Pref {
		return rtnl.Errorf(syscall.EINVAL, "Backward goto not supported")
	}
	if o.env.Devices != nil {
		// Copies of the names go to the interface call, so that x itself
		// can stay on the caller's stack.
		if x.IIFName[0] != 0 {
			name := x.IIFName
			if i := o.env.Devices.IndexByName(cstr(&name)); i > 0 {
				x.iifIndex = i
			}
		}
		if x.OIFName[0] != 0 {
			name := x.OIFName
			if i := o.env.Devices.IndexByName(cstr(&name)); i > 0 {
				x.oifIndex = i
			}
		}
	}
	return nil
}

// defaultPref is fib_default_rule_pref(): one less than the second rule's
// priority, or 0 when there is no second rule or it has priority 0.
func defaultPref(l *list) uint32 {
	if l.Len() >= 2 {
		if p := l.At(1).Pref; p != 0 {
			return p - 1
		}
	}
	return 0
}

// NewRule adds a rule (fib_newrule()). m is the request with its header
// decoded; nlFlags are the request's nlmsg_flags (only NLM_F_EXCL matters:
// the kernel does not support replace).
func (o *Ops) NewRule(m *rtnl.RuleMsg, nlFlags uint16) (Change, *rtnl.Error) {
	var r Rule
	var x Extra
	if err := o.nl2rule(m, &r, &x); err != nil {
		return Change{}, err
	}
	held := o.lock()
	defer o.unlock(held)
	l := o.cur.Load()
	if err := o.nl2ruleLocked(l, &r, &x, m); err != nil {
		return Change{}, err
	}
	if nlFlags&rtnl.NLM_F_EXCL != 0 && o.exists(l, &r, &x, m) {
		return Change{}, rtnl.Errno(syscall.EEXIST)
	}
	if err := o.fam.configure(&o.env, &r, &x, m); err != nil {
		return Change{}, err
	}
	if !o.fam.isMR() {
		o.custom.Store(true)
	}
	extras := l.extras
	xp := &plainExtra
	if !x.isPlain() {
		xp = new(Extra)
		*xp = x
		extras = append(extras, xp)
		r.xi = uint32(len(extras))
		o.liveExtras++
	}
	nl := l.insert(r, extras)
	o.cur.Store(compileList(o.fam, nl))
	o.dups.added(nl, &r)
	return Change{Rule: r, x: xp, fam: o.fam, l: nl}, nil
}

// exists is rule_exists(): an identical rule for NLM_F_EXCL. Generic fields
// are compared exactly (priority included, so only rules of the same
// priority can match); family fields only where the request has them.
func (o *Ops) exists(l *list, r *Rule, x *Extra, m *rtnl.RuleMsg) bool {
	if !o.dups.mayExist(r, x) {
		return false
	}
	found := false
	l.from(l.bound(r.Pref, false), 0, func(_ int, e *Rule) bool {
		if e.Pref != r.Pref {
			return false
		}
		ex := l.ext(e)
		if e.Action != r.Action || e.Table != r.Table || ex.IIFName != x.IIFName || ex.OIFName != x.OIFName ||
			ex.Mark != x.Mark || ex.SuppressIfgroup != x.SuppressIfgroup || ex.SuppressPrefixlen != x.SuppressPrefixlen ||
			ex.MarkMask != x.MarkMask || ex.TunID != x.TunID || ex.L3MDev != x.L3MDev ||
			ex.UIDStart != x.UIDStart || ex.UIDEnd != x.UIDEnd || ex.IPProto != x.IPProto || e.Protocol != r.Protocol ||
			ex.Sport != x.Sport || ex.SportMask != x.SportMask || ex.Dport != x.Dport || ex.DportMask != x.DportMask ||
			!o.fam.compare(e, ex, m) {
			return true
		}
		found = true
		return false
	})
	return found
}

// DelRule deletes the first rule matching every selector the request
// specifies (fib_delrule()).
func (o *Ops) DelRule(m *rtnl.RuleMsg) (Change, *rtnl.Error) {
	var r Rule
	var x Extra
	if err := o.nl2rule(m, &r, &x); err != nil {
		return Change{}, err
	}
	held := o.lock()
	defer o.unlock(held)
	l := o.cur.Load()
	if err := o.nl2ruleLocked(l, &r, &x, m); err != nil {
		return Change{}, err
	}
	userPref := m.Has(rtnl.FRA_PRIORITY)
	start := pos{}
	if userPref {
		start = l.bound(r.Pref, false)
	}
	at, found := start, false
	for p := start; l.valid(p); p = l.next(p) {
		e := l.rule(p)
		if userPref && e.Pref != r.Pref {
			break
		}
		if o.delMatch(l, e, &r, &x, m) {
			at, found = p, true
			break
		}
	}
	if !found {
		return Change{}, rtnl.Errno(syscall.ENOENT)
	}
	victim := *l.rule(at)
	vx := l.ext(&victim)
	if victim.Flags&rtnl.FIB_RULE_PERMANENT != 0 {
		return Change{}, rtnl.Errno(syscall.EPERM)
	}
	if o.fam.id == rtnl.AF_INET {
		// fib4_rule_delete(): unmerge, then the namespace has custom rules.
		if o.env.Tables != nil {
			if err := o.env.Tables.Unmerge(); err != nil {
				return Change{}, rtnl.Errno(syscall.ENOMEM)
			}
		}
		o.custom.Store(true)
	}
	nl := l.remove(at)
	if victim.xi != 0 {
		o.liveExtras--
		nl = o.maybeCompact(nl)
	}
	o.cur.Store(compileList(o.fam, nl))
	o.dups.removed(&victim, vx)
	return Change{Rule: victim, x: vx, fam: o.fam, l: nl}, nil
}

// maybeCompact rebuilds the extras table once most of it belongs to
// deleted rules, renumbering the survivors (amortized O(1) per delete).
func (o *Ops) maybeCompact(l *list) *list {
	if len(l.extras) < 64 || len(l.extras) < 2*o.liveExtras {
		return l
	}
	nl := &list{n: l.n, chunks: make([]*chunk, len(l.chunks)), extras: make([]*Extra, 0, o.liveExtras)}
	for c, ch := range l.chunks {
		cp := append([]Rule(nil), ch.rules...)
		for k := range cp {
			if cp[k].xi != 0 {
				nl.extras = append(nl.extras, l.extras[cp[k].xi-1])
				cp[k].xi = uint32(len(nl.extras))
			}
		}
		nl.chunks[c] = &chunk{rules: cp}
	}
	return nl
}

// delMatch is rule_find()'s predicate: only specified fields are compared.
func (o *Ops) delMatch(l *list, e, r *Rule, x *Extra, m *rtnl.RuleMsg) bool {
	ex := l.ext(e)
	switch {
	case r.Action != 0 && e.Action != r.Action,
		r.Table != 0 && e.Table != r.Table,
		x.IIFName[0] != 0 && ex.IIFName != x.IIFName,
		x.OIFName[0] != 0 && ex.OIFName != x.OIFName,
		x.Mark != 0 && ex.Mark != x.Mark,
		x.SuppressIfgroup != -1 && ex.SuppressIfgroup != x.SuppressIfgroup,
		x.SuppressPrefixlen != -1 && ex.SuppressPrefixlen != x.SuppressPrefixlen,
		x.MarkMask != 0 && ex.MarkMask != x.MarkMask,
		x.TunID != 0 && ex.TunID != x.TunID,
		x.L3MDev != 0 && ex.L3MDev != x.L3MDev,
		uidRangeSet(x.UIDStart, x.UIDEnd) && (ex.UIDStart != x.UIDStart || ex.UIDEnd != x.UIDEnd),
		x.IPProto != 0 && ex.IPProto != x.IPProto,
		r.Protocol != 0 && e.Protocol != r.Protocol,
		portRangeSet(x.Sport) && ex.Sport != x.Sport,
		x.SportMask != 0 && ex.SportMask != x.SportMask,
		portRangeSet(x.Dport) && ex.Dport != x.Dport,
		x.DportMask != 0 && ex.DportMask != x.DportMask:
		return false
	}
	return o.fam.compare(e, ex, m)
}

// Snapshot is an immutable view of the rule list for readers (dumps,
// lookups): it never changes and never blocks writers.
type Snapshot struct {
	fam *family
	l   *list
}

// Snapshot returns the current rule list.
func (o *Ops) Snapshot() Snapshot { return Snapshot{fam: o.fam, l: o.cur.Load()} }

// Len returns the number of rules in the snapshot.
func (s Snapshot) Len() int { return s.l.Len() }

// Rule returns rule i and its selectors (read only).
func (s Snapshot) Rule(i int) (*Rule, *Extra) {
	r := s.l.At(i)
	return r, s.l.ext(r)
}

// Each calls fn for the rules from index i on, with their dump message,
// until fn returns false (one walk, not one search per rule).
func (s Snapshot) Each(i int, fn func(i int, m *rtnl.RuleMsg) bool) {
	s.l.from(s.l.locate(i), i, func(k int, r *Rule) bool {
		return fn(k, fill(s.fam, r, s.l.ext(r), r.Action == rtnl.FR_ACT_GOTO && !s.l.hasPref(r.Target)))
	})
}
