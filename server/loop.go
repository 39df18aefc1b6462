package server

import (
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// The event loops serve every connection after its handshake that is not
// in busy mode (fdconn.go): a small fixed set of OS threads, each with its
// own epoll set, receive buffer and event array. A connection's descriptor
// is registered (level-triggered EPOLLIN|EPOLLRDHUP) in exactly one loop,
// so only that thread reads it and requests are answered in order without
// EPOLLONESHOT re-arms. Per request the loop makes one recvfrom(2) and one
// sendto(2), plus a share of one epoll_wait(2) with every connection ready
// at that moment: no goroutine hand-off, no netpoller, no futex (the Go
// netpoller's reader-goroutine design cost about 6 system calls and two
// goroutine switches per request with 1,024 parallel `ip -batch`).
//
// A loop thread never waits for one client: writes are non-blocking (a
// full socket leaves the datagram queued for the connection's writer
// goroutine and its write-space watch), and a request that may wait for
// long (a change that the journal makes durable before its ACK,
// administration) is answered on a goroutine of its own while the
// connection is out of the loop, so that its next request is read only
// after it (loopConn.handOff).

// evloop is one event-loop thread's state.
type evloop struct {
	epfd int
	// mu guards slots and free: registration happens on any goroutine,
	// lookups on the loop thread.
	mu    sync.Mutex
	slots []loopSlot
	free  []int32
	// conns counts the registered connections (least-loaded placement).
	conns atomic.Int64
	// cpu is the CPU the loop's thread is pinned to, -1 when unpinned
	// (loopsched.go); sched the mode asked for.
	cpu   int
	sched LoopSched
	// rings holds the registered connections with a shared-memory ring
	// (guarded by mu), which the poller scans each round; ringsGen counts
	// their changes, so that the poller copies the list only then.
	rings    []*loopConn
	ringsGen atomic.Uint64
	// wakefd is the poller's eventfd (in its epoll set, -1 elsewhere): a
	// ring connection registered while the poller may be blocked writes
	// it, since the client's requests may already wait in the ring with
	// no doorbell (ring.go).
	wakefd atomic.Int32
}

// loopSlot is a registration: the connection and a generation, so that an
// event returned for a slot since reused is recognized and skipped.
type loopSlot struct {
	lc  *loopConn
	gen uint32
}

// loopConn is a connection served after its handshake: its socket, its
// writer and what ends it.
type loopConn struct {
	s          *Server
	c          *conn
	t          *fdConn
	w          *unixWriter
	stopWatch  func()
	writerDone chan struct{}
	uc         *net.UnixConn // the listener's handle of the connection (leaveConn)
	// onLoop is the loop holding the registration, slot and gen its
	// place there (set by add, cleared by remove; loop thread or owner).
	onLoop *evloop
	slot   int32
	gen    uint32
	// pid is the client's process (SO_PEERCRED, 0 when unknown), served
	// the requests a pinned loop answered since it last looked at the
	// client's CPU (rehome).
	pid    int32
	served uint32
}

// loopCount is the number of event loops: NLEMU_LOOPS when set (1 to 64),
// else defaultLoops. Read once, at the first connection.
func loopCount() int {
	if v, err := strconv.Atoi(os.Getenv("NLEMU_LOOPS")); err == nil && v >= 1 && v <= 64 {
		return v
	}
	return defaultLoops
}

// defaultLoops is one loop per P: measured against one loop with 128-512
// parallel `ip -batch` on 2 CPUs, GOMAXPROCS loops finished first in 4 of 5
// runs (10-30% sooner), for a few µs more server CPU per request
// (docs/PROTOCOL.md).
var defaultLoops = runtime.GOMAXPROCS(0)

var (
	loopsOnce sync.Once
	loops     []*evloop
	loopsErr  error
	// loopOfCPU is the loop pinned to each CPU (nil when unpinned).
	loopOfCPU map[int]*evloop
	// loopReads counts the datagrams read by every loop (for tests and
	// for busy mode's "served alone" test, fdconn.go).
	loopReads atomic.Uint64
	// loopHandOffs counts the requests answered on a goroutine of their
	// own because they may wait (for tests).
	loopHandOffs atomic.Uint64
	// loopRehomes counts the connections moved to the loop of their
	// client's CPU (rehome).
	loopRehomes atomic.Uint64
)

// startLoops starts the process's event loops on first use; they live as
// long as the process (each is an epoll descriptor and a locked thread
// blocked in epoll_wait while idle).
func startLoops() ([]*evloop, error) {
	loopsOnce.Do(func() {
		n := loopCount()
		sched := resolveLoopSched(wantedLoopSched())
		var cpus []int
		if sched != LoopSchedOff {
			cpus = loopCPUs()
			if sched == LoopSchedPoll && (len(cpus) < 2 || !mayFIFO()) {
				// A poller without real-time priority would share its
				// CPU with the clients it waits for; on one CPU it
				// would only delay them.
				sched = LoopSchedPin
			}
			if len(cpus) == 0 {
				sched = LoopSchedOff
			} else if sched == LoopSchedPoll {
				// One poller, on the last CPU, holding every connection.
				cpus = cpus[len(cpus)-1:]
				n = 1
			} else if os.Getenv("NLEMU_LOOPS") == "" {
				// One loop per CPU: each client's CPU has its loop.
				n = len(cpus)
			}
		}
		for i := range n {
			fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			if err != nil {
				loopsErr = err
				return
			}
			l := &evloop{epfd: fd, cpu: -1, sched: sched}
			if sched == LoopSchedPoll {
				l.cpu = cpus[0]
				pollerCPU.Store(int32(l.cpu))
			} else if cpus != nil {
				l.cpu = cpus[i%len(cpus)]
				if loopOfCPU == nil {
					loopOfCPU = map[int]*evloop{}
				}
				if loopOfCPU[l.cpu] == nil {
					loopOfCPU[l.cpu] = l
				}
			}
			loops = append(loops, l)
		}
		started := make(chan LoopSched, n)
		for _, l := range loops {
			go l.run(started)
		}
		// What the loops got (a priority the process may not take falls
		// back): the weakest of them.
		got := sched
		for range n {
			if g := <-started; schedRank(g) < schedRank(got) {
				got = g
			}
		}
		loopSchedGot.Store(got)
	})
	return loops, loopsErr
}

// pickLoop is the loop pinned to the CPU client pid runs on, when
// the loops are pinned and it is known (loopsched.go), else the
// least-loaded loop.
func pickLoop(pid int32) (*evloop, error) {
	ls, err := startLoops()
	if err != nil {
		return nil, err
	}
	if loopOfCPU != nil {
		if l := loopOfCPU[clientCPU(pid)]; l != nil {
			return l, nil
		}
	}
	best := ls[0]
	for _, l := range ls[1:] {
		if l.conns.Load() < best.conns.Load() {
			best = l
		}
	}
	return best, nil
}

// add registers lc with the loop: from now on only this loop reads it.
func (l *evloop) add(lc *loopConn) error {
	l.mu.Lock()
	var slot int32
	if n := len(l.free); n > 0 {
		slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		slot = int32(len(l.slots))
		l.slots = append(l.slots, loopSlot{})
	}
	s := &l.slots[slot]
	s.gen++
	s.lc = lc
	lc.onLoop, lc.slot, lc.gen = l, slot, s.gen
	r := lc.t.ring
	if r != nil {
		// Not polled until the poller has it in its list: the client
		// rings for its requests meanwhile.
		r.setPolling(false)
		l.rings = append(l.rings, lc)
		l.ringsGen.Add(1)
	}
	// From the moment it is in the epoll set the loop owns lc: nothing of
	// it is read here after that.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: slot, Pad: int32(s.gen)}
	fd := lc.t.fd
	l.mu.Unlock()
	l.conns.Add(1)
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.release(lc)
		return err
	}
	if efd := l.wakefd.Load(); r != nil && efd >= 0 {
		var one [8]byte
		one[0] = 1 // a counter of 1 in either byte order is nonzero
		unix.Write(int(efd), one[:])
	}
	return nil
}

