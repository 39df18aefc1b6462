package fib

import (
	"math"
	"net/netip"
	"slices"
	"unsafe"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// lpmIndex is a table's read-optimized longest-prefix-match index, built
// beside the store's bart pair and published with it (store.ix): a lookup
// asks one structure per table instead of two bart tables. It answers
// exactly what store.LookupPrefixLPM answers (TestIndexMatchesReference);
// the bart pair stays the source of truth for everything else (dumps,
// exact gets, supernets for the backtracking).
//
// Why: bart's LookupPrefixLPM costs 80–130 ns at 40,000 routes on the
// 2-core EPYC this project measures on, above issue 9's whole budget (60 ns
// IPv4 / 80 ns IPv6 per lookup). The index trades memory for a fixed number
// of direct array reads, as the kernel's fib_trie trades it for level
// compression:
//
//   - tiny (≤ tinyMax prefixes, e.g. a local table of host routes): a
//     linear list, longest first, masked compares.
//   - full (≥ fullMin prefixes; kept until the table shrinks below
//     fullDrop): IPv4 splits the address at 16 bits: a direct 65,536-slot
//     array of covers (the longest prefix of length ≤ 16 containing the
//     /16) and one of buckets (the prefixes longer than /16 inside it,
//     longest first, scanned with masked compares). IPv6 has two such
//     16-bit levels (lengths ≤ 16, 17–32) and buckets of the prefixes
//     longer than /32 inside a /32. A bucket of more than bucketMax
//     prefixes is the shared slow marker and the lookup asks bart for that
//     address (slow, never wrong).
//   - none (between the two, or before the first change): bart answers.
//
// Every part is immutable once published; a change copies the paths it
// touches (persistent arrays, parr and varr: a long prefix copies one
// chunk, its group and the array's top), so a reader of an old snapshot
// keeps its answers (TestIndexMatchesReference's snapshots) and the read
// path writes nothing (seed 001). The full form's arrays are a fullIndex
// of their own, which the store also points at (store.fx).
type lpmIndex struct {
	mode uint8 // ixTiny or ixFull
	v6   bool

	tiny []tinyEnt
	// An IPv6 tiny index's summary, for fast6's question whether table
	// local holds any prefix containing a destination (a namespace's
	// addresses, ::1, anycast, ff00::/8): bloom has bit bloomBit(hi) set
	// for the top 64 bits of each prefix of /64 or longer, and short holds
	// the shorter ones, scanned in full. A destination whose bit is clear
	// and that no short prefix contains is in no local prefix: the lookup
	// skips the scan of every local entry (TestLocalSummaryMatchesScan).
	bloom uint64
	short []tinyEnt
	// An IPv4 tiny index's summary, for the rule walk's probe of table
	// local (noPrefix4; 127.0.0.0/8, the addresses and their broadcasts):
	// oct4 has bit o set for each first octet o that a prefix of /8 or
	// longer lies in, and short holds the shorter ones. A destination
	// whose first octet's bit is clear and that no short prefix contains
	// is in no prefix of the table (TestLocalSummary4MatchesScan).
	oct4 [4]uint64

	// full is the full form's arrays (nil for a tiny index, which so
	// carries none of their tops); the store keeps the pointer again
	// (store.fx) for the fast path's probes.
	full *fullIndex
}

// fullArrays returns x's full arrays (nil: no index, or a tiny one).
func (x *lpmIndex) fullArrays() *fullIndex {
	if x == nil {
		return nil
	}
	return x.full
}

// fullIndex is a full index's arrays.
type fullIndex struct {
	v6 bool
	// root covers lengths 0–16 keyed by address bits 0–15 (both families).
	// The arrays' tops are held by value, here and in node6: a lookup
	// reads a group pointer straight from the index, one dependent load
	// per level less than through a pointer to the top (the IPv6 path
	// has two levels).
	root parr[coverEnt]
	// IPv4: buckets of lengths 17–32 keyed by bits 0–15, each slot with
	// its bucket's first entry inline (slot4).
	bkt4 varr[slot4]
	// IPv6: the second level (lengths 17–32 and the buckets) keyed by bits
	// 0–15, then bits 16–31 inside it.
	next6 parr[node6]
	// few6 lists the second-level nodes again while the table has at most
	// few6Max of them (the /16s with prefixes longer than /16: one for the
	// benchmark's 2001::/16, a handful for most IPv6 tables): keys in
	// nkey[:nfew], nodes in nnode. nfew > few6Max: too many, next6 alone
	// answers. A lookup compares its /16 with the keys in the index's own
	// lines and loads the node from there, where next6 is three dependent
	// loads (top, group, chunk) to the same node (node6Of).
	nfew  uint8
	nkey  [few6Max]uint16
	nnode [few6Max]*node6
}

// few6Max is the length of fullIndex's list of second-level nodes.
const few6Max = 8

// node6Of returns the second-level node of /16 v0 (nil: none).
func (x *fullIndex) node6Of(v0 uint32) *node6 {
	if n := int(x.nfew); n <= few6Max {
		for i := 0; i < n; i++ {
			if uint32(x.nkey[i]) == v0 {
				return x.nnode[i]
			}
		}
		return nil
	}
	return x.next6.get(v0)
}

// setFew6 records nd as the node of /16 v0 in n's list (n is a copy being
// built): replaced when listed, appended while there is room, else the
// list is given up for good (nfew past few6Max).
func (n *fullIndex) setFew6(v0 uint32, nd *node6) {
	c := int(n.nfew)
	if c > few6Max {
		return
	}
	for i := 0; i < c; i++ {
		if uint32(n.nkey[i]) == v0 {
			n.nnode[i] = nd
			return
		}
	}
	if c == few6Max {
		n.nfew, n.nkey, n.nnode = few6Max+1, [few6Max]uint16{}, [few6Max]*node6{}
		return
	}
	n.nkey[c], n.nnode[c] = uint16(v0), nd
	n.nfew++
}

const (
	ixTiny = 1 + iota
	ixFull
)

// The index's size thresholds, variables so that tests stress every mode
// and every switch between them.
var (
	tinyMax   = 16
	fullMin   = 256
	fullDrop  = 128
	bucketMax = 32
)

// ixState is the answer state of an index lookup.
type ixState uint8

const (
	ixNone ixState = iota // no prefix contains the address
	ixHit                 // the longest prefix containing it: leaf and bits
	ixAsk                 // the index does not know: ask bart
)

// coverEnt is one prefix's answer shared by every slot it covers.
type coverEnt struct {
	l    leaf
	bits int
	fa   fastAns
}

// fastAns is a prefix's answer for the flows of the written-out fast path
// (lookup_fast.go), computed once when its index entry is built: the
// entries are immutable (a nexthop going dead stores a new entry list and
// so a new index entry, sync.go), so the answer holds as long as the entry.
// It spares the lookup the loads of the entry and of its nexthop array,
// two dependent cache lines per lookup on a table of distinct gateways,
// that choose4 / choose6 read to reach the same answer
// (TestFastAnsMatchesChoose).
//
// IPv4 (fib_table_lookup()'s loop over the prefix's aliases for a flow
// without an output device): the first entry answers every TOS when its
// own tos is 0, every flow scope up to its own, with its first live
// nexthop, when it is a unicast-like type (TypeError 0) with a nexthop.
// IPv6 (rt6_select() over one entry, no device to score): one entry
// without a source prefix, with a live nexthop, answers with that nexthop
// and its type's error.
type fastAns struct {
	// nh is the nexthop chosen; -1: no precomputed answer, the lookup
	// reads the entries.
	nh int8
	// aux is, for IPv4, the entry's scope (the flow's must not exceed it)
	// and, for IPv6, the type's errno (TypeError).
	aux uint8
}

// noFast is the fastAns of entries the lookup must read.
var noFast = fastAns{nh: -1}

// fastOf computes l's fastAns (see there); the family is the entry's.
func fastOf(l leaf) fastAns {
	if l.head == nil {
		return noFast
	}
	e := &l.head.r
	nh := -1
	for j := range e.Nexthops {
		if e.Nexthops[j].Flags&rtnl.RTNH_F_DEAD == 0 {
			nh = j
			break
		}
	}
	if nh < 0 || nh > math.MaxInt8 {
		return noFast
	}
	err := TypeError(e.Type)
	if e.Family == rtnl.AF_INET6 {
		if l.tail != nil || e.Src.Bits() > 0 || err > math.MaxUint8 {
			return noFast
		}
		return fastAns{nh: int8(nh), aux: uint8(err)}
	}
	if e.Tos != 0 || err != 0 {
		return noFast
	}
	return fastAns{nh: int8(nh), aux: e.Scope}
}

// A bucket is the prefixes longer than the level inside one /16 (IPv4) or
// /32 (IPv6), longest first, stored as a pointer to the first entry of an
// immutable array whose first entry's cnt is the array's length: the slot
// leads to the entries in one load. A slow bucket (more than bucketMax
// prefixes: bart answers) is the shared marker slow4 / slow6 (cnt 0): it
// holds no count, so a change inside a slow bucket changes nothing in the
// index and copies nothing (hack/routeload.sh's 40,000 /24s fill 157 /16s
// of 256 each, its /64s one /32: with a count in the bucket, every insert
// copied a 1.2–2.4 KB path of the persistent arrays, a third of the
// handler's time; BenchmarkIndexUpkeepSlowBucket). A delete inside one
// counts what is left of the block in the store, stopping past
// bucketMax/2, to refill it when small again.
type ent4 struct {
	net  uint32
	bits uint8
	// cnt is the bucket's length in its first entry (at most bucketMax,
	// checked by seal4: a byte keeps the entry at 24 bytes with fa).
	cnt uint8
	fa  fastAns
	l   leaf
}

// node6 is the second IPv6 level under one /16.
type node6 struct {
	cov parr[coverEnt]
	bkt varr[slot6]
}

// slot4 is one /16's bucket as its array holds it: b is the bucket (nil:
// none; slow4: slow) and first a copy of b's first entry, which carries
// the bucket's count (0 for slow4). The lookup reads the slot's cache line
// and, when the address is under the bucket's longest prefix or the bucket
// has one prefix (hack/routeload.sh's /24s, the benchmark's tables: most
// buckets), nothing else: the slot's pointer to a separate bucket was a
// dependent cache miss of every lookup, and on this project's shared VM
// the lines a lookup does not own are L3 or memory reads more often than
// not (docs/LOOKUP.md, "Two modes").
type slot4 struct {
	first ent4
	b     *ent4
}

// match reports whether e's prefix contains the address hi, lo.
func (e *ent6) match(hi, lo uint64) bool {
	mh, ml := mask128(int(e.bits))
	return hi&mh == e.hi && lo&ml == e.lo
}

// slot6 is slot4 for a /32's bucket.
type slot6 struct {
	first ent6
	b     *ent6
}

func slotOf4(b *ent4) slot4 {
	if b == nil {
		return slot4{}
	}
	return slot4{first: *b, b: b}
}

func slotOf6(b *ent6) slot6 {
	if b == nil {
		return slot6{}
	}
	return slot6{first: *b, b: b}
}

// match returns the entry of the slot's bucket (not empty) holding the
// longest prefix containing a (nil: none), or slow for a slow bucket. The
// first entry is read from the slot; the bucket only when it has more.
func (sl *slot4) match(a uint32) (e *ent4, slow bool) {
	n := sl.first.cnt
	if n == 0 {
		return nil, true
	}
	if e := &sl.first; a&(^uint32(0)<<(32-e.bits)) == e.net { // bits > 16
		return e, false
	}
	if n > 1 {
		es := unsafe.Slice(sl.b, n)
		for i := 1; i < len(es); i++ {
			if e := &es[i]; a&(^uint32(0)<<(32-e.bits)) == e.net {
				return e, false
			}
		}
	}
	return nil, false
}

// match is slot4.match for an IPv6 address's words.
func (sl *slot6) match(hi, lo uint64) (e *ent6, slow bool) {
	n := sl.first.cnt
	if n == 0 {
		return nil, true
	}
	if e := &sl.first; e.match(hi, lo) {
		return e, false
	}
	if n > 1 {
		es := unsafe.Slice(sl.b, n)
		for i := 1; i < len(es); i++ {
			if e := &es[i]; e.match(hi, lo) {
				return e, false
			}
		}
	}
	return nil, false
}

// bucket4 returns the bucket of /16 v (nil: none).
func (x *fullIndex) bucket4(v uint32) *ent4 {
	if sl := x.bkt4.get(v); sl != nil {
		return sl.b
	}
	return nil
}

// bucket returns the bucket of /32 v inside the node's /16 (nil: none).
func (n *node6) bucket(v uint32) *ent6 {
	if sl := n.bkt.get(v); sl != nil {
		return sl.b
	}
	return nil
}

// slow4 and slow6 are the slow-bucket markers.
var (
	slow4 = &ent4{}
	slow6 = &ent6{}
)

// ent6 is ent4 for IPv6 buckets.
type ent6 struct {
	hi, lo uint64
	bits   uint8
	fa     fastAns
	cnt    uint16
	l      leaf
}

// tinyEnt is one prefix of a tiny index with its mask.
type tinyEnt struct {
	hi, lo, mhi, mlo uint64
	bits             int
	p                netip.Prefix
	l                leaf
}

// parr is a persistent array of 65,536 pointers: 16 groups of 64 chunks
// of 64 slots (4 + 6 + 6 bits). A nil group or chunk reads as nil slots.
// Small levels keep a change cheap: one slot copies the 128-byte top, a
// 512-byte group and a 512-byte chunk (BenchmarkIndexUpkeep), where
// 256 × 256 copied 4 KB; the top and the groups are few and stay in cache,
// so a read pays one more load, from L1.
type parr[T any] struct {
	g [16]*[64]*[64]*T
}

func (a *parr[T]) get(i uint32) *T {
	if a == nil {
		return nil
	}
	g := a.g[(i>>12)&0xf]
	if g == nil {
		return nil
	}
	c := g[(i>>6)&0x3f]
	if c == nil {
		return nil
	}
	return c[i&0x3f]
}

// update returns a copy of a with slots [lo, lo+n) replaced by f(old),
// copying the top once and each touched group and chunk once. The top is
// returned by value: its holder (lpmIndex, node6) keeps it inline.
func (a *parr[T]) update(lo, n uint32, f func(*T) *T) parr[T] {
	var na parr[T]
	if a != nil {
		na = *a
	}
	end := lo + n
	for gi := lo >> 12; gi <= (end-1)>>12; gi++ {
		g := new([64]*[64]*T)
		if old := na.g[gi]; old != nil {
			*g = *old
		}
		gend := min(end, (gi+1)<<12) // the group's last slot + 1
		for ci := max(lo, gi<<12) >> 6; ci<<6 < gend; ci++ {
			c := new([64]*T)
			if old := g[ci&0x3f]; old != nil {
				*c = *old
			}
			for i := max(lo, ci<<6); i < min(end, (ci+1)<<6); i++ {
				c[i&0x3f] = f(c[i&0x3f])
			}
			g[ci&0x3f] = c
		}
		na.g[gi] = g
	}
	return na
}

// varr is a persistent array of 65,536 slots held by value (the bucket
// arrays: slot4, slot6), 64 groups of 64 chunks of 16 slots (6 + 6 + 4
// bits): a chunk of 16 slots of 32 or 48 bytes copies as much on a change
// as parr's chunk of 64 pointers. A nil group or chunk reads as no slot.
type varr[S any] struct {
	g [64]*[64]*[16]S
}

func (a *varr[S]) get(i uint32) *S {
	g := a.g[(i>>10)&0x3f]
	if g == nil {
		return nil
	}
	c := g[(i>>4)&0x3f]
	if c == nil {
		return nil
	}
	return &c[i&0xf]
}

// set returns a copy of a with slot i set to v, copying the touched group
// and chunk.
func (a *varr[S]) set(i uint32, v S) varr[S] {
	na := *a
	gi, ci := (i>>10)&0x3f, (i>>4)&0x3f
	g := new([64]*[16]S)
	if old := na.g[gi]; old != nil {
		*g = *old
	}
	c := new([16]S)
	if old := g[ci]; old != nil {
		*c = *old
	}
	c[i&0xf] = v
	g[ci] = c
	na.g[gi] = g
	return na
}

// addr128 returns a's bits as two words (IPv4: in the low 32 bits of lo,
// hi 0).
func addr128(a netip.Addr) (hi, lo uint64) {
	hi, lo = addrWords(a)
	if a.Is4() {
		return 0, lo & 0xffffffff
	}
	return hi, lo
}

// addrWords reads the two words netip.Addr keeps its address in (its
// uint128, IPv4 as ::ffff:a.b.c.d), without As16's byte round trip: the
// IPv6 lookup spent a fifth of its time in As16 and AddrFrom16
// (BenchmarkLookupIndex). TestAddrWordsLayout pins the layout this reads
// against As16, so a Go release that changes it fails the tests.
func addrWords(a netip.Addr) (hi, lo uint64) {
	w := (*[2]uint64)(unsafe.Pointer(&a))
	return w[0], w[1]
}

// withWords returns the prefix of a's family, zone dropped, whose address
// words are hi, lo (masked by the caller) and whose length is bits.
func withWords(a netip.Addr, hi, lo uint64, bits int) netip.Prefix {
	w := (*[2]uint64)(unsafe.Pointer(&a))
	w[0], w[1] = hi, lo
	return netip.PrefixFrom(a, bits)
}

// mask128 is the mask of an IPv6 prefix length as two words, without a
// branch: Go's shifts by 64 or more give 0.
func mask128(bits int) (hi, lo uint64) {
	return ^uint64(0) << uint(64-min(bits, 64)), ^uint64(0) << uint(128-bits)
}

func mask32(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << uint(32-bits)
}

// lookup returns the longest indexed prefix containing addr and its leaf.
// The caller checked addr is valid.
func (x *lpmIndex) lookup(addr netip.Addr) (netip.Prefix, leaf, ixState) {
	if x.mode == ixTiny {
		return x.lookupTiny(addr)
	}
	if addr.Is4() == x.v6 {
		return netip.Prefix{}, leaf{}, ixAsk
	}
	if x.v6 {
		return x.full.lookup6(addr)
	}
	return x.full.lookup4(addr)
}

func (x *lpmIndex) lookupTiny(addr netip.Addr) (netip.Prefix, leaf, ixState) {
	if addr.Is4() == x.v6 {
		return netip.Prefix{}, leaf{}, ixAsk
	}
	hi, lo := addr128(addr)
	for i := range x.tiny {
		e := &x.tiny[i]
		if hi&e.mhi == e.hi && lo&e.mlo == e.lo {
			return e.p, e.l, ixHit
		}
	}
	return netip.Prefix{}, leaf{}, ixNone
}

// lookup4 is the full IPv4 index: the /16's bucket, then its cover.
func (x *fullIndex) lookup4(addr netip.Addr) (netip.Prefix, leaf, ixState) {
	_, w := addrWords(addr)
	a := uint32(w)
	v := a >> 16
	if sl := x.bkt4.get(v); sl != nil && sl.b != nil {
		e, slow := sl.match(a)
		if slow {
			return netip.Prefix{}, leaf{}, ixAsk
		}
		if e != nil {
			return withWords(addr, 0, w&^0xffffffff|uint64(e.net), int(e.bits)), e.l, ixHit
		}
	}
	if c := x.root.get(v); c != nil {
		return withWords(addr, 0, w&^0xffffffff|uint64(a&mask32(c.bits)), c.bits), c.l, ixHit
	}
	return netip.Prefix{}, leaf{}, ixNone
}

// lookup6 is the full IPv6 index: the /32's bucket, the second level's
// cover, the root's cover.
func (x *fullIndex) lookup6(addr netip.Addr) (netip.Prefix, leaf, ixState) {
	hi, lo := addrWords(addr)
	v0 := uint32(hi >> 48)
	if n := x.node6Of(v0); n != nil {
		v1 := uint32(hi>>32) & 0xffff
		if sl := n.bkt.get(v1); sl != nil && sl.b != nil {
			e, slow := sl.match(hi, lo)
			if slow {
				return netip.Prefix{}, leaf{}, ixAsk
			}
			if e != nil {
				return withWords(addr, e.hi, e.lo, int(e.bits)), e.l, ixHit
			}
		}
		if c := n.cov.get(v1); c != nil {
			return withWords(addr, hi&^(^uint64(0)>>c.bits), 0, c.bits), c.l, ixHit
		}
	}
	if c := x.root.get(v0); c != nil {
		return withWords(addr, hi&^(^uint64(0)>>c.bits), 0, c.bits), c.l, ixHit
	}
	return netip.Prefix{}, leaf{}, ixNone
}

// indexed returns the index of s after p's entries became l (l empty: p
// removed) in s, which is already the new store; existed tells whether p
// was stored before. It is store.with's only extra step.
func indexed(old *lpmIndex, p netip.Prefix, l leaf, existed bool, s *store) *lpmIndex {
	size := s.Size()
	switch {
	case size <= tinyMax:
		return buildTiny(s, p.Addr().Is6())
	case old != nil && old.mode == ixFull && size >= fullDrop:
		return old.with(p, l, existed, s)
	case size >= fullMin:
		return buildFull(s, p.Addr().Is6())
	}
	return nil
}

// indexOf builds the index of a store built privately (storeOf).
func indexOf(s *store, v6 bool) *lpmIndex {
	switch size := s.Size(); {
	case size <= tinyMax:
		return buildTiny(s, v6)
	case size >= fullMin:
		return buildFull(s, v6)
	}
	return nil
}

func buildTiny(s *store, v6 bool) *lpmIndex {
	x := &lpmIndex{mode: ixTiny, v6: v6}
	for p, l := range s.All() {
		x.tiny = append(x.tiny, tinyOf(p, l))
	}
	slices.SortFunc(x.tiny, func(a, b tinyEnt) int { return b.bits - a.bits })
	if v6 {
		for _, e := range x.tiny {
			if e.bits >= 64 {
				x.bloom |= 1 << bloomBit(e.hi)
			} else {
				x.short = append(x.short, e)
			}
		}
		return x
	}
	for _, e := range x.tiny {
		if e.bits >= 8 {
			o := e.lo >> 24 & 0xff
			x.oct4[o>>6] |= 1 << (o & 63)
		} else {
			x.short = append(x.short, e)
		}
	}
	return x
}

// noPrefixTiny reports whether x, when a tiny index, knows from its
// summary that no prefix contains the flow's destination (false: one may,
// or x is not tiny, or not of the destination's family).
func noPrefixTiny(x *lpmIndex, k *flow.Key) bool {
	if x == nil || x.mode != ixTiny {
		return false
	}
	if !x.v6 {
		_, w := addrWords(k.Dst)
		return k.Dst.Is4() && noPrefix4(x, uint32(w))
	}
	return k.Dst.Is6() && noPrefix6(x, k)
}

// noPrefix4 reports whether x, an IPv4 tiny index, knows from its summary
// that no prefix contains address a (false: one may, the scan tells).
func noPrefix4(x *lpmIndex, a uint32) bool {
	o := a >> 24
	if x.oct4[o>>6]&(1<<(o&63)) != 0 {
		return false
	}
	for i := range x.short {
		if e := &x.short[i]; uint64(a)&e.mlo == e.lo {
			return false
		}
	}
	return true
}

// bloomBit is the bit of lpmIndex.bloom for the top 64 bits of an IPv6
// address: a multiplicative hash, so that the few /128s of a local table
// spread over the word.
func bloomBit(hi uint64) uint64 { return hi * 0x9e3779b97f4a7c15 >> 58 }

func tinyOf(p netip.Prefix, l leaf) tinyEnt {
	e := tinyEnt{bits: p.Bits(), p: p.Masked(), l: l}
	e.hi, e.lo = addr128(p.Masked().Addr())
	if p.Addr().Is4() {
		e.mlo = uint64(mask32(p.Bits()))
	} else {
		e.mhi, e.mlo = mask128(p.Bits())
	}
	return e
}

func buildFull(s *store, v6 bool) *lpmIndex {
	x := &fullIndex{v6: v6}
	for p, l := range s.All() {
		x = x.with(p, l, false, s)
	}
	return &lpmIndex{mode: ixFull, v6: v6, full: x}
}

// with returns the full index with p's entries set to l (removed when l
// is empty). s is the store after the change: it answers the cover that
// replaces a removed short prefix and refills a bucket that is small
// again. A change inside a slow bucket returns x itself: nothing copied.
func (x *lpmIndex) with(p netip.Prefix, l leaf, existed bool, s *store) *lpmIndex {
	f := x.full.with(p, l, existed, s)
	if f == x.full {
		return x
	}
	n := *x
	n.full = f
	return &n
}

// with is lpmIndex.with for the arrays.
func (x *fullIndex) with(p netip.Prefix, l leaf, existed bool, s *store) *fullIndex {
	p = p.Masked()
	hi, lo := addr128(p.Addr())
	bits := p.Bits()
	if !x.v6 {
		v := uint32(lo >> 16)
		if bits <= 16 {
			n := *x
			n.root = coverWith(&x.root, v, bits, 16, 0, p, l, s)
			return &n
		}
		old := x.bucket4(v)
		nb := bucket4With(old, uint32(lo), uint8(bits), l, existed, p, s)
		if nb == old {
			return x
		}
		n := *x
		n.bkt4 = x.bkt4.set(v, slotOf4(nb))
		return &n
	}
	v0 := uint32(hi >> 48)
	if bits <= 16 {
		n := *x
		n.root = coverWith(&x.root, v0, bits, 16, 0, p, l, s)
		return &n
	}
	o := x.next6.get(v0)
	v1 := uint32(hi>>32) & 0xffff
	// The new node is allocated only once the change is known to write
	// one: a change inside a slow bucket (every insert of
	// hack/routeload.sh's IPv6 load after the first 33) returns x, and a
	// node6 made before that test (640 bytes, zeroed and escaping through
	// update's closure) was a third of the load's bytes per route.
	var nd *node6
	if bits <= 32 {
		nd = cloneNode6(o)
		nd.cov = coverWith(&nd.cov, v1, bits, 32, 17, p, l, s)
	} else {
		var old *ent6
		if o != nil {
			old = o.bucket(v1)
		}
		nb := bucket6With(old, hi, lo, uint8(bits), l, existed, p, s)
		if nb == old {
			return x
		}
		nd = cloneNode6(o)
		nd.bkt = nd.bkt.set(v1, slotOf6(nb))
	}
	n := *x
	n.next6 = x.next6.update(v0, 1, func(*node6) *node6 { return nd })
	n.setFew6(v0, nd)
	return &n
}

// cloneNode6 returns a new copy of o (a zero node when o is nil).
func cloneNode6(o *node6) *node6 {
	nd := new(node6)
	if o != nil {
		*nd = *o
	}
	return nd
}

// coverWith sets or clears the cover of prefix p (bits ≤ levelBits, at
// least minBits) over the slots it spans in a level whose slots are
// levelBits long: slot v is p's first. A removed cover gives way to the
// longest remaining prefix of the level's lengths containing p.
func coverWith(a *parr[coverEnt], v uint32, bits, levelBits, minBits int, p netip.Prefix, l leaf, s *store) parr[coverEnt] {
	span := uint32(1) << uint(levelBits-bits)
	first := v &^ (span - 1) & 0xffff
	if l.len() > 0 {
		e := &coverEnt{l: l, bits: bits, fa: fastOf(l)}
		return a.update(first, span, func(old *coverEnt) *coverEnt {
			if old == nil || old.bits <= bits {
				return e
			}
			return old
		})
	}
	var repl *coverEnt
	for q, ql := range s.Supernets(p) {
		if q.Bits() < bits && q.Bits() >= minBits {
			repl = &coverEnt{l: ql, bits: q.Bits(), fa: fastOf(ql)}
			break
		}
	}
	return a.update(first, span, func(old *coverEnt) *coverEnt {
		if old != nil && old.bits == bits {
			return repl
		}
		return old
	})
}

// bucket4With returns the bucket after p's change. A bucket over bucketMax
// is slow4; a slow one is refilled from s once a delete leaves at most
// half of bucketMax in its /16, and stays b itself otherwise.
func bucket4With(b *ent4, net uint32, bits uint8, l leaf, existed bool, p netip.Prefix, s *store) *ent4 {
	del := l.len() == 0
	if b != nil && b.cnt == 0 {
		if !del || !existed {
			return b // the bucket stays slow: nothing to write
		}
		block := netip.PrefixFrom(p.Addr(), 16).Masked()
		if countLonger(s, block, bucketMax/2+1) > bucketMax/2 {
			return b
		}
		return refill4(block, s)
	}
	n := count4(b)
	switch {
	case del && existed:
		n--
	case !del && !existed:
		n++
	}
	switch {
	case n == 0:
		return nil
	case n > bucketMax:
		return slow4
	case b == nil:
		return &ent4{net: net, bits: bits, cnt: 1, fa: fastOf(l), l: l}
	}
	e := make([]ent4, 0, int(b.cnt)+1)
	for _, x := range unsafe.Slice(b, b.cnt) {
		if x.net != net || x.bits != bits {
			e = append(e, x)
		}
	}
	if !del {
		e = append(e, ent4{net: net, bits: bits, fa: fastOf(l), l: l})
	}
	return seal4(e)
}

// count4 returns the number of prefixes in a fast bucket (0 for none).
func count4(b *ent4) int {
	if b == nil {
		return 0
	}
	return int(b.cnt)
}

// countLonger counts the prefixes of s inside block longer than it,
// stopping at limit: whether a slow bucket is small again.
func countLonger(s *store, block netip.Prefix, limit int) int {
	n := 0
	for q := range s.Subnets(block) {
		if q.Bits() > block.Bits() {
			if n++; n >= limit {
				break
			}
		}
	}
	return n
}

// seal4 orders a bucket's entries longest first and marks its length.
func seal4(e []ent4) *ent4 {
	if len(e) == 0 {
		return nil
	}
	slices.SortStableFunc(e, func(a, b ent4) int { return int(b.bits) - int(a.bits) })
	for i := range e {
		e[i].cnt = 0
	}
	if len(e) > math.MaxUint8 {
		panic("fib: an IPv4 index bucket longer than its byte count (bucketMax > 255)")
	}
	e[0].cnt = uint8(len(e))
	return &e[0]
}

// refill4 builds the bucket of block (a /16) from the store.
func refill4(block netip.Prefix, s *store) *ent4 {
	var e []ent4
	for q, ql := range s.Subnets(block) {
		if q.Bits() <= 16 {
			continue
		}
		_, lo := addr128(q.Addr())
		e = append(e, ent4{net: uint32(lo), bits: uint8(q.Bits()), fa: fastOf(ql), l: ql})
	}
	return seal4(e)
}

// bucket6With is bucket4With for a /32's bucket.
func bucket6With(b *ent6, hi, lo uint64, bits uint8, l leaf, existed bool, p netip.Prefix, s *store) *ent6 {
	del := l.len() == 0
	if b != nil && b.cnt == 0 {
		if !del || !existed {
			return b
		}
		block := netip.PrefixFrom(p.Addr(), 32).Masked()
		if countLonger(s, block, bucketMax/2+1) > bucketMax/2 {
			return b
		}
		return refill6(block, s)
	}
	n := count6(b)
	switch {
	case del && existed:
		n--
	case !del && !existed:
		n++
	}
	switch {
	case n == 0:
		return nil
	case n > bucketMax:
		return slow6
	case b == nil:
		return &ent6{hi: hi, lo: lo, bits: bits, cnt: 1, fa: fastOf(l), l: l}
	}
	e := make([]ent6, 0, int(b.cnt)+1)
	for _, x := range unsafe.Slice(b, b.cnt) {
		if x.hi != hi || x.lo != lo || x.bits != bits {
			e = append(e, x)
		}
	}
	if !del {
		e = append(e, ent6{hi: hi, lo: lo, bits: bits, fa: fastOf(l), l: l})
	}
	return seal6(e)
}

func count6(b *ent6) int {
	if b == nil {
		return 0
	}
	return int(b.cnt)
}

func seal6(e []ent6) *ent6 {
	if len(e) == 0 {
		return nil
	}
	slices.SortStableFunc(e, func(a, b ent6) int { return int(b.bits) - int(a.bits) })
	for i := range e {
		e[i].cnt = 0
	}
	e[0].cnt = uint16(len(e))
	return &e[0]
}

func refill6(block netip.Prefix, s *store) *ent6 {
	var e []ent6
	for q, ql := range s.Subnets(block) {
		if q.Bits() <= 32 {
			continue
		}
		hi, lo := addr128(q.Addr())
		e = append(e, ent6{hi: hi, lo: lo, bits: uint8(q.Bits()), fa: fastOf(ql), l: ql})
	}
	return seal6(e)
}
