package server

import (
	"github.com/nlemu/nlemu/internal/sysctl"
	"sync"
	"sync/atomic"
	"syscall"
)

// queue is a socket's receive queue: datagrams waiting for the reader,
// bounded by the socket's receive buffer like sk_rcvbuf, each charged its
// kernel truesize (datagramTruesize) as sk_rmem_alloc is. Multicast and
// unicast replies that do not fit are dropped and the reader gets ENOBUFS
// once (netlink_overrun()); dumps only produce their next datagram once the
// reader has drained it to half (netlink_recvmsg()).
//
// Over a Unix socket, a datagram written into the socket stays charged
// (a flight) until the client has read it, which SIOCOUTQ tells: otherwise
// the AF_UNIX buffers would silently enlarge the receive buffer.
type queue struct {
	mu    sync.Mutex
	cond  sync.Cond
	items []item // guarded by mu
	head  int
	bytes int           // guarded by mu: truesize queued and in flight
	limit int           // guarded by mu: receive buffer (sk_rcvbuf)
	err   syscall.Errno // guarded by mu: pending socket error
	noErr bool          // guarded by mu: NETLINK_NO_ENOBUFS
	// congested is NETLINK_S_CONGESTED: set by an overrun, it drops every
	// further multicast until the reader has emptied the queue.
	congested bool // guarded by mu
	closed    bool // guarded by mu
	// held: the transport's reader is handling a request and drains the
	// queue itself afterwards, so a push need not wake the writer (each
	// wake-up is a thread hand-off: futex, spinning, epoll).
	held bool // guarded by mu
	// free holds reply buffers the conn lent (pushLent) that the reader
	// has copied out or the transport has written: the conn takes one
	// back for its next reply, so a request loop allocates none.
	free [][]byte // guarded by mu
	// spaceWanted carries a token when a writer stalls or a dump starts
	// waiting for room: the transport then follows the client's reads
	// until neither waits (and not otherwise: each read would wake it).
	spaceWanted chan struct{}
	// writerWakes and spaceWatches count the writer wake-ups pushes
	// caused and the transport's waits for write space (for tests).
	writerWakes  int // guarded by mu
	spaceWatches atomic.Uint64

	// The transport's side (Unix socket); all guarded by mu.
	flights []flight // written, not yet read by the client, oldest first
	fhead   int
	fcharge int // sum of the flights' charges
	// outq reports the bytes the client has not read yet (SIOCOUTQ on
	// the server's end); nil in-process.
	outq func() (int, bool)
	// wantRoom: a dump waits for the reader to make room; wgen counts
	// the transport's write-space wakeups; stalled (at stallGen) means
	// the socket was full and the writer waits for the next wakeup.
	wantRoom bool
	wgen     uint64
	stalled  bool
}

// item is a queued datagram and the truesize it is charged. lent marks
// the conn's reply buffer, which goes back to free once copied out.
type item struct {
	b    []byte
	size int
	lent bool
}

// flight is a datagram in the Unix socket: its cost to the socket's
// sk_wmem_alloc (unixCharge) and its truesize, still charged to the queue.
type flight struct {
	charge, size int
}

// defaultRcvbuf is net.core.rmem_default and rmemMax net.core.rmem_max,
// read from this machine when available.
var (
	defaultRcvbuf = sysctl.Int("/proc/sys/net/core/rmem_default", 212992)
	rmemMax       = sysctl.Int("/proc/sys/net/core/rmem_max", 212992)
)

func newQueue() *queue {
	q := &queue{limit: defaultRcvbuf, spaceWanted: make(chan struct{}, 1)}
	q.cond.L = &q.mu
	return q
}

// wantSpaceLocked tells the transport that a writer or a dump now waits for
// the client to read (spaceWanted); it never blocks.
func (q *queue) wantSpaceLocked() {
	select {
	case q.spaceWanted <- struct{}{}:
	default:
	}
}

// wantsSpace reports whether anything waits for a write-space wakeup: a
// stalled writer or a dump waiting for room.
func (q *queue) wantsSpace() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.closed && (q.stalled || q.wantRoom)
}

// push queues b unless it does not fit and force is false. It never
// blocks. Forced datagrams (dump batches, nlemu's control answers) are
// always queued and charged.
func (q *queue) push(b []byte, force bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushLocked(b, force, false)
}

// maxFree bounds the lent buffers kept for reuse.
const maxFree = 4

