package nsmgr

import (
	"reflect"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// TestDispatchRowMatchesMap checks the array index of the dispatch table
// (dispatchRow) against the map it is built from, for every (type,
// family): the same row, or none.
func TestDispatchRowMatchesMap(t *testing.T) {
	fn := func(f any) uintptr {
		if v := reflect.ValueOf(f); !v.IsNil() {
			return v.Pointer()
		}
		return 0
	}
	n := 0
	for typ := 0; typ <= rtnl.RTM_MAX+1; typ++ {
		for fam := 0; fam < 256; fam++ {
			want, ok := dispatch[dispatchKey{uint16(typ), uint8(fam)}]
			got := dispatchRow(uint16(typ), uint8(fam))
			if got != nil && got.doit == nil && got.dumpit == nil && got.flags == 0 {
				got = nil // a gap of the index
			}
			if (got != nil) != ok {
				t.Fatalf("type %d family %d: index has a row %v, map %v", typ, fam, got != nil, ok)
			}
			if !ok {
				continue
			}
			n++
			if got.family != want.family || got.typ != want.typ || got.flags != want.flags ||
				fn(got.doit) != fn(want.doit) || fn(got.dumpit) != fn(want.dumpit) {
				t.Fatalf("type %d family %d: index row %+v, map row %+v", typ, fam, *got, want)
			}
		}
	}
	if n != len(dispatch) {
		t.Fatalf("index holds %d rows, map %d", n, len(dispatch))
	}
}
