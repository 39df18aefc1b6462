package supervise

import (
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

func ctlMsg(typ uint16, seq, v uint32) []byte {
	b := make([]byte, 4)
	ne.PutUint32(b, v)
	return rtnl.AppendMessage(nil, typ, 0, seq, 0, b)
}

// TestClassify: how each kind of datagram from the server reaches a
// receive call (the shim's recv_one()).
func TestClassify(t *testing.T) {
	reply := rtnl.AppendMessage(nil, unix.NLMSG_ERROR, 0, 7, 99, make([]byte, 20))
	notif := rtnl.AppendMessage(nil, unix.RTM_NEWRULE, 0, 0, 99, make([]byte, 12))
	framed := append(ctlMsg(rtnl.NLEMU_GROUP, 0, 8), notif...)
	type res struct {
		Kind    int
		Group   uint32
		Payload []byte
		Dlen    int
		Errno   syscall.Errno
	}
	for _, tc := range []struct {
		name string
		d    []byte
		n    int
		want res
	}{
		{"reply", reply, len(reply), res{kindData, 0, reply, len(reply), 0}},
		{"framed notification: group stripped", framed, len(framed), res{kindData, 8, notif, len(notif), 0}},
		{"framed, truncated read", framed[:24], len(framed), res{kindData, 8, framed[20:24], len(notif), 0}},
		{"sockerr", ctlMsg(rtnl.NLEMU_SOCKERR, 0, uint32(unix.ENOBUFS)), 20, res{kindError, 0, nil, 0, unix.ENOBUFS}},
		{"sockerr without an errno is ENOBUFS", ctlMsg(rtnl.NLEMU_SOCKERR, 0, 0), 20, res{kindError, 0, nil, 0, unix.ENOBUFS}},
		{"ack", ctlMsg(rtnl.NLEMU_ACK, 3, 0), 20, res{kindAck, 0, nil, 0, 0}},
		{"a lone GROUP frame is data", ctlMsg(rtnl.NLEMU_GROUP, 0, 8), 20, res{kindData, 0, ctlMsg(rtnl.NLEMU_GROUP, 0, 8), 20, 0}},
	} {
		var got res
		got.Kind, got.Group, got.Payload, got.Dlen, got.Errno = classify(tc.d, tc.n)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// FuzzClassify: any datagram decodes without a panic, and data is a part
// of what was read, no longer than the datagram.
func FuzzClassify(f *testing.F) {
	f.Add(ctlMsg(rtnl.NLEMU_GROUP, 0, 8), 40)
	f.Add(ctlMsg(rtnl.NLEMU_SOCKERR, 0, 105), 20)
	f.Add(ctlMsg(rtnl.NLEMU_ACK, 1, 0), 20)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, d []byte, extra int) {
		n := len(d) + max(extra, 0)%4096
		kind, _, payload, dlen, errno := classify(d, n)
		switch kind {
		case kindData:
			if len(payload) > len(d) || dlen < len(payload) || dlen > n {
				t.Fatalf("payload %d bytes, dlen %d, read %d of %d", len(payload), dlen, len(d), n)
			}
		case kindError:
			if errno <= 0 || errno > 4095 {
				t.Fatalf("errno %d", errno)
			}
		}
	})
}

// TestSeqpacketSendtoIgnoresAddress is the kernel fact that keeps sends out
// of the supervisor: unix_seqpacket_sendmsg() drops msg_name, so a sendto
// with a sockaddr_nl destination on the injected SOCK_SEQPACKET socket
// sends the datagram as a plain send (measured on Linux 6.18).
func TestSeqpacketSendtoIgnoresAddress(t *testing.T) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	msg := []byte("a netlink datagram")
	if err := unix.Sendto(p[0], msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatalf("sendto with a sockaddr_nl: %v", err)
	}
	buf := make([]byte, 64)
	n, _, err := unix.Recvfrom(p[1], buf, 0)
	if err != nil || string(buf[:n]) != string(msg) {
		t.Fatalf("received %q, %v", buf[:n], err)
	}
}

