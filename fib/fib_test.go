package fib

import (
	"testing"
)

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
