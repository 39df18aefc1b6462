package server

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// A listener's connections are accepted and their HELLOs answered on one
// OS thread of its own (the acceptor), with an epoll set of its own that
// holds the listening socket and the connections whose HELLO has not come
// yet. A new connection is accepted, its HELLO read (a client sends it
// right after connect) and answered, and the connection registered with
// an event loop (loop.go), all on that thread, before the next epoll_wait:
// no goroutine is started or woken before the reply, and the connection
// is never in the Go netpoller. A connection whose HELLO is not there yet
// (the supervisor connects ahead of the socket() that will use it,
// supervise/spare.go) waits in the acceptor's epoll set, so it delays no
// other; it is closed after helloWait without one.
//
// Measured before (accept on a goroutine of the netpoller, one more
// goroutine per connection for the handshake, the connection then taken
// out of the netpoller): BenchmarkDialHello ≈ 6x BenchmarkDialFloor on the
// loaded 2-core machine, 220 µs of CPU per connection, most of it the
// futex wake-ups of goroutine hand-offs and sysmon's retakes
// (docs/PEER-SUITE.md, "What a supervised socket() costs").

// helloWait is how long a connection may take to send its HELLO; a
// variable for tests.
var helloWait = 30 * time.Second

// helloBuf is the acceptor's receive buffer: a HELLO is a header, 16 bytes
// and a namespace name. A longer first datagram is refused as not a HELLO.
const helloBuf = 64 << 10

// acceptBurst bounds the connections accepted in one turn, so that HELLOs
// of waiting connections are answered while a burst of connects goes on
// (the listening socket is level-triggered: still ready means reported
// again).
const acceptBurst = 64

// acceptor is one listener's accepting thread and what it alone touches.
type acceptor struct {
	s    *Server
	lfd  int // the listening socket (non-blocking)
	epfd int
	efd  int // an eventfd: Listener.Close writes it
	// waiting holds the connections whose HELLO has not come, by
	// descriptor; helloQ and refuseQ are them in deadline order (each
	// queue has one wait), entries done meanwhile skipped when reached.
	waiting          map[int]*waiter
	helloQ, refuseQ  []*waiter
	buf              []byte
	events           []unix.EpollEvent
	closeOnce        sync.Once
	closeErr         error
	done             chan struct{}
	acceptErrBackoff time.Duration // a variable for tests
}

// waiter is an accepted connection until its HELLO is answered.
type waiter struct {
	fd int
	// key is the connection's identity in the limits' table (admit,
	// leaveConn) and its loopConn: nothing else of it is used.
	key      *net.UnixConn
	cred     peerCred
	refusal  string // past a connection limit: the HELLO's answer (EAGAIN)
	slot     bool   // holds a connection slot (admit)
	polled   bool   // in the acceptor's epoll set
	done     bool
	deadline time.Time
}

// newAcceptor sets up the epoll set of listening socket lfd.
func newAcceptor(s *Server, lfd int) (*acceptor, error) {
	// The process's event loops live as long as it does: start them with
	// the first listener rather than at its first connection, so that a
	// listening server's goroutines and descriptors are what they will be
	// once its connections are gone (TestFaultsUnderLoad counts them).
	if _, err := startLoops(); err != nil {
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	a := &acceptor{
		s: s, lfd: lfd, epfd: epfd, efd: efd,
		waiting: map[int]*waiter{}, buf: make([]byte, helloBuf),
		events: make([]unix.EpollEvent, acceptBurst), done: make(chan struct{}),
		acceptErrBackoff: 10 * time.Millisecond,
	}
	for _, fd := range []int{lfd, efd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			unix.Close(epfd)
			unix.Close(efd)
			return nil, err
		}
	}
	return a, nil
}

// stop makes the acceptor close the listening socket and every waiting
// connection and end; it returns once it has.
func (a *acceptor) stop() error {
	first := false
	a.closeOnce.Do(func() {
		first = true
		var one [8]byte
		one[0] = 1 // an eventfd counter of 1 in either byte order is nonzero
		unix.Write(a.efd, one[:])
	})
	<-a.done
	if !first {
		return net.ErrClosed
	}
	return a.closeErr
}

