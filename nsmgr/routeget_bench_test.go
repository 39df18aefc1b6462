package nsmgr

import (
	"fmt"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// nopListener drops what it is given.
type nopListener struct{}

func (nopListener) Deliver([]byte) {}

// lastListener keeps the last datagram it is given (not a copy).
type lastListener struct{ b []byte }

func (l *lastListener) Deliver(b []byte) { l.b = b }

// benchRouteGetNS returns rgNS with 1,000 more routes of family fam and
// route-get messages for addresses in them.
func benchRouteGetNS(b testing.TB, fam uint8) (*Namespace, []rtnl.Message) {
	ns := routeTestNS(b)
	var msgs []rtnl.Message
	for i := 0; i < 1000; i++ {
		var p, host string
		if fam == rtnl.AF_INET {
			p, host = fmt.Sprintf("10.%d.%d.0/24", i/250, i%250), fmt.Sprintf("10.%d.%d.9", i/250, i%250)
		} else {
			p, host = fmt.Sprintf("2001:db8:%x:%x::/64", i/250, i%250), fmt.Sprintf("2001:db8:%x:%x::9", i/250, i%250)
		}
		if err := rtDo(b, ns, nopListener{}, rtIP("add", p, rtDevLo)); err != nil {
			b.Fatal(err)
		}
		q := rtnl.RouteMsg{Family: fam}
		q.Dst = netip.MustParseAddr(host)
		q.DstLen = uint8(q.Dst.BitLen())
		q.Set(rtnl.RTA_DST)
		if fam == rtnl.AF_INET {
			q.Flags = rtnl.RTM_F_LOOKUP_TABLE
		}
		msgs = append(msgs, rtnl.SplitDatagram(rtnl.AppendRoute(nil, rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, uint32(i), 4242, &q))...)
	}
	return ns, msgs
}

func benchRouteGet(b *testing.B, fam uint8) {
	ns, msgs := benchRouteGetNS(b, fam)
	// A lent reply buffer, as the server's sockets lend one
	// (Request.Reply); nopListener drops the reply, so it is free again.
	req := Request{PortID: 4242, Strict: true, Self: nopListener{}, Reply: make([]byte, 0, 256)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Msg = &msgs[i%len(msgs)]
		if _, err := ns.Do(&req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

// BenchmarkRouteGet4 is one IPv4 route get at the namespace level: decode,
// lookup, reply encoding, no transport.
func BenchmarkRouteGet4(b *testing.B) { benchRouteGet(b, rtnl.AF_INET) }

// BenchmarkRouteGet6 is the IPv6 twin.
func BenchmarkRouteGet6(b *testing.B) { benchRouteGet(b, rtnl.AF_INET6) }

// TestRouteGetEncodesIntoLentBuffer checks that a route get with a lent
// buffer (Request.Reply) delivers exactly the bytes of one without, in the
// lent buffer when they fit and in a buffer of its own when they do not.
func TestRouteGetEncodesIntoLentBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fam    uint8
		lent   int
		shared bool
	}{
		{"ipv4", rtnl.AF_INET, 256, true},
		{"ipv6", rtnl.AF_INET6, 256, true},
		{"ipv4 too small", rtnl.AF_INET, 16, false},
		{"ipv6 too small", rtnl.AF_INET6, 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, msgs := benchRouteGetNS(t, tc.fam)
			for i := 0; i < len(msgs); i += 97 {
				var plain, lent lastListener
				if _, err := ns.Do(&Request{Msg: &msgs[i], PortID: 4242, Strict: true, Self: &plain}); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 0, tc.lent)
				if _, err := ns.Do(&Request{Msg: &msgs[i], PortID: 4242, Strict: true, Self: &lent, Reply: buf}); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(plain.b, lent.b); diff != "" {
					t.Fatalf("get %d: reply with a lent buffer differs (-without +with):\n%s", i, diff)
				}
				if shared := unsafe.SliceData(lent.b) == unsafe.SliceData(buf); shared != tc.shared {
					t.Fatalf("get %d: reply in the lent buffer %v, want %v", i, shared, tc.shared)
				}
			}
		})
	}
}

// TestRouteGetLentBufferAllocatesNothing: with a lent buffer, a route get
// (decode, lookup, source selection, reply) allocates nothing.
func TestRouteGetLentBufferAllocatesNothing(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		ns, msgs := benchRouteGetNS(t, fam)
		req := Request{PortID: 4242, Strict: true, Self: nopListener{}, Reply: make([]byte, 0, 256)}
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			req.Msg = &msgs[i%len(msgs)]
			i++
			if _, err := ns.Do(&req); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("family %d: %v allocations per route get, want 0", fam, allocs)
		}
	}
}

// TestRouteGetClearsReply: RouteGet answers into a reused reply as into a
// fresh one (the fill functions set only what they put, on a reply
// RouteGet clears).
func TestRouteGetClearsReply(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		ns, msgs := benchRouteGetNS(t, fam)
		for i := 0; i < len(msgs); i += 101 {
			var q rtnl.RouteMsg
			if err := q.DecodeGet(&msgs[i], true); err != nil {
				t.Fatal(err)
			}
			var fresh rtnl.RouteMsg
			if err := ns.RouteGet(&q, &fresh); err != nil {
				t.Fatal(err)
			}
			stale := rtnl.RouteMsg{Family: 99, Tos: 7, Gateway: netip.MustParseAddr("192.0.2.1"), Mark: 5, Present: ^uint64(0)}
			if err := ns.RouteGet(&q, &stale); err != nil {
				t.Fatal(err)
			}
			want := rtnl.AppendRoute(nil, rtnl.RTM_NEWROUTE, 0, 1, 2, &fresh)
			if diff := cmp.Diff(want, rtnl.AppendRoute(nil, rtnl.RTM_NEWROUTE, 0, 1, 2, &stale)); diff != "" {
				t.Fatalf("family %d get %d: reply into a reused RouteMsg differs (-fresh +reused):\n%s", fam, i, diff)
			}
		}
	}
}
