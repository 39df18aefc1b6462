package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	return dialRaw(t, sock, opts|helloOptShm)
}

// dialRaw is dialRing with HELLO options opts as they are.
func dialRaw(t testing.TB, sock string, opts uint32) (*ringClient, bool) {
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
	ne.PutUint32(p[8:], opts)
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
			// As the shim: MSG_DONTWAIT probes for the spin window,
			// then a blocking receive.
			n, err := 0, error(unix.EAGAIN)
			for start := time.Now(); err == unix.EAGAIN && time.Since(start) < c.spin; {
				n, _, err = unix.Recvfrom(c.fd, c.buf, unix.MSG_DONTWAIT)
			}
			if err == unix.EAGAIN {
				n, _, err = unix.Recvfrom(c.fd, c.buf, 0)
			}
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
				// The server left on its own: one LEAVE (answered with
				// nothing), then the socket.
				c.put(recLeave, nil)
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

// setsockopt sends a SETSOCKOPT (no ack asked: applied before any later
// datagram).
func (c *ringClient) setsockopt(level, name, v uint32) {
	var p [12]byte
	ne.PutUint32(p[0:], level)
	ne.PutUint32(p[4:], name)
	ne.PutUint32(p[8:], v)
	c.send(rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, 0, 0, 0, p[:]))
}

// ringEvent is one message received, as a line: "group G pref P" for a
// framed notification, "ack seq=S" for an ACK.
func ringEvents(b []byte) []string {
	var out []string
	group := uint32(0)
	for _, m := range rtnl.SplitDatagram(b) {
		switch uint16(m.Header.Type) {
		case rtnl.NLEMU_GROUP:
			group = ne.Uint32(m.Data)
		case rtnl.RTM_NEWRULE:
			out = append(out, fmt.Sprintf("group %d pref %d", group, ringRulePref(m)))
		case rtnl.NLMSG_ERROR:
			out = append(out, fmt.Sprintf("ack seq=%d errno=%d", m.Header.Sequence, T.ParseAck(m).Errno))
		default:
			out = append(out, fmt.Sprintf("type %d", m.Header.Type))
		}
	}
	return out
}