// remove takes lc out of the loop (called by the loop thread, or by
// whoever owns lc while it is out of the loop's reach); the descriptor
// leaves the epoll set before anything may close it.
func (l *evloop) remove(lc *loopConn) {
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.t.fd, nil)
	l.release(lc)
}

func (l *evloop) release(lc *loopConn) {
	l.mu.Lock()
	s := &l.slots[lc.slot]
	if s.lc == lc && s.gen == lc.gen {
		s.lc = nil
		l.free = append(l.free, lc.slot)
	}
	if lc.t.ring != nil {
		if i := slices.Index(l.rings, lc); i >= 0 {
			l.rings = slices.Delete(l.rings, i, i+1)
			l.ringsGen.Add(1)
		}
	}
	lc.onLoop = nil
	l.mu.Unlock()
	l.conns.Add(-1)
}

// lookup is the connection of an event, nil when the slot was reused or
// freed since the event was reported.
func (l *evloop) lookup(slot int32, gen uint32) *loopConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(slot) >= len(l.slots) {
		return nil
	}
	s := l.slots[slot]
	if s.gen != gen {
		return nil
	}
	return s.lc
}

// loopEvents is the size of a loop's event array: with a thousand busy
// clients one epoll_wait returns dozens at once.
const loopEvents = 256

