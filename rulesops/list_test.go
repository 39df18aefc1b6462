package rulesops

import (
	"math/rand"
	"testing"
)

// refList is the obvious reference: the kernel's linked list as a slice,
// with fib_newrule()'s "after the last rule whose pref <= new pref".
type refList []Rule

func (r refList) insert(x Rule) refList {
	i := 0
	for i < len(r) && r[i].Pref <= x.Pref {
		i++
	}
	out := append(refList{}, r[:i]...)
	out = append(out, x)
	return append(out, r[i:]...)
}

func (r refList) firstWithPref(p uint32) int {
	for i := range r {
		if r[i].Pref == p {
			return i
		}
	}
	return -1
}

// TestListMatchesReference drives the chunked persistent list and the
// reference with the same random inserts and removals and requires the same
// order, lookups, and that earlier snapshots never change.
func TestListMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 24; round++ {
		l, ref := emptyList, refList{}
		if round%4 == 3 {
			base := []Rule{{Pref: 0, Table: 255}, {Pref: 40, Table: 7}, {Pref: 32766, Table: 254}, {Pref: 32767, Table: 253}}
			l, ref = newList(base), refList(base)
		}
		if round%4 == 1 {
			base := []Rule{{Pref: 0, Table: 255}, {Pref: 32766, Table: 254}, {Pref: 32767, Table: 253}}
			l, ref = newList(base), refList(base)
		}
		type snap struct {
			l   *list
			ref refList
		}
		var snaps []snap
		id := uint32(0)
		for op := 0; op < 3000; op++ {
			if len(ref) > 0 && rng.Intn(4) == 0 {
				i := rng.Intn(len(ref))
				l = l.remove(l.locate(i))
				ref = append(append(refList{}, ref[:i]...), ref[i+1:]...)
			} else {
				id++
				r := Rule{Pref: uint32(rng.Intn(200)), Table: id}
				switch round % 4 {
				case 3: // automatic priorities until they stick at 0
					r.Pref = defaultPref(l)
				case 1: // automatic priorities: each just after the pref-0 rules
					r.Pref = uint32(1 + rng.Intn(3))
					if len(ref) > 1 && ref[1].Pref > 1 {
						r.Pref = ref[1].Pref - 1
					}
				case 2: // ascending explicit priorities, appended at the end
					r.Pref = uint32(op)
				}
				l = l.insert(r, nil)
				ref = ref.insert(r)
			}
			if op%500 == 0 {
				snaps = append(snaps, snap{l, ref})
			}
			if l.Len() != len(ref) {
				t.Fatalf("len %d, want %d", l.Len(), len(ref))
			}
			p := uint32(rng.Intn(200))
			if got, want := l.hasPref(p), ref.firstWithPref(p) >= 0; got != want {
				t.Fatalf("hasPref(%d) = %v, want %v", p, got, want)
			}
			lo := ref.firstWithPref(p)
			if q := l.bound(p, false); lo >= 0 && *l.rule(q) != ref[lo] {
				t.Fatalf("bound(%d) is not the first rule of that priority", p)
			}
		}
		for _, s := range append(snaps, snap{l, ref}) {
			i := 0
			s.l.All(func(k int, r *Rule) bool {
				if k != i || *r != s.ref[i] {
					t.Fatalf("rule %d = %+v, want %+v", k, *r, s.ref[i])
				}
				i++
				return true
			})
			if i != len(s.ref) {
				t.Fatalf("walked %d rules, want %d", i, len(s.ref))
			}
			for k := range s.ref {
				if *s.l.At(k) != s.ref[k] {
					t.Fatalf("At(%d) mismatch", k)
				}
			}
		}
	}
}
