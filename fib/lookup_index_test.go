package fib

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand"
	"net/netip"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// ixRefLPM is the slow obvious reference: a linear scan of every stored
// prefix for the longest one containing a.
func ixRefLPM(m map[netip.Prefix]leaf, a netip.Addr) (netip.Prefix, leaf, bool) {
	var best netip.Prefix
	var bl leaf
	ok := false
	for p, l := range m {
		if p.Contains(a) && (!ok || p.Bits() > best.Bits()) {
			best, bl, ok = p, l, true
		}
	}
	return best, bl, ok
}

// ixRandPrefix draws prefixes that nest and collide: a few fixed /16 (IPv4)
// or /32 (IPv6) blocks, so buckets fill past bucketMax and covers overlap,
// every length from 0 up, short ones rarely.
func ixRandPrefix(rng *rand.Rand, v6 bool) netip.Prefix {
	if !v6 {
		a := [4]byte{10, byte(rng.Intn(3)), byte(rng.Intn(8)), byte(rng.Intn(256))}
		if rng.Intn(8) == 0 {
			a[0] = byte(rng.Intn(256))
		}
		bits := 17 + rng.Intn(16)
		if rng.Intn(6) == 0 {
			bits = rng.Intn(17)
		}
		return netip.PrefixFrom(netip.AddrFrom4(a), bits).Masked()
	}
	var a [16]byte
	a[0], a[1], a[2], a[3] = 0x20, 0x01, 0x0d, byte(0xb8+rng.Intn(3))
	if rng.Intn(8) == 0 {
		a[1], a[2] = byte(rng.Intn(4)), byte(rng.Intn(256))
	}
	for i := 4; i < 16; i++ {
		a[i] = byte(rng.Intn(4))
	}
	bits := 33 + rng.Intn(96)
	switch rng.Intn(8) {
	case 0:
		bits = rng.Intn(17)
	case 1:
		bits = 17 + rng.Intn(16)
	}
	return netip.PrefixFrom(netip.AddrFrom16(a), bits).Masked()
}

// ixRandAddr draws an address inside a stored prefix half of the time,
// else a random one near the blocks.
func ixRandAddr(rng *rand.Rand, v6 bool, keys []netip.Prefix) netip.Addr {
	if len(keys) > 0 && rng.Intn(2) == 0 {
		p := keys[rng.Intn(len(keys))]
		b := p.Addr().AsSlice()
		for i := p.Bits(); i < len(b)*8; i++ {
			if rng.Intn(2) == 0 {
				b[i/8] |= 0x80 >> (i % 8)
			}
		}
		a, _ := netip.AddrFromSlice(b)
		return a
	}
	return ixRandPrefix(rng, v6).Addr()
}

type ixSnap struct {
	s     *store
	m     map[netip.Prefix]leaf
	addrs []netip.Addr
}

// ixTakeSnap keeps store s with a copy of its reference m and 20 random
// addresses to look up in it later, after more changes: a snapshot must go
// on answering as it did (the index and store are persistent).
func ixTakeSnap(rng *rand.Rand, v6 bool, keys []netip.Prefix, s *store, m map[netip.Prefix]leaf) ixSnap {
	sn := ixSnap{s: s, m: maps.Clone(m)}
	for range 20 {
		sn.addrs = append(sn.addrs, ixRandAddr(rng, v6, keys))
	}
	return sn
}

// ixCheckSnaps looks every snapshot's addresses up again with check.
func ixCheckSnaps(snaps []ixSnap, check func(*store, map[netip.Prefix]leaf, netip.Addr, string)) {
	for i, sn := range snaps {
		for _, a := range sn.addrs {
			check(sn.s, sn.m, a, fmt.Sprintf("snapshot %d", i))
		}
	}
}

