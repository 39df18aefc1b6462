package server_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// FuzzRuleRequest sends one arbitrary rule request (type, flags, body) and
// checks the handler's contract: a reply always comes (ACK requested), the
// server never panics, and a request that fails leaves every rule list
// exactly as it was.
func FuzzRuleRequest(f *testing.F) {
	f.Add(uint8(0), uint16(T.AddFlags), T.Body(T.V4(5), T.Pref(100)))
	f.Add(uint8(1), uint16(T.DelFlags), T.Body(T.Hdr{Family: 2}, T.Pref(0)))
	f.Add(uint8(0), uint16(T.AddFlags), T.Body(T.V6(5), T.U32(rtnl.FRA_FLOWLABEL, 1)))
	f.Add(uint8(0), uint16(T.AddFlags), T.Body(T.Hdr{Family: 2, Action: 2}, T.U32(rtnl.FRA_GOTO, 5)))
	f.Add(uint8(2), uint16(rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP), []byte{0})
	f.Fuzz(func(t *testing.T, kind uint8, flags uint16, body []byte) {
		srv := server.New(server.Config{})
		defer srv.Close()
		c, err := srv.Dial(server.Options{ExtAck: true})
		if err != nil {
			t.Fatal(err)
		}
		dumpAll := func(t *testing.T) []string {
			s := &sess{t: t, srv: srv, c: c, seq: 1 << 30}
			r, _, _ := s.dump(allRules())
			return r
		}
		// A few rules first, so that deletes and gotos have something to hit.
		for _, b := range [][]byte{T.Body(T.V4(5), T.Pref(100)), T.Body(T.V6(5), T.Pref(100)),
			T.Body(T.Hdr{Family: 2, Action: 2}, T.Pref(50), T.U32(rtnl.FRA_GOTO, 100))} {
			c.Send(T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, 1, b))
			c.Recv()
		}
		typ := []uint16{rtnl.RTM_NEWRULE, rtnl.RTM_DELRULE, rtnl.RTM_GETRULE}[int(kind)%3]
		flags |= rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK
		if typ == rtnl.RTM_GETRULE {
			flags &^= rtnl.NLM_F_DUMP // dumps are covered by the A12 tests
		}
		before := dumpAll(t)
		if err := c.Send(T.Msg(typ, flags, 7, body)); err != nil {
			t.Fatal(err)
		}
		var ack *T.Ack
		for ack == nil {
			b, err := c.Recv()
			if err != nil {
				t.Fatalf("no reply: %v", err)
			}
			for _, m := range rtnl.SplitDatagram(b) {
				if m.Header.Type == rtnl.NLMSG_ERROR && m.Header.Sequence == 7 {
					a := T.ParseAck(m)
					ack = &a
				}
			}
		}
		if ack.Errno != 0 {
			if d := cmp.Diff(before, dumpAll(t)); d != "" {
				t.Fatalf("failed request (%v) changed state:\n%s", ack, d)
			}
		}
	})
}
