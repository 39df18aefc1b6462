package kernelns

import (
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"golang.org/x/sys/unix"
)

// benchKernelRouteGet is the kernel's side of nlemu's route-get benchmarks
// (server.BenchmarkInprocRouteGet4 and friends): the same 1,000 routes
// through lo and the same requests, one raw NETLINK_ROUTE socket in a
// throw-away namespace, one request and one reply per iteration.
func benchKernelRouteGet(b *testing.B, fam uint8) {
	ns := NewForTest(b, "bench-rg")
	batch := "link set lo up\n"
	var gets [][]byte
	for i := 0; i < 1000; i++ {
		var dst, host string
		if fam == rtnl.AF_INET {
			dst, host = fmt.Sprintf("10.%d.%d.0/24", i/250, i%250), fmt.Sprintf("10.%d.%d.9", i/250, i%250)
		} else {
			dst, host = fmt.Sprintf("2001:db8:%x:%x::/64", i/250, i%250), fmt.Sprintf("2001:db8:%x:%x::9", i/250, i%250)
		}
		batch += fmt.Sprintf("route add %s dev lo\n", dst)
		g := T.Hdr{Family: fam, DstLen: uint8(netip.MustParseAddr(host).BitLen())}
		if fam == rtnl.AF_INET {
			g.Flags = rtnl.RTM_F_LOOKUP_TABLE
		}
		gets = append(gets, T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, uint32(i+1), T.Body(g, T.Addr(rtnl.RTA_DST, host))))
	}
	f := b.TempDir() + "/batch"
	if err := os.WriteFile(f, []byte(batch), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, e, code := ns.IP("-batch", f); code != 0 {
		b.Fatalf("ip -batch: %s", e)
	}
	s, err := ns.Dial(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// Plain blocking send and recv on the descriptor, as a C client
	// would (Socket.Recv polls with a timeout first).
	fd := s.fd
	buf := make([]byte, 8192)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := unix.Write(fd, gets[i%len(gets)]); err != nil {
			b.Fatal(err)
		}
		n, err := unix.Read(fd, buf)
		if err != nil || n < 20 || uint16(buf[4]) != rtnl.RTM_NEWROUTE {
			b.Fatalf("reply %x %v", buf[:max(n, 0)], err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

// BenchmarkKernelRouteGet4 is the kernel's IPv4 route-get rate.
func BenchmarkKernelRouteGet4(b *testing.B) { benchKernelRouteGet(b, rtnl.AF_INET) }

// BenchmarkKernelRouteGet6 is the kernel's IPv6 route-get rate.
func BenchmarkKernelRouteGet6(b *testing.B) { benchKernelRouteGet(b, rtnl.AF_INET6) }