// pushLent pushes reply b, a buffer the conn lent its handler, and
// returns a buffer for the conn's next reply: one a reader has copied out,
// or b itself when b was dropped, else nil.
func (q *queue) pushLent(b []byte) []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.pushLocked(b, false, true) {
		return b
	}
	if n := len(q.free); n > 0 {
		f := q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
		return f
	}
	return nil
}

// recycleLocked keeps lent buffer b, no longer queued, for pushLent.
func (q *queue) recycleLocked(b []byte) {
	if len(q.free) < maxFree {
		q.free = append(q.free, b[:0])
	}
}

func (q *queue) pushLocked(b []byte, force, lent bool) bool {
	size := datagramTruesize(b, force)
	if q.closed {
		return false
	}
	if !force && !q.admitLocked(size) {
		// netlink_overrun(): ENOBUFS once per congestion episode; with
		// NETLINK_NO_ENOBUFS neither the error nor the congestion.
		if !q.noErr && !q.congested {
			q.congested = true
			q.err = syscall.ENOBUFS
		}
		q.signalLocked()
		return false
	}
	q.items = append(q.items, item{b, size, lent})
	q.bytes += size
	q.signalLocked()
	return true
}

// signalLocked wakes the writer unless the reader will drain (held).
func (q *queue) signalLocked() {
	if !q.held {
		q.writerWakes++
		q.cond.Signal()
	}
}

// hold tells pushes that the reader drains next: they do not wake the
// writer until release.
func (q *queue) hold() {
	q.mu.Lock()
	q.held = true
	q.mu.Unlock()
}

// release ends hold, waking the writer if something is still queued (a
// notification that arrived after the reader's drain, or an error).
func (q *queue) release() {
	q.mu.Lock()
	q.held = false
	if q.head < len(q.items) || q.err != 0 {
		q.cond.Signal()
	}
	q.mu.Unlock()
}

// admitLocked is the test of netlink_broadcast_deliver() (and of
// netlink_attachskb(), for replies, which the kernel unicasts without
// waiting): a socket that is not congested takes the skb if its
// sk_rmem_alloc with the skb charged stays within sk_rcvbuf, or if it was
// empty ("rmem == skb->truesize"), however large the skb. Before refusing,
// it learns what the client has read from the transport meanwhile.
func (q *queue) admitLocked(size int) bool {
	fits := func() bool { return !q.congested && (q.bytes == 0 || q.bytes+size <= q.limit) }
	if fits() {
		return true
	}
	q.settleLocked()
	return fits()
}

// settleLocked releases the flights the client has read, from the
// transport's count of unread bytes: they are consumed in order, so the
// oldest flight has been read while the newer ones alone still account for
// the unread bytes. A queue left empty ends congestion, as netlink_recvmsg()
// does once the receive queue is empty. It reports whether any was released.
func (q *queue) settleLocked() bool {
	if q.fhead == len(q.flights) {
		if q.head == len(q.items) {
			q.congested = false
		}
		return false
	}
	if q.outq == nil {
		return false
	}
	unread, ok := q.outq()
	if !ok {
		return false
	}
	released := false
	for q.fhead < len(q.flights) {
		f := q.flights[q.fhead]
		if q.fcharge-f.charge < unread {
			break
		}
		q.fcharge -= f.charge
		q.bytes -= f.size
		q.fhead++
		released = true
	}
	if q.fhead == len(q.flights) {
		q.flights, q.fhead = q.flights[:0], 0
		if q.head == len(q.items) {
			q.congested = false
		}
	}
	return released
}

// popLocked is one non-blocking pop with q.mu held, for a reader that
// consumes at once (the in-process client): a pending socket error first
// (skb_recv_datagram() checks sk_err before the queue), else the next
// datagram, whose charge is released. It returns (item{}, 0, false) once
// closed. A lent item is the caller's to recycle (recycleLocked) once it
// has copied it out, or to keep.
func (q *queue) popLocked() (item, syscall.Errno, bool) {
	if q.err != 0 {
		e := q.err
		q.err = 0
		return item{}, e, true
	}
	if q.head < len(q.items) {
		it := q.items[q.head]
		q.items[q.head] = item{}
		q.head++
		q.bytes -= it.size
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
			if q.fhead == len(q.flights) {
				// netlink_rcv_wake(): an empty queue ends congestion.
				q.congested = false
			}
		}
		return it, 0, true
	}
	return item{}, 0, !q.closed
}