// TestIndexMatchesReference checks the read index (tiny, full, slow
// buckets, and the switches between them) against a linear
// longest-prefix scan after every change of random add / replace / delete
// sequences, both families, over more than 100,000 lookups; snapshots taken
// mid-sequence keep their answers to the end (immutability).
func TestIndexMatchesReference(t *testing.T) {
	type limits struct{ tiny, full, drop, bucket int }
	saved := limits{tinyMax, fullMin, fullDrop, bucketMax}
	defer func() { tinyMax, fullMin, fullDrop, bucketMax = saved.tiny, saved.full, saved.drop, saved.bucket }()
	lookups := 0
	for _, lim := range []limits{{4, 12, 6, 4}, {2, 40, 20, 8}, saved} {
		tinyMax, fullMin, fullDrop, bucketMax = lim.tiny, lim.full, lim.drop, lim.bucket
		for _, v6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("v6=%v/limits=%v", v6, lim), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(lim.full) + map[bool]int64{false: 4, true: 6}[v6]))
				var s *store
				m := map[netip.Prefix]leaf{}
				var keys []netip.Prefix
				var snaps []ixSnap
				modes := map[uint8]int{}
				steps := 1500
				if lim == saved {
					steps = 3000
				}
				check := func(s *store, m map[netip.Prefix]leaf, a netip.Addr, what string) {
					lookups++
					wp, wl, wok := ixRefLPM(m, a)
					var gl leaf
					var gp netip.Prefix
					gok := false
					st := ixAsk
					if s != nil && s.ix != nil {
						gp, gl, st = s.ix.lookup(a)
					}
					switch st {
					case ixAsk:
						if s != nil {
							gp, gl, gok = s.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
						}
					case ixHit:
						gok = true
					}
					if gok != wok || gok && (gp != wp || gl.head != wl.head) {
						t.Fatalf("%s: lookup %v: index says %v %v (state %d), reference %v %v", what, a, gok, gp, st, wok, wp)
					}
				}
				for step := 0; step < steps; step++ {
					p := ixRandPrefix(rng, v6)
					old, had := m[p]
					var l leaf
					switch r := rng.Intn(10); {
					case r < 3 && len(keys) > 0:
						// delete an existing prefix
						i := rng.Intn(len(keys))
						p = keys[i]
						old, had = m[p], true
						keys[i] = keys[len(keys)-1]
						keys = keys[:len(keys)-1]
						delete(m, p)
					default:
						l = leaf{head: &attrs{r: Route{Priority: uint32(step)}}}
						if !had {
							keys = append(keys, p)
						}
						m[p] = l
					}
					if !had && l.head == nil {
						continue
					}
					s = s.with(p, old, l)
					ixCheckSlot(t, s, p)
					if s.ix != nil {
						modes[s.ix.mode]++
					} else {
						modes[0]++
					}
					for range 20 {
						check(s, m, ixRandAddr(rng, v6, keys), fmt.Sprintf("step %d", step))
					}
					if step%300 == 0 {
						snaps = append(snaps, ixTakeSnap(rng, v6, keys, s, m))
					}
				}
				ixCheckSnaps(snaps, check)
				if lim != saved && (modes[ixTiny] == 0 || modes[ixFull] == 0 || modes[0] == 0) {
					t.Errorf("modes seen %v: every mode must be exercised", modes)
				}
			})
		}
	}
	if lookups < 100000 {
		t.Errorf("%d lookups, want at least 100,000", lookups)
	}
}

// TestIndexSlowBucketsRefill fills one IPv4 /16 past bucketMax (the bucket
// only counts, bart answers) and empties it again: the bucket is refilled
// from the store once it holds half of bucketMax, and every answer stays
// the reference's.
func TestIndexSlowBucketsRefill(t *testing.T) {
	saved := [3]int{tinyMax, fullMin, bucketMax}
	defer func() { tinyMax, fullMin, bucketMax = saved[0], saved[1], saved[2] }()
	tinyMax, fullMin, bucketMax = 1, 2, 8
	var s *store
	m := map[netip.Prefix]leaf{}
	var ps []netip.Prefix
	for i := range 40 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24)
		l := leaf{head: &attrs{}}
		s = s.with(p, leaf{}, l)
		m[p] = l
		ps = append(ps, p)
	}
	b := s.fx.bucket4(10<<8 | 1)
	if b != slow4 {
		t.Fatalf("bucket of 40 prefixes: %+v, want the slow marker", b)
	}
	for _, p := range ps[:36] {
		s = s.with(p, m[p], leaf{})
		delete(m, p)
	}
	b = s.fx.bucket4(10<<8 | 1)
	if b == nil || b.cnt != 4 {
		t.Fatalf("bucket of 4 prefixes: %+v, want its 4 entries back", b)
	}
	for i := range 256 {
		a := netip.AddrFrom4([4]byte{10, 1, byte(i), 9})
		_, wl, wok := ixRefLPM(m, a)
		_, gl, st := s.ix.lookup(a)
		if (st == ixHit) != wok || gl.head != wl.head {
			t.Fatalf("%v: index %v %v, reference %v", a, st, gl.head, wok)
		}
	}
}

