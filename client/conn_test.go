package client_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/client"
	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// pair is two netlink.Conns in one namespace (a changer and a listener),
// with a way to name port ids in a transcript without their numbers.
type pair struct {
	a, b *netlink.Conn
}

func (p *pair) who(pid uint32) string {
	switch pid {
	case 0:
		return "kernel"
	case p.a.PID():
		return "a"
	case p.b.PID():
		return "b"
	}
	return "other"
}

// errText is an error as a transcript shows it: its text, and what
// errors.Is and net.Error say of it.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	s := err.Error()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s += " [timeout]"
	}
	for _, e := range []error{os.ErrDeadlineExceeded, os.ErrClosed, unix.EBADF, unix.EINVAL, unix.EEXIST, unix.ENOENT, unix.EPERM, unix.ENOPROTOOPT} {
		if errors.Is(err, e) {
			s += fmt.Sprintf(" [is %v]", e)
		}
	}
	return s
}

func msgText(p *pair, m netlink.Message) string {
	return fmt.Sprintf("type=%d flags=%#x pid=%s len=%d", uint16(m.Header.Type), uint16(m.Header.Flags), p.who(m.Header.PID), m.Header.Length)
}

func ruleMsg(prio uint32) netlink.Message {
	table := uint32(10)
	b, _ := (&rtnetlink.RuleMessage{Family: unix.AF_INET, Table: 10, Action: unix.FR_ACT_TO_TBL,
		Attributes: &rtnetlink.RuleAttributes{Priority: &prio, Table: &table}}).MarshalBinary()
	return netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWRULE, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl}, Data: b}
}

func linkDump() netlink.Message {
	b, _ := (&rtnetlink.LinkMessage{}).MarshalBinary()
	return netlink.Message{Header: netlink.Header{Type: unix.RTM_GETLINK, Flags: netlink.Request | netlink.Dump}, Data: b}
}

