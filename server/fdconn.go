package server

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// The server's end of a client connection, after the handshake, is a plain
// descriptor of its own (fdConn), out of the Go netpoller, in one of two
// modes:
//
//   - loop (every connection at first, and all of them when many are busy
//     at once): the descriptor is registered in one of the event loops
//     (loop.go), whose thread reads and answers it: one recvfrom(2) and
//     one sendto(2) per request and a share of an epoll_wait(2). Costs an
//     epoll entry while idle, no thread.
//   - busy: a goroutine blocks in recvfrom(2) on the descriptor itself,
//     which is in blocking mode and in no epoll set, so the client's send
//     wakes exactly this thread (unix_dgram_sendmsg() ->
//     sk_data_ready()), and the reply is a direct sendto(2) from it: one
//     receive and one send per request, the floor (hack/floor.sh), without
//     the loop's epoll_wait. The receive has an idle timeout (SO_RCVTIMEO,
//     busyIdle): a connection that goes quiet returns to a loop and gives
//     its thread back.
//
// A connection enters busy mode after a request if no other connection was
// served since its previous request and one of the process's busySlots is
// free, and leaves it as soon as another connection is served: a blocked
// receive keeps its P in _Psyscall until sysmon retakes it (measured with
// 16 parallel `ip -batch`: sysmon polling every 20 µs, usleep and retake
// 7% of the server's time), so connections busy at the same time (the
// seed's thousands of parallel `ip -batch`) share the loops instead, whose
// epoll_wait then returns many ready connections per call.
type fdConn struct {
	fd int // the socket; closed by close (guarded by mu against shutdown)

	mu     sync.Mutex
	closed bool // guarded by mu

	// flagMu serializes the moments the socket is made non-blocking so
	// that os.NewFile registers a descriptor of it with the netpoller
	// (pollable); every other moment it is blocking.
	flagMu sync.Mutex

	busy bool    // reader only: in busy mode, holding a slot
	buf  *[]byte // reader only: the slot's receive buffer
	// seen is loopReads after this connection's last loop read or its
	// entry into busy mode (reader only: the loop, or the busy goroutine):
	// when it moved on, another connection was served meanwhile.
	seen  uint64
	alone bool // reader only: no other loop read since our previous one

	// spin is the busy reader's back-off, away its CPU placement while
	// it spins (reader only; spinBusy).
	spin spinState
	away *awayPin
	// peerSpins: the client's HELLO said it spins for its replies
	// (helloOptSpin); set before the connection is served.
	peerSpins bool
	// ring is the connection's shared-memory region when the client took
	// one (helloOptShm, ring.go); set before the connection is served.
	ring *ring
}

// helloOptSpin is the HELLO option bit of a client that spins for its
// replies (the shim with NLEMU_SPIN_US above 0 and two CPUs or more;
// docs/PROTOCOL.md). A busy reader spins only for such a client: one that
// blocks in its receive is woken by the reply wherever the scheduler
// finds room, and a reader spinning on the other CPU takes that room
// (measured on 2 CPUs shared with other jobs: 120-135 us per round trip
// with only the reader spinning, against 10-11 us with neither).
const helloOptSpin = 1 << 6

// busyIdle is how long a busy connection's blocking receive waits before
// the connection returns to a loop: far longer than an `ip -batch`
// takes between two lines, far shorter than anything a user notices as a
// thread kept.
var busyIdle = 20 * time.Millisecond

// busySlots bounds the connections in busy mode at once: GOMAXPROCS-1 (at
// least 1), so that one P is always left to the loops and to the
// connections they serve; NLEMU_BUSY=0 turns busy mode off (every
// connection stays in its loop). A slot is a receive buffer, made on
// first use and kept: the pooled ones go with every collection, and a
// fresh 1 MiB buffer is cleared page by page (measured: 2% of a busy
// server's time).
var busySlots = func() chan *[]byte {
	n := max(1, runtime.GOMAXPROCS(0)-1)
	if os.Getenv("NLEMU_BUSY") == "0" {
		n = 0
	}
	ch := make(chan *[]byte, n)
	for range n {
		ch <- nil
	}
	return ch
}()

// busyThreads counts the connections in busy mode; busyReads the
// datagrams read in busy mode (loopReads those read by the loops).
var (
	busyThreads atomic.Int64
	busyReads   atomic.Uint64
	// busyYields counts the busy readers that left busy mode because
	// another connection was served (not by their idle timeout).
	busyYields atomic.Uint64
)

// busySpin is how long a busy reader that just answered polls its socket
// without blocking before its blocking receive (spinBusy):
// NLEMU_LOOP_SPIN_US microseconds (0 turns it off, at most 10,000), else
// defaultBusySpin; none with one CPU, where the spin would only delay the
// client it waits for. Atomic: tests change it while readers of earlier
// connections run.
var busySpin = newAtomicDuration(spinWindow("NLEMU_LOOP_SPIN_US", defaultBusySpin))