// run is the loop: wait for ready connections, and read and answer one
// datagram of each in turn (one per connection per round, so that a client
// that pipelines cannot starve the others).
func (l *evloop) run(started chan<- LoopSched) {
	// The loop keeps one OS thread, so that the client's send wakes a
	// thread that is already the one to run (no goroutine hand-off).
	runtime.LockOSThread()
	got := setThreadSched(l.sched, l.cpu)
	if l.sched == LoopSchedPoll && got != LoopSchedPoll {
		pollerCPU.Store(-1)
	}
	l.sched = got
	started <- got
	buf := make([]byte, maxDatagram)
	events := make([]unix.EpollEvent, loopEvents)
	if got == LoopSchedPoll {
		l.runPoll(buf, events)
	}
	for {
		// Blocking, through syscall.Syscall6 (unix.EpollWait), so that the
		// runtime can hand off the P while the thread sleeps: a raw
		// syscall would stall the garbage collector's stop-the-world.
		n, err := unix.EpollWait(l.epfd, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			panic("nlemu: epoll_wait: " + err.Error())
		}
		for i := range n {
			lc := l.lookup(events[i].Fd, uint32(events[i].Pad))
			if lc == nil {
				continue
			}
			l.serveOne(lc, buf)
		}
	}
}

// serveOne reads one datagram of lc and answers it, as the reader of a
// busy connection does (fdconn.go), on the loop thread.
func (l *evloop) serveOne(lc *loopConn, buf []byte) {
	if r := lc.t.ring; r != nil && !r.inLeft {
		// In ring mode the socket carries doorbells; a datagram after the
		// client's LEAVE, and the end of the stream, must wait for every
		// record before them (a client that sends without waiting for
		// answers and exits has its requests handled, as those queued in
		// a socket before its close are). Peeked first, so that a record
		// published before it is seen.
		n, e := recvPeek(lc.t.fd, buf)
		doorbell := e == 0 && n > 0 && n < rtnl.NLMSG_HDRLEN
		if e != unix.EAGAIN && e != unix.EINTR && !doorbell && r.reqPending() {
			l.serveRecord(lc, buf)
			return
		}
	}
	n, e := recvDontWait(lc.t.fd, buf)
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		// Level-triggered: still ready means reported again.
		return
	case e != 0 || n == 0:
		// End of stream (a zero-length read on SEQPACKET) or an error.
		l.remove(lc)
		go lc.finish()
		return
	case n > len(buf):
		// MSG_TRUNC reported the real length: dropped, EMSGSIZE next.
		lc.c.q.fail(syscall.EMSGSIZE)
		if !lc.w.drain() {
			l.remove(lc)
			go lc.finish()
		}
		return
	case n < rtnl.NLMSG_HDRLEN:
		// A doorbell (ring.go), or any datagram shorter than a header:
		// ignored, as netlink_rcv_skb() ignores one.
		shortIgnored.Add(1)
		return
	}
	if !l.dispatch(lc, buf[:n]) || l.sched == LoopSchedPoll {
		// Gone or handed off; or the poller, which serves a lone
		// client too: a busy reader would be a second spinner.
		return
	}
	if lc.t.alone && lc.t.tryBusy() {
		l.remove(lc)
		go lc.runBusy()
		return
	}
	if l.cpu >= 0 {
		l.rehome(lc)
	}
}

// shortIgnored counts the datagrams shorter than a header that were
// ignored (doorbells among them; for tests).
var shortIgnored atomic.Uint64

