package server_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// hangLimit only detects a hang (a deadlock never returns); it is not a
// performance bound.
const hangLimit = 2 * time.Minute

var ne = binary.NativeEndian

// waitAll waits for n results from done, failing with what if they do not
// come (a deadlock).
func waitAll(t *testing.T, done <-chan error, n int, what string) {
	t.Helper()
	deadline := time.After(hangLimit)
	for i := 0; i < n; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("%s: %d of %d goroutines never returned (deadlock)", what, n-i, n)
		}
	}
}

// TestConcurrentStatsDoNotDeadlock: STATS used to run with the asking
// socket's lock held and then take every other socket's lock, so two
// concurrent `nlemu stats` each waited for the other forever.
func TestConcurrentStatsDoNotDeadlock(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	dials := map[string]func() (*server.Client, error){
		"inproc": func() (*server.Client, error) { return srv.Dial(server.Options{}) },
		"unix":   func() (*server.Client, error) { return server.DialUnix(path, server.Options{}) },
	}
	for name, dial := range dials {
		t.Run(name, func(t *testing.T) {
			const loops, iters = 4, 300
			done := make(chan error, loops)
			for i := 0; i < loops; i++ {
				go func() {
					c, err := dial()
					if err != nil {
						done <- err
						return
					}
					defer c.Close()
					for j := 0; j < iters; j++ {
						if _, err := c.ServerStats(); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
			}
			waitAll(t, done, loops, "concurrent STATS")
		})
	}
}

// request sends one message with NLM_F_ACK and reads up to its ACK,
// returning the errno (0 on success) and the messages before it.
func request(c *server.Client, typ, flags uint16, seq uint32, body []byte) (syscall.Errno, []rtnl.Message, error) {
	if err := c.Send(T.Msg(typ, flags|rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, seq, body)); err != nil {
		return 0, nil, err
	}
	var got []rtnl.Message
	for {
		b, err := c.Recv()
		if err != nil {
			return 0, nil, err
		}
		for _, m := range rtnl.SplitDatagram(b) {
			if m.Header.Sequence != seq {
				continue
			}
			switch m.Header.Type {
			case rtnl.NLMSG_ERROR:
				return syscall.Errno(T.ParseAck(m).Errno), got, nil
			case rtnl.NLMSG_DONE:
				return 0, got, nil
			}
			got = append(got, m)
		}
	}
}

// TestStressStatsDumpsChangesConnectsThenClose runs STATS, dumps, rule
// changes, namespace changes, connects and disconnects at once over both
// transports, then checks that nothing counted was lost and that
// Server.Close returns while clients are still busy.
func TestStressStatsDumpsChangesConnectsThenClose(t *testing.T) {
	srv := server.New(server.Config{})
	path := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	dial := func(i int, o server.Options) (*server.Client, error) {
		if i%2 == 0 {
			return srv.Dial(o)
		}
		return server.DialUnix(path, o)
	}
	const iters = 200
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		adds int
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for i := 0; i < 2; i++ {
		ns := fmt.Sprintf("stress-%d", i)
		if err := srv.Namespaces().Add(ns); err != nil {
			t.Fatal(err)
		}
		wg.Add(4)
		go func() { // STATS
			defer wg.Done()
			c, err := dial(i, server.Options{})
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			for j := 0; j < iters; j++ {
				if _, err := c.ServerStats(); err != nil {
					fail(err)
					return
				}
			}
		}()
		go func() { // dumps
			defer wg.Done()
			c, err := dial(i+1, server.Options{Namespace: ns})
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			for j := 0; j < iters; j++ {
				if _, _, err := request(c, rtnl.RTM_GETRULE, rtnl.NLM_F_DUMP, uint32(j+1), T.Body(T.Hdr{Family: rtnl.AF_INET})); err != nil {
					fail(err)
					return
				}
			}
		}()
		go func() { // rule changes
			defer wg.Done()
			c, err := dial(i, server.Options{Namespace: ns})
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			for j := 0; j < iters; j++ {
				body := T.Body(T.V4(100), T.Pref(uint32(1000+j)))
				if e, _, err := request(c, rtnl.RTM_NEWRULE, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, uint32(2*j+1), body); err != nil || e != 0 {
					fail(fmt.Errorf("add: %v %v", e, err))
					return
				}
				mu.Lock()
				adds++
				mu.Unlock()
				if j%2 == 0 {
					if e, _, err := request(c, rtnl.RTM_DELRULE, 0, uint32(2*j+2), body); err != nil || e != 0 {
						fail(fmt.Errorf("del: %v %v", e, err))
						return
					}
				}
			}
		}()
		go func() { // connects, disconnects, namespace changes
			defer wg.Done()
			for j := 0; j < iters; j++ {
				c, err := dial(i+j, server.Options{})
				if err != nil {
					fail(err)
					return
				}
				name := fmt.Sprintf("churn-%d-%d", i, j)
				if err := c.NetnsAdd(name); err != nil {
					fail(err)
				}
				if err := c.NetnsDel(name); err != nil {
					fail(err)
				}
				c.Close()
			}
		}()
	}
	done := make(chan error, 1)
	go func() { wg.Wait(); done <- nil }()
	waitAll(t, done, 1, "stress")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Every socket is closed; their counts must all have reached the
	// server's total, none twice.
	st := srv.Stats()
	if got := st.Messages["RTM_NEWRULE"]; got != uint64(adds) {
		t.Errorf("RTM_NEWRULE counted %d, sent %d", got, adds)
	}
	if got, want := st.Messages["RTM_GETRULE"], uint64(2*iters); got != want {
		t.Errorf("RTM_GETRULE counted %d, sent %d", got, want)
	}
	// A Unix socket's server side closes when it reads the hangup.
	for end := time.Now().Add(hangLimit); st.Sockets != 0 && time.Now().Before(end); st = srv.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.Sockets != 0 {
		t.Errorf("%d sockets still counted open", st.Sockets)
	}

	// Close with clients busy in requests and blocked in receives.
	busy := make(chan error, 4)
	for i := 0; i < 4; i++ {
		c, err := dial(i, server.Options{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer c.Close()
			for {
				if _, err := c.ServerStats(); err != nil {
					busy <- nil // the server went away: expected
					return
				}
			}
		}()
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	waitAll(t, closed, 1, "Server.Close")
	waitAll(t, busy, 4, "clients after Server.Close")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket file left after Close: %v", err)
	}
}

// rawHello opens a Unix connection and sends a HELLO with version v,
// returning the connection and the server's first answer.
func rawHello(t *testing.T, path string, v uint32) (*net.UnixConn, rtnl.Message) {
	t.Helper()
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	p := make([]byte, 16)
	ne.PutUint32(p, v)
	p = append(p, "default\x00"...)
	if _, err := uc.Write(rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, p)); err != nil {
		t.Fatal(err)
	}
	uc.SetReadDeadline(time.Now().Add(hangLimit))
	buf := make([]byte, 65536)
	n, err := uc.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	msgs := rtnl.SplitDatagram(buf[:n])
	if len(msgs) != 1 {
		t.Fatalf("HELLO answer: %d messages", len(msgs))
	}
	return uc, msgs[0]
}

// TestHelloVersionIsChecked: the protocol promises EPROTO for a version
// other than 1; versions 0 and 99 used to be accepted.
func TestHelloVersionIsChecked(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint32{0, 2, 99} {
		_, m := rawHello(t, path, v)
		if m.Header.Type != rtnl.NLMSG_ERROR {
			t.Errorf("version %d: answered with type %#x, want NLMSG_ERROR", v, uint16(m.Header.Type))
			continue
		}
		ack := T.ParseAck(m)
		want := fmt.Sprintf("unsupported protocol version %d", v)
		if syscall.Errno(ack.Errno) != syscall.EPROTO || !strings.Contains(ack.Msg, want) {
			t.Errorf("version %d: %v %q, want EPROTO %q", v, ack.Errno, ack.Msg, want)
		}
	}
	if _, m := rawHello(t, path, 1); m.Header.Type != rtnl.NLEMU_HELLO {
		t.Errorf("version 1 refused: type %#x", uint16(m.Header.Type))
	}
}

// TestOversizedDatagramGetsEMSGSIZE: a datagram over 1 MiB used to be
// truncated to nothing, leaving the client waiting for its own timeout.
// It is refused with EMSGSIZE (netlink_sendmsg()'s answer), and the socket
// keeps working.
func TestOversizedDatagramGetsEMSGSIZE(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	uc, m := rawHello(t, path, 1)
	if m.Header.Type != rtnl.NLEMU_HELLO {
		t.Fatalf("hello: %#x", uint16(m.Header.Type))
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const size = 3 << 19 // 1.5 MiB
	var serr error
	raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 2*size)
	})
	if serr != nil {
		// Without CAP_NET_ADMIN, AF_UNIX cannot send a datagram this big
		// at all: the sender gets EMSGSIZE from its own send.
		t.Skipf("SO_SNDBUFFORCE refused (%v): an unprivileged sender cannot build the datagram", serr)
	}
	big := T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 7, make([]byte, size))
	if _, err := uc.Write(big); err != nil {
		t.Fatalf("send: %v", err)
	}
	buf := make([]byte, 65536)
	n, err := uc.Read(buf)
	if err != nil {
		t.Fatalf("no answer to the oversized datagram: %v", err)
	}
	got := rtnl.SplitDatagram(buf[:n])
	if len(got) != 1 || got[0].Header.Type != rtnl.NLEMU_SOCKERR || syscall.Errno(ne.Uint32(got[0].Data)) != syscall.EMSGSIZE {
		t.Fatalf("answer %x, want SOCKERR EMSGSIZE", buf[:n])
	}
	// The connection still answers.
	if _, err := uc.Write(T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 8, T.Body(T.Hdr{Family: rtnl.AF_INET}))); err != nil {
		t.Fatal(err)
	}
	if n, err = uc.Read(buf); err != nil || len(rtnl.SplitDatagram(buf[:n])) == 0 {
		t.Fatalf("dump after EMSGSIZE: %d bytes, %v", n, err)
	}
}

// TestNetnsListBeyondOneSocketBuffer: the list used to be one datagram,
// larger than the socket buffer past about 9,000 names, and the client
// saw EOF.
func TestNetnsListBeyondOneSocketBuffer(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	const n = 12000
	for i := 0; i < n; i++ {
		if err := srv.Namespaces().Add(fmt.Sprintf("ns-%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names, err := c.NetnsList()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != n+1 {
		t.Fatalf("listed %d names (first %q), want %d", len(names), names[:min(3, len(names))], n+1)
	}
	// Complete after the split, no name cut in two.
	seen := map[string]bool{}
	for _, nm := range names {
		seen[nm] = true
	}
	if !seen["default"] {
		t.Fatal("default missing")
	}
	for i := 0; i < n; i++ {
		if nm := fmt.Sprintf("ns-%05d", i); !seen[nm] {
			t.Fatalf("%s missing", nm)
		}
	}
	if err := c.NetnsAdd("after-list"); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("socket unusable after the list: %v", err)
	}
}
