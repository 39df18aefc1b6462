package server

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The server's end of a client connection, after the handshake, is a plain
// descriptor of its own (fdConn), out of the Go netpoller, in one of two
// modes:
//
//   - polled: a second, pollable descriptor of the socket is registered
//     with the netpoller and the reader goroutine parks on it between
//     requests. Costs no thread while idle; every request costs the
//     netpoller's wake-up (epoll_pwait, often a futex and a spinning
//     thread: measured 1.5 epoll_pwait and 0.3 nanosleep per request of a
//     lone `ip -batch`).
//   - busy: the reader blocks in recvfrom(2) on the descriptor itself,
//     which is in blocking mode and in no epoll set, so the client's send
//     wakes exactly this thread (unix_dgram_sendmsg() ->
//     sk_data_ready()), and the reply is a direct sendto(2) from it: one
//     receive and one send per request, the floor (hack/floor.sh). The
//     receive has an idle timeout (SO_RCVTIMEO, busyIdle): a connection
//     that goes quiet returns to polled mode and gives its thread back.
//
// A connection enters busy mode after a request if no other connection was
// served since its previous request and one of the process's busySlots is
// free, and leaves it as soon as another connection is served: a blocked
// receive keeps its P in _Psyscall until sysmon retakes it (measured with
// 16 parallel `ip -batch`: sysmon polling every 20 µs, usleep and retake
// 7% of the server's time), so connections busy at the same time (the
// seed's thousands of parallel `ip -batch`) share the netpoller instead,
// whose epoll_pwait then returns many ready connections per call.
type fdConn struct {
	fd int // the socket; closed by close (guarded by mu against shutdown)

	mu     sync.Mutex
	closed bool // guarded by mu

	// flagMu serializes the moments the socket is made non-blocking so
	// that os.NewFile registers a descriptor of it with the netpoller
	// (pollable); every other moment it is blocking.
	flagMu sync.Mutex

	// poll is the reader's pollable descriptor in polled mode (nil in busy
	// mode); only the reader goroutine touches it.
	poll   *os.File
	pollRC syscall.RawConn
	busy   bool    // reader only: in busy mode, holding a slot
	buf    *[]byte // reader only: the slot's receive buffer
	// seen is polledReads after this connection's last polled read or
	// its entry into busy mode (reader only): when it moved on, another
	// connection was served meanwhile.
	seen  uint64
	alone bool // reader only: no other polled read since our previous one
}

// busyIdle is how long a busy connection's blocking receive waits before
// the connection returns to polled mode: far longer than an `ip -batch`
// takes between two lines, far shorter than anything a user notices as a
// thread kept.
var busyIdle = 20 * time.Millisecond

// busySlots bounds the connections in busy mode at once: GOMAXPROCS-1 (at
// least 1), so that one P is always left to the netpoller and to the
// connections it serves. A slot is a receive buffer, made on first use
// and kept: the pooled ones go with every collection, and a fresh 1 MiB
// buffer is cleared page by page (measured: 2% of a busy server's time).
var busySlots = func() chan *[]byte {
	n := max(1, runtime.GOMAXPROCS(0)-1)
	ch := make(chan *[]byte, n)
	for range n {
		ch <- nil
	}
	return ch
}()

// busyThreads counts the connections in busy mode; busyReads and
// polledReads the datagrams read in each mode (for tests).
var (
	busyThreads atomic.Int64
	busyReads   atomic.Uint64
	polledReads atomic.Uint64
	// busyYields counts the busy readers that left busy mode because
	// another connection was served (not by their idle timeout).
	busyYields atomic.Uint64
)

// errIdle is a busy receive's idle timeout.
var errIdle = errors.New("nlemu: idle")

// takeOver makes the server's end of uc a descriptor of its own, out of the
// netpoller (closing uc, which removes it from the epoll set: otherwise each
// datagram the client sends would also wake a netpoller thread), in
// polled mode.
func takeOver(uc *net.UnixConn) (*fdConn, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	uc.Close()
	t := &fdConn{fd: fd}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	tv := unix.NsecToTimeval(busyIdle.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := t.enterPolled(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return t, nil
}

// pollable returns a new descriptor of the socket registered with the
// netpoller (os.NewFile polls a descriptor only if it is non-blocking, a
// flag the two descriptors share, hence flagMu). The busy reader may see
// EAGAIN from a receive begun in that moment; it retries (recvBusy).
func (t *fdConn) pollable(name string) (*os.File, syscall.RawConn, error) {
	t.flagMu.Lock()
	defer t.flagMu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, nil, os.ErrClosed
	}
	dup, err := unix.FcntlInt(uintptr(t.fd), unix.F_DUPFD_CLOEXEC, 0)
	t.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(dup), name)
	// Blocking again for the busy reader (the new file is registered: it
	// keeps being polled).
	unix.SetNonblock(dup, false)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}

