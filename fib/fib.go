// Package fib holds a namespace's routing tables, one Tables per family:
// the registry of existing tables, the routes in each (an immutable
// github.com/gaissmai/bart table per routing table, replaced with one
// atomic store per change), the kernel's insert and delete semantics
// (fib_table_insert()/fib_table_delete() for IPv4, fib6_add_rt2node()/
// ip6_route_del() for IPv6), the IPv4 local/main merge and its unmerge
// (fib_unmerge()), and the bulk changes devices cause (fib_sync_down_dev(),
// rt6_sync_down_dev()).
//
// Concurrency: changes serialize on the Tables' writer lock; IPv4 changes
// must also run under RTNL, which serializes them with Unmerge as in the
// kernel. Reads (Snapshot and everything reached from it) never lock and
// never write shared memory.
package fib

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gaissmai/bart"
	"github.com/nlemu/nlemu/rtnl"
)

// Table ids with a meaning of their own.
const (
	tableDefault = rtnl.RT_TABLE_DEFAULT
	tableMain    = rtnl.RT_TABLE_MAIN
	tableLocal   = rtnl.RT_TABLE_LOCAL
)

const (
	afInet  = rtnl.AF_INET
	afInet6 = rtnl.AF_INET6
)

// Tables is the routing tables of one family in one namespace.
type Tables struct {
	family uint8
	mu     sync.Mutex // the family's FIB writer lock
	set    atomic.Pointer[tableSet]
	lm     atomic.Pointer[lmState] // IPv4 only
	// pool interns route attributes (the kernel's fib_info_hash);
	// guarded by mu.
	pool map[string]*attrs
	key  []byte // intern's key buffer; guarded by mu
	// memo is getLeaf's last read, for the setLeaf that follows; guarded
	// by mu.
	memo leafMemo
	// due lists the tables whose published store has a list of changes
	// to fold (store.foldDue), for Tidy; guarded by mu. tidy mirrors
	// len(due) > 0, so that Tidy with nothing to do takes no lock.
	due    []uint32
	tidy   atomic.Bool
	tidies atomic.Uint64 // folds Tidy did
	// routes counts stored entries (a sibling set counts once).
	routes    atomic.Int64
	merged    atomic.Bool
	unmerges  atomic.Uint64
	maxTables uint32
	// rtnlHeld, when set (tests), is asserted by IPv4 changes and Unmerge.
	rtnlHeld func() bool
}

// NewIPv4 returns the IPv4 tables of a fresh namespace: no table exists
// (fib_new_table() creates main and local with the first route, even the
// kernel's own address routes), and local and main are merged.
func NewIPv4() *Tables {
	t := &Tables{family: afInet, maxTables: ^uint32(0), pool: map[string]*attrs{}}
	t.set.Store(&tableSet{})
	t.lm.Store(&lmState{merged: true})
	t.merged.Store(true)
	return t
}

// NewIPv6 returns the IPv6 tables of a fresh namespace: main and local
// exist from the start (fib6_tables_init()).
func NewIPv6() *Tables {
	t := &Tables{family: afInet6, maxTables: ^uint32(0), pool: map[string]*attrs{}}
	t.set.Store(&tableSet{})
	t.create(tableMain)
	t.create(tableLocal)
	return t
}

// Family returns rtnl.AF_INET or rtnl.AF_INET6.
func (t *Tables) Family() uint8 { return t.family }

// SetRTNLCheck installs f, which IPv4 changes and Unmerge call to assert
// that the caller holds RTNL ("must hold RTNL" checked in tests).
func (t *Tables) SetRTNLCheck(f func() bool) { t.rtnlHeld = f }

func (t *Tables) assertRTNL() {
	if t.family == afInet && t.rtnlHeld != nil && !t.rtnlHeld() {
		panic("fib: IPv4 change without RTNL")
	}
}

// Snapshot returns an immutable view of the tables. It never locks.
func (t *Tables) Snapshot() Snapshot {
	return Snapshot{family: t.family, set: t.set.Load(), lm: t.lm.Load()}
}