// TestAddrWordsLayout pins the netip.Addr layout addrWords and withWords
// rely on (two words, IPv4 as ::ffff:a.b.c.d) against As16 and Masked, for
// IPv4, IPv6, IPv4-mapped IPv6 and zoned addresses.
func TestAddrWordsLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for i := range 10000 {
		var b [16]byte
		rng.Read(b[:])
		a := netip.AddrFrom16(b)
		switch i % 4 {
		case 0:
			a = netip.AddrFrom4([4]byte(b[:4]))
		case 1:
			b[10], b[11] = 0xff, 0xff
			copy(b[:10], make([]byte, 10))
			a = netip.AddrFrom16(b)
		case 2:
			a = a.WithZone("eth0")
		}
		hi, lo := addrWords(a)
		x := a.As16()
		if wh, wl := binary.BigEndian.Uint64(x[:8]), binary.BigEndian.Uint64(x[8:]); hi != wh || lo != wl {
			t.Fatalf("%v: words %x %x, As16 %x %x", a, hi, lo, wh, wl)
		}
		bits := rng.Intn(a.BitLen() + 1)
		want := netip.PrefixFrom(a, bits).Masked()
		var got netip.Prefix
		if a.Is4() {
			_, l := addr128(a)
			got = withWords(a, 0, lo&^0xffffffff|l&uint64(mask32(bits)), bits)
		} else {
			mh, ml := mask128(bits)
			got = withWords(a, hi&mh, lo&ml, bits)
		}
		if got != want {
			t.Fatalf("%v/%d: withWords %v, Masked %v", a, bits, got, want)
		}
	}
}

// TestLookupAllocatesNothing is issue 9's first acceptance line as a test:
// Lookup and LookupBatch (hints on and off) allocate nothing, both
// families, on the fast path (a full read index) and the rule walk.
func TestLookupAllocatesNothing(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		for _, rules := range []bool{false, true} {
			f, keys := benchFIB(t, fam, 2000, rules)
			res := make([]Result, 64)
			errs := make([]syscall.Errno, 64)
			i := 0
			cases := map[string]func(){
				"Lookup": func() {
					f.Lookup(keys[i%len(keys)])
					i++
				},
				"LookupBatch":        func() { f.LookupBatch(keys[:64], res, errs) },
				"LookupBatchNoHints": func() { f.LookupBatchNoHints(keys[:64], res, errs) },
			}
			for name, fn := range cases {
				if n := testing.AllocsPerRun(500, fn); n != 0 {
					t.Errorf("family %d rules %v: %s allocates %.1f times per call", fam, rules, name, n)
				}
			}
		}
	}
}