// TestRingNotificationsInOrderWithReplies: a ring client in the rule
// group gets, through its ring, the notification of each of its own
// changes (framed with NLEMU_GROUP) before that change's ACK, as the
// kernel sends rtnl_notify() before netlink_ack(), and every notification
// of a plain client's changes made meanwhile, in their order.
func TestRingNotificationsInOrderWithReplies(t *testing.T) {
	if !ringChild(t, "TestRingNotificationsInOrderWithReplies") {
		return
	}
	_, sock := listenTest(t)
	c, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	c.setsockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	other := dialTest(t, sock)
	defer other.Close()
	const n = 150
	done := make(chan error, 1)
	go func() {
		for i := range uint32(n) {
			got, err := roundTrip(other, T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, i, T.Body(T.V4(5), T.Pref(5000+i))))
			if err == nil && !cmp.Equal(got, []string{fmt.Sprintf("ack seq=%d errno=0", i)}) {
				err = fmt.Errorf("plain client rule %d: %v", i, got)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var others []uint32
	note := func(ev string) bool {
		var g, p uint32
		if _, err := fmt.Sscanf(ev, "group %d pref %d", &g, &p); err != nil {
			return false
		}
		if g != rtnl.RTNLGRP_IPV4_RULE {
			t.Errorf("notification in group %d", g)
		}
		if p >= 5000 {
			others = append(others, p)
			return false
		}
		return true
	}
	for i := range uint32(n) {
		c.send(T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, i, T.Body(T.V4(5), T.Pref(1000+i))))
		var mine []string
		for acked := false; !acked; {
			b, err := c.recv()
			if err != nil {
				t.Fatalf("rule %d: %v", i, err)
			}
			for _, ev := range ringEvents(b) {
				if strings.HasPrefix(ev, "ack") {
					mine = append(mine, ev)
					acked = true
				} else if note(ev) {
					mine = append(mine, ev)
				}
			}
		}
		want := []string{fmt.Sprintf("group 8 pref %d", 1000+i), fmt.Sprintf("ack seq=%d errno=0", i)}
		if diff := cmp.Diff(want, mine); diff != "" {
			t.Fatalf("rule %d (-want +got):\n%s", i, diff)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for len(others) < n {
		b, err := c.recv()
		if err != nil {
			t.Fatalf("after %d of the plain client's notifications: %v", len(others), err)
		}
		for _, ev := range ringEvents(b) {
			note(ev)
		}
	}
	want := make([]uint32, n)
	for i := range want {
		want[i] = 5000 + uint32(i)
	}
	if diff := cmp.Diff(want, others); diff != "" {
		t.Errorf("the plain client's notifications (-want +got):\n%s", diff)
	}
}

// notificationsUntilQuiet reads notifications (and ENOBUFS) until none
// comes for 300 ms.
func notificationsUntilQuiet(recv func() ([]byte, error)) (notes, enobufs int, err error) {
	for {
		b, err := recv()
		switch {
		case errors.Is(err, syscall.ENOBUFS):
			enobufs++
			continue
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, ErrTimeout):
			return notes, enobufs, nil
		case err != nil:
			return notes, enobufs, err
		}
		for _, ev := range ringEvents(b) {
			if strings.HasPrefix(ev, "group") {
				notes++
			}
		}
	}
}

// TestRingENOBUFSLikeTheSocket: a ring client in the rule group that does
// not read while 600 rules are added gets as many notifications and
// ENOBUFS as a plain client of the same server does: the unconsumed reply
// ring is charged to the receive buffer as the socket's unread bytes are.
func TestRingENOBUFSLikeTheSocket(t *testing.T) {
	if !ringChild(t, "TestRingENOBUFSLikeTheSocket") {
		return
	}
	_, sock := listenTest(t)
	r, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	r.setsockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE)
	p := dialTest(t, sock)
	defer p.Close()
	if err := p.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_IPV4_RULE); err != nil {
		t.Fatal(err)
	}
	// Both memberships in effect before the changes.
	if got, err := r.roundTrip(ruleRequest(1, 9)); err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	adder := dialTest(t, sock)
	defer adder.Close()
	const n = 600
	for i := range uint32(n) {
		if got, err := roundTrip(adder, T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, i, T.Body(T.V4(5), T.Pref(1000+i)))); err != nil || len(got) != 1 {
			t.Fatalf("rule %d: %v %v", i, got, err)
		}
	}
	tv := unix.NsecToTimeval((300 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	r.spin = 0
	p.SetRecvTimeout(300 * time.Millisecond)
	rn, re, err := notificationsUntilQuiet(r.recv)
	if err != nil {
		t.Fatal(err)
	}
	pn, pe, err := notificationsUntilQuiet(p.Recv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ring: %d notifications, ENOBUFS %d; socket: %d, ENOBUFS %d", rn, re, pn, pe)
	if rn != pn || re != pe || re != 1 || rn >= n {
		t.Errorf("ring client got %d notifications and ENOBUFS %d times, the plain one %d and %d (of %d; want equal, one ENOBUFS)", rn, re, pn, pe, n)
	}
}

// TestRingLeaveThenSocketInOrder: requests pipelined into the ring, a
// LEAVE, then requests on the socket at once (before any answer is read):
// all answered in order, the ring's up to the LEFT, the socket's after.
func TestRingLeaveThenSocketInOrder(t *testing.T) {
	if !ringChild(t, "TestRingLeaveThenSocketInOrder") {
		return
	}
	_, sock := listenTest(t)
	for round := range 20 {
		c, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatal("no ring")
		}
		const n = 60
		pref := uint32(1000 + round)
		for i := range uint32(n / 2) {
			c.send(ruleRequest(i, pref))
		}
		c.put(recLeave, nil)
		c.plain = true
		for i := uint32(n / 2); i < n; i++ {
			c.send(ruleRequest(i, pref))
		}
		// The ring's answers up to the LEFT, then the socket.
		c.plain = false
		var got []string
		for {
			k, b, err := c.wait()
			if err != nil {
				t.Fatal(err)
			}
			if k == recLeave {
				break
			}
			got = append(got, ringEvents(b)...)
		}
		if len(got) != n/2 {
			t.Errorf("round %d: %d answers before the LEFT, want %d", round, len(got), n/2)
		}
		c.plain = true
		for len(got) < n {
			b, err := c.recv()
			if err != nil {
				t.Fatalf("round %d after %d answers: %v", round, len(got), err)
			}
			got = append(got, ringEvents(b)...)
		}
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("ack seq=%d errno=0", i))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d (-want +got):\n%s", round, diff)
		}
		c.close()
	}
}