// Exists reports whether table id exists.
func (t *Tables) Exists(id uint32) bool { return t.set.Load().get(id) != nil }

// Create creates table id if it does not exist (fib_new_table(),
// fib6_new_table()). For IPv4 while merged, creating local creates main
// first, as fib_new_table() does for the alias. A route request that
// fails after the kernel's fib_new_table() (ROUTES-SPEC N33: the table
// exists, empty) calls Create before failing.
func (t *Tables) Create(id uint32) error {
	t.mu.Lock()
	t.create(id)
	t.mu.Unlock()
	return nil
}

// create is Create with mu held.
func (t *Tables) create(id uint32) *table {
	s := t.set.Load()
	if tb := s.get(id); tb != nil {
		return tb
	}
	if t.family == afInet && id == tableLocal && t.lm.Load().merged {
		t.create(tableMain)
		s = t.set.Load()
	}
	tb := &table{id: id}
	t.set.Store(s.with(tb))
	return tb
}

// AllocEmpty creates the lowest table id >= 1 that does not exist yet and
// returns it (fib_empty_table(): ids 1..RT_TABLE_MAX).
func (t *Tables) AllocEmpty() (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.set.Load()
	for id := uint32(1); id != 0 && id <= t.maxTables; id++ {
		if s.get(id) == nil {
			t.create(id)
			return id, true
		}
	}
	return 0, false
}

// Merged reports whether local and main still share one table.
func (t *Tables) Merged() bool { return t.merged.Load() }

// Unmerge splits local from main if they are still merged (fib_unmerge()
// and fib_trie_unmerge(): a standalone local table gets copies of the
// local entries, which are then dropped from main). The caller must hold
// RTNL, which serializes it with IPv4 route changes; it runs at most once.
// Readers see either the merged roots or the split ones and the flag from
// the same store.
func (t *Tables) Unmerge() error {
	if t.family != afInet {
		return nil
	}
	t.assertRTNL()
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.lm.Load()
	if !old.merged {
		return nil
	}
	nl := &lmState{}
	if old.main != nil {
		local := new(bart.Table[leaf])
		main := old.main
		for p, l := range old.main.All() {
			var keep, move []*attrs
			for i := range l.len() {
				if a := l.at(i); a.r.Table == tableLocal {
					move = append(move, a)
				} else {
					keep = append(keep, a)
				}
			}
			if len(move) == 0 {
				continue
			}
			local.Insert(p, leafOf(move))
			main = main.with(p, l, leafOf(keep))
		}
		nl.main, nl.local, nl.premerged = main, storeOf(local), old.main
	}
	t.lm.Store(nl)
	if nl.main.foldDue() {
		t.markDue(tableMain)
	}
	t.merged.Store(false)
	t.unmerges.Add(1)
	return nil
}

// TidyDue reports whether a table's list of changes may wait for Tidy
// (true also when a change has folded it since).
func (t *Tables) TidyDue() bool { return t.tidy.Load() }

// Tidies returns how many folds Tidy has done.
func (t *Tables) Tidies() uint64 { return t.tidies.Load() }

// Unmerges returns how many times Unmerge split the tables (0 or 1).
func (t *Tables) Unmerges() uint64 { return t.unmerges.Load() }

// Count returns the number of existing tables.
func (t *Tables) Count() int { return t.set.Load().n }

// Routes returns the number of stored entries over all tables (an IPv6
// ECMP sibling set counts once).
func (t *Tables) Routes() int { return int(t.routes.Load()) }

// LookupTable returns the entries of the longest prefix containing addr
// in table id, as a value (the view of the current snapshot; while merged,
// main's own entries only — the merged fast path uses
// Snapshot.MergedMain).
func (t *Tables) LookupTable(id uint32, addr netip.Addr) (Entries, bool) {
	v, ok := t.Snapshot().Table(id)
	if !ok {
		return Entries{}, false
	}
	return v.Lookup(addr)
}