// BenchmarkIndexUpkeep is what the read index adds to a route change: one
// insert and one delete in an IPv4 main table of 40,000 /24s (fillFast),
// with the index (index) and with every table left on bart (bart-only,
// fullMin out of reach), side by side; and the retained heap per route of
// the two.
func BenchmarkIndexUpkeep(b *testing.B) {
	saved := [2]int{fullMin, tinyMax}
	defer func() { fullMin, tinyMax = saved[0], saved[1] }()
	for _, c := range []struct {
		name      string
		min, tiny int
	}{{"index", saved[0], saved[1]}, {"bart-only", 1 << 30, -1}} {
		b.Run(c.name, func(b *testing.B) {
			fullMin, tinyMax = c.min, c.tiny
			const n = 40000
			before := heapInUse()
			tb := NewIPv4()
			fillFast(tb, n)
			perRoute := float64(heapInUse()-before) / n
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := tb.Insert(route4(n+i), fAdd); err != nil {
					b.Fatal(err)
				}
				m := Match{Family: afInet, Table: tableMain, Dst: route4(i).Dst, Scope: rtnl.RT_SCOPE_NOWHERE}
				if _, err := tb.Delete(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(perRoute, "B/route")
		})
	}
}

// TestParrUpdateCopiesOnlyTouchedChunks: an update of one slot or of a
// span copies the chunks it touches and shares every other one with the
// previous version; the previous version reads as before.
func TestParrUpdateCopiesOnlyTouchedChunks(t *testing.T) {
	one := func(v int) func(*int) *int { return func(*int) *int { return &v } }
	var a parr[int]
	for _, i := range []uint32{0, 63, 64, 4095, 4096, 65535} {
		a = a.update(i, 1, one(int(i)))
	}
	b := a.update(100, 200, one(-1)) // slots 100..299: chunks 1..4 of group 0
	for i := uint32(0); i < 1<<16; i++ {
		if i >= 100 && i < 300 {
			if got := b.get(i); got == nil || *got != -1 {
				t.Fatalf("slot %d after the span: %v", i, got)
			}
		} else if b.get(i) != a.get(i) {
			t.Fatalf("slot %d outside the span changed", i)
		}
	}
	for ci := range 64 {
		shared := a.g[0][ci] == b.g[0][ci]
		if touched := ci >= 1 && ci <= 4; shared == touched {
			t.Errorf("group 0 chunk %d: shared %v, touched %v", ci, shared, touched)
		}
	}
	for gi := 1; gi < 16; gi++ {
		if a.g[gi] != b.g[gi] {
			t.Errorf("group %d copied by an update of group 0", gi)
		}
	}
	if got := a.get(150); got != nil {
		t.Errorf("old version's slot 150 = %v, want nil", *got)
	}
}

// ixCheckSlot checks that the bucket slot of p (a prefix longer than the
// level) in a full index holds a copy of its bucket's first entry
// (slot4, slot6): the lookup reads the copy, the changes write the bucket.
func ixCheckSlot(t *testing.T, s *store, p netip.Prefix) {
	t.Helper()
	x := s.fx
	if x != s.ix.fullArrays() {
		t.Fatalf("%v: the store's arrays %p are not its index's %p", p, x, s.ix.fullArrays())
	}
	if x == nil {
		return
	}
	hi, lo := addr128(p.Masked().Addr())
	switch {
	case !x.v6 && p.Bits() > 16:
		if sl := x.bkt4.get(uint32(lo) >> 16); sl != nil && (sl.b == nil && sl.first != ent4{} || sl.b != nil && sl.first != *sl.b) {
			t.Fatalf("%v: slot %+v, bucket %+v", p, sl.first, sl.b)
		}
	case x.v6 && p.Bits() > 32:
		nd := x.next6.get(uint32(hi >> 48))
		if nd == nil {
			t.Fatalf("%v: no second level", p)
		}
		if sl := nd.bkt.get(uint32(hi>>32) & 0xffff); sl != nil && (sl.b == nil && sl.first != ent6{} || sl.b != nil && sl.first != *sl.b) {
			t.Fatalf("%v: slot %+v, bucket %+v", p, sl.first, sl.b)
		}
	}
}

// TestVarrSetCopiesOnlyTouchedChunk: setting one slot of a value array
// copies its group and chunk and shares every other one with the previous
// version, which reads as before.
func TestVarrSetCopiesOnlyTouchedChunk(t *testing.T) {
	var a varr[int]
	for _, i := range []uint32{0, 15, 16, 1023, 1024, 65535} {
		a = a.set(i, int(i)+1)
	}
	b := a.set(17, -1) // group 0, chunk 1
	for i := uint32(0); i < 1<<16; i++ {
		ga, gb := a.get(i), b.get(i)
		want := 0
		if ga != nil {
			want = *ga
		}
		if i == 17 {
			want = -1
		}
		got := 0
		if gb != nil {
			got = *gb
		}
		if got != want {
			t.Fatalf("slot %d = %d, want %d", i, got, want)
		}
	}
	if got := a.get(17); got == nil || *got != 0 {
		t.Errorf("old version's slot 17 = %v, want 0 (its chunk holds slot 16)", got)
	}
	for ci := range 64 {
		if shared := a.g[0][ci] == b.g[0][ci]; shared == (ci == 1) {
			t.Errorf("group 0 chunk %d: shared %v", ci, shared)
		}
	}
	for gi := 1; gi < 64; gi++ {
		if a.g[gi] != b.g[gi] {
			t.Errorf("group %d copied by a change of group 0", gi)
		}
	}
	if a.get(2048) != nil || b.get(2048) != nil {
		t.Errorf("a slot of a group never set reads as a slot")
	}
}

// TestIndexFew6MatchesNext6: the full IPv6 index's short list of
// second-level nodes (fullIndex.few6) gives, for every /16, the node next6
// gives, and the lookups the linear reference gives, after every change of
// random sequences over 1 to 20 distinct /16s: the list while they are at
// most few6Max, next6 alone once there were more.
func TestIndexFew6MatchesNext6(t *testing.T) {
	saved := [3]int{tinyMax, fullMin, fullDrop}
	defer func() { tinyMax, fullMin, fullDrop = saved[0], saved[1], saved[2] }()
	tinyMax, fullMin, fullDrop = 1, 2, 1
	rng := rand.New(rand.NewSource(16))
	for _, blocks := range []int{1, 3, few6Max, few6Max + 1, 20} {
		var s *store
		m := map[netip.Prefix]leaf{}
		var keys []netip.Prefix
		used := map[uint32]bool{}
		for step := range 400 {
			var a [16]byte
			v0 := uint32(0x2000 + rng.Intn(blocks))
			a[0], a[1], a[2], a[3], a[4] = byte(v0>>8), byte(v0), byte(rng.Intn(4)), byte(rng.Intn(4)), byte(rng.Intn(4))
			p := netip.PrefixFrom(netip.AddrFrom16(a), 8+rng.Intn(57)).Masked()
			old, had := m[p]
			var l leaf
			if had && rng.Intn(3) == 0 {
				delete(m, p)
			} else {
				l = leaf{head: &attrs{r: Route{Priority: uint32(step)}}}
				if !had {
					keys = append(keys, p)
				}
				m[p] = l
			}
			if !had && l.head == nil {
				continue
			}
			if p.Bits() > 16 {
				used[v0] = true
			}
			s = s.with(p, old, l)
			x := s.fx
			if x == nil {
				continue
			}
			if len(used) <= few6Max && int(x.nfew) != len(used) || len(used) > few6Max && int(x.nfew) <= few6Max {
				t.Fatalf("%d blocks, step %d: %d /16s with second levels, list length %d", blocks, step, len(used), x.nfew)
			}
			for v := uint32(0x2000); v < 0x2000+uint32(blocks)+1; v++ {
				if got, want := x.node6Of(v), x.next6.get(v); got != want {
					t.Fatalf("%d blocks, step %d: /16 %#x: list node %p, next6 node %p", blocks, step, v, got, want)
				}
			}
			for range 10 {
				addr := ixRandAddr(rng, true, keys)
				wp, wl, wok := ixRefLPM(m, addr)
				gp, gl, st := s.ix.lookup(addr)
				if st == ixAsk {
					gp, gl, _ = s.LookupPrefixLPM(netip.PrefixFrom(addr, 128))
					st = ixHit
					if _, _, ok := s.LookupPrefixLPM(netip.PrefixFrom(addr, 128)); !ok {
						st = ixNone
					}
				}
				if (st == ixHit) != wok || wok && (gp != wp || gl.head != wl.head) {
					t.Fatalf("%d blocks, step %d: %v: index %v %v, reference %v %v", blocks, step, addr, st, gp, wok, wp)
				}
			}
		}
	}
}
