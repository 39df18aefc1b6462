package fib

import (
	"encoding/binary"
	"iter"
	"net/netip"
	"slices"
	"sync/atomic"
)

// attrs is one stored route without its prefix: the kernel's fib_alias
// and its shared fib_info in one block. Equal routes of different
// prefixes intern to one attrs, so a stored route costs the prefix's slot
// in bart plus one pointer. Everything but refs is immutable once
// published.
type attrs struct {
	r    Route // r.Dst is the zero Prefix
	key  string
	refs int // guarded by Tables.mu; readers never touch it
}

// leaf is the value bart stores for a prefix: an immutable, ordered list
// of entries. The single-entry case, by far the most common, needs no
// allocation beyond the interned attrs.
type leaf struct {
	head *attrs
	tail *[]*attrs // entries after head; nil when there is one
}

func (l leaf) len() int {
	switch {
	case l.head == nil:
		return 0
	case l.tail == nil:
		return 1
	}
	return 1 + len(*l.tail)
}

func (l leaf) at(i int) *attrs {
	if i == 0 {
		return l.head
	}
	return (*l.tail)[i-1]
}

// slice returns a fresh copy of the entries, for a writer to edit.
func (l leaf) slice() []*attrs {
	n := l.len()
	s := make([]*attrs, n, n+1)
	for i := range n {
		s[i] = l.at(i)
	}
	return s
}

func leafOf(s []*attrs) leaf {
	switch len(s) {
	case 0:
		return leaf{}
	case 1:
		return leaf{head: s[0]}
	}
	t := slices.Clone(s[1:])
	return leaf{head: s[0], tail: &t}
}

// internKey encodes every field of r but Dst, so that equal routes share
// one attrs (the kernel's fib_find_info()).
func internKey(r *Route) string {
	return string(appendInternKey(make([]byte, 0, 64+len(r.Nexthops)*28), r))
}

// appendInternKey appends internKey(r) to b: intern builds the key in a
// reused buffer and looks it up without a string allocation.
func appendInternKey(b []byte, r *Route) []byte {
	b = append(b, r.Family, r.Tos, r.Type, r.Scope, r.Protocol, r.Pref)
	b = binary.BigEndian.AppendUint32(b, r.Table)
	b = binary.BigEndian.AppendUint32(b, r.Priority)
	b = binary.BigEndian.AppendUint32(b, r.Flags)
	b = binary.BigEndian.AppendUint32(b, r.Expires)
	b = binary.BigEndian.AppendUint32(b, r.NhID)
	b = appendAddr(b, r.Prefsrc)
	b = appendAddr(b, r.Src.Addr())
	b = append(b, byte(r.Src.Bits()))
	b = append(b, byte(len(r.Metrics.s)))
	b = append(b, r.Metrics.s...)
	for _, h := range r.Nexthops {
		b = appendAddr(b, h.Gateway)
		b = binary.BigEndian.AppendUint32(b, uint32(h.Dev))
		b = binary.BigEndian.AppendUint16(b, h.Weight)
		b = append(b, h.Flags)
		b = binary.BigEndian.AppendUint32(b, h.Realm)
		// nh_comp(): lwtunnel_cmp_encap() of the hops.
		if h.Encap.IsZero() {
			b = append(b, 0)
		} else {
			k := h.Encap.Key()
			b = append(b, 1)
			b = binary.BigEndian.AppendUint16(b, uint16(len(k)))
			b = append(b, k...)
		}
	}
	return b
}

func appendAddr(b []byte, a netip.Addr) []byte {
	switch {
	case !a.IsValid():
		return append(b, 0)
	case a.Is4():
		v := a.As4()
		return append(append(b, 4), v[:]...)
	}
	v := a.As16()
	return append(append(b, 6), v[:]...)
}

// table is one routing table. root is the published immutable storage;
// IPv4 main and local keep theirs in Tables.lm instead, so that the merge
// state and both roots are published in one store.
type table struct {
	id   uint32
	root atomic.Pointer[store]
}

// tableSet is the immutable registry of existing tables, replaced on
// table creation (rare: tables are never freed, as in the kernel). It is
// laid out as the kernel's fib_table_hash: 256 buckets by id&255, each
// newest first (hlist_add_head_rcu in fib_new_table()), which is also the
// dump order. The buckets sit under 16 groups (id&255 >> 4) so that a new
// table copies one group and one bucket, not the whole registry: the
// seed's IPv6 batch creates one table per rule (fib6_new_table() from
// fib6_rule_configure()), and a copy of every table per creation made
// 1,024 rules cost O(n²) (TestTableSetCopiesOneBucket).
type tableSet struct {
	n      int
	groups [16]*tableGroup
	// fixed is default, main and local (253–255) again, the tables every
	// fast-path lookup asks for: one load instead of the bucket walk.
	fixed [3]*table
}