// run is the acceptor's thread.
func (a *acceptor) run() {
	// One OS thread: a client's connect wakes the thread that answers it.
	runtime.LockOSThread()
	defer close(a.done)
	for {
		// Blocking through syscall.Syscall6 (unix.EpollWait): the
		// runtime hands the P off while the thread sleeps.
		n, err := unix.EpollWait(a.epfd, a.events, a.timeout(time.Now()))
		if err != nil && err != unix.EINTR {
			panic("nlemu: epoll_wait: " + err.Error())
		}
		for i := range n {
			switch fd := int(a.events[i].Fd); fd {
			case a.efd:
				a.shutdown()
				return
			case a.lfd:
				a.acceptSome()
			default:
				if w := a.waiting[fd]; w != nil {
					a.tryHello(w)
				}
			}
		}
		a.expire(time.Now())
	}
}

// shutdown closes the listening socket and every waiting connection.
func (a *acceptor) shutdown() {
	a.closeErr = unix.Close(a.lfd)
	for _, w := range a.waiting {
		a.drop(w)
	}
	unix.Close(a.epfd)
	unix.Close(a.efd)
}

// acceptSome accepts up to acceptBurst connections and answers the HELLOs
// already there.
func (a *acceptor) acceptSome() {
	for range acceptBurst {
		// Blocking (no SOCK_NONBLOCK): the descriptor becomes an fdConn,
		// whose reads are non-blocking by flag where they must be.
		fd, _, err := unix.Accept4(a.lfd, unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN, unix.ECONNABORTED, unix.EINTR:
			return
		default:
			// EMFILE, ENFILE, ENOBUFS: the connection stays in the
			// backlog; try again shortly rather than spin.
			time.Sleep(a.acceptErrBackoff)
			return
		}
		a.admitConn(fd)
	}
}

// admitConn takes a connection slot for a new connection (or marks it for
// refusal) and answers its HELLO if it is there, else lets it wait.
func (a *acceptor) admitConn(fd int) {
	w := &waiter{fd: fd, key: new(net.UnixConn), cred: readPeerCred(fd)}
	uid := uint32(0)
	if w.cred.ok {
		uid = w.cred.Uid
	}
	refusal, answer := a.s.admit(w.key, uid) // --max-conns, --max-conns-per-uid (limits.go)
	if !answer {
		unix.Close(fd)
		return
	}
	w.refusal, w.slot = refusal, refusal == ""
	a.tryHello(w)
}

// tryHello reads w's HELLO and answers it; when it is not there yet w
// waits in the epoll set until it is, or until its deadline.
func (a *acceptor) tryHello(w *waiter) {
	var (
		n   int
		err error
	)
	for {
		n, _, err = unix.Recvfrom(w.fd, a.buf, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		if !w.polled {
			a.wait(w)
		}
		return
	}
	a.unwait(w)
	if err != nil || n == 0 {
		// An error, or the end of the stream (a zero-length read on
		// SEQPACKET): the client went away before its HELLO.
		a.drop(w)
		return
	}
	hello := a.buf[:min(n, len(a.buf))]
	if w.refusal != "" {
		sendNow(w.fd, helloNack(hello, syscall.EAGAIN, w.refusal))
		drainForClose(w.fd)
		a.drop(w)
		return
	}
	w.done = true
	hs := handshake{s: a.s, fd: w.fd, key: w.key, cred: w.cred}
	if hs.mayWait(hello) {
		// Creating a namespace with a journal waits for its record
		// (journalEphemeral): not on this thread.
		go hs.run(append([]byte(nil), hello...), n > len(a.buf))
		return
	}
	hs.run(hello, n > len(a.buf))
}

// wait puts w in the epoll set and its deadline queue.
func (a *acceptor) wait(w *waiter) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(w.fd)}
	if err := unix.EpollCtl(a.epfd, unix.EPOLL_CTL_ADD, w.fd, &ev); err != nil {
		a.drop(w)
		return
	}
	w.polled = true
	a.waiting[w.fd] = w
	if w.refusal != "" {
		w.deadline = time.Now().Add(refusalWait)
		a.refuseQ = append(a.refuseQ, w)
	} else {
		w.deadline = time.Now().Add(helloWait)
		a.helloQ = append(a.helloQ, w)
	}
	// Entries done early stay in their queue until reached: compact a
	// queue that is mostly those (a long wait at its head keeps them).
	if q := &a.helloQ; len(*q) > 64 && len(*q) > 4*len(a.waiting) {
		*q = slices.DeleteFunc(*q, func(w *waiter) bool { return w.done })
	}
}

