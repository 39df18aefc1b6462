package fib

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// checkInvariants verifies what every published state must satisfy: each
// table walks in strictly increasing dump order, each prefix's entries are
// in the kernel's list order, the route count matches, and the intern
// pool holds exactly the referenced attribute blocks with their counts.
func checkInvariants(t *testing.T, tb *Tables) {
	t.Helper()
	refs := map[*attrs]int{}
	n := 0
	s := tb.Snapshot()
	for v := range s.Tables() {
		if s.Merged() && v.ID() == tableLocal {
			continue // walked through main's storage below
		}
		if s.Merged() && v.ID() == tableMain {
			v, _ = s.MergedMain()
		}
		var last netip.Prefix
		for e := range v.WalkEntries() {
			if last.IsValid() && !dumpLess(last, e.Prefix()) {
				t.Fatalf("table %d: %v before %v", v.ID(), last, e.Prefix())
			}
			last = e.Prefix()
			for i := 0; i < e.Len(); i++ {
				a := e.l.at(e.lo + i)
				refs[a]++
				n++
				if i == 0 {
					continue
				}
				p, q := &e.l.at(e.lo+i-1).r, &a.r
				if tb.family == afInet {
					if p.Table < q.Table || p.Table == q.Table && (p.Tos < q.Tos || p.Tos == q.Tos && p.Priority > q.Priority) {
						t.Fatalf("%v: entry %d out of order", e.Prefix(), i)
					}
				} else if p.Src == q.Src && p.Priority > q.Priority {
					t.Fatalf("%v: entry %d metric out of order", e.Prefix(), i)
				}
			}
		}
	}
	if n != tb.Routes() {
		t.Fatalf("walked %d entries, Routes() = %d", n, tb.Routes())
	}
	if len(refs) != len(tb.pool) {
		t.Fatalf("%d distinct attrs referenced, pool has %d", len(refs), len(tb.pool))
	}
	for a, c := range refs {
		if tb.pool[a.key] != a || a.refs != c {
			t.Fatalf("attrs %p: pooled=%v refs=%d, referenced %d", a, tb.pool[a.key] == a, a.refs, c)
		}
	}
}

// FuzzInsertDelete drives both families with byte-coded inserts (every
// flag combination), deletes, device events and the unmerge, checking
// the invariants after each step.
func FuzzInsertDelete(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0x80, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v6 := range []bool{false, true} {
			tb := NewIPv4()
			if v6 {
				tb = NewIPv6()
			}
			for i := 0; i+3 < len(data) && i < 400; i += 4 {
				op, a, b, c := data[i], data[i+1], data[i+2], data[i+3]
				var dst string
				if v6 {
					dst = fmt.Sprintf("2001:db8:%x::/%d", a&3, []int{32, 48, 64}[int(b)%3])
				} else {
					dst = fmt.Sprintf("10.%d.0.0/%d", a&3, []int{8, 16, 24}[int(b)%3])
				}
				desc := fmt.Sprintf("%s metric %d table %d", dst, c&3, 100+int(c>>6)%2)
				if c&4 != 0 {
					desc += fmt.Sprintf(" via %s dev %d", map[bool]string{false: "10.0.0.", true: "fe80::"}[v6]+fmt.Sprint(1+b>>5), 2+int(c>>3)&1)
				} else {
					desc += fmt.Sprintf(" dev %d", 2+int(c>>3)&1)
				}
				if !v6 && b&0x10 != 0 {
					desc += " tos 0x08"
				}
				switch op % 8 {
				case 0, 1, 2, 3:
					flags := uint16(op>>3&0xf) << 8 // NLM_F_REPLACE, EXCL, CREATE, APPEND
					tb.Insert(rt(desc), flags)
				case 4, 5:
					r := rt(desc)
					m := Match{Family: r.Family, Table: r.Table, Dst: r.Dst, Tos: r.Tos, Scope: rtnl.RT_SCOPE_NOWHERE}
					if op&8 != 0 {
						m.Priority = r.Priority
					}
					if op&16 != 0 {
						m.Gateway = r.Nexthops[0].Gateway
					}
					tb.Delete(m)
				case 6:
					tb.SyncDownDev(2+int32(a&1), DevEvent(1+b%3))
				case 7:
					if c&1 == 0 {
						tb.Unmerge()
					} else {
						tb.SyncUpDev(2+int32(a&1), rtnl.RTNH_F_DEAD|rtnl.RTNH_F_LINKDOWN)
					}
				}
				checkInvariants(t, tb)
			}
		}
	})
}
