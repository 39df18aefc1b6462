package server_test

import (
	"fmt"
	"testing"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// TestTidyRunsAfterTheReply: the fold of a route table's list of changes
// is left for after the reply to the change that filled the list
// (nsmgr.Namespace.Tidy, run by the server before it reads that
// connection's next request). Over the Unix socket and in process, 1,000
// route adds per family, each acknowledged and then looked up with a route
// get on a second socket, which must find the route (the table version a
// reader sees is complete when the ACK goes out); after a NOOP round trip
// on the first socket no fold is waiting, and the folds were Tidy's. The
// same adds through Namespace.Do alone (no Tidy) leave every fold to the
// next change: Tidies stays 0.
func TestTidyRunsAfterTheReply(t *testing.T) {
	for _, tname := range []string{"inproc", "unix"} {
		t.Run(tname, func(t *testing.T) {
			srv, dials := transports(t)
			dial := dials[tname]
			c, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ns, _ := srv.Namespaces().Get("default")
			ackOK(t, c, rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, loUp()))
			for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
				tb := tablesOf(ns, fam)
				for i := range 1000 {
					add, get := tidyRouteMsgs(fam, i)
					if i == 0 {
						if typ := tidyGet(t, g, get); typ == rtnl.RTM_NEWROUTE {
							t.Fatalf("family %d: route get found a route before any was added", fam)
						}
					}
					ackOK(t, c, add)
					if typ := tidyGet(t, g, get); typ != rtnl.RTM_NEWROUTE {
						t.Fatalf("family %d, route %d: route get on another socket after the ACK: reply type %d, want RTM_NEWROUTE", fam, i, typ)
					}
				}
				ackOK(t, c, rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 9, 0, nil))
				if tb.TidyDue() || tb.Tidies() == 0 {
					t.Errorf("family %d: after the NOOP's reply a fold waits %v, folds by Tidy %d; want none waiting and some", fam, tb.TidyDue(), tb.Tidies())
				}
			}
		})
	}
	t.Run("Do alone", func(t *testing.T) {
		srv := server.New(server.Config{})
		defer srv.Close()
		srv.Namespaces().Add("b")
		ns, _ := srv.Namespaces().Get("b")
		up := rtnl.AppendMessage(nil, rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, loUp())
		do := func(b []byte) {
			m := rtnl.AppendMessages(nil, b)[0]
			if _, err := ns.Do(&nsmgr.Request{Msg: &m, PortID: 7, Strict: true}); err != nil {
				t.Fatal(err)
			}
		}
		do(up)
		for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
			for i := range 1000 {
				add, _ := tidyRouteMsgs(fam, i)
				do(add)
			}
			if tb := tablesOf(ns, fam); tb.Tidies() != 0 {
				t.Errorf("family %d: %d folds by Tidy without a server", fam, tb.Tidies())
			}
		}
	})
}

func tablesOf(ns *nsmgr.Namespace, fam uint8) interface {
	TidyDue() bool
	Tidies() uint64
} {
	if fam == rtnl.AF_INET6 {
		return ns.IPv6Tables()
	}
	return ns.IPv4Tables()
}

// loUp is the RTM_NEWLINK body that sets lo up.
func loUp() []byte {
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 1, 1, 1 // ifindex 1, IFF_UP in flags and change
	return up
}

// tidyRouteMsgs returns route add i of family fam (10.i.j.0/24 or
// 2001:db8:i:j::/64 dev lo, table main) and a route get of an address in it.
func tidyRouteMsgs(fam uint8, i int) (add, get []byte) {
	dst, host, plen := fmt.Sprintf("10.%d.%d.0", i/250, i%250), fmt.Sprintf("10.%d.%d.9", i/250, i%250), uint8(24)
	h := T.Hdr{Family: fam, DstLen: plen, Table: rtnl.RT_TABLE_MAIN, Res1: rtnl.RTPROT_BOOT, Res2: rtnl.RT_SCOPE_LINK, Action: rtnl.RTN_UNICAST}
	g := T.Hdr{Family: fam, DstLen: 32, Flags: rtnl.RTM_F_LOOKUP_TABLE}
	if fam == rtnl.AF_INET6 {
		dst, host = fmt.Sprintf("2001:db8:%x:%x::", i/250, i%250), fmt.Sprintf("2001:db8:%x:%x::9", i/250, i%250)
		h.DstLen, h.Res2 = 64, rtnl.RT_SCOPE_UNIVERSE
		g.DstLen, g.Flags = 128, 0
	}
	add = T.Msg(rtnl.RTM_NEWROUTE, T.AddFlags, uint32(i+2), T.Body(h, T.Addr(rtnl.RTA_DST, dst), T.U32(rtnl.RTA_OIF, 1)))
	get = T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, uint32(i+2), T.Body(g, T.Addr(rtnl.RTA_DST, host)))
	return add, get
}

// ackOK sends msg on c and wants a success ACK.
func ackOK(t *testing.T, c *server.Client, msg []byte) {
	t.Helper()
	if err := c.Send(msg); err != nil {
		t.Fatal(err)
	}
	r, err := c.Recv()
	if err != nil || len(r) < 20 || uint16(r[4]) != rtnl.NLMSG_ERROR || r[16] != 0 {
		t.Fatalf("reply %x %v, want a success ACK", r, err)
	}
}

// tidyGet sends msg on c and returns the type of the reply.
func tidyGet(t *testing.T, c *server.Client, msg []byte) uint16 {
	t.Helper()
	if err := c.Send(msg); err != nil {
		t.Fatal(err)
	}
	r, err := c.Recv()
	if err != nil || len(r) < 16 {
		t.Fatalf("reply %x %v", r, err)
	}
	return uint16(r[4]) | uint16(r[5])<<8
}
