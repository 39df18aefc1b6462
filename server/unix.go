package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// serverSndbuf is SO_SNDBUF on the server's end of a connection: room for
// the largest dump datagram plus a little (a datagram must fit in
// sk_sndbuf). What the socket holds unread stays charged to the receive
// queue (queue.flights), so this size does not enlarge the receive buffer;
// when it is full the writer waits for the client, never blocking the
// reader.
const serverSndbuf = 64 << 10

// Listener is a Unix SOCK_SEQPACKET listener serving the nlemu protocol:
// its connections are accepted and their HELLOs answered on a thread of
// its own (accept.go).
type Listener struct {
	s    *Server
	a    *acceptor
	path string
}

// ErrInUse is returned by ListenUnix when a live server owns the path.
var ErrInUse = errors.New("a live nlemu server already owns the socket")

// Path returns the socket path.
func (l *Listener) Path() string { return l.path }

// Close stops accepting, closes the connections whose HELLO has not come
// and removes the socket file; connections already served stay open.
func (l *Listener) Close() error {
	err := l.a.stop()
	if err == nil {
		// As net.UnixListener's unlink on close: the name, whatever is
		// there now.
		unix.Unlink(l.path)
	}
	return err
}

// serveConn serves connection t after its HELLO was answered: an event
// loop (loop.go) reads and answers its requests in order, and its writer
// drains into the socket what its receive queue gets without a request.
// key is its identity in the limits' table (leaveConn); first (if not nil)
// answers what it chooses of the requests already queued, with the
// connection in no loop yet (false: the connection is gone).
func (s *Server) serveConn(c *conn, t *fdConn, key *net.UnixConn, first func(answer func([]byte) bool) bool) {
	// Server.Close hangs up on the client, ending the connection's reads.
	c.onClose(t.hangup)
	w := &unixWriter{c: c, t: t}
	lc := &loopConn{s: s, c: c, t: t, w: w, uc: key, writerDone: make(chan struct{})}
	lc.stopWatch = w.watch()
	go func() {
		// Delivers what arrives without a request: notifications, and the
		// rest of a dump the reader keeps draining.
		defer close(lc.writerDone)
		for c.q.wait() && w.drain() {
		}
	}()
	if first != nil && !first(lc.answer) {
		lc.finish()
		return
	}
	lc.resume()
}

// unixWriter moves a connection's queued datagrams into its socket; the
// reader (after each request) and the writer goroutine (for everything
// else) both drain, one at a time, so order is kept. Writes never block:
// when the socket is full the datagram stays queued and the writer
// goroutine waits for the client to read (watch).
type unixWriter struct {
	mu sync.Mutex
	c  *conn
	t  *fdConn
	// retry is the wire form of the oldest queued datagram when the
	// socket was full (guarded by mu).
	retry []byte
	// watching: watch follows the client's reads (set before use).
	watching bool
}

// drain writes queued datagrams until none is left or the socket is full;
// false when the socket is gone.
func (w *unixWriter) drain() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		b, errno, gen, ok := w.c.q.next()
		if !ok {
			return false
		}
		if b == nil && errno == 0 {
			return true
		}
		if errno != 0 {
			var e [4]byte
			ne.PutUint32(e[:], uint32(errno))
			b = rtnl.AppendMessage(nil, rtnl.NLEMU_SOCKERR, 0, 0, 0, e[:])
		} else if w.retry != nil {
			b, w.retry = w.retry, nil
		} else if !isLeftMark(b) {
			b = w.c.wireForm(b)
		}
		err := w.c.q.transmit(errno != 0, b, w.send) // ring.go
		if err == unix.EAGAIN && !w.watching {
			// No wakeups to wait for: block (outside q.mu).
			if err = w.t.sendBlocking(b); err == nil {
				w.c.q.sent(errno != 0, len(b))
			}
		}
		switch err {
		case nil:
		case unix.EAGAIN:
			if errno == 0 {
				// wireForm took the datagram's group: keep its form.
				w.retry = b
			}
			w.c.q.stall(gen)
			return true
		default:
			w.c.close()
			return false
		}
		w.c.afterRead(0)
	}
}

// watch makes the connection's queue charge what its socket holds unread
// (SIOCOUTQ: for AF_UNIX the truesize of the datagrams the peer has not
// read; settled whenever a datagram would not fit) and, while a stalled
// writer or a dump waits for room, follows the client's reads: every read
// frees socket memory and wakes writers (unix_write_space()), which a
// pollable descriptor of the socket waits for. That descriptor exists only
// while something waits: registered with the netpoller, every read the
// client makes would wake a server thread — one per request of a batch
// client (measured: an epoll wake-up, a futex and a spin per request). It
// returns the function that stops watching.
func (w *unixWriter) watch() func() {
	w.watching = true
	w.c.q.setTransport(w.t.outq)
	var (
		mu  sync.Mutex
		cur *os.File // the second descriptor while waiting (guarded by mu)
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-w.c.q.spaceWanted:
			case <-done:
				return
			}
			if r := w.t.ring; r != nil && !r.outLeft.Load() {
				w.awaitRing(r, done) // ring.go
				continue
			}
			w.awaitSpace(done, &mu, &cur)
		}
	}()
	return func() {
		close(done)
		mu.Lock()
		if cur != nil {
			cur.Close() // ends a wait in awaitSpace
		}
		mu.Unlock()
		<-stopped
	}
}

// awaitSpace follows the client's reads on a pollable descriptor of the
// socket until nothing waits for room any more (or done). Its first check
// runs at once, so a read that came before the descriptor is not missed.
func (w *unixWriter) awaitSpace(done chan struct{}, mu *sync.Mutex, cur **os.File) {
	w.c.q.spaceWatches.Add(1)
	wake := func() bool {
		if w.c.q.writeSpace() {
			w.c.afterRead(0)
		}
		return !w.c.q.wantsSpace()
	}
	f, rc, err := w.t.pollable("nlemu-client-space")
	if err != nil {
		// No descriptor to spare (EMFILE): look every millisecond.
		for !wake() {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
		return
	}
	mu.Lock()
	select {
	case <-done:
		mu.Unlock()
		f.Close()
		return
	default:
	}
	*cur = f
	mu.Unlock()
	rc.Write(func(uintptr) bool { return wake() }) // returns early once f is closed
	mu.Lock()
	*cur = nil
	mu.Unlock()
	f.Close()
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// helloNack is the NLMSG_ERROR refusing a HELLO, with its reason as text.
func helloNack(req []byte, errno syscall.Errno, msg string) []byte {
	msgs := rtnl.SplitDatagram(req)
	if len(msgs) == 0 {
		hdr := rtnl.AppendHeader(nil, rtnl.NLMSG_HDRLEN, rtnl.NLEMU_HELLO, 0, 0, 0)
		msgs = rtnl.SplitDatagram(hdr)
	}
	return rtnl.AppendAck(nil, &msgs[0], 0, rtnl.Errorf(errno, msg), rtnl.AckOptions{ExtAck: true, CapAck: true})
}

// protocolVersion is the HELLO version this server speaks
// (docs/PROTOCOL.md); any other is refused with EPROTO.
const protocolVersion = 1

// maxDatagram bounds what a client can send in one datagram: more than an
// AF_UNIX socket's largest send buffer allows.
const maxDatagram = 1 << 20

// errTooBig is a datagram larger than maxDatagram: it is dropped, and the
// client gets EMSGSIZE from its next receive, as netlink_sendmsg() would
// have refused it (a Unix socket's send cannot be failed afterwards).
var errTooBig = errors.New("nlemu: datagram larger than 1 MiB")
