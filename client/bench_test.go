package client_test

import (
	"net"
	"os"
	"testing"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/client"
	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// BenchmarkConnRouteGet: one `ip route get 127.0.0.1`-like round trip
// through netlink.Conn.Execute, on a kernel socket (netlink.Dial in a fresh
// namespace) and on client.Socket in process and over the Unix socket,
// side by side in one run:
//
//	go test -run XXX -bench ConnRouteGet ./client/
func BenchmarkConnRouteGet(b *testing.B) {
	req, _ := (&rtnetlink.RouteMessage{Family: unix.AF_INET, DstLength: 32,
		Attributes: rtnetlink.RouteAttributes{Dst: net.IPv4(127, 0, 0, 1).To4()}}).MarshalBinary()
	msg := netlink.Message{Header: netlink.Header{Type: unix.RTM_GETROUTE, Flags: netlink.Request}, Data: req}
	run := func(b *testing.B, c *netlink.Conn) {
		// lo up, so 127.0.0.1 has its local route.
		lb, _ := (&rtnetlink.LinkMessage{Index: 1, Flags: unix.IFF_UP, Change: unix.IFF_UP}).MarshalBinary()
		if _, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWLINK, Flags: netlink.Request | netlink.Acknowledge}, Data: lb}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Execute(msg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("kernel", func(b *testing.B) {
		ns := kernelns.NewForTest(b, "h-go")
		f, err := os.Open(ns.Path())
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(f.Fd())})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c)
	})
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("bench")
	b.Run("inproc", func(b *testing.B) {
		s, err := client.DialServer(srv, "bench")
		if err != nil {
			b.Fatal(err)
		}
		c := client.NewConn(s)
		defer c.Close()
		run(b, c)
	})
	b.Run("unix", func(b *testing.B) {
		path := b.TempDir() + "/s.sock"
		l, err := srv.ListenUnix(path)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		s, err := client.Dial(path, "bench")
		if err != nil {
			b.Fatal(err)
		}
		c := client.NewConn(s)
		defer c.Close()
		run(b, c)
	})
}