// dispatch answers request datagram b (a copy is kept: buf is the loop's)
// or hands it off when it may wait; false when lc left the loop.
func (l *evloop) dispatch(lc *loopConn, buf []byte) bool {
	b := append([]byte(nil), buf...)
	lc.t.noteRead(loopReads.Add(1))
	if lc.mayWait(b) {
		loopHandOffs.Add(1)
		l.remove(lc)
		go lc.handOff(b)
		return false
	}
	if !lc.answer(b) {
		l.remove(lc)
		go lc.finish()
		return false
	}
	return true
}

// serveRecord reads and serves one record of lc's request ring (the
// poller): a DATA record as a datagram read from the socket, a LEAVE by
// queueing the LEFT behind everything queued. False when lc left the
// loop (handed off, or closed: a bad ring closes its connection only).
func (l *evloop) serveRecord(lc *loopConn, buf []byte) bool {
	r := lc.t.ring
	kind, b, wake, err := r.readReq(buf[:0])
	if err != nil {
		ringBroken.Add(1)
		l.remove(lc)
		go lc.finish()
		return false
	}
	if wake {
		// The client waits for room in the request ring.
		lc.t.send(doorbell)
	}
	switch kind {
	case 0:
		return true
	case recLeave:
		// Requests come from the socket from now on; the writer writes
		// the LEFT when it reaches it, and then writes to the socket.
		r.inLeft = true
		lc.c.q.pushMark(leftMark())
		if !lc.w.drain() {
			l.remove(lc)
			go lc.finish()
			return false
		}
		return true
	}
	if len(b) < rtnl.NLMSG_HDRLEN {
		shortIgnored.Add(1) // as a short datagram from the socket
		return true
	}
	return l.dispatch(lc, b)
}

// ringSnapshot is the loop's ring connections, copied again when they
// changed since gen (poller only: every removal is the loop thread's, so
// a snapshot holds no connection that has left once refreshed after it).
func (l *evloop) ringSnapshot(cur []*loopConn, gen *uint64) []*loopConn {
	if g := l.ringsGen.Load(); g == *gen {
		return cur
	}
	l.mu.Lock()
	clear(cur)
	cur = append(cur[:0], l.rings...)
	*gen = l.ringsGen.Load()
	l.mu.Unlock()
	return cur
}

// scanRings serves one record of each ring connection that has one (round
// robin, like one datagram per ready socket) and tells the watchers of
// stalled ones that the client consumed. It stops at the first connection
// that left the loop (the snapshot is stale then: removed true).
func (l *evloop) scanRings(snap []*loopConn, buf []byte) (served int, removed bool) {
	for _, lc := range snap {
		r := lc.t.ring
		r.noteTail()
		if !r.reqPending() {
			continue
		}
		served++
		if !l.serveRecord(lc, buf) {
			return served, true
		}
	}
	return served, false
}

// ringsBusy reports, with server_polling cleared on every ring, whether
// one still has a record (the last look before blocking; a client that
// published after it saw the flag clear and rings).
func ringsBusy(snap []*loopConn) bool {
	for _, lc := range snap {
		r := lc.t.ring
		r.setPolling(false)
	}
	busy := false
	for _, lc := range snap {
		r := lc.t.ring
		r.noteTail()
		if r.reqPending() {
			busy = true
		}
	}
	return busy
}

// setRingsPolling stores server_polling on every ring of snap.
func setRingsPolling(snap []*loopConn, on bool) {
	for _, lc := range snap {
		lc.t.ring.setPolling(on)
	}
}

// ringEpollGap: while it polls and has ring connections, the poller
// makes its epoll_wait(0) (for the sockets: plain requests, doorbells,
// hang-ups) only when ringEpollGap nanoseconds have passed since the last
// one, the other rounds being ring scans alone: a request put into a ring
// is seen within a scan, not behind a system call (docs/PROTOCOL.md,
// "Shared-memory rings"). Atomic: BenchmarkRingRoundTrip compares values.
var ringEpollGap = func() *atomic.Int64 {
	var v atomic.Int64
	v.Store(defaultRingEpollGap)
	return &v
}()

// defaultRingEpollGap: measured with BenchmarkRingRoundTrip, see
// docs/PROTOCOL.md.
const defaultRingEpollGap = 4000

// pollEpolls counts the poller's epoll_wait calls (for the benchmark).
var pollEpolls atomic.Uint64