// atomicDuration is a time.Duration read and written atomically.
type atomicDuration struct{ v atomic.Int64 }

func newAtomicDuration(d time.Duration) *atomicDuration {
	a := &atomicDuration{}
	a.v.Store(int64(d))
	return a
}

func (a *atomicDuration) Load() time.Duration   { return time.Duration(a.v.Load()) }
func (a *atomicDuration) Store(d time.Duration) { a.v.Store(int64(d)) }

// defaultBusySpin: 50 us, with the shim's SPIN_US_DEFAULT. On the quiet
// 2-CPU machine one `ip -batch` of 40,000 routes (hack/routeload.sh) took
// 0.47-0.59 s with both sides spinning against 1.60-1.62 s with neither
// (kernel 0.42-0.60 s in the same runs); under load the running-count
// check keeps the spin off (docs/PROTOCOL.md, "Spin then block").
// NLEMU_LOOP_SPIN_US=0 turns it off.
const defaultBusySpin = 50 * time.Microsecond

// spinWindow is the spin window env (microseconds) asks for, else def; 0
// on a machine with one CPU to run on.
func spinWindow(env string, def time.Duration) time.Duration {
	d := def
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v >= 0 {
		d = time.Duration(min(v, 10000)) * time.Microsecond
	}
	if runtime.NumCPU() < 2 {
		return 0
	}
	return d
}

// spinMaxLevel bounds the back-off: after a miss at level L, the next
// 2^L-1 waits do not spin.
const spinMaxLevel = 10

// spinState is one waiter's adaptive spin (the shim's is the same, per
// socket: preload/nlemu_preload.c, "spin then block"): a wait that ends
// within the window lowers the level by one, a miss raises it and skips
// spinning for the next 2^level-1 waits, so a peer whose requests keep
// coming in time is spun for at every request and one that has gone
// quiet costs one window now and then.
type spinState struct {
	level uint8
	skip  uint16
}

// want reports whether this wait spins (and counts down a skip).
func (s *spinState) want() bool {
	if s.skip > 0 {
		s.skip--
		return false
	}
	return true
}

// hit records a wait that ended within the window.
func (s *spinState) hit() {
	if s.level > 0 {
		s.level--
	}
}

// miss records a wait that outlasted the window.
func (s *spinState) miss() {
	if s.level < spinMaxLevel {
		s.level++
	}
	s.skip = 1<<s.level - 1
}

// awayPin keeps a spinning busy reader's thread off the CPU its client
// runs on. A spin pays only while both sides run at once: the scheduler
// places a woken task beside its waker (wake_affine() in
// select_task_rq_fair()), and a client woken onto the CPU where the reader
// spins waits for the spinner's time slice (measured on 2 CPUs, the
// reader spinning unpinned for a client that blocked: 13-22 us per round
// trip, against 9.4-9.9 us with no spin in 4 of 5 rounds). The thread is locked to the goroutine while busy;
// while it spins its affinity is every CPU the process may use but the
// client's, looked at again after every miss and every rehomeEvery hits;
// a wait that does not spin gives the affinity back first (unpin: a
// thread held to the one other CPU of a machine without a CPU to spare
// waits there behind whatever runs on it), and so does restore, before
// the thread is unlocked.
type awayPin struct {
	pid    int32
	saved  unix.CPUSet
	ok     bool // saved holds the thread's affinity before
	client int  // the CPU excluded, -1 none
	hits   uint32
}

// awayPinned counts the busy readers' moves off their client's CPU.
var awayPinned atomic.Uint64

// awayFrom locks the calling goroutine to its thread, for client pid.
func awayFrom(pid int32) *awayPin {
	runtime.LockOSThread()
	a := &awayPin{pid: pid, client: -1}
	a.ok = unix.SchedGetaffinity(0, &a.saved) == nil
	return a
}

// pin moves the thread off the client's CPU unless it is already.
func (a *awayPin) pin() {
	if a != nil && a.client < 0 {
		a.again()
	}
}

// unpin gives the thread its affinity back.
func (a *awayPin) unpin() {
	if a != nil && a.ok && a.client >= 0 {
		unix.SchedSetaffinity(0, &a.saved)
		a.client = -1
	}
}

// again looks at the client's CPU and moves off it if needed.
func (a *awayPin) again() {
	if a == nil || !a.ok {
		return
	}
	cpu := clientCPU(a.pid)
	if cpu < 0 || cpu == a.client || !a.saved.IsSet(cpu) || a.saved.Count() < 2 {
		return
	}
	set := a.saved
	set.Clear(cpu)
	if unix.SchedSetaffinity(0, &set) == nil {
		a.client = cpu
		awayPinned.Add(1)
	}
}

