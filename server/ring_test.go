package server

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// ringClient is a small Go implementation of the client half of the
// shared-memory rings (the shim's, preload/nlemu_preload.c, is the real
// one; docs/PROTOCOL.md "Shared-memory rings (poll mode)"), for tests.
type ringClient struct {
	t                testing.TB
	fd               int
	mem              []byte
	reqSize, repSize uint64
	reqHead, repTail uint64
	// plain: out of ring mode (LEFT read), the socket carries everything.
	plain bool
	stash [][]byte
	buf   []byte
	// spin is how long recv spins on the reply ring before it blocks.
	spin time.Duration
	// doorbellsIn counts the doorbells read from the socket.
	doorbellsIn int
}

// dialRing connects to sock with HELLO options opts|helloOptShm; ok false
// when the server did not offer a ring (the client is plain then).
func dialRing(t testing.TB, sock string, opts uint32) (*ringClient, bool) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval((10 * time.Second).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	c := &ringClient{t: t, fd: fd, buf: make([]byte, 1<<20), spin: 200 * time.Microsecond}
	t.Cleanup(c.close)
	p := make([]byte, 16, 32)
	ne.PutUint32(p[0:], 1)
	ne.PutUint32(p[4:], uint32(os.Getpid()))
	ne.PutUint32(p[8:], opts|helloOptShm)
	p = append(append(p, "default"...), 0)
	if err := unix.Send(fd, rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, p), 0); err != nil {
		t.Fatal(err)
	}
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fd, c.buf, oob, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := rtnl.SplitDatagram(c.buf[:n])
	if len(msgs) != 1 || uint16(msgs[0].Header.Type) != rtnl.NLEMU_HELLO || len(msgs[0].Data) < 12 {
		t.Fatalf("HELLO answer %x", c.buf[:n])
	}
	d := msgs[0].Data
	if len(d) < 16 || ne.Uint32(d[12:]) != 1 {
		if oobn != 0 {
			t.Fatal("a descriptor without the fourth word")
		}
		c.plain = true
		c.setupOptions()
		return c, false
	}
	cms, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(cms) != 1 {
		t.Fatalf("HELLO answer's control message: %v %d", err, len(cms))
	}
	fds, err := unix.ParseUnixRights(&cms[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("HELLO answer's descriptors: %v %v", err, fds)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		t.Fatal(err)
	}
	c.mem, err = unix.Mmap(fds[0], 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	unix.Close(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	if m, v := ne.Uint32(c.mem[offMagic:]), ne.Uint32(c.mem[offVersion:]); m != ringMagic || v != ringVersion {
		t.Fatalf("region magic %#x version %d", m, v)
	}
	c.reqSize, c.repSize = uint64(ne.Uint32(c.mem[offReqSize:])), uint64(ne.Uint32(c.mem[offRepSize:]))
	if int(st.Size) != ringData+int(c.reqSize+c.repSize) {
		t.Fatalf("region of %d bytes for rings of %d and %d", st.Size, c.reqSize, c.repSize)
	}
	c.setupOptions()
	return c, true
}

// setupOptions sends what DialUnix sends after its HELLO: the receive
// length and group frames.
func (c *ringClient) setupOptions() {
	for _, opt := range [][2]uint32{{rtnl.NLEMU_RECVLEN, inprocRecvLen}, {rtnl.NLEMU_GROUPFRAMES, 1}} {
		var p [12]byte
		ne.PutUint32(p[0:], rtnl.SOL_NETLINK)
		ne.PutUint32(p[4:], opt[0])
		ne.PutUint32(p[8:], opt[1])
		c.send(rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, 0, 0, 0, p[:]))
	}
}

func (c *ringClient) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&c.mem[off])) }
func (c *ringClient) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&c.mem[off])) }