// root returns table id's current root for a writer (mu held).
func (t *Tables) root(id uint32) *store {
	if t.family == afInet && (id == tableMain || id == tableLocal) {
		lm := t.lm.Load()
		if id == tableMain {
			return lm.main
		}
		return lm.local
	}
	tb := t.set.Load().get(id)
	if tb == nil {
		return nil
	}
	return tb.root.Load()
}

// publish stores root as table id's new root (mu held): one atomic store.
func (t *Tables) publish(id uint32, root *store) {
	if t.family == afInet && (id == tableMain || id == tableLocal) {
		old := t.lm.Load()
		n := *old
		switch {
		case n.merged:
			n.main, n.local = root, root
		case id == tableMain:
			n.main = root
		default:
			n.local = root
		}
		t.lm.Store(&n)
		return
	}
	t.set.Load().get(id).root.Store(root)
}

// getLeaf returns the entries stored at p in table id's storage (in
// merged main/local: both tables' entries). It remembers what it read, so
// that the setLeaf of the same prefix that follows in every insert and
// delete does not look it up again.
func (t *Tables) getLeaf(id uint32, p netip.Prefix) leaf {
	r := t.root(id)
	if r == nil {
		return leaf{}
	}
	l, _ := r.Get(p)
	t.memo = leafMemo{root: r, p: p, l: l}
	return l
}

// leafMemo is getLeaf's last read: the entries l at p in root.
type leafMemo struct {
	root *store
	p    netip.Prefix
	l    leaf
}

// setLeaf replaces the entries at p (none: the prefix is removed) with a
// persistent update: only the path to p is copied.
func (t *Tables) setLeaf(id uint32, p netip.Prefix, s []*attrs) {
	root := t.root(id)
	var old leaf
	if m := &t.memo; m.root == root && root != nil && m.p == p {
		old = m.l // root unchanged since getLeaf read p
	} else {
		old, _ = root.Get(p)
	}
	t.memo = leafMemo{}
	nr := root.with(p, old, leafOf(s))
	t.publish(id, nr)
	if nr.foldDue() {
		t.markDue(id)
	}
}

// markDue records that table id's store has a list to fold (mu held).
func (t *Tables) markDue(id uint32) {
	if !slices.Contains(t.due, id) {
		t.due = append(t.due, id)
	}
	t.tidy.Store(true)
}

// Tidy folds the lists of changes that reached smallMax into their
// tables' large bart tables (store.fold) and publishes the folded stores.
// No reader can tell: a folded store holds the same prefixes and entries
// and keeps the read index, so a lookup, a get or a dump answers the same
// from either. The server calls it once the reply to a request has been
// sent and before it reads that connection's next request ("ACK first,
// then tidy up", docs/ROUTELOAD.md), so that the client builds its next
// request while the fold runs; a change that finds a list still waiting
// folds it itself (store.with), so the backlog is one fold per table.
//
// It takes the writer lock, under which the fold ran inside the change
// before. IPv4 needs no RTNL for it: RTNL orders route changes with the
// unmerge, and both publish under the writer lock too, so a Tidy between
// them changes nothing either can see. With nothing due it takes no lock.
func (t *Tables) Tidy() {
	if !t.tidy.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.due {
		if r := t.root(id); r.foldDue() {
			t.publish(id, r.folded())
			t.tidies.Add(1)
		}
	}
	t.due = t.due[:0]
	t.tidy.Store(false)
}

// intern returns the shared attrs for r (Dst ignored), taking a reference.
// The key is built in t.key (mu held) and looked up as string(t.key),
// which allocates nothing: only a new attrs allocates its key.
func (t *Tables) intern(r Route) *attrs {
	r.Dst = netip.Prefix{}
	t.key = appendInternKey(t.key[:0], &r)
	if a, ok := t.pool[string(t.key)]; ok {
		a.refs++
		return a
	}
	k := string(t.key)
	if len(r.Nexthops) > 0 {
		r.Nexthops = append([]Nexthop(nil), r.Nexthops...)
	} else {
		r.Nexthops = nil
	}
	a := &attrs{r: r, key: k, refs: 1}
	t.pool[k] = a
	return a
}