// every calls again once every rehomeEvery hits (the load balancer may
// have moved the client).
func (a *awayPin) every() {
	if a == nil {
		return
	}
	a.hits++
	if a.hits%rehomeEvery == 0 {
		a.again()
	}
}

// restore gives the thread its affinity back and unlocks it.
func (a *awayPin) restore() {
	a.unpin()
	runtime.UnlockOSThread()
}

// spareEvery is how many waits pass between two looks at /proc/loadavg
// (spareCPU).
const spareEvery = 64

var (
	spareTick atomic.Uint32
	spare     atomic.Bool
	// spinCPUs is the number of CPUs the process may use.
	spinCPUs = runtime.NumCPU()
	// spinAlways (NLEMU_SPIN_ALWAYS=1) spins without looking for a CPU
	// to spare: for tests, and to measure what the spin does on a
	// machine shared with other jobs.
	spinAlways = func() *atomic.Bool {
		var b atomic.Bool
		b.Store(os.Getenv("NLEMU_SPIN_ALWAYS") == "1")
		return &b
	}()
)

// spareCPU reports whether a spin may take a CPU: no more tasks runnable on
// the machine than the process's CPUs (the spinner and its client among
// them), as /proc/loadavg's running count (nr_running()) said at the last
// of the looks taken every spareEvery waits. With a third busy task on 2
// CPUs a spinning reader holds the CPU where the scheduler would have
// woken the client, which then waits behind the other task: round trips
// of 88-129 us against 11-12 us without the spin (measured with the
// client not spinning).
func spareCPU() bool {
	if spinAlways.Load() {
		return true
	}
	if spareTick.Add(1)%spareEvery == 1 {
		r := runningTasks()
		spare.Store(r >= 0 && r <= spinCPUs)
	}
	return spare.Load()
}

// runningTasks is the number of runnable tasks on the machine, the caller
// included (the fourth field of /proc/loadavg, "R/T"), -1 when unknown.
// Raw system calls into a stack buffer, as pidCPU.
func runningTasks() int {
	fd, err := unix.Open("/proc/loadavg", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var buf [128]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return -1
	}
	return loadavgRunning(buf[:n])
}

// loadavgRunning parses the running count out of a /proc/loadavg line
// ("0.50 0.40 0.30 3/312 4567"), -1 when it is not one.
func loadavgRunning(b []byte) int {
	f := bytes.Fields(b)
	if len(f) < 4 {
		return -1
	}
	r, _, ok := bytes.Cut(f[3], []byte("/"))
	if !ok {
		return -1
	}
	v, err := strconv.Atoi(string(r))
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// busySpinHits and busySpinMisses count the busy readers' spins that found
// a request and those that ended in the blocking receive; busySpinSkips
// the waits that did not spin (back-off).
var (
	busySpinHits   atomic.Uint64
	busySpinMisses atomic.Uint64
	busySpinSkips  atomic.Uint64
)

// errIdle is a busy receive's idle timeout.
var errIdle = errors.New("nlemu: idle")

// takeOver makes the server's end of uc a descriptor of its own, out of the
// netpoller (closing uc, which removes it from the netpoller's epoll set:
// otherwise each datagram the client sends would also wake a netpoller
// thread), blocking, with busy mode's receive timeout.
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

// noteRead records a loop read, the n-th of all loops: alone when no
// other connection was read since this one's previous read.
func (t *fdConn) noteRead(n uint64) {
	t.alone = t.seen != 0 && n == t.seen+1
	t.seen = n
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

// tryBusy takes a busy slot if one is free (the caller then takes the
// connection out of its loop).
func (t *fdConn) tryBusy() bool {
	if t.busy {
		return true
	}
	select {
	case t.buf = <-busySlots:
	default:
		return false
	}
	if t.buf == nil {
		b := make([]byte, maxDatagram)
		t.buf = &b
	}
	t.busy = true
	t.seen = loopReads.Load()
	busyThreads.Add(1)
	return true
}

// runBusy is busy mode's reader (the connection is in no loop): it answers
// requests from its blocking receive until another connection is served
// or the client goes quiet for busyIdle, then gives the connection back to
// a loop.
func (lc *loopConn) runBusy() {
	t := lc.t
	if busySpin.Load() > 0 && t.peerSpins {
		if lc.pid == 0 {
			lc.pid = peerPID(t.fd)
		}
		t.away = awayFrom(lc.pid)
	}
	gone := lc.serveBusy()
	// The thread's affinity back, before the connection may reach a loop
	// and another busy episode (resume): that one has its own.
	if t.away != nil {
		t.away.restore()
		t.away = nil
	}
	if gone {
		lc.finish()
		return
	}
	t.leaveBusy()
	lc.resume()
}

// serveBusy answers requests from the blocking receive until another
// connection is served or the client goes quiet (false), or the
// connection is gone (true).
func (lc *loopConn) serveBusy() bool {
	t := lc.t
	for {
		b, err := t.recvBusy()
		if err == errIdle {
			return false
		}
		busyReads.Add(1)
		if err == errTooBig {
			lc.c.q.fail(syscall.EMSGSIZE)
			if !lc.w.drain() {
				return true
			}
			continue
		}
		if err != nil || b == nil {
			return true
		}
		if len(b) < rtnl.NLMSG_HDRLEN {
			// Ignored, as netlink_rcv_skb() ignores it (serveOne).
			shortIgnored.Add(1)
			continue
		}
		// Answered from this goroutine, which may wait: a journal's
		// fsync blocks no loop.
		if !lc.answer(b) {
			return true
		}
		if loopReads.Load() != t.seen {
			busyYields.Add(1)
			return false
		}
	}
}

// recvBusy is the busy mode's blocking receive: one recvfrom(2) that waits
// at most busyIdle (errIdle after that).
func (t *fdConn) recvBusy() ([]byte, error) {
	buf := *t.buf
	if busySpin.Load() > 0 && t.peerSpins {
		if t.spin.want() && spareCPU() {
			t.away.pin()
			if n, ok := t.spinBusy(buf); ok {
				busySpinHits.Add(1)
				t.spin.hit()
				t.away.every()
				return t.received(buf, n)
			}
			busySpinMisses.Add(1)
			t.spin.miss()
			t.away.again()
		} else {
			busySpinSkips.Add(1)
			t.away.unpin()
		}
	}
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
		}
		return t.received(buf, int(n))
	}
}

