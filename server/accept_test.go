package server

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// helloMsg is a HELLO for namespace ns with option bits opts.
func helloMsg(ns string, opts uint32) []byte {
	p := make([]byte, 16, 16+len(ns)+1)
	ne.PutUint32(p, protocolVersion)
	ne.PutUint32(p[4:], uint32(os.Getpid()))
	ne.PutUint32(p[8:], opts)
	return rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, append(append(p, ns...), 0))
}

// rawConn connects to path without saying anything.
func rawConn(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return uc
}

// readMsgs reads one datagram (hangLimit at most) and splits it; an error
// is returned as such (end of stream is io.EOF).
func readMsgs(uc *net.UnixConn) ([]rtnl.Message, error) {
	uc.SetReadDeadline(time.Now().Add(hangLimit))
	buf := make([]byte, 1<<16)
	n, err := uc.Read(buf)
	if err != nil {
		return nil, err
	}
	return rtnl.SplitDatagram(buf[:n]), nil
}

// msgTypes is the types of a datagram's messages, with an ack's errno.
func msgTypes(msgs []rtnl.Message) []string {
	var out []string
	for _, m := range msgs {
		switch uint16(m.Header.Type) {
		case rtnl.NLEMU_HELLO:
			out = append(out, "HELLO")
		case rtnl.NLMSG_ERROR:
			a := T.ParseAck(m)
			out = append(out, "ERROR "+syscall.Errno(a.Errno).Error())
		default:
			out = append(out, "other")
		}
	}
	return out
}

func acceptListen(t *testing.T, cfg Config) (*Server, *Listener) {
	t.Helper()
	s := New(cfg)
	t.Cleanup(func() { s.Close() })
	l, err := s.ListenUnix(filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return s, l
}

// TestHelloAnsweredBeforeFirstRequest: a client that sends its HELLO and
// its first request back to back, before reading anything, gets the
// HELLO's answer first and then the request's: the acceptor answers the
// HELLO before the connection reaches an event loop, which reads the
// request the HELLO left in the socket.
func TestHelloAnsweredBeforeFirstRequest(t *testing.T) {
	_, l := acceptListen(t, Config{})
	uc := rawConn(t, l.Path())
	noop := rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 7, 0)
	for _, b := range [][]byte{helloMsg("default", 0), noop} {
		if _, err := uc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 2 {
		msgs, err := readMsgs(uc)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgTypes(msgs)...)
	}
	if diff := cmp.Diff([]string{"HELLO", "ERROR " + syscall.Errno(0).Error()}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestSilentPeerDoesNotBlockAccept: a connection that never sends its
// HELLO (a spare the supervisor made ahead, or a stuck client) waits in
// the acceptor's epoll set; connections after it are answered meanwhile,
// and it is closed at its deadline (helloWait, shortened here), giving its
// connection slot back.
func TestSilentPeerDoesNotBlockAccept(t *testing.T) {
	defer func(d time.Duration) { helloWait = d }(helloWait)
	helloWait = 300 * time.Millisecond
	s, l := acceptListen(t, Config{})
	silent := rawConn(t, l.Path())
	for i := range 3 {
		c, err := DialUnix(l.Path(), Options{})
		if err != nil {
			t.Fatalf("connection %d behind a silent one: %v", i, err)
		}
		c.Close()
	}
	if _, err := readMsgs(silent); err == nil {
		t.Fatal("the silent connection got an answer")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the silent connection was never closed")
	}
	waitFor(t, "every slot given back", func() bool { return s.connSlots() == 0 })
}

// TestHelloAfterWaitAnswered: a HELLO sent a while after connect (the
// supervisor's spare connections) is answered from the epoll set, with the
// connection then served like any other.
func TestHelloAfterWaitAnswered(t *testing.T) {
	_, l := acceptListen(t, Config{})
	uc := rawConn(t, l.Path())
	// The acceptor has accepted it and found nothing to read once a
	// connection made after it is answered.
	c, err := DialUnix(l.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := uc.Write(helloMsg("default", 0)); err != nil {
		t.Fatal(err)
	}
	msgs, err := readMsgs(uc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"HELLO"}, msgTypes(msgs)); diff != "" {
		t.Fatalf("answer (-want +got):\n%s", diff)
	}
	probe := rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 9, 0)
	if _, err := uc.Write(probe); err != nil {
		t.Fatal(err)
	}
	if msgs, err = readMsgs(uc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ERROR " + syscall.Errno(0).Error()}, msgTypes(msgs)); diff != "" {
		t.Errorf("probe's answer (-want +got):\n%s", diff)
	}
}

// TestRefusalAnsweredWhileOthersWait: past --max-conns a connection is
// still answered (EAGAIN at HELLO) when its HELLO comes late, and a
// refused connection that waits for its HELLO holds up neither the other
// refusals nor the slot a closed connection gives back.
func TestRefusalAnsweredWhileOthersWait(t *testing.T) {
	s, l := acceptListen(t, Config{Limits: Limits{MaxConns: 1}})
	held, err := DialUnix(l.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	late := rawConn(t, l.Path())                                               // refused, HELLO not sent yet
	if got := rawHelloRefusal(t, l.Path()); got.Errno != int(syscall.EAGAIN) { // refused meanwhile
		t.Fatalf("refusal %v, want EAGAIN", got)
	}
	if _, err := late.Write(helloMsg("default", 0)); err != nil {
		t.Fatal(err)
	}
	msgs, err := readMsgs(late)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ERROR " + syscall.EAGAIN.Error()}, msgTypes(msgs)); diff != "" {
		t.Fatalf("late HELLO's answer (-want +got):\n%s", diff)
	}
	if _, err := readMsgs(late); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("refused connection not closed after its answer: %v", err)
	}
	held.Close()
	waitFor(t, "the slot given back", func() bool { return s.connSlots() == 0 })
	c, err := DialUnix(l.Path(), Options{})
	if err != nil {
		t.Fatalf("after the close: %v", err)
	}
	c.Close()
	waitFor(t, "no refusal still counted", func() bool {
		s.lim.mu.Lock()
		defer s.lim.mu.Unlock()
		return s.lim.refusing == 0
	})
}

