package server_test

import (
	"testing"
	"time"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// sess is a raw-netlink test session on an in-process socket, the
// counterpart of the spec's nl.py probe.
type sess struct {
	t   *testing.T
	srv *server.Server
	c   *server.Client
	seq uint32
}

func newSess(t *testing.T, srv *server.Server, o server.Options) *sess {
	t.Helper()
	if srv == nil {
		srv = server.New(server.Config{})
		t.Cleanup(func() { srv.Close() })
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	c, err := srv.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	c.SetRecvTimeout(5 * time.Second)
	t.Cleanup(func() { c.Close() })
	return &sess{t: t, srv: srv, c: c, seq: 1000}
}

// request sends one message (NLM_F_REQUEST|NLM_F_ACK added) and returns its
// ACK; other messages for the same seq (echo copies) are returned too.
func (s *sess) request(typ, flags uint16, body []byte) (rtnltest.Ack, []rtnl.Message) {
	s.t.Helper()
	s.seq++
	if err := s.c.Send(rtnltest.Msg(typ, flags|rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, s.seq, body)); err != nil {
		s.t.Fatal(err)
	}
	var other []rtnl.Message
	for {
		b, err := s.c.Recv()
		if err != nil {
			s.t.Fatalf("recv: %v", err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			if m.Header.Sequence != s.seq {
				continue
			}
			if m.Header.Type == rtnl.NLMSG_ERROR {
				return rtnltest.ParseAck(m), other
			}
			other = append(other, m)
		}
	}
}

func (s *sess) add(body []byte) rtnltest.Ack {
	a, _ := s.request(rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, body)
	return a
}

func (s *sess) del(body []byte) rtnltest.Ack {
	a, _ := s.request(rtnl.RTM_DELRULE, 0, body)
	return a
}

// dump runs an RTM_GETRULE dump with the given body and returns the rules
// rendered like the spec's transcripts, the NLMSG_DONE errno/extack, and
// the number of datagrams.
func (s *sess) dump(body []byte) (rules []string, done rtnltest.Ack, batches int) {
	s.t.Helper()
	s.seq++
	if err := s.c.Send(rtnltest.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, s.seq, body)); err != nil {
		s.t.Fatal(err)
	}
	for {
		b, err := s.c.Recv()
		if err != nil {
			s.t.Fatalf("recv: %v", err)
		}
		batches++
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.NLMSG_DONE:
				return rules, parseDone(m), batches
			case rtnl.NLMSG_ERROR:
				return rules, rtnltest.ParseAck(m), batches
			default:
				if m.Header.Flags&rtnl.NLM_F_MULTI == 0 {
					s.t.Errorf("dump message without NLM_F_MULTI: %v", m.Header)
				}
				rules = append(rules, rtnltest.RenderSpec(m))
			}
		}
	}
}

// parseDone decodes the errno and extack message of an NLMSG_DONE.
func parseDone(m rtnl.Message) rtnltest.Ack {
	a, _ := rtnl.ParseAck(&m)
	return rtnltest.Ack{Errno: int(a.Err.Errno), Msg: a.Err.Msg}
}

func allRules() []byte { return rtnltest.Body(rtnltest.Hdr{}) }

func famRules(f uint8) []byte { return rtnltest.Body(rtnltest.Hdr{Family: f}) }
