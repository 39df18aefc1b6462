// Package fib holds a namespace's routing tables. For now it keeps the
// table registry per family (which table ids exist), the IPv4 local/main
// merge state and its unmerge (fib_unmerge()), which policy rules need.
// Routes and lookups come with their own issue.
//
// Concurrency: every method is safe for concurrent use.
package fib

import (
	"sync"
	"sync/atomic"
)

// Table ids created with every namespace.
const (
	tableDefault = 253
	tableMain    = 254
	tableLocal   = 255
)

// Tables is the table registry of one family in one namespace.
type Tables struct {
	mu  sync.Mutex
	ids idSet // guarded by mu
	// merged is true while the IPv4 local table is an alias of main (no
	// custom IPv4 rule yet): fib_trie_unmerge() has not run.
	merged    atomic.Bool
	unmerges  atomic.Uint64
	maxTables uint32
}

// NewIPv4 returns the IPv4 tables of a fresh namespace: local and main
// (merged: local is an alias of main) and default.
func NewIPv4() *Tables {
	t := &Tables{maxTables: ^uint32(0)}
	t.ids.add(tableLocal)
	t.ids.add(tableMain)
	t.ids.add(tableDefault)
	t.merged.Store(true)
	return t
}

// NewIPv6 returns the IPv6 tables of a fresh namespace: local and main.
func NewIPv6() *Tables {
	t := &Tables{maxTables: ^uint32(0)}
	t.ids.add(tableLocal)
	t.ids.add(tableMain)
	return t
}

// Exists reports whether table id exists.
func (t *Tables) Exists(id uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids.has(id)
}

// Create creates table id if it does not exist (fib_new_table(),
// fib6_new_table()).
func (t *Tables) Create(id uint32) error {
	t.mu.Lock()
	t.ids.add(id)
	t.mu.Unlock()
	return nil
}

// AllocEmpty creates the lowest table id >= 1 that does not exist yet and
// returns it (fib_empty_table(): ids 1..RT_TABLE_MAX).
func (t *Tables) AllocEmpty() (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := uint32(1); id != 0 && id <= t.maxTables; id++ {
		if !t.ids.has(id) {
			t.ids.add(id)
			return id, true
		}
	}
	return 0, false
}

// Merged reports whether local and main still share one table.
func (t *Tables) Merged() bool { return t.merged.Load() }

// Unmerge splits local from main if they are still merged (fib_unmerge():
// allocate a standalone local table, copy local routes into it, drop them
// from main). It must run under RTNL, which serializes it with route
// changes; it is a no-op after the first time.
func (t *Tables) Unmerge() error {
	if t.merged.CompareAndSwap(true, false) {
		t.unmerges.Add(1)
	}
	return nil
}

// Unmerges returns how many times Unmerge split the tables (0 or 1).
func (t *Tables) Unmerges() uint64 { return t.unmerges.Load() }

// Count returns the number of tables.
func (t *Tables) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids.n
}

// idSet is a set of table ids: a bitmap for the ids below 1<<16 that
// people use (an IPv6 rule creates its table, so the seed's load creates
// 1,024 tables per namespace), a map for the rest.
type idSet struct {
	bits []uint64
	big  map[uint32]struct{}
	n    int
}

const bitmapIDs = 1 << 16

func (s *idSet) has(id uint32) bool {
	if id < bitmapIDs {
		w := int(id / 64)
		return w < len(s.bits) && s.bits[w]&(1<<(id%64)) != 0
	}
	_, ok := s.big[id]
	return ok
}

func (s *idSet) add(id uint32) {
	if s.has(id) {
		return
	}
	s.n++
	if id < bitmapIDs {
		w := int(id / 64)
		if w >= len(s.bits) {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
		}
		s.bits[w] |= 1 << (id % 64)
		return
	}
	if s.big == nil {
		s.big = map[uint32]struct{}{}
	}
	s.big[id] = struct{}{}
}