// unwait takes w out of the epoll set (its queue entry is skipped once
// done).
func (a *acceptor) unwait(w *waiter) {
	if !w.polled {
		return
	}
	unix.EpollCtl(a.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	delete(a.waiting, w.fd)
	w.polled = false
}

// drop closes a connection that is not served, giving back what it holds.
func (a *acceptor) drop(w *waiter) {
	a.unwait(w)
	w.done = true
	unix.Close(w.fd)
	if w.slot {
		a.s.leaveConn(w.key)
	} else {
		a.s.refused()
	}
}

// expire drops the waiting connections past their deadline.
func (a *acceptor) expire(now time.Time) {
	for _, q := range []*[]*waiter{&a.helloQ, &a.refuseQ} {
		for len(*q) > 0 {
			w := (*q)[0]
			if !w.done && now.Before(w.deadline) {
				break
			}
			(*q)[0] = nil
			*q = (*q)[1:]
			if !w.done {
				a.drop(w)
			}
		}
	}
}

// timeout is epoll_wait's timeout in milliseconds: until the earliest
// deadline (rounded up), or none.
func (a *acceptor) timeout(now time.Time) int {
	a.expire(now)
	var first time.Time
	for _, q := range [][]*waiter{a.helloQ, a.refuseQ} {
		if len(q) > 0 && (first.IsZero() || q[0].deadline.Before(first)) {
			first = q[0].deadline
		}
	}
	if first.IsZero() {
		return -1
	}
	return int((first.Sub(now) + time.Millisecond - 1) / time.Millisecond)
}

// sendNow sends a handshake's answer: the first datagram of the
// connection, which cannot wait (the client's receive queue is empty:
// unix_recvq_full() is false, and so is a full send buffer). write(2), not
// sendto: under the race detector unix.Write orders the client's read
// after what the handshake did (syscall.Read and Write synchronize on one
// ioSync), as the net.UnixConn writes it replaced did; a broken pipe is
// EPIPE (the runtime ignores SIGPIPE for such descriptors).
func sendNow(fd int, b []byte) error {
	for {
		_, err := unix.Write(fd, b)
		if err != unix.EINTR {
			return err
		}
	}
}

// sendWithFd sends a handshake's answer b with descriptor fd in an
// SCM_RIGHTS control message (the ring's memfd): sendmsg(2), the first
// datagram of the connection, which cannot wait (sendNow).
func sendWithFd(sock int, b []byte, fd int) error {
	oob := unix.UnixRights(fd)
	for {
		err := unix.Sendmsg(sock, b, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return err
		}
	}
}

// handshake answers one connection's HELLO (docs/PROTOCOL.md) and gives
// the connection to an event loop; it owns the descriptor and its slot.
type handshake struct {
	s    *Server
	fd   int
	key  *net.UnixConn
	cred peerCred
}

// mayWait reports whether answering hello may wait for long: it asks for
// a namespace to be created and the server keeps a journal, whose record
// of it is made durable first.
func (h *handshake) mayWait(hello []byte) bool {
	if h.s.journal == nil || len(hello) < rtnl.NLMSG_HDRLEN+12 {
		return false
	}
	return ne.Uint32(hello[rtnl.NLMSG_HDRLEN+8:])&(optCreate|optEphemeral) != 0
}

// fail refuses the HELLO with errno and msg and closes the connection.
func (h *handshake) fail(hello []byte, errno syscall.Errno, msg string) {
	sendNow(h.fd, helloNack(hello, errno, msg))
	drainForClose(h.fd)
	h.close()
}

// drainForClose readies a refused connection for its close: no more
// datagrams from the client (shutdown SHUT_RD: unix_shutdown() sets the
// peer's SEND_SHUTDOWN, its sends fail with EPIPE), and those it sent
// after its HELLO (the supervisor sends its GROUPFRAMES option right
// behind it) read and dropped. Closing a Unix socket with unread data
// resets the peer (unix_release_sock() sets ECONNRESET), whose receive
// then fails with that instead of returning the refusal queued for it.
func drainForClose(fd int) {
	unix.Shutdown(fd, unix.SHUT_RD)
	var b [256]byte
	for range 64 {
		if n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_DONTWAIT|unix.MSG_TRUNC); err != nil || n == 0 {
			return
		}
	}
}

func (h *handshake) close() {
	unix.Close(h.fd)
	h.s.leaveConn(h.key)
}