// release drops a reference taken by intern.
func (t *Tables) release(a *attrs) {
	a.refs--
	if a.refs == 0 {
		delete(t.pool, a.key)
	}
}

// Insert adds r (r.Family must be the Tables' family) with the request's
// nlmsg flags (NLM_F_CREATE/EXCL/REPLACE/APPEND), creating its table on
// first use. IPv4: fib_table_insert(); IPv6: fib6_add_rt2node(). The
// caller must hold RTNL for IPv4.
func (t *Tables) Insert(r Route, nlFlags uint16) (Change, *rtnl.Error) {
	var c Change
	err := t.insert(&c, r, nlFlags, false)
	return c, err
}

// InsertTo is Insert appending what it did to *c instead of returning a
// new Change, so that a caller handling one request after another reuses
// c's slices: the Events slice of a fresh Change was one allocation and a
// copy of the route per request of hack/routeload.sh's load. Nothing is
// appended when it fails.
func (t *Tables) InsertTo(c *Change, r Route, nlFlags uint16) *rtnl.Error {
	return t.insert(c, r, nlFlags, false)
}

// InsertMultipathTo is InsertMultipath appending to *c, as InsertTo.
func (t *Tables) InsertMultipathTo(c *Change, r Route, nlFlags uint16) *rtnl.Error {
	return t.insert(c, r, nlFlags, true)
}

// InsertMultipath is Insert for a route that came with RTA_MULTIPATH: IPv6
// adds it through ip6_route_multipath_add() even when it has one hop, so
// one notification follows the adds, starting (for an append) at the
// sibling set's first hop rather than at the new one.
func (t *Tables) InsertMultipath(r Route, nlFlags uint16) (Change, *rtnl.Error) {
	var c Change
	err := t.insert(&c, r, nlFlags, true)
	return c, err
}

// insert is Insert and InsertMultipath, appending to *c.
func (t *Tables) insert(c *Change, r Route, nlFlags uint16, mp bool) *rtnl.Error {
	t.assertRTNL()
	if !t.ofFamily(r.Dst) {
		return rtnl.Errno(syscall.EAFNOSUPPORT)
	}
	r.Dst = r.Dst.Masked()
	r.Src = plainSrc(r.Src)
	r.Family = t.family
	if r.Table == 0 {
		r.Table = tableMain
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.create(r.Table)
	if t.family == afInet {
		return t.insert4(c, r, nlFlags)
	}
	return t.insert6(c, r, nlFlags, mp)
}

// plainSrc canonicalizes an IPv6 source prefix: masked, and "from ::/0"
// (src_len 0) is the plain route, as the kernel keeps it in the node
// itself rather than in a source subtree.
func plainSrc(p netip.Prefix) netip.Prefix {
	if !p.IsValid() || p.Bits() == 0 {
		return netip.Prefix{}
	}
	return p.Masked()
}

// ofFamily reports whether p is a valid prefix of the Tables' family (a
// caller bug otherwise: the validation rejects other families first).
func (t *Tables) ofFamily(p netip.Prefix) bool {
	return p.IsValid() && p.Addr().Is4() == (t.family == afInet) && !p.Addr().Is4In6()
}

// Delete removes the first route m matches (IPv4: fib_table_delete();
// IPv6: ip6_route_del()). The caller must hold RTNL for IPv4.
func (t *Tables) Delete(m Match) (Change, *rtnl.Error) {
	t.assertRTNL()
	if !t.ofFamily(m.Dst) {
		return Change{}, rtnl.Errno(syscall.EAFNOSUPPORT)
	}
	if m.Table == 0 {
		m.Table = tableMain
	}
	m.Src = plainSrc(m.Src)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set.Load().get(m.Table) == nil {
		return Change{}, rtnl.Errorf(syscall.ESRCH, "FIB table does not exist")
	}
	if t.family == afInet {
		return t.delete4(m)
	}
	return t.delete6(m)
}