func (c *ringClient) close() {
	if c.mem != nil {
		unix.Munmap(c.mem)
		c.mem = nil
	}
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// send sends datagram b: a DATA record, or over the socket when plain.
func (c *ringClient) send(b []byte) {
	c.t.Helper()
	if c.plain {
		if err := unix.Send(c.fd, b, 0); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	c.put(recData, b)
}

// put writes one record into the request ring, waiting for room.
func (c *ringClient) put(kind uint32, b []byte) {
	c.t.Helper()
	data := c.mem[ringData : ringData+c.reqSize]
	rec := recHdr + pad8(uint64(len(b)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		used := c.reqHead - atomic.LoadUint64(c.u64(offReqTail))
		off := c.reqHead & (c.reqSize - 1)
		need := rec
		if off+rec > c.reqSize {
			need += c.reqSize - off
		}
		if c.reqSize-used >= need {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatal("no room in the request ring")
		}
		atomic.StoreUint32(c.u32(offClientStalled), 1)
		runtime.Gosched()
	}
	atomic.StoreUint32(c.u32(offClientStalled), 0)
	off := c.reqHead & (c.reqSize - 1)
	if off+rec > c.reqSize {
		ne.PutUint32(data[off:], 0)
		ne.PutUint32(data[off+4:], recWrap)
		c.reqHead += c.reqSize - off
		off = 0
	}
	ne.PutUint32(data[off:], uint32(len(b)))
	ne.PutUint32(data[off+4:], kind)
	copy(data[off+recHdr:], b)
	c.reqHead += rec
	atomic.StoreUint64(c.u64(offReqHead), c.reqHead)
	if atomic.LoadUint32(c.u32(offServerPolling)) == 0 {
		unix.Sendto(c.fd, doorbell, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
	}
}

// take reads the reply ring's next record: ok false when it is empty.
func (c *ringClient) take() (kind uint32, b []byte, ok bool) {
	c.t.Helper()
	data := c.mem[ringData+c.reqSize : ringData+c.reqSize+c.repSize]
	for {
		head := atomic.LoadUint64(c.u64(offRepHead))
		if head == c.repTail {
			return 0, nil, false
		}
		if head-c.repTail > c.repSize {
			c.t.Fatalf("reply ring head %d tail %d", head, c.repTail)
		}
		off := c.repTail & (c.repSize - 1)
		ln, k := uint64(ne.Uint32(data[off:])), ne.Uint32(data[off+4:])
		if k == recWrap {
			c.repTail += c.repSize - off
			atomic.StoreUint64(c.u64(offRepTail), c.repTail)
			continue
		}
		if (k != recData && k != recLeave) || off+recHdr+ln > c.repSize {
			c.t.Fatalf("bad reply record: len %d kind %d at %d", ln, k, off)
		}
		b = append([]byte(nil), data[off+recHdr:off+recHdr+ln]...)
		c.repTail += recHdr + pad8(ln)
		atomic.StoreUint64(c.u64(offRepTail), c.repTail)
		if atomic.LoadUint32(c.u32(offServerStalled)) != 0 {
			unix.Sendto(c.fd, doorbell, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
		}
		return k, b, true
	}
}

// wait spins on the reply ring, then blocks in the socket for a
// doorbell (spec: client_spinning cleared, one more look, then receive).
// It returns the next record; an error when the socket ended or timed
// out.
func (c *ringClient) wait() (uint32, []byte, error) {
	atomic.StoreUint32(c.u32(offClientSpinning), 1)
	start := time.Now()
	for time.Since(start) < c.spin {
		if k, b, ok := c.take(); ok {
			atomic.StoreUint32(c.u32(offClientSpinning), 0)
			return k, b, nil
		}
	}
	atomic.StoreUint32(c.u32(offClientSpinning), 0)
	for {
		if k, b, ok := c.take(); ok {
			return k, b, nil
		}
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return 0, nil, err
		case n == 0:
			return 0, nil, errors.New("end of stream")
		case n == 1:
			c.doorbellsIn++
		default:
			return 0, nil, fmt.Errorf("a %d-byte datagram on the socket in ring mode", n)
		}
	}
}

// recv returns the next datagram (the stash first), with a SOCKERR as an
// error.
func (c *ringClient) recv() ([]byte, error) {
	for {
		var b []byte
		switch {
		case len(c.stash) > 0:
			b, c.stash = c.stash[0], c.stash[1:]
		case c.plain:
			n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return nil, err
			}
			if n == 0 {
				return nil, errors.New("end of stream")
			}
			if n < rtnl.NLMSG_HDRLEN {
				continue // a stale doorbell
			}
			b = append([]byte(nil), c.buf[:n]...)
		default:
			k, r, err := c.wait()
			if err != nil {
				return nil, err
			}
			if k == recLeave {
				// The server left on its own.
				c.plain = true
				continue
			}
			b = r
		}
		if len(b) == rtnl.NLMSG_HDRLEN+4 && ne.Uint16(b[4:]) == rtnl.NLEMU_SOCKERR {
			return nil, syscall.Errno(ne.Uint32(b[rtnl.NLMSG_HDRLEN:]))
		}
		return b, nil
	}
}

// leave leaves ring mode: LEAVE, then every reply before the LEFT stashed.
func (c *ringClient) leave() {
	c.t.Helper()
	if c.plain {
		return
	}
	c.put(recLeave, nil)
	for {
		k, b, err := c.wait()
		if err != nil {
			c.t.Fatalf("waiting for LEFT: %v", err)
		}
		if k == recLeave {
			break
		}
		c.stash = append(c.stash, b)
	}
	c.plain = true
}

// roundTrip sends req and collects its answers up to the ACK (or DONE).
func (c *ringClient) roundTrip(req []byte) ([]string, error) {
	c.send(req)
	var out []string
	for {
		b, err := c.recv()
		if err != nil {
			return out, err
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.NLMSG_ERROR:
				a := T.ParseAck(m)
				out = append(out, fmt.Sprintf("ack seq=%d errno=%d", m.Header.Sequence, a.Errno))
				return out, nil
			case rtnl.NLMSG_DONE:
				return append(out, "done"), nil
			default:
				out = append(out, fmt.Sprintf("type %d", m.Header.Type))
			}
		}
	}
}

// ringChild runs test name in a polling child (pollChild); true in the
// child, which skips unless it may poll.
func ringChild(t *testing.T, name string, env ...string) bool {
	t.Helper()
	if !pollChild(t, name, nil, env...) {
		return false
	}
	if !wantPoll() {
		t.Skip("no polling loop here (one CPU, or not root): no rings")
	}
	return true
}

// TestRingRoundTrips: a client that asks for a ring gets one from the
// polling server (fourth HELLO word 1, a memfd), and 8 such clients × 400
// requests at once are each answered in order through their rings, with
// no datagram read from their sockets but doorbells.
func TestRingRoundTrips(t *testing.T) {
	if !ringChild(t, "TestRingRoundTrips") {
		return
	}
	_, sock := listenTest(t)
	const conns, reqs = 8, 400
	clients := make([]*ringClient, conns)
	for k := range clients {
		c, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatal("no ring offered by the polling server")
		}
		clients[k] = c
	}
	short0 := shortIgnored.Load()
	errs := make(chan error, conns)
	for k, c := range clients {
		go func() {
			for i := range uint32(reqs) {
				got, err := c.roundTrip(ruleRequest(i, uint32(1000+k)))
				if err != nil {
					errs <- err
					return
				}
				if want := []string{fmt.Sprintf("ack seq=%d errno=0", i)}; !cmp.Equal(got, want) {
					errs <- fmt.Errorf("connection %d request %d: %v, want %v", k, i, got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("doorbells ignored by the server: %d", shortIgnored.Load()-short0)
}

// TestRingPlainWithoutOption: without the HELLO bit, or with it outside
// poll mode, no ring: three words, no descriptor.
func TestRingPlainWithoutOption(t *testing.T) {
	if !pollChild(t, "TestRingPlainWithoutOption", nil) {
		return
	}
	_, sock := listenTest(t)
	// DialUnix never asks.
	c := dialTest(t, sock)
	defer c.Close()
	ackRulesInOrder(t, c, 10, 1000)
	r, ok := dialRing(t, sock, 0)
	if ok != wantPoll() {
		t.Fatalf("ring offered %v, want %v (poll in effect %v)", ok, wantPoll(), LoopSchedInEffect())
	}
	got, err := r.roundTrip(ruleRequest(0, 2000))
	if err != nil || !cmp.Equal(got, []string{"ack seq=0 errno=0"}) {
		t.Fatalf("%v %v", got, err)
	}
}

// TestRingPlainOutsidePollMode: the default loops never offer a ring.
func TestRingPlainOutsidePollMode(t *testing.T) {
	if !inChildUnder(t, "TestRingPlainOutsidePollMode", nil, "NLEMU_LOOP_SCHED=off") {
		return
	}
	_, sock := listenTest(t)
	r, ok := dialRing(t, sock, 0)
	if ok {
		t.Fatal("a ring offered outside poll mode")
	}
	got, err := r.roundTrip(ruleRequest(0, 2000))
	if err != nil || !cmp.Equal(got, []string{"ack seq=0 errno=0"}) {
		t.Fatalf("%v %v", got, err)
	}
}

// addRules adds n rules with priorities from pref through c.
func (c *ringClient) addRules(t *testing.T, n int, pref uint32) {
	t.Helper()
	for i := range n {
		got, err := c.roundTrip(T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, uint32(i), T.Body(T.V4(5), T.Pref(pref+uint32(i)))))
		if err != nil || !cmp.Equal(got, []string{fmt.Sprintf("ack seq=%d errno=0", i)}) {
			t.Fatalf("rule %d: %v %v", i, got, err)
		}
	}
}

// dumpRules dumps the IPv4 rules through c: their priorities in order.
func (c *ringClient) dumpRules(t *testing.T, seq uint32) []uint32 {
	t.Helper()
	c.send(T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, seq, T.Body(T.Hdr{Family: rtnl.AF_INET})))
	var prefs []uint32
	for {
		b, err := c.recv()
		if err != nil {
			t.Fatalf("dump after %d rules: %v", len(prefs), err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.RTM_NEWRULE:
				prefs = append(prefs, ringRulePref(m))
			case rtnl.NLMSG_DONE:
				return prefs
			}
		}
	}
}

// ringRulePref is a rule message's FRA_PRIORITY (0 for none).
func ringRulePref(m rtnl.Message) uint32 {
	b := m.Data
	if len(b) < 12 {
		return 0
	}
	for b = b[12:]; len(b) >= 4; {
		l := int(ne.Uint16(b))
		if l < 4 || l > len(b) {
			return 0
		}
		if ne.Uint16(b[2:]) == rtnl.FRA_PRIORITY && l >= 8 {
			return ne.Uint32(b[4:])
		}
		b = b[(l+3)&^3:]
	}
	return 0
}

// wantRuleDump is the dump of the default rules plus n rules from pref.
func wantRuleDump(n int, pref uint32) []uint32 {
	want := []uint32{0}
	for i := range n {
		want = append(want, pref+uint32(i))
	}
	return append(want, 32766, 32767)
}

// TestRingDumpLargerThanReplyRing: a dump of 2,000 rules (`ip rule
// show`, far more than the 64 KiB reply ring) arrives complete and in
// order, three times, with the smallest receive buffer too (each batch
// then waits for the client to consume the one before: dump
// continuation through the ring's accounting).
func TestRingDumpLargerThanReplyRing(t *testing.T) {
	if !ringChild(t, "TestRingDumpLargerThanReplyRing") {
		return
	}
	_, sock := listenTest(t)
	c, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	const n = 2000
	c.addRules(t, n, 1000)
	want := wantRuleDump(n, 1000)
	for round := range uint32(3) {
		if diff := cmp.Diff(want, c.dumpRules(t, 100+round)); diff != "" {
			t.Fatalf("round %d (-want +got):\n%s", round, diff)
		}
	}
	small, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	var p [12]byte
	ne.PutUint32(p[0:], rtnl.SOL_SOCKET)
	ne.PutUint32(p[4:], rtnl.SO_RCVBUF)
	ne.PutUint32(p[8:], 1)
	small.send(rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, 0, 0, 0, p[:]))
	for round := range uint32(3) {
		if diff := cmp.Diff(want, small.dumpRules(t, 200+round)); diff != "" {
			t.Fatalf("small buffer, round %d (-want +got):\n%s", round, diff)
		}
	}
}
