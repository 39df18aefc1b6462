// Copyright (c) 2026 Karl Gaissmaier
// SPDX-License-Identifier: MIT

package bart

import (
	"net/netip"

	"github.com/gaissmai/bart/internal/nodes"
)

// BatchOp is one change of a BatchPersist (nlemu patch): Val stored at Pfx,
// or Pfx removed when Del.
type BatchOp[V any] struct {
	Pfx netip.Prefix
	Val V
	Del bool
}

// BatchPersist is a sequence of InsertPersist and DeletePersist calls in
// one (nlemu patch): the receiver isn't modified, and each node on the
// paths of the changes is copied at most once for the whole batch, where
// the calls one by one would copy the nodes the changes share once per
// change. It needs a value type without a Clone method: the values are
// stored as given.
func (t *Table[V]) BatchPersist(ops []BatchOp[V]) *Table[V] {
	pt := &Table[V]{size4: t.size4, size6: t.size6}
	pt.root4, pt.root6 = t.root4, t.root6
	cloned4, cloned6 := false, false
	var owned nodes.Owned[V]
	for _, op := range ops {
		if !op.Pfx.IsValid() {
			continue
		}
		pfx := op.Pfx.Masked()
		is4 := pfx.Addr().Is4()
		n := &pt.root6
		if is4 {
			n = &pt.root4
		}
		if op.Del {
			if _, found := n.Get(pfx); !found {
				continue
			}
		}
		// The roots live in pt: copy each once, then it is owned.
		if is4 && !cloned4 {
			pt.root4 = *t.root4.ClonePath(nil)
			cloned4 = true
		} else if !is4 && !cloned6 {
			pt.root6 = *t.root6.ClonePath(nil)
			cloned6 = true
		}
		if op.Del {
			if n.DeleteOwned(&owned, pfx) {
				pt.sizeUpdate(is4, -1)
			}
		} else if !n.InsertOwned(&owned, pfx, op.Val, 0) {
			pt.sizeUpdate(is4, 1)
		}
	}
	return pt
}