// TestRingPollerSleepsAndDoorbellWakes: with gaps between requests far
// longer than the poller's idle window (NLEMU_POLL_US=50), the poller
// blocks between them and each request wakes it with a doorbell; each
// reply wakes the client, blocked in its socket, with one: no request or
// reply is lost in 300 rounds.
func TestRingPollerSleepsAndDoorbellWakes(t *testing.T) {
	if !ringChild(t, "TestRingPollerSleepsAndDoorbellWakes", "NLEMU_POLL_US=50") {
		return
	}
	_, sock := listenTest(t)
	c, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	c.spin = 0
	blocks0, short0 := pollBlocks.Load(), shortIgnored.Load()
	for i := range uint32(300) {
		got, err := c.roundTrip(ruleRequest(i, 1000))
		if err != nil || !cmp.Equal(got, []string{fmt.Sprintf("ack seq=%d errno=0", i)}) {
			t.Fatalf("request %d: %v %v", i, got, err)
		}
		time.Sleep(time.Millisecond)
	}
	blocks, bells := pollBlocks.Load()-blocks0, shortIgnored.Load()-short0
	t.Logf("poller blocked %d times; %d doorbells to the server, %d to the client", blocks, bells, c.doorbellsIn)
	if blocks < 100 || bells < 100 || c.doorbellsIn < 100 {
		t.Errorf("poller blocked %d times, %d doorbells in, %d out: want the poller asleep at most requests", blocks, bells, c.doorbellsIn)
	}
}

// TestRingCorruptedClosesOnlyThatConnection: a client that breaks its
// ring (a head beyond the ring, a misaligned head, a record longer than
// the ring, an unknown kind, a reply tail beyond the reply head) has its
// connection closed; another ring client of the same server keeps
// working, before and after.
func TestRingCorruptedClosesOnlyThatConnection(t *testing.T) {
	if !ringChild(t, "TestRingCorruptedClosesOnlyThatConnection") {
		return
	}
	_, sock := listenTest(t)
	good, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	header := func(c *ringClient, ln, kind uint32) {
		data := c.mem[ringData : ringData+c.reqSize]
		off := c.reqHead & (c.reqSize - 1)
		ne.PutUint32(data[off:], ln)
		ne.PutUint32(data[off+4:], kind)
		atomic.StoreUint64(c.u64(offReqHead), c.reqHead+16)
	}
	cases := []struct {
		name    string
		corrupt func(c *ringClient)
	}{
		{"head beyond the ring", func(c *ringClient) {
			atomic.StoreUint64(c.u64(offReqHead), c.reqHead+c.reqSize+8)
		}},
		{"misaligned head", func(c *ringClient) {
			atomic.StoreUint64(c.u64(offReqHead), c.reqHead+3)
		}},
		{"record longer than the ring", func(c *ringClient) { header(c, 1<<20, recData) }},
		{"record longer than published", func(c *ringClient) { header(c, 64, recData) }},
		{"unknown kind", func(c *ringClient) { header(c, 0, 9) }},
		{"reply tail beyond the head", func(c *ringClient) {
			atomic.StoreUint64(c.u64(offRepTail), atomic.LoadUint64(c.u64(offRepHead))+8)
			c.put(recData, ruleRequest(0, 7))
		}},
	}
	for i, tc := range cases {
		broken0 := ringBroken.Load()
		bad, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatal("no ring")
		}
		if got, err := bad.roundTrip(ruleRequest(0, uint32(3000+i))); err != nil || len(got) != 1 {
			t.Fatalf("%s: before: %v %v", tc.name, got, err)
		}
		tc.corrupt(bad)
		unix.Sendto(bad.fd, doorbell, unix.MSG_DONTWAIT, nil)
		// The server closes it: the socket ends (after doorbells).
		for {
			n, _, err := unix.Recvfrom(bad.fd, bad.buf, 0)
			if err == unix.ECONNRESET {
				break // closed with our doorbell unread
			}
			if err != nil {
				t.Fatalf("%s: %v, want the end of stream", tc.name, err)
			}
			if n == 0 {
				break
			}
		}
		if ringBroken.Load() == broken0 {
			t.Errorf("%s: not counted as a broken ring", tc.name)
		}
		if got, err := good.roundTrip(ruleRequest(uint32(i), 1000)); err != nil || !cmp.Equal(got, []string{fmt.Sprintf("ack seq=%d errno=0", i)}) {
			t.Fatalf("%s: the other client: %v %v", tc.name, got, err)
		}
	}
}