// received is what a receive of n bytes into buf gave (MSG_TRUNC: n may
// exceed buf): the datagram, nil at end of stream, or errTooBig.
func (t *fdConn) received(buf []byte, n int) ([]byte, error) {
	switch {
	case n == 0:
		return nil, nil
	case n > len(buf):
		return nil, errTooBig
	}
	return append([]byte(nil), buf[:n]...), nil
}

// spinBusy polls the socket without blocking for up to busySpin, so that
// a client's next request, sent while this thread is still running, is
// read with no wake-up (the client's send finds no sleeper to wake,
// unix_dgram_sendmsg(): sk_data_ready() on an empty wait queue): with the
// shim spinning for the reply as well, a round trip is four system calls
// and no context switch. It gives up early when another connection is
// read by a loop (the reader then leaves busy mode after its next
// request, runBusy). The probes are raw system calls: a non-blocking
// receive never sleeps. True and the length (MSG_TRUNC) when a datagram,
// or the end of stream (0), came; false when the window passed or the
// probe failed otherwise (the blocking receive then reports it).
func (t *fdConn) spinBusy(buf []byte) (int, bool) {
	window := busySpin.Load()
	start := time.Now()
	for {
		n, e := recvDontWait(t.fd, buf)
		switch e {
		case 0:
			return n, true
		case unix.EAGAIN, unix.EINTR:
		default:
			return 0, false
		}
		if time.Since(start) >= window || loopReads.Load() != t.seen {
			return 0, false
		}
	}
}

// send sends one datagram without waiting (EAGAIN when the socket is full).
// A raw system call: MSG_DONTWAIT never blocks, and the runtime's
// entersyscall/exitsyscall around it cost 4% of a loop's time.
func (t *fdConn) send(b []byte) error {
	for {
		var p unsafe.Pointer
		if len(b) > 0 {
			p = unsafe.Pointer(&b[0])
		}
		_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(t.fd), uintptr(p), uintptr(len(b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
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

// outq is SIOCOUTQ on the socket: the bytes the client has not read; with
// a ring, the reply ring's unconsumed bytes first (the client consumes the
// ring up to the LEFT before it reads the socket), and the socket's only
// once the server left ring mode (before, the socket holds doorbells
// alone).
func (t *fdConn) outq() (int, bool) {
	ringBytes := 0
	if r := t.ring; r != nil {
		n, ok := r.unread()
		if !ok {
			return 0, false
		}
		if !r.outLeft.Load() {
			return n, true
		}
		ringBytes = n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, false
	}
	n, err := unix.IoctlGetInt(t.fd, unix.SIOCOUTQ)
	return ringBytes + n, err == nil
}

// hangup ends the connection's reads and writes (Server.Close): a blocked
// receive returns end of stream, and so does the loop's next read.
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
	t.leaveBusy()
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		unix.Close(t.fd)
	}
	t.mu.Unlock()
}