// connCases drive every method of netlink.Conn; each returns a transcript
// that must be the same on a kernel socket and on nlemu's.
var connCases = []struct {
	name string
	run  func(t *testing.T, p *pair) []string
}{
	{"groups", func(t *testing.T, p *pair) []string {
		var out []string
		for _, g := range []uint32{0, unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_RULE, 39, 40, 1000} {
			out = append(out, fmt.Sprintf("join %d: %s", g, errText(p.a.JoinGroup(g))))
			out = append(out, fmt.Sprintf("leave %d: %s", g, errText(p.a.LeaveGroup(g))))
		}
		return out
	}},
	{"options", func(t *testing.T, p *pair) []string {
		var out []string
		for o := netlink.PacketInfo; o <= netlink.GetStrictCheck+1; o++ {
			out = append(out, fmt.Sprintf("option %d on: %s", o, errText(p.a.SetOption(o, true))))
			out = append(out, fmt.Sprintf("option %d off: %s", o, errText(p.a.SetOption(o, false))))
		}
		return out
	}},
	{"execute_dump", func(t *testing.T, p *pair) []string {
		msgs, err := p.a.Execute(linkDump())
		out := []string{"dump: " + errText(err)}
		for _, m := range msgs {
			var l rtnetlink.LinkMessage
			if err := l.UnmarshalBinary(m.Data); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %d %s", msgText(p, m), l.Index, l.Attributes.Name))
		}
		return out
	}},
	{"execute_errors_extack", func(t *testing.T, p *pair) []string {
		var out []string
		out = append(out, "ext ack: "+errText(p.a.SetOption(netlink.ExtendedAcknowledge, true)))
		_, err := p.a.Execute(ruleMsg(100))
		out = append(out, "add: "+errText(err))
		_, err = p.a.Execute(ruleMsg(100))
		out = append(out, "again: "+errText(err))
		var oe *netlink.OpError
		if errors.As(err, &oe) {
			out = append(out, fmt.Sprintf("op=%s message=%q offset=%d seq-set=%v", oe.Op, oe.Message, oe.Offset, oe.Sequence != 0))
		}
		// An unknown rtnetlink message type.
		_, err = p.a.Execute(netlink.Message{Header: netlink.Header{Type: 0x7f, Flags: netlink.Request | netlink.Acknowledge}})
		out = append(out, "bad type: "+errText(err))
		return out
	}},
	{"send_receive_validate", func(t *testing.T, p *pair) []string {
		var out []string
		req, err := p.a.Send(ruleMsg(200))
		out = append(out, fmt.Sprintf("send: %s pid=%s len=%d", errText(err), p.who(req.Header.PID), req.Header.Length))
		replies, err := p.a.Receive()
		out = append(out, "receive: "+errText(err))
		for _, m := range replies {
			out = append(out, msgText(p, m)+fmt.Sprintf(" seq-matches=%v", m.Header.Sequence == req.Header.Sequence))
		}
		out = append(out, "validate: "+errText(netlink.Validate(req, replies)))
		other := req
		other.Header.Sequence++
		out = append(out, "validate other seq: "+errText(netlink.Validate(other, replies)))
		other = req
		other.Header.PID++
		out = append(out, "validate other pid: "+errText(netlink.Validate(other, replies)))
		// A request naming another port id is answered to the sender, with
		// the sender's port id (NETLINK_CB(skb).portid).
		m := ruleMsg(201)
		m.Header.PID = 12345
		req, err = p.a.Send(m)
		out = append(out, "send pid 12345: "+errText(err))
		replies, err = p.a.Receive()
		out = append(out, "receive: "+errText(err))
		for _, m := range replies {
			out = append(out, msgText(p, m))
		}
		out = append(out, "validate: "+errText(netlink.Validate(req, replies)))
		// An empty datagram: netlink_sendmsg()'s ENODATA.
		_, err = p.a.SendMessages(nil)
		out = append(out, "send empty: "+errText(err))
		// Two messages in one datagram: the kernel acks each message of a
		// datagram in its own skb.
		msgs, err := p.a.SendMessages([]netlink.Message{ruleMsg(202), ruleMsg(203)})
		out = append(out, fmt.Sprintf("send messages: %s %d", errText(err), len(msgs)))
		for range 2 {
			replies, err = p.a.Receive()
			out = append(out, fmt.Sprintf("receive: %s %d", errText(err), len(replies)))
		}
		return out
	}},
	{"receive_iter_stops_early", func(t *testing.T, p *pair) []string {
		var out []string
		for _, prio := range []uint32{300, 301, 302} {
			if _, err := p.a.Execute(ruleMsg(prio)); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := (&rtnetlink.RuleMessage{Family: unix.AF_INET}).MarshalBinary()
		if _, err := p.a.Send(netlink.Message{Header: netlink.Header{Type: unix.RTM_GETRULE, Flags: netlink.Request | netlink.Dump}, Data: b}); err != nil {
			t.Fatal(err)
		}
		n := 0
		for m, err := range p.a.ReceiveIter() {
			out = append(out, msgText(p, m)+" "+errText(err))
			if n++; n == 2 {
				break
			}
		}
		// The rest of the dump is discarded; the next request works.
		msgs, err := p.a.Execute(linkDump())
		out = append(out, fmt.Sprintf("next: %s %d", errText(err), len(msgs)))
		return out
	}},
	{"notifications", func(t *testing.T, p *pair) []string {
		var out []string
		out = append(out, "join: "+errText(p.b.JoinGroup(unix.RTNLGRP_IPV4_RULE)))
		if _, err := p.a.Execute(ruleMsg(400)); err != nil {
			t.Fatal(err)
		}
		p.b.SetReadDeadline(time.Now().Add(10 * time.Second))
		msgs, err := p.b.Receive()
		out = append(out, "receive: "+errText(err))
		for _, m := range msgs {
			var r rtnetlink.RuleMessage
			if err := r.UnmarshalBinary(m.Data); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s prio=%d", msgText(p, m), *r.Attributes.Priority))
		}
		out = append(out, "leave: "+errText(p.b.LeaveGroup(unix.RTNLGRP_IPV4_RULE)))
		if _, err := p.a.Execute(ruleMsg(401)); err != nil {
			t.Fatal(err)
		}
		// Nothing comes now: a deadline already past is refused at once.
		p.b.SetReadDeadline(time.Now().Add(-time.Second))
		_, err = p.b.Receive()
		out = append(out, "after leave: "+errText(err))
		return out
	}},
	{"deadlines", func(t *testing.T, p *pair) []string {
		var out []string
		out = append(out, "set read: "+errText(p.a.SetReadDeadline(time.Now().Add(-time.Second))))
		_, err := p.a.Receive()
		out = append(out, "receive past: "+errText(err))
		// A deadline already past refuses even a queued reply.
		_, err = p.a.Send(ruleMsg(500))
		out = append(out, "send: "+errText(err))
		_, err = p.a.Receive()
		out = append(out, "receive queued past: "+errText(err))
		p.a.SetReadDeadline(time.Time{})
		msgs, err := p.a.Receive()
		out = append(out, fmt.Sprintf("receive cleared: %s %d", errText(err), len(msgs)))
		// A deadline moved while a Receive waits ends it.
		done := make(chan error)
		go func() {
			_, err := p.a.Receive()
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it block (either order gives the same result)
		p.a.SetReadDeadline(time.Now())
		out = append(out, "receive moved: "+errText(<-done))
		p.a.SetReadDeadline(time.Time{})
		out = append(out, "set write: "+errText(p.a.SetWriteDeadline(time.Now().Add(-time.Second))))
		_, err = p.a.Send(ruleMsg(501))
		out = append(out, "send past: "+errText(err))
		out = append(out, "set both: "+errText(p.a.SetDeadline(time.Time{})))
		_, err = p.a.Execute(ruleMsg(502))
		out = append(out, "execute: "+errText(err))
		return out
	}},
	{"buffers", func(t *testing.T, p *pair) []string {
		var out []string
		r, err := p.a.ReadBuffer()
		out = append(out, fmt.Sprintf("read buffer: %d %s", r, errText(err)))
		w, err := p.a.WriteBuffer()
		out = append(out, fmt.Sprintf("write buffer: %d %s", w, errText(err)))
		for _, n := range []int{0, 1000, 1 << 20, 64 << 20} {
			err := p.a.SetReadBuffer(n)
			r, _ := p.a.ReadBuffer()
			out = append(out, fmt.Sprintf("set read %d: %s -> %d", n, errText(err), r))
			err = p.a.SetWriteBuffer(n)
			w, _ := p.a.WriteBuffer()
			out = append(out, fmt.Sprintf("set write %d: %s -> %d", n, errText(err), w))
		}
		return out
	}},
	{"bpf", func(t *testing.T, p *pair) []string {
		var out []string
		out = append(out, "remove none: "+errText(p.a.RemoveBPF()))
		all, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0xffff}})
		out = append(out, "set accept all: "+errText(p.a.SetBPF(all)))
		msgs, err := p.a.Execute(linkDump())
		out = append(out, fmt.Sprintf("dump: %s %d", errText(err), len(msgs)))
		// Keep only datagrams whose first message is an NLMSG_ERROR (acks).
		acks, _ := bpf.Assemble([]bpf.Instruction{
			bpf.LoadAbsolute{Off: 4, Size: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(ne16(unix.NLMSG_ERROR)), SkipTrue: 1},
			bpf.RetConstant{Val: 0},
			bpf.RetConstant{Val: 0xffff},
		})
		out = append(out, "set acks only: "+errText(p.a.SetBPF(acks)))
		_, err = p.a.Execute(ruleMsg(600))
		out = append(out, "ack passes: "+errText(err))
		out = append(out, "join: "+errText(p.a.JoinGroup(unix.RTNLGRP_IPV4_RULE)))
		_, err = p.a.Execute(ruleMsg(601))
		out = append(out, "ack passes, notification dropped: "+errText(err))
		p.a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err = p.a.Receive()
		out = append(out, "nothing more: "+errText(err))
		p.a.SetReadDeadline(time.Time{})
		out = append(out, "remove: "+errText(p.a.RemoveBPF()))
		bad := []bpf.RawInstruction{{Op: 0xffff}}
		out = append(out, "set invalid: "+errText(p.a.SetBPF(bad)))
		return out
	}},
	{"close", func(t *testing.T, p *pair) []string {
		var out []string
		done := make(chan error)
		go func() {
			_, err := p.a.Receive()
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		out = append(out, "close: "+errText(p.a.Close()))
		err := <-done
		// A Receive waiting when the socket closes reports either the
		// closed file (it was waiting) or EBADF (it had not started).
		if strings.HasSuffix(errText(err), "use of closed file") || errors.Is(err, unix.EBADF) {
			out = append(out, "waiting receive: closed")
		} else {
			out = append(out, "waiting receive: "+errText(err))
		}
		out = append(out, "close again: "+errText(p.a.Close()))
		_, err = p.a.Send(ruleMsg(700))
		out = append(out, "send: "+errText(err))
		_, err = p.a.Receive()
		out = append(out, "receive: "+errText(err))
		_, err = p.a.Execute(linkDump())
		out = append(out, "execute: "+errText(err))
		out = append(out, "join: "+errText(p.a.JoinGroup(1)))
		out = append(out, "option: "+errText(p.a.SetOption(netlink.ExtendedAcknowledge, true)))
		out = append(out, "deadline: "+errText(p.a.SetDeadline(time.Now())))
		out = append(out, "read deadline: "+errText(p.a.SetReadDeadline(time.Now())))
		out = append(out, "write deadline: "+errText(p.a.SetWriteDeadline(time.Now())))
		_, err = p.a.ReadBuffer()
		out = append(out, "read buffer: "+errText(err))
		out = append(out, "set read buffer: "+errText(p.a.SetReadBuffer(1000)))
		out = append(out, "remove bpf: "+errText(p.a.RemoveBPF()))
		return out
	}},
}

