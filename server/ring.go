package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Shared-memory rings between a shim client and the polling loop
// (docs/PROTOCOL.md, "Shared-memory rings (poll mode)"): a memfd region,
// created and initialised here, given to the client in the HELLO answer,
// holding one ring per direction. While the poller polls, a request and
// its reply cost no system call on either side: the client writes its
// request into the request ring and spins on the reply ring, the poller
// scans the request rings of its connections each round and its writer
// puts replies into the reply ring. The socket carries only 1-byte
// doorbells (to wake a side that sleeps) and the hang-up.
//
// Everything read from the region may have been scribbled on by the
// client at any moment: every value is loaded once, validated, and
// records are copied out before they are parsed. A bad value closes that
// connection only (errBadRing).

// helloOptShm is the HELLO option bit of a client that can use rings (the
// shim, unless NLEMU_SHM=0).
const helloOptShm = 1 << 7

// The region's layout: each shared field on a 64-byte line of its own, the
// two rings' data from ringData on.
const (
	ringMagic   = 0x4E4C5348 // "NLSH"
	ringVersion = 1

	offMagic          = 0
	offVersion        = 4
	offReqSize        = 8
	offRepSize        = 12
	offReqHead        = 64
	offReqTail        = 128
	offRepHead        = 192
	offRepTail        = 256
	offServerPolling  = 320
	offClientSpinning = 384
	offServerStalled  = 448
	offClientStalled  = 512
	ringData          = 4096

	// Ring sizes: a request ring for the shim's largest datagram in ring
	// mode (req_size/2) and more; a reply ring that holds two of the
	// largest dump datagrams (32 KiB, dumpBatch).
	ringReqSize = 16 << 10
	ringRepSize = 64 << 10

	// Record kinds.
	recData  = 1
	recWrap  = 2
	recLeave = 3 // LEAVE from the client, LEFT from the server

	recHdr = 8
)

// errBadRing is a region whose shared values break the protocol.
var errBadRing = errors.New("nlemu: bad shared-memory ring")

// ringCreated counts the regions made (for tests).
var ringCreated atomic.Uint64

// ring is the server's side of one connection's region.
type ring struct {
	mem              []byte // the whole mapping; nil once unmapped
	reqSize, repSize uint64

	// Poller only: the request ring's consumed position, and whether the
	// client's LEAVE was read (requests come from the socket since).
	reqTail uint64
	inLeft  bool
	// lastTail is rep_tail as the poller last told the watcher (poller
	// only).
	lastTail uint64

	// Writer only (unixWriter.mu): the reply ring's produced position,
	// and ring bytes written (a WRAP gap, a LEFT) that no flight is
	// charged for yet: the next flight is.
	repHead uint64
	pending int
	// outLeft: the LEFT is written, output goes to the socket (set by the
	// writer, read by the watcher).
	outLeft atomic.Bool

	// waiting: the watcher waits for the client to consume (a stalled
	// writer or a dump waiting for room); moved carries the poller's
	// tokens that rep_tail moved meanwhile.
	waiting atomic.Bool
	moved   chan struct{}

	// mu guards mem against unmap while outq reads it.
	mu sync.Mutex
}

