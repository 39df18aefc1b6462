package server_test

import (
	"testing"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// BenchmarkInprocRuleAdd is one `rule add from all table i` round trip
// (send, handle, ACK, receive) on an in-process socket, the unit of the
// seed's load; every 1,024 rules it starts over in a fresh namespace.
func BenchmarkInprocRuleAdd(b *testing.B) {
	srv := server.New(server.Config{})
	defer srv.Close()
	benchRuleAdd(b, srv, func() (*server.Client, error) { return srv.Dial(server.Options{Namespace: "b"}) })
}

// BenchmarkUnixRuleAdd is the same over the Unix socket transport (what
// `ip` pays through the shim, minus the shim).
func BenchmarkUnixRuleAdd(b *testing.B) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := b.TempDir() + "/s.sock"
	if _, err := srv.ListenUnix(path); err != nil {
		b.Fatal(err)
	}
	benchRuleAdd(b, srv, func() (*server.Client, error) { return server.DialUnix(path, server.Options{Namespace: "b"}) })
}

func benchRuleAdd(b *testing.B, srv *server.Server, dial func() (*server.Client, error)) {
	const per = 1024
	reqs := make([][]byte, per)
	for i := range reqs {
		reqs[i] = T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, uint32(i+1), T.Body(T.V4(uint8(i%250+1)), T.Table(uint32(i+1))))
	}
	var c *server.Client
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%per == 0 {
			b.StopTimer()
			if c != nil {
				c.Close()
				srv.Namespaces().Del("b")
			}
			srv.Namespaces().Add("b")
			var err error
			if c, err = dial(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		c.Send(reqs[i%per])
		r, err := c.Recv()
		if err != nil || len(r) != 36 {
			b.Fatalf("reply %x %v", r, err)
		}
	}
}