// run answers hello (truncated: it did not fit the acceptor's buffer).
func (h *handshake) run(hello []byte, truncated bool) {
	s := h.s
	msgs := rtnl.SplitDatagram(hello)
	if truncated || len(msgs) != 1 || uint16(msgs[0].Header.Type) != rtnl.NLEMU_HELLO || len(msgs[0].Data) < 17 {
		h.fail(hello, syscall.EPROTO, "nlemu: expected a HELLO")
		return
	}
	d := msgs[0].Data
	if v := ne.Uint32(d); v != protocolVersion {
		h.fail(hello, syscall.EPROTO, fmt.Sprintf("nlemu: unsupported protocol version %d (this server speaks %d)", v, protocolVersion))
		return
	}
	pid, opts, groups := ne.Uint32(d[4:]), ne.Uint32(d[8:]), ne.Uint32(d[12:])
	name := string(d[16:])
	if i := indexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	may := s.mayChange(h.fd, h.cred)             // privileges.go
	opts, mayNotCreate := helloCreate(may, opts) // ephemeral.go
	c, err := s.open(name, pid, opts, groups)
	if err != nil {
		errno, msg := syscall.ESHUTDOWN, "nlemu: the server is shutting down"
		if errors.Is(err, ErrNoNamespace) {
			errno, msg = syscall.ENOENT, fmt.Sprintf("namespace %q does not exist", name)
		}
		errno, msg = helloCreateError(err, errno, msg, mayNotCreate)
		h.fail(hello, errno, msg)
		return
	}
	// What the peer may do (LISTEN_ALL_NSID, privileged groups).
	c.priv.src = peerPrivileges(h.cred)
	c.setReadOnly(!may)
	if h.cred.ok {
		c.setUID(h.cred.Uid)
	}
	// The third word says whether a loop polls, and on which CPU
	// (loop.go, pollWord): older clients read the first two.
	// The fourth word, with a memfd in SCM_RIGHTS, offers the client
	// shared-memory rings (ring.go): only when it asked and the poller
	// will serve it (in poll mode the one loop holds every connection).
	var p [16]byte
	ne.PutUint32(p[0:], protocolVersion)
	ne.PutUint32(p[4:], c.portid)
	word := pollWord()
	ne.PutUint32(p[8:], word)
	answer := p[:12]
	var rg *ring
	memfd := -1
	if opts&helloOptShm != 0 && word != 0 {
		if r, fd, err := newRing(); err == nil {
			rg, memfd = r, fd
			ne.PutUint32(p[12:], 1)
			answer = p[:16]
		}
	}
	msg := rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, answer)
	var err2 error
	if rg != nil {
		err2 = sendWithFd(h.fd, msg, memfd)
		// The client has its own descriptor now; the mapping stays.
		unix.Close(memfd)
	} else {
		err2 = sendNow(h.fd, msg)
	}
	if err2 != nil {
		if rg != nil {
			rg.unmap()
		}
		c.close()
		h.close()
		return
	}
	t, err := newFdConn(h.fd)
	if err != nil {
		if rg != nil {
			rg.unmap()
		}
		c.close()
		h.close()
		return
	}
	t.ring = rg
	t.peerSpins = opts&helloOptSpin != 0      // fdconn.go
	s.serveConn(c, t, h.key, h.optionsQueued) // unix.go
}

// optionsQueued answers, before the connection reaches an event loop, the
// socket options the client sent right behind its HELLO (the supervisor
// sends NLEMU_GROUPFRAMES without waiting for the HELLO's answer,
// supervise/sock.go): setting an option waits for nothing, and answered
// here it costs no wake-up of a loop thread while the client finishes its
// socket(). Anything else stays in the socket for the loop, in order.
// answer is the loop's (lc.answer); false when the connection is gone.
func (h *handshake) optionsQueued(answer func([]byte) bool) bool {
	for range 4 {
		var head [rtnl.NLMSG_HDRLEN]byte
		n, _, err := unix.Recvfrom(h.fd, head[:], unix.MSG_DONTWAIT|unix.MSG_PEEK|unix.MSG_TRUNC)
		if err != nil || n < rtnl.NLMSG_HDRLEN || n > 64 || int(ne.Uint32(head[:])) != n || ne.Uint16(head[4:]) != rtnl.NLEMU_SETSOCKOPT {
			return true // nothing, or not one option alone: the loop's
		}
		b := make([]byte, n)
		if m, _, err := unix.Recvfrom(h.fd, b, unix.MSG_DONTWAIT); err != nil || m != n {
			return err == unix.EAGAIN
		}
		if !answer(b) {
			return false
		}
	}
	return true
}

// newFdConn makes connection fd (blocking, out of the netpoller) an fdConn:
// a small send buffer, so that this socket's own receive queue (and its
// ENOBUFS) decides, not the AF_UNIX buffer; busy mode's receive timeout
// (fdconn.go).
func newFdConn(fd int) (*fdConn, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, serverSndbuf); err != nil {
		return nil, err
	}
	tv := unix.NsecToTimeval(busyIdle.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	return &fdConn{fd: fd}, nil
}