// TestListenerCloseEndsWaitingConnections: Listener.Close closes the
// connections still waiting for their HELLO (their slots given back),
// removes the socket file and refuses new connections; a second Close
// reports net.ErrClosed.
func TestListenerCloseEndsWaitingConnections(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	l, err := s.ListenUnix(filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	uc := rawConn(t, l.Path())
	c, err := DialUnix(l.Path(), Options{}) // uc has been accepted by now
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsgs(uc); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("waiting connection after Close: %v, want end of stream", err)
	}
	if _, err := os.Lstat(l.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	if err := l.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v, want net.ErrClosed", err)
	}
	// The served connection is not the listener's: it still answers.
	probe := rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 3, 0)
	if a := limitAck(t, c, probe); a.Errno != 0 {
		t.Errorf("served connection after Close: %v", a)
	}
	waitFor(t, "the waiting connection's slot given back", func() bool { return s.connSlots() == 1 })
}

// TestHelloTooLongRefused: a first datagram longer than the acceptor's
// buffer is refused as not a HELLO (EPROTO), not dropped unanswered.
func TestHelloTooLongRefused(t *testing.T) {
	_, l := acceptListen(t, Config{})
	uc := rawConn(t, l.Path())
	uc.SetWriteBuffer(4 * helloBuf)
	if _, err := uc.Write(helloMsg(string(make([]byte, 2*helloBuf)), 0)); err != nil {
		t.Fatal(err)
	}
	msgs, err := readMsgs(uc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ERROR " + syscall.EPROTO.Error()}, msgTypes(msgs)); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

// groupFramesOpt is the option the supervisor sends right behind its
// HELLO, with ack asked for when ack.
func groupFramesOpt(ack bool, seq uint32) []byte {
	var p [12]byte
	ne.PutUint32(p[0:], rtnl.SOL_NETLINK)
	ne.PutUint32(p[4:], rtnl.NLEMU_GROUPFRAMES)
	ne.PutUint32(p[8:], 1)
	var flags uint16
	if ack {
		flags = rtnl.NLM_F_ACK
	}
	return rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, flags, seq, 0, p[:])
}

// TestOptionsBehindHelloAnsweredInOrder: a socket option and a request
// sent right behind the HELLO, before its answer is read, are answered in
// order after it (the option by the acceptor when it is already queued,
// else by the loop).
func TestOptionsBehindHelloAnsweredInOrder(t *testing.T) {
	_, l := acceptListen(t, Config{})
	for i := range 20 {
		uc := rawConn(t, l.Path())
		noop := rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 7, 0)
		for _, b := range [][]byte{helloMsg("default", 0), groupFramesOpt(true, 5), noop} {
			if _, err := uc.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for range 3 {
			msgs, err := readMsgs(uc)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if uint16(m.Header.Type) == rtnl.NLEMU_ACK {
					got = append(got, "ACK")
					continue
				}
				got = append(got, msgTypes([]rtnl.Message{m})...)
			}
		}
		if diff := cmp.Diff([]string{"HELLO", "ACK", "ERROR " + syscall.Errno(0).Error()}, got); diff != "" {
			t.Fatalf("connection %d: answers (-want +got):\n%s", i, diff)
		}
		uc.Close()
	}
}

// TestRefusalWithDatagramBehindHelloNotReset: a HELLO refused while the
// client's next datagram waits behind it (the supervisor's GROUPFRAMES)
// reaches the client as the refusal, not as ECONNRESET: the server reads
// what is queued before it closes (unix_release_sock() resets a peer
// whose data was left unread).
func TestRefusalWithDatagramBehindHelloNotReset(t *testing.T) {
	_, l := acceptListen(t, Config{})
	for i := range 20 {
		uc := rawConn(t, l.Path())
		if _, err := uc.Write(helloMsg("no-such-namespace", 0)); err != nil {
			t.Fatal(err)
		}
		// EPIPE when the refusal came first (shutdown SHUT_RD).
		if _, err := uc.Write(groupFramesOpt(false, 0)); err != nil && !errors.Is(err, syscall.EPIPE) {
			t.Fatal(err)
		}
		msgs, err := readMsgs(uc)
		if err != nil {
			t.Fatalf("connection %d: %v, want the refusal", i, err)
		}
		if diff := cmp.Diff([]string{"ERROR " + syscall.ENOENT.Error()}, msgTypes(msgs)); diff != "" {
			t.Fatalf("connection %d: answer (-want +got):\n%s", i, diff)
		}
		uc.Close()
	}
}