// next returns, without removing it, what a transport writes next: a
// pending socket error first, else the oldest datagram; nil and 0 when
// there is nothing, ok false once closed. gen identifies the write-space
// wakeups seen so far, for stall.
func (q *queue) next() (b []byte, errno syscall.Errno, gen uint64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, 0, 0, false
	}
	if q.err != 0 {
		return nil, q.err, q.wgen, true
	}
	if q.head < len(q.items) {
		return q.items[q.head].b, 0, q.wgen, true
	}
	return nil, 0, q.wgen, true
}

// sent records that what next returned (the error when isErr) is now in
// the transport, n bytes long: it stays charged until the client reads it.
func (q *queue) sent(isErr bool, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sentLocked(isErr, unixCharge(n))
}

// transmit writes b (what next returned) into the transport with write, a
// non-blocking send that returns what the datagram costs the transport's
// count of unread bytes (unixCharge for a socket, ring bytes for a ring),
// and records it as sent, both under q.mu: a settle in between would see
// the datagram among the transport's unread bytes with no flight for it,
// and take an older flight for unread.
func (q *queue) transmit(isErr bool, b []byte, write func([]byte) (int, error)) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	charge, err := write(b)
	if err == nil {
		q.sentLocked(isErr, charge)
	}
	return err
}

// pushMark queues transport marker b (leftMark) behind everything queued,
// charged nothing: the writer acts on it when it reaches it.
func (q *queue) pushMark(b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.items = append(q.items, item{b: b})
	q.signalLocked()
}

func (q *queue) sentLocked(isErr bool, charge int) {
	size := 0
	if isErr {
		q.err = 0
	} else if q.head < len(q.items) {
		it := q.items[q.head]
		size = it.size
		if it.lent {
			// Written into the transport: the bytes are the socket's.
			q.recycleLocked(it.b)
		}
		q.items[q.head] = item{}
		q.head++
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
		}
	}
	q.stalled = false
	if q.outq == nil {
		// Nothing tells when the client reads: released at once.
		q.bytes -= size
		if q.head == len(q.items) {
			q.congested = false
		}
		return
	}
	q.flights = append(q.flights, flight{charge, size})
	q.fcharge += charge
}

// fail makes errno the socket's pending error (sk_err), reported before
// the queued datagrams as skb_recv_datagram() does; an error already
// pending stays.
func (q *queue) fail(errno syscall.Errno) {
	q.mu.Lock()
	if q.err == 0 {
		q.err = errno
	}
	q.cond.Signal()
	q.mu.Unlock()
}

// stall notes that the transport was full when the writer tried (having
// seen gen): it waits for the next write-space wakeup, unless one came in
// between.
func (q *queue) stall(gen uint64) {
	q.mu.Lock()
	if q.wgen == gen {
		q.stalled = true
		q.wantSpaceLocked()
	}
	q.mu.Unlock()
}

// writeSpace is a write-space wakeup from the transport: the client has
// read something. It ends a stall and reports whether a dump that waited
// for room may now go on.
func (q *queue) writeSpace() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wgen++
	if q.stalled {
		q.stalled = false
		q.cond.Broadcast()
	}
	if !q.wantRoom {
		return false
	}
	q.settleLocked()
	if q.bytes > q.limit/2 {
		return false
	}
	q.wantRoom = false
	return true
}

// setTransport makes the queue charge what the transport holds unread;
// outq reports it (SIOCOUTQ).
func (q *queue) setTransport(outq func() (int, bool)) {
	q.mu.Lock()
	q.outq = outq
	q.mu.Unlock()
}

// roomForDump reports whether a dump may add its next datagram: the
// receive queue is at most half full (netlink_recvmsg()). If not, the
// transport's next write-space wakeup asks again (wantRoom is set before
// settling, so a read in between is not missed).
func (q *queue) roomForDump() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bytes <= q.limit/2 {
		q.wantRoom = false
		return true
	}
	q.wantRoom = true
	if q.settleLocked() && q.bytes <= q.limit/2 {
		q.wantRoom = false
		return true
	}
	q.wantSpaceLocked()
	return false
}

func (q *queue) setLimit(n int) {
	q.mu.Lock()
	q.limit = n
	q.mu.Unlock()
}

func (q *queue) setNoENOBUFS(v bool) {
	q.mu.Lock()
	q.noErr = v
	q.mu.Unlock()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// wait blocks until the queue has a datagram or an error to deliver and
// the transport is not full, and reports false once it is closed.
func (q *queue) wait() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for (q.stalled || q.head >= len(q.items) && q.err == 0) && !q.closed {
		q.cond.Wait()
	}
	return !q.closed
}
