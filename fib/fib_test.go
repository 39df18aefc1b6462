package fib

import (
	"math/rand"
	"testing"
)

// TestIDSetMatchesMap checks the bitmap+map table-id set against a map.
func TestIDSetMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s idSet
	ref := map[uint32]bool{}
	for i := 0; i < 20000; i++ {
		id := uint32(rng.Intn(1000))
		if i%3 == 0 {
			id = rng.Uint32()
		}
		if i%2 == 0 {
			s.add(id)
			ref[id] = true
		}
		if s.has(id) != ref[id] {
			t.Fatalf("has(%d) = %v", id, s.has(id))
		}
	}
	if s.n != len(ref) {
		t.Fatalf("n = %d, want %d", s.n, len(ref))
	}
}

// TestAllocEmptyLowestFree mirrors fib_empty_table(): ids 1, 2, 3 … skipping
// existing tables.
func TestAllocEmptyLowestFree(t *testing.T) {
	tb := NewIPv4()
	tb.Create(2)
	for _, want := range []uint32{1, 3, 4} {
		if got, ok := tb.AllocEmpty(); !ok || got != want {
			t.Fatalf("AllocEmpty = %d, want %d", got, want)
		}
	}
}

// TestUnmergeOnce: local and main start merged and split exactly once.
func TestUnmergeOnce(t *testing.T) {
	tb := NewIPv4()
	if !tb.Merged() {
		t.Fatal("fresh IPv4 tables not merged")
	}
	tb.Unmerge()
	tb.Unmerge()
	if tb.Merged() || tb.Unmerges() != 1 {
		t.Fatalf("merged=%v unmerges=%d", tb.Merged(), tb.Unmerges())
	}
}
