// Copyright (c) 2026 Karl Gaissmaier
// SPDX-License-Identifier: MIT

// nlemu patch: a batch of persistent changes that copies each node at most
// once. InsertOwned and DeleteOwned are InsertPersist and DeletePersist
// (generated from the same template) except that a node already in owned,
// a copy this batch made and nobody else can see yet, is changed in place
// instead of being copied again.

package nodes

import (
	"net/netip"

	"github.com/gaissmai/bart/internal/art"
)

// Owned is the set of nodes a batch has copied (nlemu patch). A batch's
// changes mostly share their paths (hack/routeload.sh's 32 consecutive
// /24s or /64s per fold: about 8 nodes in all), so the set is a short list
// first, scanned, and a map only beyond it: the map a batch used to make,
// and its hashing at every step of every path, were a fifth of the fold's
// time (BenchmarkRouteLoad, fib's BenchmarkFoldCadence).
type Owned[V any] struct {
	few  [ownedFew]*BartNode[V]
	n    int
	many map[*BartNode[V]]struct{}
}

// ownedFew is the length of Owned's list.
const ownedFew = 24

// Has reports whether the batch has copied n.
func (o *Owned[V]) Has(n *BartNode[V]) bool {
	for i := o.n - 1; i >= 0; i-- { // newest first: the path just copied
		if o.few[i] == n {
			return true
		}
	}
	if o.many != nil {
		_, ok := o.many[n]
		return ok
	}
	return false
}

// Add records n as copied by the batch.
func (o *Owned[V]) Add(n *BartNode[V]) {
	if o.n < ownedFew {
		o.few[o.n] = n
		o.n++
		return
	}
	if o.many == nil {
		o.many = make(map[*BartNode[V]]struct{}, 2*ownedFew)
	}
	o.many[n] = struct{}{}
}

// InsertOwned is InsertPersist for a batch: nodes in owned are written in
// place, any other node on the path is copied (ClonePath) and added to
// owned. The receiver must be owned. For values without a Clone method.
func (n *BartNode[V]) InsertOwned(owned *Owned[V], pfx netip.Prefix, val V, depth int) (exists bool) {
	ip := pfx.Addr() // the pfx must be in canonical form
	pfxLen := pfx.Bits()
	octets := ip.AsSlice()
	strideCount, modBits := DivMod8(pfxLen)

	// Traverse the prefix's octets. Each depth corresponds to an 8-bit stride.
	// We descend through the trie until we either reach the final stride (depth == strideCount)
	// or find an empty child slot where we can path-compress the remaining strides.
	for ; depth < len(octets); depth++ {
		octet := octets[depth]

		// The current depth matches the prefix's stride count, meaning this is the final
		// node for this prefix. We insert it directly into this node's prefix table.
		if depth == strideCount {
			return n.InsertPrefix(art.PfxToIdx(octet, modBits), val)
		}

		// No child exists at this octet path. Instead of creating intermediate nodes
		// for the remaining strides, we path-compress the rest of the prefix into a single child slot.
		if !n.Children.Test(octet) {
			// If the prefix is perfectly aligned with the next stride boundary (e.g., /16 at depth 1),
			// it acts as a default route for everything below it. We store it as a FringeNode.
			// Otherwise, it has trailing bits or crosses boundaries, so we store it as a LeafNode.
			if IsFringe(depth, pfxLen) {
				return n.InsertChild(octet, NewFringeNode(val))
			}
			return n.InsertChild(octet, NewLeafNode(pfx, val))
		}

		// A child already exists at this octet path. Retrieve it to either continue
		// our descent along the strides or resolve a structural collision with a compressed node.
		kid := n.MustGetChild(octet)

		switch kid := kid.(type) {
		case *BartNode[V]:
			// Standard intermediate node: Clone the traversed path to maintain persistence (COW).
			// We clone the child node before modifying it, then replace the current child slot.
			if !owned.Has(kid) {
				kid = kid.ClonePath(nil)
				owned.Add(kid)
				n.InsertChild(octet, kid)
			}
			n = kid

		case *LeafNode[V]:
			// Collision with an existing path-compressed LeafNode.
			// If it's the exact same prefix, simply update the value.
			if kid.Prefix == pfx {
				// nlemu patch: the leaf may be shared with older versions
				// (ClonePath copies children shallowly): replace, never write.
				n.InsertChild(octet, NewLeafNode(pfx, val))
				return true
			}

			// Collision resolution: the paths diverge.
			// 1. Create a new intermediate node.
			// 2. Push the existing leaf down into this new node.
			// 3. Replace the current child slot with the new node.
			// 4. Descend into the new node to continue inserting 'pfx'.
			newNode := new(BartNode[V])
			newNode.Insert(kid.Prefix, kid.Value, depth+1)

			n.InsertChild(octet, newNode)
			n = newNode

		case *FringeNode[V]:
			// Collision with an existing path-compressed FringeNode.
			// If the incoming prefix is also a fringe at this depth, update the value.
			if IsFringe(depth, pfxLen) {
				// nlemu patch: replace the shared fringe, never write it.
				n.InsertChild(octet, NewFringeNode(val))
				return true
			}

			// Collision resolution:
			// The existing FringeNode acts as a catch-all (default route) for this sub-trie.
			// To allow the incoming prefix to branch further, we expand the FringeNode
			// into a full intermediate node and place its value at the default route index (1).
			newNode := new(BartNode[V])
			newNode.InsertPrefix(1, kid.Value)

			n.InsertChild(octet, newNode)
			n = newNode

		default:
			panic("logic error, wrong node type")
		}
	}
	panic("unreachable")
}