// TestSeqpacketTruncReportsFullLength is the kernel fact recvOne's
// MSG_TRUNC relies on: unix_dgram_recvmsg() returns a datagram's full
// length with MSG_TRUNC whatever the buffer, as netlink_recvmsg() does.
func TestSeqpacketTruncReportsFullLength(t *testing.T) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := unix.Write(p[0], make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	n, _, err := unix.Recvfrom(p[1], buf, unix.MSG_PEEK|unix.MSG_TRUNC)
	if err != nil || n != 100 {
		t.Fatalf("peek|trunc into 10 bytes: %d, %v; want 100", n, err)
	}
	n, _, err = unix.Recvfrom(p[1], buf, unix.MSG_TRUNC)
	if err != nil || n != 100 {
		t.Fatalf("trunc into 10 bytes: %d, %v; want 100", n, err)
	}
}

// TestTakeWaitSlotLeavesAReader: at most Workers-1 receives wait inline at
// a time, so one worker is always left reading notifications (a call that
// would bring the waiters' data is never stuck behind them); a call holding
// a slot keeps it.
func TestTakeWaitSlotLeavesAReader(t *testing.T) {
	s := &Supervisor{}
	calls := make([]call, Workers+2)
	took := 0
	for i := range calls {
		if s.takeWaitSlot(&calls[i]) {
			took++
		}
	}
	if took != Workers-1 || int(s.inlineWaits.Load()) != Workers-1 {
		t.Fatalf("%d slots taken (%d counted) of %d calls, want %d", took, s.inlineWaits.Load(), len(calls), Workers-1)
	}
	for i := range calls {
		if calls[i].slot && !s.takeWaitSlot(&calls[i]) {
			t.Errorf("call %d lost its slot", i)
		}
	}
}

// TestBriefWait: the worker's short wait reports data that is queued or
// arrives, and gives up on a socket that stays empty.
func TestBriefWait(t *testing.T) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if briefWait(p[1]) {
		t.Error("empty socket: readable")
	}
	if _, err := unix.Write(p[0], []byte("reply")); err != nil {
		t.Fatal(err)
	}
	if !briefWait(p[1]) {
		t.Error("queued datagram: not readable")
	}
}

// TestNonblockingReceiveWaitsForOwedReply: netlink queues a request's
// reply before the request's send returns, so a nonblocking receive right
// after finds it; the supervisor's receive waits for it while the request
// is still queued to the server (requestQueued: the socket's unread
// output), and gives up owedGrace after the server has read a request it
// does not answer.
func TestNonblockingReceiveWaitsForOwedReply(t *testing.T) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	client, server := p[0], p[1]
	if requestQueued(client) {
		t.Fatal("fresh socket: a request queued")
	}
	if _, err := unix.Write(client, []byte("request")); err != nil {
		t.Fatal(err)
	}
	if !requestQueued(client) {
		t.Fatal("request sent and not read: none queued")
	}
	// the server reads the request and answers it
	answered := make(chan error, 1)
	go func() {
		b := make([]byte, 64)
		if _, err := unix.Read(server, b); err != nil {
			answered <- err
			return
		}
		_, err := unix.Write(server, []byte("reply"))
		answered <- err
	}()
	if !owedWait(client, time.Minute) {
		t.Error("the reply to a queued request was not waited for")
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	if n, err := unix.Read(client, b); err != nil || string(b[:n]) != "reply" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
	// a request the server reads and does not answer: the wait ends
	// (owedGrace after it is read), not at the limit
	if _, err := unix.Write(client, []byte("no reply")); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Read(server, b); err != nil {
		t.Fatal(err)
	}
	if requestQueued(client) {
		t.Error("request read by the server: still queued")
	}
	if owedWait(client, time.Hour) {
		t.Error("readable with nothing sent back")
	}
}
