package server_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// routeGetSetup brings lo up in namespace "b" and adds 1,000 routes of
// family fam through lo (10.i.j.0/24, 2001:db8:i:j::/64), then returns
// route-get requests (as `ip route get` builds them) for addresses in them.
func routeGetSetup(b testing.TB, c *server.Client, fam uint8) [][]byte {
	b.Helper()
	do := func(msg []byte) {
		if err := c.Send(msg); err != nil {
			b.Fatal(err)
		}
		r, err := c.Recv()
		if err != nil || len(r) < 20 || uint16(r[4]) != rtnl.NLMSG_ERROR || r[16] != 0 {
			b.Fatalf("setup reply %x %v", r, err)
		}
	}
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 1, 1, 1 // ifindex 1, IFF_UP in flags and change
	do(rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, up))
	var gets [][]byte
	for i := 0; i < 1000; i++ {
		var dst, host string
		plen := uint8(24)
		if fam == rtnl.AF_INET {
			dst, host = fmt.Sprintf("10.%d.%d.0", i/250, i%250), fmt.Sprintf("10.%d.%d.9", i/250, i%250)
		} else {
			dst, host, plen = fmt.Sprintf("2001:db8:%x:%x::", i/250, i%250), fmt.Sprintf("2001:db8:%x:%x::9", i/250, i%250), 64
		}
		h := T.Hdr{Family: fam, DstLen: plen, Table: rtnl.RT_TABLE_MAIN, Res1: rtnl.RTPROT_BOOT, Res2: rtnl.RT_SCOPE_LINK, Action: rtnl.RTN_UNICAST}
		if fam == rtnl.AF_INET6 {
			h.Res2 = rtnl.RT_SCOPE_UNIVERSE
		}
		do(T.Msg(rtnl.RTM_NEWROUTE, T.AddFlags, uint32(i+2), T.Body(h, T.Addr(rtnl.RTA_DST, dst), T.U32(rtnl.RTA_OIF, 1))))
		g := T.Hdr{Family: fam, DstLen: uint8(netip.MustParseAddr(host).BitLen())}
		if fam == rtnl.AF_INET {
			g.Flags = rtnl.RTM_F_LOOKUP_TABLE // iproute2 always sets it for IPv4
		}
		gets = append(gets, T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, uint32(i+1), T.Body(g, T.Addr(rtnl.RTA_DST, host))))
	}
	return gets
}

func benchRouteGet(b *testing.B, fam uint8, unix bool) {
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("b")
	dial := func() (*server.Client, error) { return srv.Dial(server.Options{Namespace: "b"}) }
	if unix {
		path := b.TempDir() + "/s.sock"
		if _, err := srv.ListenUnix(path); err != nil {
			b.Fatal(err)
		}
		dial = func() (*server.Client, error) { return server.DialUnix(path, server.Options{Namespace: "b"}) }
	}
	c, err := dial()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	gets := routeGetSetup(b, c, fam)
	// One receive buffer, as a C client (and the kernel side of
	// hack/lookup-kernel.sh) reads into.
	buf := make([]byte, 8192)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Send(gets[i%len(gets)])
		n, err := c.RecvInto(buf)
		if err != nil || n > len(buf) || uint16(buf[4]) != rtnl.RTM_NEWROUTE {
			b.Fatalf("reply %x %v", buf[:min(n, len(buf))], err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

// BenchmarkInprocRouteGet4 is one `ip route get` round trip (send, lookup
// through the rules, reply, receive) on one in-process client.
func BenchmarkInprocRouteGet4(b *testing.B) { benchRouteGet(b, rtnl.AF_INET, false) }

// BenchmarkInprocRouteGet6 is the IPv6 twin.
func BenchmarkInprocRouteGet6(b *testing.B) { benchRouteGet(b, rtnl.AF_INET6, false) }

// BenchmarkUnixRouteGet4 is the same over the Unix socket.
func BenchmarkUnixRouteGet4(b *testing.B) { benchRouteGet(b, rtnl.AF_INET, true) }

// BenchmarkUnixRouteGet6 is the IPv6 twin over the Unix socket.
func BenchmarkUnixRouteGet6(b *testing.B) { benchRouteGet(b, rtnl.AF_INET6, true) }