// DeleteOwned is DeletePersist for a batch, with InsertOwned's ownership.
func (n *BartNode[V]) DeleteOwned(owned *Owned[V], pfx netip.Prefix) (exists bool) {
	ip := pfx.Addr() // pfx must be in canonical (masked) form
	pfxLen := pfx.Bits()
	is4 := ip.Is4()
	octets := ip.AsSlice()
	strideCount, modBits := DivMod8(pfxLen)

	// Record ancestor nodes as we descend; PurgeAndCompress uses this stack to
	// walk back up and clean up empty or re-compressible nodes after deletion.
	// Since this is a COW operation, we store the cloned nodes here.
	stack := [MaxTreeDepth]*BartNode[V]{}

	for depth, octet := range octets {
		depth &= DepthMask // BCE hint; keep DeletePersist on the fast path
		stack[depth] = n   // record current node before descending

		// At the stride boundary, the prefix is stored directly in this node's
		// prefix table.
		if depth == strideCount {
			if exists = n.DeletePrefix(art.PfxToIdx(octet, modBits)); !exists {
				return false
			}

			// prune now-empty nodes and re-compress the path upwards
			n.PurgeAndCompress(stack[:depth], octets, is4)
			return true
		}

		// no child node exists at this octet; the prefix is not in the trie
		if !n.Children.Test(octet) {
			return false
		}

		// A child node exists at this octet path, retrieve it to either continue
		// our descent or perform a persistent delete on a compressed node.
		kid := n.MustGetChild(octet)

		switch kid := kid.(type) {
		case *BartNode[V]:
			// Standard intermediate node: Clone the traversed path to maintain
			// persistence (COW). We clone the child node before modifying it,
			// then replace the current child slot.
			if !owned.Has(kid) {
				kid = kid.ClonePath(nil)
				owned.Add(kid)
				n.InsertChild(octet, kid)
			}
			n = kid
			continue

		case *FringeNode[V]:
			// A FringeNode holds a single stride-aligned prefix (/8, /16, ...).
			// If pfx does not qualify as a fringe at this depth, it cannot be here.
			if !IsFringe(depth, pfxLen) {
				return false
			}

			n.DeleteChild(octet)

			// prune now-empty nodes and re-compress the path upwards
			n.PurgeAndCompress(stack[:depth], octets, is4)
			return true

		case *LeafNode[V]:
			// A LeafNode holds exactly one path-compressed prefix.
			// Compare using the canonical (masked) form for an exact match.
			if kid.Prefix != pfx {
				return false
			}

			n.DeleteChild(octet)

			// prune now-empty nodes and re-compress the path upwards
			n.PurgeAndCompress(stack[:depth], octets, is4)
			return true

		default:
			panic("logic error, wrong node type")
		}
	}

	panic("unreachable")
}