// TestRingIdleConnectionsHoldNoThread: 1,000 ring connections, each
// having made a round trip and gone idle, hold no thread of the server (a
// ring connection is an epoll entry and a mapping), and still answer.
func TestRingIdleConnectionsHoldNoThread(t *testing.T) {
	if !ringChild(t, "TestRingIdleConnectionsHoldNoThread") {
		return
	}
	_, sock := listenTest(t)
	warm, _ := dialRing(t, sock, 0)
	warm.roundTrip(ruleRequest(0, 1))
	time.Sleep(50 * time.Millisecond)
	before := threads(t)
	const n = 1000
	cs := make([]*ringClient, n)
	for k := range cs {
		c, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatalf("connection %d: no ring", k)
		}
		if got, err := c.roundTrip(ruleRequest(0, uint32(1000+k))); err != nil || len(got) != 1 {
			t.Fatalf("connection %d: %v %v", k, got, err)
		}
		cs[k] = c
	}
	time.Sleep(100 * time.Millisecond)
	after := threads(t)
	t.Logf("threads: %d before, %d with %d idle ring connections", before, after, n)
	if after > before+8 {
		t.Errorf("%d threads with %d idle ring connections, %d before", after, n, before)
	}
	for k, c := range cs {
		if got, err := c.roundTrip(ruleRequest(1, uint32(1000+k))); err != nil || len(got) != 1 {
			t.Fatalf("connection %d again: %v %v", k, got, err)
		}
	}
}

