package server_test

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// routeGetClient is an in-process client of a fresh server whose
// namespace "b" holds routeGetSetup's routes of family fam.
func routeGetClient(t *testing.T, fam uint8) (*server.Client, [][]byte) {
	t.Helper()
	srv := server.New(server.Config{})
	t.Cleanup(func() { srv.Close() })
	srv.Namespaces().Add("b")
	c, err := srv.Dial(server.Options{Namespace: "b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, routeGetSetup(t, c, fam)
}

// TestRecvIntoMatchesRecv checks RecvInto against Recv, the slow obvious
// reference: the same replies, byte for byte, for single gets and for
// three gets in one datagram (three replies queued at once, more than one
// lent buffer in flight); and replies taken with Recv stay intact while
// later replies reuse the lent buffers.
func TestRecvIntoMatchesRecv(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		c, gets := routeGetClient(t, fam)
		recv := func(into bool) []byte {
			t.Helper()
			if !into {
				r, err := c.Recv()
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			buf := make([]byte, 8192)
			n, err := c.RecvInto(buf)
			if err != nil || n > len(buf) {
				t.Fatalf("RecvInto: %d, %v", n, err)
			}
			return buf[:n]
		}
		var kept [][]byte // replies returned by Recv, not copied
		var want [][]byte
		for i := 0; i < 60; i++ {
			var req []byte
			var n int
			switch i % 3 {
			case 0, 1:
				req, n = gets[i], 1
			case 2:
				req, n = append(append(append([]byte(nil), gets[i]...), gets[i+1]...), gets[i+2]...), 3
			}
			if err := c.Send(req); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			for j := 0; j < n; j++ {
				got = append(got, recv(i%2 == 0))
			}
			for j, r := range got {
				if err := c.Send(gets[i+j]); err != nil {
					t.Fatal(err)
				}
				ref := recv(false)
				if diff := cmp.Diff(ref, r); diff != "" {
					t.Fatalf("family %d get %d.%d: RecvInto differs from Recv (-Recv +RecvInto):\n%s", fam, i, j, diff)
				}
				kept = append(kept, ref)
				want = append(want, append([]byte(nil), ref...))
			}
		}
		if diff := cmp.Diff(want, kept); diff != "" {
			t.Fatalf("family %d: replies taken with Recv changed by later gets:\n%s", fam, diff)
		}
	}
}

// TestRecvIntoTruncates: a datagram longer than the buffer is cut to it
// and its full length returned, as recvmsg(2) with MSG_TRUNC; the next
// datagram is whole.
func TestRecvIntoTruncates(t *testing.T) {
	c, gets := routeGetClient(t, rtnl.AF_INET6)
	if err := c.Send(gets[0]); err != nil {
		t.Fatal(err)
	}
	full, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 1, 20, len(full) - 1, len(full), len(full) + 1} {
		if err := c.Send(gets[0]); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size)
		n, err := c.RecvInto(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(full) {
			t.Errorf("buffer %d: length %d, want %d", size, n, len(full))
		}
		if got, want := buf[:min(n, size)], full[:min(n, size)]; !cmp.Equal(got, want) {
			t.Errorf("buffer %d: %x, want %x", size, got, want)
		}
	}
}

// TestInprocRouteGetAllocatesNothing: a route get round trip over an
// in-process client that reads with RecvInto allocates nothing (the
// server encodes each reply into a buffer lent back by the reader).
func TestInprocRouteGetAllocatesNothing(t *testing.T) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		c, gets := routeGetClient(t, fam)
		buf := make([]byte, 8192)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			if err := c.Send(gets[i%len(gets)]); err != nil {
				t.Fatal(err)
			}
			i++
			if n, err := c.RecvInto(buf); err != nil || uint16(buf[4]) != rtnl.RTM_NEWROUTE {
				t.Fatalf("reply %x, %v", buf[:min(n, 64)], err)
			}
		})
		if allocs != 0 {
			t.Errorf("family %d: %v allocations per route get, want 0", fam, allocs)
		}
	}
}

// TestUnixRecvIntoMatchesRecv: over the Unix socket RecvInto returns what
// Recv returns.
func TestUnixRecvIntoMatchesRecv(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	srv.Namespaces().Add("b")
	path := t.TempDir() + "/s.sock"
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	c, err := server.DialUnix(path, server.Options{Namespace: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gets := routeGetSetup(t, c, rtnl.AF_INET)
	buf := make([]byte, 8192)
	for i := 0; i < 20; i++ {
		if err := c.Send(gets[i]); err != nil {
			t.Fatal(err)
		}
		n, err := c.RecvInto(buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(gets[i]); err != nil {
			t.Fatal(err)
		}
		ref, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ref, buf[:n]); diff != "" {
			t.Fatalf("get %d: RecvInto differs from Recv (-Recv +RecvInto):\n%s", i, diff)
		}
	}
}

// TestInprocAckAllocatesNothing: an ACK is encoded into the lent reply
// buffer too, with the bytes rtnl.AppendAck gives on its own, and a
// request loop that reads its success ACKs with RecvInto allocates nothing
// (an error's ACK still builds its error and extack TLVs).
func TestInprocAckAllocatesNothing(t *testing.T) {
	c, _ := routeGetClient(t, rtnl.AF_INET)
	if err := c.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_EXT_ACK, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		typ  uint16
		body []byte
	}{
		{"noop", rtnl.NLMSG_NOOP, nil},
		// An unknown rtnetlink type: EOPNOTSUPP, the request echoed.
		{"error", rtnl.RTM_MAX + 1, make([]byte, 12)},
	} {
		req := rtnl.AppendMessage(nil, tc.typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 7, c.PortID(), tc.body)
		if err := c.Send(req); err != nil {
			t.Fatal(err)
		}
		got, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		msgs := rtnl.SplitDatagram(req)
		var ackErr *rtnl.Error
		if tc.typ != rtnl.NLMSG_NOOP {
			ackErr = rtnl.Errno(syscall.EOPNOTSUPP)
		}
		want := rtnl.AppendAck(nil, &msgs[0], c.PortID(), ackErr, rtnl.AckOptions{ExtAck: true})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: ACK differs from rtnl.AppendAck's (-want +got):\n%s", tc.name, diff)
		}
		if ackErr != nil {
			continue
		}
		buf := make([]byte, 8192)
		allocs := testing.AllocsPerRun(1000, func() {
			if err := c.Send(req); err != nil {
				t.Fatal(err)
			}
			if n, err := c.RecvInto(buf); err != nil || n != len(want) {
				t.Fatalf("ACK of %d bytes, %v", n, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per ACK, want 0", tc.name, allocs)
		}
	}
}
