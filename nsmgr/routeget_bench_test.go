package nsmgr

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// nopListener drops what it is given.
type nopListener struct{}

func (nopListener) Deliver([]byte) {}

// benchRouteGetNS returns rgNS with 1,000 more routes of family fam and
// route-get messages for addresses in them.
func benchRouteGetNS(b *testing.B, fam uint8) (*Namespace, []rtnl.Message) {
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
	req := Request{PortID: 4242, Strict: true, Self: nopListener{}}
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
