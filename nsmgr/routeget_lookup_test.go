package nsmgr

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// rlAnswer is what a fibmatch route get and FIB.Lookup agree on.
type rlAnswer struct {
	Err      syscall.Errno
	Table    uint32
	Dst      netip.Prefix
	Type     uint8
	Priority uint32
}

// rlGet sends `ip route get DST [mark M] fibmatch` (RTM_F_FIB_MATCH, and
// RTM_F_LOOKUP_TABLE for IPv4 as iproute2 sets it) and decodes the reply.
func rlGet(t *testing.T, ns *Namespace, dst netip.Addr, mark uint32) rlAnswer {
	t.Helper()
	fam := uint8(rtnl.AF_INET)
	flags := uint32(rtnl.RTM_F_FIB_MATCH | rtnl.RTM_F_LOOKUP_TABLE)
	if dst.Is6() {
		fam, flags = rtnl.AF_INET6, rtnl.RTM_F_FIB_MATCH
	}
	body := []byte{fam, uint8(dst.BitLen()), 0, 0, 0, 0, 0, 0}
	body = binary.NativeEndian.AppendUint32(body, flags)
	body = append(body, nla(rtnl.RTA_DST, dst.AsSlice())...)
	if mark != 0 {
		body = append(body, nla(rtnl.RTA_MARK, binary.NativeEndian.AppendUint32(nil, mark))...)
	}
	msgs := rtnl.SplitDatagram(rtnl.AppendMessage(nil, rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, 9, 4242, body))
	rec := &recorder{}
	if _, err := ns.Do(&Request{Msg: &msgs[0], PortID: 4242, Strict: true, Self: rec}); err != nil {
		return rlAnswer{Err: err.Errno}
	}
	if len(rec.got) != 1 {
		t.Fatalf("%d replies", len(rec.got))
	}
	reply := rtnl.SplitDatagram(rec.got[0])
	m, err := rtnl.DecodeRoute(&reply[0])
	if err != nil {
		t.Fatalf("reply %x: %v", rec.got[0], err)
	}
	a := rlAnswer{Table: uint32(m.Table), Type: m.Type, Priority: m.Priority}
	if m.Has(rtnl.RTA_TABLE) {
		a.Table = m.Table32
	}
	p := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	if fam == rtnl.AF_INET6 {
		p = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	if m.Has(rtnl.RTA_DST) {
		p = netip.PrefixFrom(m.Dst, int(m.DstLen))
	}
	a.Dst = p
	return a
}

// rlLookup is the flow routeGet4 / routeGet6 hand to FIB.Lookup for such
// a request (requestKey, the output path's iif lo and unspecified source),
// looked up directly.
func rlLookup(ns *Namespace, dst netip.Addr, mark uint32) rlAnswer {
	k := flow.Key{Dst: dst, Mark: mark, Proto: ipprotoUDP, IIF: loIndex, Src: netip.IPv4Unspecified()}
	lookup := ns.fib4.Lookup
	if dst.Is6() {
		k.Proto, k.Src = 0, netip.IPv6Unspecified()
		lookup = ns.fib6.Lookup
	}
	res, err := lookup(k)
	if err != 0 {
		return rlAnswer{Err: err}
	}
	return rlAnswer{Table: res.Table, Dst: res.Dst, Type: res.Entry.Type, Priority: res.Entry.Priority}
}

// TestRouteGetAnswersFromLookup is the "one code path" acceptance test of
// the lookup fast paths: `ip route get … fibmatch` (what `nlemu exec -- ip
// route get` sends) answers, on random tables with and without custom
// rules, exactly what FIB.Lookup answers for the request's flow — the
// matched prefix, its table, type and metric, or the same errno — so the
// RTM_GETROUTE handler runs the lookup fib's benchmarks measure, not a
// copy of it. Both families, 2,000 random destinations per case.
func TestRouteGetAnswersFromLookup(t *testing.T) {
	for _, tc := range []struct {
		v6, rules bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("v6=%v/rules=%v", tc.v6, tc.rules), func(t *testing.T) {
			ns := rgNS(t)
			rng := rand.New(rand.NewSource(7))
			addr := func() netip.Addr {
				if tc.v6 {
					return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(rng.Intn(4)), byte(rng.Intn(256)), 15: byte(rng.Intn(256))})
				}
				return netip.AddrFrom4([4]byte{10, byte(rng.Intn(4)), byte(rng.Intn(256)), byte(rng.Intn(256))})
			}
			bits := []int{8, 12, 16, 20, 24, 28, 32}
			if tc.v6 {
				bits = []int{32, 36, 40, 44, 48, 56, 64, 128}
			}
			for i := 0; i < 300; i++ {
				p := netip.PrefixFrom(addr(), bits[rng.Intn(len(bits))]).Masked()
				opts := []func(*rtnl.RouteMsg){func(m *rtnl.RouteMsg) { m.OIF = 3; m.Set(rtnl.RTA_OIF) }}
				switch rng.Intn(8) {
				case 0:
					opts = append(opts, rtTable(100))
				case 1:
					opts = append(opts, rtTable(200))
				case 2:
					opts = []func(*rtnl.RouteMsg){rtType(rtnl.RTN_UNREACHABLE)}
				case 3:
					opts = append(opts, rtMetric(uint32(rng.Intn(3))))
				}
				rtDo(t, ns, &recorder{}, rtIP("add", p.String(), opts...)) // duplicates fail; fine
			}
			if tc.rules {
				fam := byte(rtnl.AF_INET)
				if tc.v6 {
					fam = rtnl.AF_INET6
				}
				for i, r := range []struct {
					table byte
					mark  uint32
				}{{100, 1}, {200, 2}, {0, 3}} {
					h := []byte{fam, 0, 0, 0, r.table, 0, 0, rtnl.FR_ACT_TO_TBL, 0, 0, 0, 0}
					h = lnla(h, rtnl.FRA_PRIORITY, binary.NativeEndian.AppendUint32(nil, uint32(100+i)))
					h = lnla(h, rtnl.FRA_FWMARK, binary.NativeEndian.AppendUint32(nil, r.mark))
					if r.table == 0 {
						h[7] = rtnl.FR_ACT_PROHIBIT
					}
					if err := doReq(t, ns, rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, h); err != nil {
						t.Fatalf("rule %d: %v", i, err)
					}
				}
			}
			hits, errs := 0, 0
			for i := 0; i < 2000; i++ {
				dst, mark := addr(), uint32(rng.Intn(4))
				if !tc.rules {
					mark = 0
				}
				want := rlLookup(ns, dst, mark)
				got := rlGet(t, ns, dst, mark)
				if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
					t.Fatalf("%v mark %d (-Lookup +route get):\n%s", dst, mark, diff)
				}
				if want.Err == 0 {
					hits++
				} else {
					errs++
				}
			}
			// Both outcomes must occur, or the comparison proves little.
			if hits < 100 || errs < 20 {
				t.Errorf("%d answers, %d errors: the random tables miss too little or too much", hits, errs)
			}
		})
	}
}