// enterPolled puts the reader in polled mode.
func (t *fdConn) enterPolled() error {
	f, rc, err := t.pollable("nlemu-client")
	if err != nil {
		return err
	}
	t.poll, t.pollRC = f, rc
	t.leaveBusy()
	return nil
}

// leaveBusy gives the busy slot back, if held.
func (t *fdConn) leaveBusy() {
	if t.busy {
		t.busy = false
		busyThreads.Add(-1)
		busySlots <- t.buf
		t.buf = nil
	}
}

// afterRequest picks the mode for the next read: busy mode for a
// connection served alone, polled once others are served too.
func (t *fdConn) afterRequest() {
	if t.busy {
		if polledReads.Load() != t.seen {
			busyYields.Add(1)
			t.enterPolled()
		}
		return
	}
	if t.alone {
		t.tryBusy()
	}
}

// tryBusy puts the reader in busy mode if a slot is free (the reader's
// pollable descriptor is closed: it leaves the epoll set).
func (t *fdConn) tryBusy() {
	if t.busy {
		return
	}
	select {
	case t.buf = <-busySlots:
	default:
		return
	}
	if t.buf == nil {
		b := make([]byte, maxDatagram)
		t.buf = &b
	}
	t.busy = true
	t.seen = polledReads.Load()
	busyThreads.Add(1)
	t.poll.Close()
	t.poll, t.pollRC = nil, nil
}

// read returns the next datagram from the client, in either mode, as
// readDatagram does: (nil, nil) at end of stream, errTooBig for one larger
// than maxDatagram.
func (t *fdConn) read() ([]byte, error) {
	for {
		if !t.busy {
			b, err := readDatagram(t.pollRC)
			n := polledReads.Add(1)
			t.alone = t.seen != 0 && n == t.seen+1
			t.seen = n
			return b, err
		}
		b, err := t.recvBusy()
		if err != errIdle {
			busyReads.Add(1)
			return b, err
		}
		if err := t.enterPolled(); err != nil {
			return nil, err
		}
	}
}

// recvBusy is the busy mode's blocking receive: one recvfrom(2) that waits
// at most busyIdle (errIdle after that).
func (t *fdConn) recvBusy() ([]byte, error) {
	buf := *t.buf
	start := time.Now()
	for {
		n, _, e := syscall.Syscall6(unix.SYS_RECVFROM, uintptr(t.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.MSG_TRUNC, 0, 0)
		switch {
		case e == unix.EINTR:
			// SO_RCVTIMEO makes a socket's receive not restartable
			// (signal(7)): a signal the runtime takes ends it.
			continue
		case e == unix.EAGAIN:
			if time.Since(start) < busyIdle/2 {
				continue // made non-blocking for a moment (pollable)
			}
			return nil, errIdle
		case e != 0:
			return nil, e
		case n == 0:
			return nil, nil
		case int(n) > len(buf):
			return nil, errTooBig
		}
		return append([]byte(nil), buf[:n]...), nil
	}
}

// send sends one datagram without waiting (EAGAIN when the socket is full).
func (t *fdConn) send(b []byte) error {
	for {
		var p unsafe.Pointer
		if len(b) > 0 {
			p = unsafe.Pointer(&b[0])
		}
		_, _, e := syscall.Syscall6(unix.SYS_SENDTO, uintptr(t.fd), uintptr(p), uintptr(len(b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// sendBlocking sends one datagram, waiting for room.
func (t *fdConn) sendBlocking(b []byte) error {
	for {
		var p unsafe.Pointer
		if len(b) > 0 {
			p = unsafe.Pointer(&b[0])
		}
		_, _, e := syscall.Syscall6(unix.SYS_SENDTO, uintptr(t.fd), uintptr(p), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// outq is SIOCOUTQ on the socket: the bytes the client has not read.
func (t *fdConn) outq() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, false
	}
	n, err := unix.IoctlGetInt(t.fd, unix.SIOCOUTQ)
	return n, err == nil
}

// hangup ends the connection's reads and writes (Server.Close): a blocked
// receive returns end of stream, a polled one wakes.
func (t *fdConn) hangup() {
	t.mu.Lock()
	if !t.closed {
		unix.Shutdown(t.fd, unix.SHUT_RDWR)
	}
	t.mu.Unlock()
}

// close releases the descriptors and the busy slot; only once the reader
// and every writer are done.
func (t *fdConn) close() {
	if t.poll != nil {
		t.poll.Close()
		t.poll, t.pollRC = nil, nil
	}
	t.leaveBusy()
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		unix.Close(t.fd)
	}
	t.mu.Unlock()
}