// pollWakeTag is the poller's eventfd in its epoll set (no slot has it).
const pollWakeTag = -1

// pollerCPU is the CPU the polling loop owns (LoopSchedPoll), -1 when no
// loop polls; told to clients in the HELLO answer (pollWord).
var pollerCPU = func() *atomic.Int32 {
	var v atomic.Int32
	v.Store(-1)
	return &v
}()

// pollIdle is how long the poller polls without a request before it
// blocks in epoll_wait again (NLEMU_POLL_US, microseconds, 1 to 100,000).
var pollIdle = func() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("NLEMU_POLL_US")); err == nil && v >= 1 && v <= 100000 {
		return time.Duration(v) * time.Microsecond
	}
	return defaultPollIdle
}()

// defaultPollIdle: long enough to cover a client's own work between two
// requests and a switch between two clients on the other CPU, short
// enough that an idle server burns nothing noticeable.
const defaultPollIdle = 200 * time.Microsecond

// Poll counters (for tests): the empty polls, and the times the poller
// went back to blocking.
var (
	pollEmpty  atomic.Uint64
	pollBlocks atomic.Uint64
)

// pollWord is the HELLO answer's third word: 1<<31 | the poller's CPU
// when a loop polls (the shim then spins for its replies whenever it runs
// on another CPU), 0 otherwise. It starts the loops if they are not yet.
func pollWord() uint32 {
	if _, err := startLoops(); err != nil {
		return 0
	}
	if c := pollerCPU.Load(); c >= 0 {
		return 1<<31 | uint32(c)
	}
	return 0
}

// runPoll is the polling loop (LoopSchedPoll): while requests keep
// coming it never sleeps, so that a client's request is read within a
// poll's time, with no wake-up on either side (the client spins for its
// reply on another CPU, docs/PROTOCOL.md "Polled server CPU"); after
// pollIdle without one it blocks as the other loops do. Level-triggered
// epoll reports a connection that stays ready again at the tail of its
// ready list, and each round reads one datagram per ready connection:
// round robin between the clients.
func (l *evloop) runPoll(buf []byte, events []unix.EpollEvent) {
	idle := pollIdle.Nanoseconds()
	polling := false
	var last int64 // nanotime of the last request, while polling
	empty := 0
	if efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: pollWakeTag}
		if unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, efd, &ev) == nil {
			l.wakefd.Store(int32(efd))
		} else {
			unix.Close(efd)
		}
	}
	var (
		snap      []*loopConn
		gen       uint64
		lastEpoll int64
	)
	for {
		served := 0
		if l.ringsGen.Load() != gen {
			snap = l.ringSnapshot(snap, &gen)
			if polling {
				setRingsPolling(snap, true)
			}
		}
		if len(snap) > 0 {
			var removed bool
			if served, removed = l.scanRings(snap, buf); removed {
				gen-- // copy the list again
			}
		}
		if served > 0 {
			polling, empty = true, 0
			last = nanotime()
		}
		if polling && len(snap) > 0 {
			if now := nanotime(); now-lastEpoll < ringEpollGap.Load() {
				// A round of ring scans only (no system call).
				if served == 0 {
					if empty++; empty&15 == 0 && now-last > idle {
						polling = false
						pollBlocks.Add(1)
					}
				}
				continue
			} else {
				lastEpoll = now
			}
		}
		pollEpolls.Add(1)
		timeout := 0
		if !polling {
			timeout = -1
			// Before blocking: server_polling cleared, then every ring
			// looked at once more (ring.go: no lost wake-up).
			snap = l.ringSnapshot(snap, &gen)
			if ringsBusy(snap) {
				setRingsPolling(snap, true)
				polling, empty = true, 0
				last = nanotime()
				continue
			}
		}
		n, err := unix.EpollWait(l.epfd, events, timeout)
		if timeout < 0 {
			// Woken: the rings are polled again (no removal happened
			// meanwhile; additions are set at the next round's copy).
			setRingsPolling(snap, true)
		}
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			panic("nlemu: epoll_wait: " + err.Error())
		}
		if n == 0 {
			if served > 0 {
				continue
			}
			pollEmpty.Add(1)
			// The clock is read every 16 empty polls only: a vDSO call,
			// but the poll itself is not much more.
			if empty++; empty&15 == 0 && nanotime()-last > idle {
				polling = false
				pollBlocks.Add(1)
			}
			continue
		}
		for i := range n {
			if events[i].Fd == pollWakeTag {
				var b [8]byte
				unix.Read(int(l.wakefd.Load()), b[:])
				continue
			}
			lc := l.lookup(events[i].Fd, uint32(events[i].Pad))
			if lc == nil {
				continue
			}
			l.serveOne(lc, buf)
		}
		polling, empty = true, 0
		last = nanotime()
	}
}