// TestRingJournalHandOff: with a journal (`--state`) each change of a
// ring connection waits for its record off the poller (handed off: the
// connection leaves the poller, its ring waits); another ring client's
// reads are answered meanwhile, and the waiting client's 20 pipelined
// changes are answered in order once the records are durable.
func TestRingJournalHandOff(t *testing.T) {
	if !ringChild(t, "TestRingJournalHandOff") {
		return
	}
	srv := New(Config{})
	j := &gateJournal{gate: make(chan struct{})}
	srv.SetJournal(j)
	t.Cleanup(func() { srv.Close() })
	sock := filepath.Join(t.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	w, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	handOffs0 := loopHandOffs.Load()
	const n = 20
	for i := range uint32(n) {
		w.send(ruleRequest(i, 100))
	}
	waitFor(t, "the first change to wait for its record", func() bool { return j.waiting.Load() == 1 })
	r, ok := dialRing(t, sock, 0)
	if !ok {
		t.Fatal("no ring")
	}
	for round := range uint32(5) {
		if got := r.dumpRules(t, round); len(got) != 3 {
			t.Fatalf("a read while the record waits: %v", got)
		}
	}
	close(j.gate)
	var got []string
	for len(got) < n {
		b, err := w.recv()
		if err != nil {
			t.Fatalf("after %d answers: %v", len(got), err)
		}
		got = append(got, ringEvents(b)...)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("ack seq=%d errno=0", i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if h := loopHandOffs.Load() - handOffs0; h < n {
		t.Errorf("%d hand-offs, want %d", h, n)
	}
}

// TestQuirkShortDatagramsIgnoredLikeNetlinkRcvSkb: a datagram shorter
// than a netlink header (a doorbell is one byte) is ignored without an
// answer, as netlink_rcv_skb() ignores one (its loop needs
// nlmsg_total_size(0) bytes); the next request is answered as usual.
func TestQuirkShortDatagramsIgnoredLikeNetlinkRcvSkb(t *testing.T) {
	_, sock := listenTest(t)
	c := dialTest(t, sock)
	defer c.Close()
	short0 := shortIgnored.Load()
	for _, n := range []int{1, 8, rtnl.NLMSG_HDRLEN - 1} {
		if err := c.Send(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	ackRulesInOrder(t, c, 3, 1000)
	if got := shortIgnored.Load() - short0; got != 3 {
		t.Errorf("%d short datagrams ignored, want 3", got)
	}
}

// ringOver is a ringClient over region r's own mapping and socket fd (a
// unit test's client: no HELLO).
func ringOver(t *testing.T, r *ring, fd int) *ringClient {
	return &ringClient{t: t, fd: fd, mem: r.mem, reqSize: r.reqSize, repSize: r.repSize, buf: make([]byte, 1<<20)}
}

// TestRingServerLeavesForALargeDatagram: a datagram that can never fit
// the reply ring makes the writer leave ring mode on its own: a LEFT in
// the ring after what was there, the datagram and every later one on the
// socket.
func TestRingServerLeavesForALargeDatagram(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	r, memfd, err := newRing()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(memfd)
	defer r.unmap()
	w := &unixWriter{t: &fdConn{fd: fds[0], ring: r}}
	big := make([]byte, ringRepSize)
	big[0] = 'B'
	for i, b := range [][]byte{[]byte("first"), big, []byte("after")} {
		if _, err := w.send(b); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	c := ringOver(t, r, fds[1])
	var got []string
	for {
		k, b, ok := c.take()
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("kind %d %q", k, b))
	}
	for range 2 {
		n, _, err := unix.Recvfrom(fds[1], c.buf, unix.MSG_DONTWAIT)
		for err == nil && n == 1 {
			n, _, err = unix.Recvfrom(fds[1], c.buf, unix.MSG_DONTWAIT)
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("socket %d %q", n, c.buf[:1]))
	}
	want := []string{`kind 1 "first"`, `kind 3 ""`, fmt.Sprintf(`socket %d "B"`, len(big)), `socket 5 "a"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRingReplyRingWrapsAndStalls: records of every size up to the ring
// go through a reply ring the client consumes slowly: the writer stalls
// (EAGAIN) without room, a WRAP is published alone when only it fits, and
// the client reads every record whole and in order.
func TestRingReplyRingWrapsAndStalls(t *testing.T) {
	r, memfd, err := newRing()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(memfd)
	defer r.unmap()
	c := ringOver(t, r, -1)
	sizes := []int{1, 7, 8, 9, 4000, ringRepSize / 2, ringRepSize - recHdr, 100, ringRepSize - recHdr, 3, ringRepSize/2 + 1, ringRepSize / 3}
	for k := range 200 {
		sizes = append(sizes, (k*7919)%(ringRepSize-recHdr)+1)
	}
	var got []int
	stalls := 0
	for i, n := range sizes {
		b := make([]byte, n)
		b[0], b[n-1] = byte(i), byte(i)
		for empty := 0; ; {
			if _, err := r.putRep(recData, b); err == nil {
				break
			} else if err != unix.EAGAIN {
				t.Fatal(err)
			}
			stalls++
			k, d, ok := c.take()
			if !ok {
				// A WRAP published alone was consumed: room now.
				if empty++; empty > 1 {
					t.Fatalf("datagram %d (%d bytes): no room in an empty ring", i, n)
				}
				continue
			}
			if k != recData || d[0] != byte(len(got)) || d[len(d)-1] != byte(len(got)) {
				t.Fatalf("record %d: kind %d, %d bytes", len(got), k, len(d))
			}
			got = append(got, len(d))
		}
	}
	for {
		_, d, ok := c.take()
		if !ok {
			break
		}
		got = append(got, len(d))
	}
	if diff := cmp.Diff(sizes, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if stalls == 0 {
		t.Error("the writer never stalled")
	}
}

// FuzzRingRecords: whatever the client leaves in the request ring and in
// its counters, the record reader returns only whole records within the
// ring and what was published, of a known kind, or errBadRing; the reply
// writer never trusts a bad tail.
func FuzzRingRecords(f *testing.F) {
	r, memfd, err := newRing()
	if err != nil {
		f.Fatal(err)
	}
	unix.Close(memfd)
	rec := func(ln, kind uint32, body ...byte) []byte {
		b := make([]byte, 8, 8+len(body)+8)
		ne.PutUint32(b, ln)
		ne.PutUint32(b[4:], kind)
		b = append(b, body...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return b
	}
	f.Add(rec(5, recData, 'h', 'e', 'l', 'l', 'o'), uint64(0), uint64(16), uint64(0), uint64(0))
	f.Add(append(rec(0, recWrap), rec(3, recLeave, 1, 2, 3)...), uint64(ringReqSize-8), uint64(24), uint64(100), uint64(50))
	f.Add(rec(1<<20, recData), uint64(0), uint64(16), uint64(8), uint64(16))
	f.Add(rec(0, 77), uint64(8), uint64(8), uint64(0), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, tail, delta, repHead, repTail uint64) {
		req := r.reqData()
		clear(req)
		tail &^= 7
		for i, b := range data {
			req[(tail+uint64(i))&(ringReqSize-1)] = b
		}
		r.reqTail, r.inLeft = tail, false
		head := tail + delta
		atomic.StoreUint64(r.u64(offReqTail), tail)
		atomic.StoreUint64(r.u64(offReqHead), head)
		buf := make([]byte, 0, 64)
		for range 4096 {
			kind, b, _, err := r.readReq(buf)
			if err != nil {
				if err != errBadRing {
					t.Fatal(err)
				}
				break
			}
			if r.reqTail-tail > head-tail {
				t.Fatalf("consumed to %d past the head %d", r.reqTail, head)
			}
			if kind == 0 {
				break
			}
			if kind != recData && kind != recLeave || uint64(len(b)) > ringReqSize-recHdr {
				t.Fatalf("record kind %d of %d bytes", kind, len(b))
			}
		}
		r.repHead, r.pending = repHead, 0
		atomic.StoreUint64(r.u64(offRepHead), repHead)
		atomic.StoreUint64(r.u64(offRepTail), repTail)
		if _, err := r.putRep(recData, data); err == nil {
			if used := r.repHead - atomic.LoadUint64(r.u64(offRepTail)); used > ringRepSize {
				t.Fatalf("reply ring holds %d bytes", used)
			}
		} else if err != unix.EAGAIN && err != errBadRing {
			t.Fatal(err)
		}
		if n, ok := r.unread(); ok && n > ringRepSize {
			t.Fatalf("unread %d", n)
		}
	})
}

// BenchmarkRingRoundTrip: one rule add or delete and its ACK, through a
// ring and through the socket, against this process's polling server
// (run with NLEMU_LOOP_SCHED=poll; skipped when the poller is not in
// effect).
func BenchmarkRingRoundTrip(b *testing.B) {
	srv := New(Config{})
	defer srv.Close()
	sock := filepath.Join(b.TempDir(), "s.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		b.Fatal(err)
	}
	if LoopSchedInEffect() != LoopSchedPoll {
		b.Skip("no polling loop: run with NLEMU_LOOP_SCHED=poll, as root, on 2 CPUs or more")
	}
	for _, gap := range []int64{0, defaultRingEpollGap, 20000} {
		b.Run(fmt.Sprintf("ring/epoll-gap=%dns", gap), func(b *testing.B) {
			ringEpollGap.Store(gap)
			defer ringEpollGap.Store(defaultRingEpollGap)
			e0 := pollEpolls.Load()
			defer func() { b.ReportMetric(float64(pollEpolls.Load()-e0)/float64(b.N), "epolls/op") }()
			c, ok := dialRing(b, sock, 0)
			if !ok {
				b.Fatal("no ring")
			}
			c.spin = time.Second
			b.ResetTimer()
			for i := range uint32(b.N) {
				c.send(ruleRequest(i, 1000))
				if _, err := c.recv(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The socket as the shim uses it with the poller: send, then
	// MSG_DONTWAIT probes until the reply (HELLO_OPT_SPIN).
	b.Run("socket", func(b *testing.B) {
		c, ring := dialRaw(b, sock, helloOptSpin)
		if ring {
			b.Fatal("a ring not asked for")
		}
		c.spin = time.Second
		b.ResetTimer()
		for i := range uint32(b.N) {
			c.send(ruleRequest(i, 2000))
			if _, err := c.recv(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRingRequestsBeforeCloseAreHandled: requests a client put into its
// ring without waiting for answers, right before it closed its socket,
// are handled, as datagrams queued in the socket before the close are.
func TestRingRequestsBeforeCloseAreHandled(t *testing.T) {
	if !ringChild(t, "TestRingRequestsBeforeCloseAreHandled", "NLEMU_POLL_US=1") {
		return
	}
	// An epoll_wait at every round: the end of the stream is seen while
	// records wait.
	ringEpollGap.Store(0)
	_, sock := listenTest(t)
	const rounds, n = 10, 100
	for round := range uint32(rounds) {
		c, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatal("no ring")
		}
		pref := 1000 + round*n
		c.addRules(t, 1, pref) // the options and a request answered
		for i := range uint32(n - 1) {
			c.send(T.Msg(rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_CREATE, i, T.Body(T.V4(5), T.Pref(pref+1+i))))
		}
		c.close()
	}
	check, _ := dialRing(t, sock, 0)
	want := []uint32{0}
	for i := range uint32(rounds * n) {
		want = append(want, 1000+i)
	}
	want = append(want, 32766, 32767)
	var got []uint32
	for range 100 {
		if got = check.dumpRules(t, 1); cmp.Equal(want, got) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

// TestRingServerCloseHangsUp: Server.Close ends a ring client's
// connection (its socket reports the end) whether it waits in its socket
// or not, and the poller goes on serving another server's ring clients.
func TestRingServerCloseHangsUp(t *testing.T) {
	if !ringChild(t, "TestRingServerCloseHangsUp") {
		return
	}
	srv, sock := listenTest(t)
	_, other := listenTest(t)
	cs := make([]*ringClient, 4)
	for k := range cs {
		c, ok := dialRing(t, sock, 0)
		if !ok {
			t.Fatal("no ring")
		}
		c.addRules(t, 1, uint32(1000+k))
		cs[k] = c
	}
	o, ok := dialRing(t, other, 0)
	if !ok {
		t.Fatal("no ring")
	}
	srv.Close()
	for k, c := range cs {
		for {
			n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
			if err != nil {
				t.Fatalf("client %d: %v, want the end of stream", k, err)
			}
			if n == 0 {
				break
			}
		}
	}
	o.addRules(t, 10, 1000)
}