func ne16(v uint16) uint16 {
	// LoadAbsolute reads big-endian; the header is host order.
	return v<<8 | v>>8
}

// TestConnMethodsMatchKernel drives every method of netlink.Conn over a
// kernel NETLINK_ROUTE socket (netlink.Dial in a fresh kernel namespace)
// and over client.Socket, in process and over the Unix socket, and
// compares the transcripts: the same replies, errors (text, errors.Is,
// Timeout), sequence and port-id validation, notifications and deadline
// behaviour.
func TestConnMethodsMatchKernel(t *testing.T) {
	for _, tc := range connCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.run(t, kernelPair(t))
			for _, tr := range []string{"inproc", "unix"} {
				got := tc.run(t, nlemuPair(t, tr))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s: transcript differs from the kernel's (-kernel +nlemu):\n%s", tr, d)
				}
			}
			if testing.Verbose() {
				t.Logf("kernel:\n%s", strings.Join(want, "\n"))
			}
		})
	}
}

func kernelPair(t *testing.T) *pair {
	ns := kernelns.NewForTest(t, "h-go")
	f, err := os.Open(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p pair
	for _, c := range []**netlink.Conn{&p.a, &p.b} {
		conn, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(f.Fd())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		*c = conn
	}
	return &p
}

func nlemuPair(t *testing.T, transport string) *pair {
	srv := server.New(server.Config{})
	t.Cleanup(func() { srv.Close() })
	if err := srv.Namespaces().Add("t"); err != nil {
		t.Fatal(err)
	}
	dial := func() (*client.Socket, error) { return client.DialServer(srv, "t") }
	if transport == "unix" {
		path := t.TempDir() + "/nlemu.sock"
		l, err := srv.ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		dial = func() (*client.Socket, error) { return client.Dial(path, "t") }
	}
	var p pair
	for _, c := range []**netlink.Conn{&p.a, &p.b} {
		sock, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		conn := netlink.NewConn(sock, sock.PortID())
		t.Cleanup(func() { conn.Close() })
		*c = conn
	}
	return &p
}

// TestSyscallConnNotOffered: the one netlink.Conn method that differs
// from a kernel socket: there is no descriptor of a netlink socket to give,
// and netlink.Conn says so with its own "not supported" error.
func TestSyscallConnNotOffered(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	sock, err := client.DialServer(srv, "")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewConn(sock)
	defer c.Close()
	rc, err := c.SyscallConn()
	if rc != nil || err == nil || err.Error() != "netlink syscall-conn: operation not supported" {
		t.Fatalf("SyscallConn() = %v, %v; want nil and netlink's not-supported error", rc, err)
	}
}