// newRing creates, maps and initialises a region; it returns the memfd,
// which the caller sends to the client and then closes (the mapping stays).
func newRing() (*ring, int, error) {
	size := ringData + ringReqSize + ringRepSize
	fd, err := unix.MemfdCreate("nlemu-ring", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	r := &ring{mem: mem, reqSize: ringReqSize, repSize: ringRepSize, moved: make(chan struct{}, 1)}
	// A fresh memfd reads as zeroes: the counters and flags start at 0.
	ne.PutUint32(mem[offVersion:], ringVersion)
	ne.PutUint32(mem[offReqSize:], ringReqSize)
	ne.PutUint32(mem[offRepSize:], ringRepSize)
	atomic.StoreUint32(r.u32(offMagic), ringMagic)
	ringCreated.Add(1)
	return r, fd, nil
}

func (r *ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// reqData and repData are the two rings' bytes.
func (r *ring) reqData() []byte { return r.mem[ringData : ringData+r.reqSize] }
func (r *ring) repData() []byte { return r.mem[ringData+r.reqSize : ringData+r.reqSize+r.repSize] }

// unmap releases the mapping (finish, once nothing else uses the ring).
func (r *ring) unmap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// pad8 is n rounded up to a multiple of 8.
func pad8(n uint64) uint64 { return (n + 7) &^ 7 }

// reqPending reports whether the request ring holds a record (poller).
func (r *ring) reqPending() bool {
	return !r.inLeft && atomic.LoadUint64(r.u64(offReqHead)) != r.reqTail
}

// readReq copies the request ring's next record into dst and consumes it
// (poller only): its kind and bytes, kind 0 when the ring is empty. The
// head is loaded once; every header is validated before use (a record
// within the ring and within what the client published, a known kind).
// wake reports that the client waits for room (client_stalled) and needs
// a doorbell.
func (r *ring) readReq(dst []byte) (kind uint32, b []byte, wake bool, err error) {
	head := atomic.LoadUint64(r.u64(offReqHead))
	data := r.reqData()
	for {
		avail := head - r.reqTail
		if avail == 0 {
			return 0, nil, false, nil
		}
		if avail > r.reqSize || avail%8 != 0 || avail < recHdr {
			return 0, nil, false, errBadRing
		}
		off := r.reqTail & (r.reqSize - 1)
		ln := uint64(ne.Uint32(data[off:]))
		kind = ne.Uint32(data[off+4:])
		switch kind {
		case recWrap:
			// The rest of the ring up to its end is a gap.
			gap := r.reqSize - off
			if gap > avail {
				return 0, nil, false, errBadRing
			}
			r.reqTail += gap
			atomic.StoreUint64(r.u64(offReqTail), r.reqTail)
			continue
		case recData, recLeave:
		default:
			return 0, nil, false, errBadRing
		}
		if ln > r.reqSize-recHdr {
			return 0, nil, false, errBadRing
		}
		rec := recHdr + pad8(ln)
		if off+rec > r.reqSize || rec > avail {
			return 0, nil, false, errBadRing
		}
		b = append(dst[:0], data[off+recHdr:off+recHdr+ln]...)
		r.reqTail += rec
		// Seq-cst store then load: the client sets client_stalled, then
		// looks at the tail again (Dekker), so one of us sees the other.
		atomic.StoreUint64(r.u64(offReqTail), r.reqTail)
		wake = atomic.LoadUint32(r.u32(offClientStalled)) != 0
		return kind, b, wake, nil
	}
}

// repUsed is the reply ring's unconsumed bytes, validated: the client's
// tail never passes the head, nor lags it by more than the ring.
func (r *ring) repUsed(head uint64) (uint64, error) {
	tail := atomic.LoadUint64(r.u64(offRepTail))
	used := head - tail
	if used > r.repSize {
		return 0, errBadRing
	}
	return used, nil
}

// fits reports whether a datagram of n bytes can go into the reply ring.
func (r *ring) fits(n int) bool { return uint64(n) <= r.repSize-recHdr }

// putRep writes one record into the reply ring (writer only): the ring
// bytes it took (a wrap gap included), or EAGAIN when there is no room.
// A record that does not fit before the ring's end is preceded by a WRAP;
// when the WRAP fits but the record does not, the WRAP is published alone
// (its bytes charged with the next record), so that a record of any size
// up to the ring gets room once the client has consumed enough.
func (r *ring) putRep(kind uint32, b []byte) (int, error) {
	used, err := r.repUsed(r.repHead)
	if err != nil {
		return 0, err
	}
	data := r.repData()
	rec := recHdr + pad8(uint64(len(b)))
	off := r.repHead & (r.repSize - 1)
	if off+rec > r.repSize {
		gap := r.repSize - off
		if r.repSize-used < gap {
			return 0, unix.EAGAIN
		}
		ne.PutUint32(data[off:], 0)
		ne.PutUint32(data[off+4:], recWrap)
		r.repHead += gap
		used += gap
		r.pending += int(gap)
		atomic.StoreUint64(r.u64(offRepHead), r.repHead)
		off = 0
	}
	if r.repSize-used < rec {
		return 0, unix.EAGAIN
	}
	ne.PutUint32(data[off:], uint32(len(b)))
	ne.PutUint32(data[off+4:], kind)
	copy(data[off+recHdr:], b)
	r.repHead += rec
	atomic.StoreUint64(r.u64(offRepHead), r.repHead)
	charge := int(rec) + r.pending
	r.pending = 0
	return charge, nil
}

// clientWaits reports, after a head was published, whether the client is
// not spinning and needs a doorbell (seq-cst: the client clears
// client_spinning, then looks at the ring once more).
func (r *ring) clientWaits() bool {
	return atomic.LoadUint32(r.u32(offClientSpinning)) == 0
}

// setPolling stores server_polling (poller only).
func (r *ring) setPolling(on bool) {
	v := uint32(0)
	if on {
		v = 1
	}
	atomic.StoreUint32(r.u32(offServerPolling), v)
}

// setStalled stores server_stalled.
func (r *ring) setStalled(on bool) {
	v := uint32(0)
	if on {
		v = 1
	}
	atomic.StoreUint32(r.u32(offServerStalled), v)
}

// unread is what the client has not consumed of the reply ring, for the
// queue's accounting (outq); false once unmapped or bad.
func (r *ring) unread() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem == nil {
		return 0, false
	}
	used, err := r.repUsed(atomic.LoadUint64(r.u64(offRepHead)))
	if err != nil {
		return 0, false
	}
	return int(used), true
}

// noteTail tells the watcher, when it waits, that the client consumed
// since the last look (poller only).
func (r *ring) noteTail() {
	if !r.waiting.Load() {
		return
	}
	if t := atomic.LoadUint64(r.u64(offRepTail)); t != r.lastTail {
		r.lastTail = t
		select {
		case r.moved <- struct{}{}:
		default:
		}
	}
}

// doorbell is the 1-byte datagram that wakes a side that sleeps.
var doorbell = []byte{'D'}

// leftMark is the queue item that stands for the LEFT record: queued
// behind everything already queued when the client's LEAVE is read.
var leftMarkArr [1]byte

func leftMark() []byte { return leftMarkArr[:0:1] }

// isLeftMark reports whether b is leftMark.
func isLeftMark(b []byte) bool {
	return len(b) == 0 && cap(b) == 1 && unsafe.SliceData(b) == &leftMarkArr[0]
}

// send is the writer's transmit (unixWriter.drain, under its mu): into
// the reply ring while the connection is in ring mode, else into the
// socket. It returns the datagram's charge against outq. A datagram that
// never fits the ring makes the server leave ring mode on its own: a LEFT,
// then this datagram and every later one over the socket.
func (w *unixWriter) send(b []byte) (int, error) {
	r := w.t.ring
	if r == nil {
		return unixCharge(len(b)), w.t.send(b)
	}
	if isLeftMark(b) {
		if r.outLeft.Load() {
			return 0, nil // left already, on the server's own
		}
		n, err := r.putRep(recLeave, nil)
		if err != nil {
			return 0, w.ringErr(r, err)
		}
		r.outLeft.Store(true)
		w.ringBell(r)
		return n, nil
	}
	if !r.outLeft.Load() {
		if r.fits(len(b)) {
			n, err := r.putRep(recData, b)
			if err != nil {
				return 0, w.ringErr(r, err)
			}
			w.ringBell(r)
			return n, nil
		}
		n, err := r.putRep(recLeave, nil)
		if err != nil {
			return 0, w.ringErr(r, err)
		}
		r.pending += n
		r.outLeft.Store(true)
		ringSelfLeaves.Add(1)
		w.ringBell(r)
	}
	if err := w.t.send(b); err != nil {
		return 0, err
	}
	charge := unixCharge(len(b)) + r.pending
	r.pending = 0
	return charge, nil
}

// ringSelfLeaves counts the server's own LEFTs (a datagram too large for
// the reply ring; for tests).
var ringSelfLeaves atomic.Uint64

// ringErr is what a failed putRep means to drain: EAGAIN (no room: the
// writer stalls and the watcher waits for the client, awaitRing), or a
// broken ring, which ends the connection (drain closes it on any other
// error).
func (w *unixWriter) ringErr(r *ring, err error) error {
	if err == unix.EAGAIN {
		return err
	}
	ringBroken.Add(1)
	return unix.EPROTO
}

// ringBroken counts the connections closed for a bad ring (for tests).
var ringBroken atomic.Uint64

// ringBell sends the client a doorbell when it does not spin for the
// ring (EAGAIN ignored: doorbells are queued already).
func (w *unixWriter) ringBell(r *ring) {
	if r.clientWaits() {
		w.t.send(doorbell)
	}
}

// awaitRing is the watcher's wait for a ring connection: while a stalled
// writer or a dump waiting for room wants space, it says so in
// server_stalled (the client then rings after consuming) and goes on at
// each of the poller's tokens that rep_tail moved (ring.noteTail). The
// first check runs at once, after the flag is set: a consumption before
// it is seen by the check, one after it by the poller.
func (w *unixWriter) awaitRing(r *ring, done chan struct{}) {
	w.c.q.spaceWatches.Add(1)
	r.waiting.Store(true)
	r.setStalled(true)
	defer func() {
		r.waiting.Store(false)
		r.setStalled(false)
	}()
	for {
		if w.c.q.writeSpace() {
			w.c.afterRead(0)
		}
		if !w.c.q.wantsSpace() {
			return
		}
		select {
		case <-r.moved:
		case <-done:
			return
		}
	}
}