// nanotime is the monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(monoStart)) }

var monoStart = time.Now()

// rehomeEvery is how many requests a pinned loop answers for a connection
// between two looks at its client's CPU.
const rehomeEvery = 64

// rehome moves lc to the loop pinned to the CPU its client now runs on,
// every rehomeEvery requests, when the scheduler moved the client
// (load balancing): a client served from the other CPU blocks in its
// receive again. Between two requests, on the loop thread: the next
// request is read by the new loop only, so order is kept.
func (l *evloop) rehome(lc *loopConn) {
	lc.served++
	if lc.served%rehomeEvery != 0 {
		return
	}
	to := loopOfCPU[clientCPU(lc.pid)]
	if to == nil || to == l {
		return
	}
	loopRehomes.Add(1)
	l.remove(lc)
	if to.add(lc) != nil {
		go lc.finish()
	}
}

// recvPeek is recvDontWait with MSG_PEEK: the next datagram's length,
// left in the socket.
func recvPeek(fd int, buf []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), 1, unix.MSG_DONTWAIT|unix.MSG_TRUNC|unix.MSG_PEEK, 0, 0)
	return int(n), e
}

// recvDontWait is one non-blocking recvfrom(MSG_DONTWAIT|MSG_TRUNC): the
// datagram's real length even when it did not fit. Raw: it never blocks.
func recvDontWait(fd int, buf []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
	return int(n), e
}

// answer handles request b and writes what it caused, before the next
// request is read: the reply goes out without waking the writer
// goroutine; then the work the request left for after its reply runs
// (conn.tidy), while the client prepares its next request. False when
// the connection is gone.
func (lc *loopConn) answer(b []byte) bool {
	c := lc.c
	c.q.hold()
	c.handle(b)
	ok := lc.w.drain()
	c.q.release()
	c.tidy()
	return ok
}

// mayWait reports whether datagram b holds a request that may wait for
// long before it is answered: with a journal (`--state`) every change
// waits for its record to be durable (Journal.Apply); administration
// (namespace add and delete, their journal records, stats) takes the
// namespace manager's locks. A loop thread must not wait for either.
func (lc *loopConn) mayWait(b []byte) bool {
	journal := lc.s.journal != nil
	for len(b) >= rtnl.NLMSG_HDRLEN {
		l := int(ne.Uint32(b))
		typ := ne.Uint16(b[4:])
		switch {
		case typ >= rtnl.NLEMU_NETNS_ADD && typ <= rtnl.NLEMU_CTRL_MAX:
			return true
		case journal && typ >= rtnl.NLMSG_MIN_TYPE && typ <= rtnl.RTM_MAX && (typ-16)&3 != 2:
			return true // mutates(), without the family check
		}
		l = (l + 3) &^ 3
		if l < rtnl.NLMSG_HDRLEN || l >= len(b) {
			break
		}
		b = b[l:]
	}
	return false
}

// handOff answers b on this goroutine, with lc out of every loop (its next
// request waits in the socket), then gives lc back to a loop.
func (lc *loopConn) handOff(b []byte) {
	if !lc.answer(b) {
		lc.finish()
		return
	}
	lc.resume()
}

// resume registers lc with a loop again (after a hand-off or busy mode).
func (lc *loopConn) resume() {
	if lc.pid == 0 {
		lc.pid = peerPID(lc.t.fd)
	}
	l, err := pickLoop(lc.pid)
	if err == nil {
		err = l.add(lc)
	}
	if err != nil {
		lc.finish()
	}
}

// finish ends a connection that no loop holds: the socket leaves its
// namespace, the writer and the watch stop, the descriptor is closed.
func (lc *loopConn) finish() {
	lc.c.close()
	<-lc.writerDone
	lc.stopWatch()
	lc.t.close()
	if r := lc.t.ring; r != nil {
		// No loop, writer or watcher uses it any more.
		r.unmap()
	}
	lc.s.leaveConn(lc.uc)
}