// tableGroup is 16 consecutive buckets of a tableSet.
type tableGroup [16][]*table

func (s *tableSet) get(id uint32) *table {
	if i := id - 253; i < 3 {
		return s.fixed[i]
	}
	// Written out (no comparator closure): a rule walk asks for one
	// table per rule.
	g := s.groups[(id>>4)&0xf]
	if g == nil {
		return nil
	}
	for _, t := range g[id&0xf] {
		if t.id == id {
			return t
		}
	}
	return nil
}

// with returns a copy of s with t added at the head of its bucket, as
// fib_new_table() links it, so it dumps before the older tables of the
// same bucket.
func (s *tableSet) with(t *table) *tableSet {
	n := *s
	hi, lo := (t.id>>4)&0xf, t.id&0xf
	g := new(tableGroup)
	if old := s.groups[hi]; old != nil {
		*g = *old
	}
	b := make([]*table, 0, len(g[lo])+1)
	g[lo] = append(append(b, t), g[lo]...)
	n.groups[hi] = g
	n.n++
	if i := t.id - 253; i < 3 {
		n.fixed[i] = t
	}
	return &n
}

// all visits the tables in dump order: bucket id&255 ascending, newest
// first inside a bucket (the kernel's fib_table_hash walk).
func (s *tableSet) all(yield func(*table) bool) {
	for _, g := range s.groups {
		if g == nil {
			continue
		}
		for _, b := range g {
			for _, t := range b {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// lmState is the IPv4 local/main storage. While merged, local and main are
// one bart table (fib_trie_table(RT_TABLE_LOCAL, main)) whose entries
// carry their own table id; Unmerge publishes split roots and the flag in
// one store, so a reader never sees the flag and the roots disagree.
type lmState struct {
	merged      bool
	main, local *store
	// premerged is, once unmerged, the merged storage as Unmerge found it:
	// the answer for a reader that saw no custom rule yet but a snapshot
	// taken after the unmerge. RTNL covers both the unmerge and the
	// first rule's publication, so no route changed in between and that
	// storage is the namespace's state at the unmerge.
	premerged *store
}

// Snapshot is an immutable view of a family's tables: the table set, the
// merge state and the IPv4 main/local roots as of the Snapshot call. Other
// tables' roots are loaded when a View is taken. It never locks.
type Snapshot struct {
	family uint8
	set    *tableSet
	lm     *lmState
}

// Merged reports whether IPv4 local and main were merged in this snapshot.
func (s Snapshot) Merged() bool { return s.lm != nil && s.lm.merged }

// IDs returns the ids of the existing tables in dump order (the kernel's
// fib_table_hash / fib6 table hash walk: bucket id&255 ascending, newest
// table first inside a bucket).
func (s Snapshot) IDs() []uint32 {
	ids := make([]uint32, 0, s.set.n)
	for t := range s.set.all {
		ids = append(ids, t.id)
	}
	return ids
}

// Tables iterates the existing tables in dump order.
func (s Snapshot) Tables() iter.Seq[View] {
	return func(yield func(View) bool) {
		for t := range s.set.all {
			if !yield(s.view(t)) {
				return
			}
		}
	}
}

// Exists reports whether table id exists in the snapshot.
func (s Snapshot) Exists(id uint32) bool { return s.set.get(id) != nil }

// Table returns the view of table id, false when it does not exist. While
// merged, the views of main and local each show only their own entries
// (fib_table_dump() skips aliases of the other table id).
func (s Snapshot) Table(id uint32) (View, bool) {
	t := s.set.get(id)
	if t == nil {
		return View{}, false
	}
	return s.view(t), true
}

// MergedMain returns the view the kernel's merged fast path looks up: the
// main trie including the local entries (fib_lookup() without custom
// rules: main, then default). False when main does not exist. A reader
// that read "no custom rules" and then got an unmerged snapshot (the
// first rule's unmerge ran in between) gets the merged storage as of the
// unmerge, which is the state at a moment its lookup spans.
func (s Snapshot) MergedMain() (View, bool) {
	if s.lm == nil || s.set.get(tableMain) == nil {
		return View{}, false
	}
	bt := s.lm.main
	if !s.lm.merged {
		bt = s.lm.premerged
	}
	return View{family: s.family, id: tableMain, bt: bt, all: true}, true
}

func (s Snapshot) view(t *table) View {
	v := View{family: s.family, id: t.id, all: true}
	if s.lm != nil && (t.id == tableMain || t.id == tableLocal) {
		if t.id == tableMain {
			v.bt = s.lm.main
		} else {
			v.bt = s.lm.local
		}
		v.all = !s.lm.merged
	} else {
		v.bt = t.root.Load()
	}
	return v
}

// View is an immutable view of one table.
type View struct {
	family uint8
	id     uint32
	bt     *store
	// all: every entry in bt belongs to this view (false only for merged
	// IPv4 main/local, whose entries are told apart by table id).
	all bool
}

// ID returns the table id.
func (v View) ID() uint32 { return v.id }

// Entries is the ordered entry list of one prefix in one table, a value:
// reading it never touches shared mutable state.
type Entries struct {
	dst    netip.Prefix
	l      leaf
	lo, hi int
}

// Prefix returns the destination prefix.
func (e Entries) Prefix() netip.Prefix { return e.dst }

// Len returns the number of entries.
func (e Entries) Len() int { return e.hi - e.lo }

// At returns entry i as a Route (IPv4: tos descending, priority
// ascending; IPv6: source-specific first, metric ascending, ECMP sibling
// sets as one entry with several hops).
func (e Entries) At(i int) Route {
	r := e.l.at(e.lo + i).r
	r.Dst = e.dst
	return r
}

// All iterates the entries in order.
func (e Entries) All() iter.Seq[Route] {
	return func(yield func(Route) bool) {
		for i := range e.Len() {
			if !yield(e.At(i)) {
				return
			}
		}
	}
}

// entries returns the part of l that belongs to the view: all of it, or
// in merged main/local the contiguous run of the view's table id (leaf
// entries are ordered by table id descending, as fib_find_alias() keeps
// them).
func (v View) entries(p netip.Prefix, l leaf) Entries {
	e := Entries{dst: p, l: l, hi: l.len()}
	if v.all {
		return e
	}
	for e.lo < e.hi && l.at(e.lo).r.Table != v.id {
		e.lo++
	}
	end := e.lo
	for end < e.hi && l.at(end).r.Table == v.id {
		end++
	}
	e.hi = end
	return e
}

// Get returns the entries of exactly prefix p.
func (v View) Get(p netip.Prefix) (Entries, bool) {
	if v.bt == nil {
		return Entries{}, false
	}
	l, ok := v.bt.Get(p.Masked())
	if !ok {
		return Entries{}, false
	}
	e := v.entries(p.Masked(), l)
	return e, e.Len() > 0
}

// Lookup returns the entries of the longest prefix containing addr.
func (v View) Lookup(addr netip.Addr) (Entries, bool) {
	if v.bt == nil || !addr.IsValid() {
		return Entries{}, false
	}
	if v.all {
		p, l, ok := v.bt.LookupPrefixLPM(netip.PrefixFrom(addr, addr.BitLen()))
		if !ok {
			return Entries{}, false
		}
		return v.entries(p, l), true
	}
	for e := range v.Supernets(netip.PrefixFrom(addr, addr.BitLen())) {
		return e, true
	}
	return Entries{}, false
}

// Supernets iterates the prefixes containing p (p included), longest
// first, for a lookup that backtracks to shorter prefixes when no entry
// of a longer one fits (fib_table_lookup()'s backtrace).
func (v View) Supernets(p netip.Prefix) iter.Seq[Entries] {
	return func(yield func(Entries) bool) {
		if v.bt == nil {
			return
		}
		for q, l := range v.bt.Supernets(p) {
			e := v.entries(q, l)
			if e.Len() == 0 {
				continue
			}
			if !yield(e) {
				return
			}
		}
	}
}

// Cursor is a dump position: the prefix and the index of an entry in its
// list. A dump resumes from the key, never by counting from the start.
type Cursor struct {
	Dst netip.Prefix
	Pos int
}

// Next returns the position after c.
func (c Cursor) Next() Cursor { return Cursor{Dst: c.Dst, Pos: c.Pos + 1} }

// Walk iterates the table's routes in the kernel's dump order, starting
// at from (the zero Cursor: from the beginning), yielding each route's
// own position. IPv4 (fib_trie): prefix address ascending, then prefix
// length descending; IPv6 (fib6 tree, post-order): a prefix after every
// more specific prefix it contains, that is last address ascending, then
// length descending.
func (v View) Walk(from Cursor) iter.Seq2[Cursor, Route] {
	return func(yield func(Cursor, Route) bool) {
		for e, pos := range v.walkPrefixes(from) {
			for i := pos; i < e.Len(); i++ {
				if !yield(Cursor{Dst: e.dst, Pos: i}, e.At(i)) {
					return
				}
			}
		}
	}
}

// WalkEntries iterates the table's prefixes in dump order from the
// beginning.
func (v View) WalkEntries() iter.Seq[Entries] {
	return func(yield func(Entries) bool) {
		for e := range v.walkPrefixes(Cursor{}) {
			if !yield(e) {
				return
			}
		}
	}
}

// dumpLess is the dump order of two prefixes of one family.
func dumpLess(a, b netip.Prefix) bool {
	if a.Addr().Is4() {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c < 0
		}
		return a.Bits() > b.Bits()
	}
	if c := lastAddr(a).Compare(lastAddr(b)); c != 0 {
		return c < 0
	}
	return a.Bits() > b.Bits()
}

// walkPrefixes yields the non-empty prefixes at or after from.Dst in dump
// order with the first entry index to emit. bart iterates in CIDR order
// (address ascending, length ascending: a pre-order); a stack of at most
// 33/129 prefixes turns that into the kernel's order as it streams.
func (v View) walkPrefixes(from Cursor) iter.Seq2[Entries, int] {
	return func(yield func(Entries, int) bool) {
		if v.bt == nil {
			return
		}
		is4 := v.family == afInet
		var pending []Entries // IPv6 resume: supernets of from.Dst still to come
		stop := false
		emit := func(e Entries, pos int) bool {
			if e.Len() == 0 {
				return true
			}
			for len(pending) > 0 && dumpLess(pending[0].dst, e.dst) {
				if !yield(pending[0], 0) {
					return false
				}
				pending = pending[1:]
			}
			return yield(e, pos)
		}
		var stack []Entries
		push := func(p netip.Prefix, l leaf) bool {
			e := v.entries(p, l)
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				if is4 && top.dst.Addr() == p.Addr() || !is4 && top.dst.Contains(p.Addr()) && top.dst.Bits() <= p.Bits() {
					break
				}
				stack = stack[:len(stack)-1]
				if !emit(top, 0) {
					stop = true
					return false
				}
			}
			stack = append(stack, e)
			return true
		}
		flush := func() bool {
			for i := len(stack) - 1; i >= 0; i-- {
				if !emit(stack[i], 0) {
					return false
				}
			}
			stack = stack[:0]
			for _, e := range pending {
				if !yield(e, 0) {
					return false
				}
			}
			pending = nil
			return true
		}
		if !from.Dst.IsValid() {
			all := v.bt.AllSorted6()
			if is4 {
				all = v.bt.AllSorted4()
			}
			for p, l := range all {
				if !push(p, l) {
					return
				}
			}
			flush()
			return
		}
		k := from.Dst.Masked()
		if k.Addr().Is4() != is4 {
			return // a cursor of the other family: nothing follows it here
		}
		if l, ok := v.bt.Get(k); ok {
			if e := v.entries(k, l); from.Pos < e.Len() {
				if !yield(e, max(from.Pos, 0)) {
					return
				}
			}
		}
		var next netip.Addr
		var ok bool
		if is4 {
			// The rest of key k's address: shorter prefixes of the same
			// address, longest first.
			for bits := k.Bits() - 1; bits >= 0; bits-- {
				q := netip.PrefixFrom(k.Addr(), bits)
				if q.Masked() != q {
					break
				}
				if l, ok := v.bt.Get(q); ok {
					if !emit(v.entries(q, l), 0) {
						return
					}
				}
			}
			next, ok = k.Addr().Next(), k.Addr().Next().IsValid()
		} else {
			for q, l := range v.bt.Supernets(k) {
				if q == k {
					continue
				}
				if e := v.entries(q, l); e.Len() > 0 {
					pending = append(pending, e)
				}
			}
			last := lastAddr(k)
			next, ok = last.Next(), last.Next().IsValid()
		}
		if ok {
			for b := range blocksFrom(next) {
				for p, l := range v.bt.Subnets(b) {
					if !push(p, l) {
						return
					}
				}
				if stop {
					return
				}
			}
		}
		flush()
	}
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// blocksFrom yields the largest aligned prefixes covering [a, last
// address of the family], in address order: every prefix whose first
// address is >= a lies inside exactly one of them.
func blocksFrom(a netip.Addr) iter.Seq[netip.Prefix] {
	return func(yield func(netip.Prefix) bool) {
		for a.IsValid() {
			bits := a.BitLen()
			b := a.AsSlice()
			// the number of trailing zero bits of a bounds the block size
			for bits > 0 && b[(bits-1)/8]&(0x80>>((bits-1)%8)) == 0 {
				bits--
			}
			p := netip.PrefixFrom(a, bits)
			if !yield(p) {
				return
			}
			a = lastAddr(p).Next()
		}
	}
}
