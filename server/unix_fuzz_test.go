package server_test

import (
	"errors"
	"net"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// fuzzNS is the namespace the Unix-socket fuzz targets' seeds name (the
// HELLO captured from `nlemu exec -n fzs`).
const fuzzNS = "fzs"

// probeSeq is the sequence number of the NLMSG_NOOP probe that follows a
// fuzzed datagram: netlink_rcv_skb() acks a non-request type when asked.
const probeSeq = 0xfeed

var probe = rtnl.AppendMessage(nil, rtnl.NLMSG_NOOP, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, probeSeq, 0)

// resetNamespaces brings the registry back to default and an empty fuzzNS,
// whatever the last input added or deleted.
func resetNamespaces(t *testing.T, srv *server.Server) {
	nsm := srv.Namespaces()
	for _, n := range nsm.List() {
		if n != "default" {
			nsm.Del(n)
		}
	}
	if err := nsm.Add(fuzzNS); err != nil {
		t.Fatal(err)
	}
}

// readProbe reads datagrams until the probe's success ACK, resending the
// probe after an NLEMU_SOCKERR (the fuzzed datagram may have shrunk the
// receive buffer so that the ACK itself overflowed, as the kernel drops
// it); read reads one datagram with a deadline.
func readProbe(t *testing.T, read func() ([]byte, error), send func([]byte) error) {
	t.Helper()
	for tries := 0; ; {
		d, err := read()
		overflow := errors.Is(err, syscall.ENOBUFS) // the in-process client's SOCKERR
		if err != nil && !overflow {
			t.Fatalf("no answer to the probe after the fuzzed datagram: %v", err)
		}
		for _, m := range rtnl.SplitDatagram(d) {
			if uint16(m.Header.Type) == rtnl.NLEMU_SOCKERR {
				overflow = true
			}
			if m.Header.Type == rtnl.NLMSG_ERROR && m.Header.Sequence == probeSeq {
				if len(m.Data) < 4 || ne32(m.Data) != 0 {
					t.Fatalf("probe answered %x", m.Raw)
				}
				return
			}
		}
		if overflow {
			if tries++; tries > 8 {
				t.Fatal("probe keeps overflowing")
			}
			if err := send(probe); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// unixFuzzer is one server and Unix listener reused by every input of a
// fuzzing process.
type unixFuzzer struct {
	srv  *server.Server
	path string
	buf  []byte
}

// run connects, sends hello as the first datagram and checks the
// handshake's contract (docs/PROTOCOL.md): exactly one well-framed answer,
// an NLEMU_HELLO accepting the socket or an NLMSG_ERROR refusing it (and
// then the end of the stream), or only the end of the stream for an empty
// datagram. An accepted socket then gets next, and must still answer a
// probe after it; the server must accept a fresh client.
func (u *unixFuzzer) run(t *testing.T, hello, next []byte) {
	resetNamespaces(t, u.srv)
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: u.path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	read := func() ([]byte, error) {
		uc.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := uc.Read(u.buf)
		if err != nil {
			return nil, err
		}
		return u.buf[:n], nil
	}
	send := func(b []byte) error { _, err := uc.Write(b); return err }
	if err := send(hello); err != nil {
		t.Fatal(err)
	}
	d, err := read()
	if len(hello) == 0 {
		// An empty datagram is the end of the stream on SEQPACKET.
		if err == nil {
			t.Fatalf("answer to an empty hello: %x", d)
		}
	} else {
		if err != nil {
			t.Fatalf("no answer to hello %x: %v", hello, err)
		}
		msgs := rtnl.SplitDatagram(d)
		if len(msgs) != 1 || len(msgs[0].Raw) != len(d) {
			t.Fatalf("answer is not one message: %x", d)
		}
		switch m := msgs[0]; uint16(m.Header.Type) {
		case rtnl.NLEMU_HELLO:
			if len(m.Data) != 12 { // version, port id, poll word (loop.go, pollWord)
				t.Fatalf("bad HELLO answer %x", d)
			}
			if len(next) > 0 {
				if err := send(next); err != nil {
					t.Fatal(err)
				}
			}
			if err := send(probe); err != nil {
				t.Fatal(err)
			}
			readProbe(t, read, send)
		case rtnl.NLMSG_ERROR:
			if len(m.Data) < 4 || int32(ne32(m.Data)) >= 0 {
				t.Fatalf("refusal without an errno: %x", d)
			}
			if d, err := read(); err == nil {
				t.Fatalf("refused socket kept open, sent %x", d)
			}
		default:
			t.Fatalf("answer of type %#x to hello", m.Header.Type)
		}
	}
	// The server still serves new clients.
	cl, err := server.DialUnix(u.path, server.Options{Namespace: "default"})
	if err != nil {
		t.Fatalf("server no longer accepts clients: %v", err)
	}
	defer cl.Close()
	cl.SetRecvTimeout(3 * time.Second)
	if err := cl.Send(probe); err != nil {
		t.Fatal(err)
	}
	readProbe(t, cl.Recv, cl.Send)
}

// FuzzUnixHandshake sends an arbitrary first datagram (the HELLO) and an
// arbitrary second one over a real Unix SEQPACKET connection. Seeds
// (testdata/fuzz/FuzzUnixHandshake) are the HELLOs the shim sent for
// `nlemu exec -n fzs -- ip ...`, each followed by the first datagram after
// it: control messages and ip's requests.
func FuzzUnixHandshake(f *testing.F) {
	f.Add([]byte("\x24\x00\x00\x00\x00\xfe\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\xa7\x1b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00fzs\x00"), []byte{})
	srv := server.New(server.Config{})
	path := filepath.Join(f.TempDir(), "s")
	l, err := srv.ListenUnix(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { l.Close(); srv.Close() })
	u := &unixFuzzer{srv: srv, path: path, buf: make([]byte, 1<<16)}
	f.Fuzz(u.run)
}

// FuzzControl sends one nlemu control message (type 0xFE00+kind: socket
// options, bind, namespace management, stats, and every reserved type)
// with arbitrary flags and payload on an in-process socket, then a probe.
// Checks: SETSOCKOPT, BIND and unknown types answer NLEMU_ACK exactly when
// NLM_F_ACK is set; namespace management (the ephemeral list too) and
// stats always answer an NLMSG_ERROR; a refused namespace change leaves
// the registry as it was; the socket answers the probe after. Seeds (testdata/fuzz/FuzzControl)
// are the control messages the shim and `nlemu netns|stats` sent.
func FuzzControl(f *testing.F) {
	f.Add(uint8(1), uint16(0), []byte("\x0e\x01\x00\x00\x00\xfe\x00\x00\x00\x80\x00\x00"))
	srv := server.New(server.Config{})
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, kind uint8, flags uint16, body []byte) {
		resetNamespaces(t, srv)
		c, err := srv.Dial(server.Options{Namespace: fuzzNS, ExtAck: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetRecvTimeout(3 * time.Second)
		typ := rtnl.NLEMU_CTRL_MIN + uint16(kind)
		before := srv.Namespaces().List()
		const seq = 9
		if err := c.Send(rtnl.AppendMessage(nil, typ, flags, seq, 0, body)); err != nil {
			t.Fatal(err)
		}
		admin := typ == rtnl.NLEMU_NETNS_ADD || typ == rtnl.NLEMU_NETNS_DEL ||
			typ == rtnl.NLEMU_NETNS_LIST || typ == rtnl.NLEMU_STATS ||
			typ == rtnl.NLEMU_NETNS_EPHEMERAL
		if admin || flags&rtnl.NLM_F_ACK != 0 {
			var got *rtnl.Message
			for got == nil {
				d, err := c.Recv()
				if errors.Is(err, syscall.ENOBUFS) {
					continue // an overflow the option allowed; the answer is forced
				}
				if err != nil {
					t.Fatalf("type %#x flags %#x: no answer: %v", typ, flags, err)
				}
				for _, m := range rtnl.SplitDatagram(d) {
					if m.Header.Sequence == seq && (m.Header.Type == rtnl.NLMSG_ERROR || uint16(m.Header.Type) == rtnl.NLEMU_ACK) {
						got = &m
					}
				}
			}
			want := uint16(rtnl.NLEMU_ACK)
			if admin {
				want = rtnl.NLMSG_ERROR
			}
			if uint16(got.Header.Type) != want || len(got.Data) < 4 {
				t.Fatalf("type %#x answered %x", typ, got.Raw)
			}
			if admin && ne32(got.Data) != 0 {
				if d := cmp.Diff(before, srv.Namespaces().List()); d != "" {
					t.Fatalf("refused %#x changed the namespaces:\n%s", typ, d)
				}
			}
		}
		if err := c.Send(probe); err != nil {
			t.Fatal(err)
		}
		readProbe(t, c.Recv, c.Send)
		if !slices.Contains(srv.Namespaces().List(), "default") {
			t.Fatal("default namespace gone")
		}
	})
}
