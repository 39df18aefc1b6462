package rtnl

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refAppendRoute is the obvious encoder AppendRoute is checked against:
// every field appended byte by byte, each attribute padded to 4, for the
// attributes of a route-get reply and a dump line without nests (nests,
// via and encap go through the same helpers in both).
func refAppendRoute(typ, flags uint16, seq, pid uint32, r *RouteMsg) []byte {
	u16 := func(b []byte, v uint16) []byte { return ne.AppendUint16(b, v) }
	u32 := func(b []byte, v uint32) []byte { return ne.AppendUint32(b, v) }
	attr := func(b []byte, t uint16, p []byte) []byte {
		b = append(u16(u16(b, uint16(4+len(p))), t), p...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	addr := func(a netip.Addr) []byte {
		if a.Is4() {
			b := a.As4()
			return b[:]
		}
		b := a.As16()
		return b[:]
	}
	b := u32(nil, 0)
	b = u32(u16(u16(b, typ), flags), seq)
	b = u32(b, pid)
	b = append(b, r.Family, r.DstLen, r.SrcLen, r.Tos, r.Table, r.Protocol, r.Scope, r.Type)
	b = u32(b, r.Flags)
	order := route4FIBOrder[:]
	if r.Family == AF_INET6 {
		order = route6Order[:]
	} else if r.Flags&RTM_F_CLONED != 0 {
		order = route4CacheOrder[:]
	}
	for _, t := range order {
		if t == rtaSelSrc {
			if r.SelSrc.IsValid() {
				b = attr(b, RTA_PREFSRC, addr(r.SelSrc))
			}
			continue
		}
		if !r.Has(int(t)) {
			continue
		}
		tt := uint16(t)
		switch t {
		case RTA_DST:
			b = attr(b, tt, addr(r.Dst))
		case RTA_SRC:
			b = attr(b, tt, addr(r.Src))
		case RTA_GATEWAY:
			b = attr(b, tt, addr(r.Gateway))
		case RTA_PREFSRC:
			b = attr(b, tt, addr(r.PrefSrc))
		case RTA_IIF, RTA_OIF, RTA_PRIORITY, RTA_TABLE, RTA_MARK, RTA_UID, RTA_FLOW, RTA_NH_ID:
			v := map[uint8]uint32{RTA_IIF: r.IIF, RTA_OIF: r.OIF, RTA_PRIORITY: r.Priority, RTA_TABLE: r.Table32,
				RTA_MARK: r.Mark, RTA_UID: r.UID, RTA_FLOW: r.Flow, RTA_NH_ID: r.NHID}[t]
			b = attr(b, tt, u32(nil, v))
		case RTA_PREF:
			b = attr(b, tt, []byte{r.Pref})
		case RTA_CACHEINFO:
			c := r.CacheInfo
			var p []byte
			for _, v := range []uint32{c.ClntRef, c.LastUse, uint32(c.Expires), c.Error, c.Used, c.ID, c.TS, c.TSAge} {
				p = u32(p, v)
			}
			b = attr(b, tt, p)
		}
	}
	ne.PutUint32(b, uint32(len(b)))
	return b
}

// randRouteMsg is a reply of a random family and layout with a random set
// of refAppendRoute's attributes.
func randRouteMsg(rng *rand.Rand) *RouteMsg {
	r := &RouteMsg{Family: AF_INET, DstLen: uint8(rng.IntN(33)), SrcLen: uint8(rng.IntN(33)), Tos: uint8(rng.Uint32()),
		Table: uint8(rng.Uint32()), Protocol: uint8(rng.Uint32()), Scope: uint8(rng.Uint32()), Type: uint8(rng.Uint32()), Flags: rng.Uint32()}
	a := func() netip.Addr {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		switch {
		case rng.IntN(8) == 0:
			return netip.Addr{} // 16 zero bytes, as As16 gives
		case r.Family == AF_INET6:
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	if rng.IntN(2) == 0 {
		r.Family = AF_INET6
	}
	r.Dst, r.Src, r.Gateway, r.PrefSrc = a(), a(), a(), a()
	if rng.IntN(2) == 0 {
		r.SelSrc = a()
	}
	r.IIF, r.OIF, r.Priority, r.Table32, r.Mark = rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()
	r.UID, r.Flow, r.NHID, r.Pref = rng.Uint32(), rng.Uint32(), rng.Uint32(), uint8(rng.Uint32())
	r.CacheInfo = CacheInfo{rng.Uint32(), rng.Uint32(), int32(rng.Uint32()), rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()}
	for _, t := range []int{RTA_DST, RTA_SRC, RTA_GATEWAY, RTA_PREFSRC, RTA_IIF, RTA_OIF, RTA_PRIORITY, RTA_TABLE,
		RTA_MARK, RTA_UID, RTA_FLOW, RTA_NH_ID, RTA_PREF, RTA_CACHEINFO} {
		if rng.IntN(3) != 0 {
			r.Set(t)
		}
	}
	return r
}

// TestAppendRouteMatchesReference checks AppendRoute against the obvious
// encoder on random messages, appended to nothing, to a prefix, and into a
// reused buffer full of stale bytes (which every byte written must
// overwrite, padding included).
func TestAppendRouteMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	stale := make([]byte, 0, 512)
	for i := 0; i < 5000; i++ {
		r := randRouteMsg(rng)
		seq, pid := rng.Uint32(), rng.Uint32()
		want := refAppendRoute(RTM_NEWROUTE, NLM_F_MULTI, seq, pid, r)
		check := func(how string, want, got []byte) {
			t.Helper()
			if !bytes.Equal(want, got) {
				t.Fatalf("message %d (%+v) %s: AppendRoute differs (-reference +AppendRoute):\n%s", i, r, how, cmp.Diff(want, got))
			}
		}
		check("alone", want, AppendRoute(nil, RTM_NEWROUTE, NLM_F_MULTI, seq, pid, r))
		prefix := []byte{1, 2, 3, 4}
		check("after a prefix", append(prefix, want...), AppendRoute(prefix, RTM_NEWROUTE, NLM_F_MULTI, seq, pid, r))
		stale = stale[:cap(stale)]
		for j := range stale {
			stale[j] = 0xa5
		}
		check("into a stale buffer", want, AppendRoute(stale[:0], RTM_NEWROUTE, NLM_F_MULTI, seq, pid, r))
	}
}
