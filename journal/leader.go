package journal

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The leader path, for the policies whose ACK waits for the write only
// (Interval and None): no committer goroutine. A change appends its record
// to the open group (append) and then, in await, either finds the right to
// write free and writes the whole open group itself with one write(2) — so
// the common case, a change arriving while nothing is written, costs no
// goroutine hand-off and no wake-up — or parks on its group's channel until
// the writer of the moment (who took the group whole) closes it, or until
// the right to write comes free and it takes it to write its group itself.
// Groups are written in the order their records were numbered, one writer
// at a time, and each one's waiters are released when its write returns,
// so an acknowledged change never depends on one that was not written.

// await returns once b is written (or failed), writing it if nobody else
// is writing.
func (j *Journal) await(b *batch) error {
	if b == writtenBatch {
		// Stored (storeSeg): done. No receive from its closed channel: a
		// receive takes the channel's lock, closed or not, and every
		// change of every namespace took that one lock (runtime.lock2
		// and unlock2 were 7% of a change's CPU in BenchmarkApplyParallel,
		// interval, 512 clients).
		return nil
	}
	if !j.leader {
		return b.wait()
	}
	for {
		select {
		case <-b.done:
			return b.err
		case <-j.token:
			j.mu.Lock()
			select {
			case <-b.done:
				// Written by the leader that just gave the token back.
			default:
				// Every holder of the token writes the open group whole
				// before giving it back, so b, not written yet, is the
				// open group. Let the goroutines that are ready run first
				// (one yield): their changes join the group, parked on
				// its channel, instead of each taking a write of its own
				// (without it, 1.4 records per write under nlemu load
				// --netns 512 on 2 cores: a write per change).
				j.mu.Unlock()
				runtime.Gosched()
				j.mu.Lock()
				j.writeOpen()
			}
			j.mu.Unlock()
			j.token <- struct{}{}
			return b.err
		}
	}
}

// writeOpen writes the open group with one write and releases its
// waiters; then it rotates the file if it is full and asks the flusher for
// room ahead if little is left. Called with mu and the token held; it
// drops mu during the write, while changes append to a new open group.
func (j *Journal) writeOpen() {
	g := j.open
	j.open = nil
	j.taken += g.n
	f, off, err := j.cur, j.written, j.failed
	size := int64(len(g.buf))
	if err == nil {
		j.mu.Unlock()
		_, err = f.WriteAt(g.buf, off)
		j.mu.Lock()
		if err != nil {
			j.fail(err, f, off)
			err = j.failed
		}
	}
	if cap(g.buf) <= 2*maxBatch && len(j.spare) < 2 {
		j.spare = append(j.spare, g.buf)
	}
	g.buf = nil
	if err != nil {
		g.err = err
		close(g.done)
		return
	}
	j.written = off + size
	j.lastWritten = g.last
	j.stats.Batches++
	j.stats.Bytes += uint64(size)
	close(g.done)
	if j.failed == nil && j.written >= j.opt.RotateBytes {
		// The flusher syncs and allocates on the current file's handles,
		// and reads ahead in its mapping: let it finish before they are
		// closed.
		for j.flushing || j.allocating || j.readingAhead {
			j.cond.Wait()
		}
		if j.failed == nil {
			j.rotate()
			if j.cur != f {
				j.syncedSeq = j.lastWritten // rotate synced the old file
			}
		}
	}
	j.kickIfLow()
}

// flush is the flusher, under Interval: every Options.Interval it
// fdatasyncs whatever was written since the last one (one fdatasync covers
// every record written before it started), so that a crash of the machine
// loses at most the changes acknowledged in the last interval and the
// fdatasync that was running. An fdatasync error is reported and fails the
// journal: every later change is refused with the error, as after a failed
// write; the file is not cut, since the records it holds were
// acknowledged.
func (j *Journal) flush() {
	defer close(j.flushDone)
	ticks := j.opt.ticks
	if ticks == nil {
		t := time.NewTicker(j.opt.Interval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ticks:
			j.syncWritten()
		case <-j.stopFlush:
			return
		}
	}
}

// allocator extends the file ahead of the records when asked (kick), for
// both leader policies, so that neither the changes nor the flusher's
// fdatasyncs wait for an allocation (an fallocate of 4 MiB; without one,
// 4 MiB of zeros and their fdatasync), and reads the room into the page
// cache (readAheadRoom).
func (j *Journal) allocator() {
	defer close(j.allocDone)
	for {
		select {
		case <-j.kick:
			j.mu.Lock()
			j.allocating = true
			j.allocateAhead()
			j.allocating = false
			j.cond.Broadcast()
			j.readAheadRoom()
			j.mu.Unlock()
		case <-j.stopFlush:
			return
		}
	}
}

// syncWritten fdatasyncs the records written since the last fdatasync, if
// any, on the current file's lane (under Interval).
func (j *Journal) syncWritten() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.opt.Fsync == Interval {
		j.syncLocked()
	}
}

// readAheadStep is how much of the room one madvise(MADV_WILLNEED) reads
// ahead: the kernel clamps a WILLNEED to the device's read-ahead size
// (force_page_cache_ra(): max(io_pages, ra_pages)), 128 KiB by default, so
// a larger range would be read ahead only in part.
const readAheadStep = 128 << 10

// readAheadRoom reads the current file's room, from the records' page to
// the end of what is allocated, into the page cache (madvise
// MADV_WILLNEED), so that a store's page fault finds its page there. For
// fallocate's unwritten extents that is the allocation and zeroing of the
// pages (ext4_mpage_readpages() zeroes them, no I/O). Without it a store
// that touches a page not in the page cache reads around it in the fault
// (filemap_fault(), do_sync_mmap_readahead(): up to the read-ahead size,
// 8 MiB on this project's test machine, allocated and zeroed while the
// client's thread is in the fault, with its goroutine's P): in
// BenchmarkApplyParallel (interval, 512 clients) the stores' faults were
// then 58% of the samples, 25% the zeroing of that read-around, and one
// store of a model (a fallocated file's mapping stored into page by page)
// took up to 184 ms at load average 10 against 8 ms with the room read
// ahead. The allocator calls it after each allocation (the two chunks
// kept ahead: the room is in the page cache 4 MiB or more before the
// stores reach it), and at the start and after a rotation, with mu held;
// it drops mu while it reads, with readingAhead set, so that nothing
// unmaps or replaces the mapping meanwhile (turnSeg and writeOpen wait
// for it). It never reads past alloc: below it the file's blocks exist
// (fallocated), past it the mapping is past the end of the file. It maps
// nothing and dirties nothing: pages populated writable ahead
// (MADV_POPULATE_WRITE) were written back as zeros by the next fdatasync
// and write-protected, and the stores faulted on them anyway. The flusher
// used to read ahead after each tick, twice what the last interval
// stored: 64 KiB at the first tick of a load, and the stores ran past
// it (docs/STATE.md, Writing records).
func (j *Journal) readAheadRoom() {
	if j.mapped == nil || j.failed != nil || j.closing {
		return
	}
	start := max(j.readAhead, j.written) &^ 4095 // madvise takes whole pages
	end := min(j.alloc, int64(len(j.mapped)))
	if end <= start {
		return
	}
	m, num := j.mapped, j.curNum
	j.readingAhead = true
	j.mu.Unlock()
	for off := start; off < end; off += readAheadStep {
		unix.Madvise(m[off:min(off+readAheadStep, end)], unix.MADV_WILLNEED) // an error only leaves the stores to fault the pages in
	}
	if j.opt.onReadAhead != nil {
		j.opt.onReadAhead(num, start, end)
	}
	j.mu.Lock()
	j.readingAhead = false
	j.cond.Broadcast()
	if j.curNum == num {
		// Up to the last whole page: a page the end of the file cuts
		// (a journal reopened at start-up may end anywhere) is read
		// again with the next room.
		j.readAhead = max(j.readAhead, end&^4095)
	}
}

// syncLocked is syncWritten's fdatasync. Called with mu held; it drops it
// meanwhile.
func (j *Journal) syncLocked() {
	if p := j.storeErr.Load(); p != nil {
		j.setFailed(*p)
	}
	done := j.peekSeg()
	if j.failed != nil || j.lastWritten == j.syncedSeq || len(j.lanes) == 0 {
		return
	}
	j.flushing = true
	f, upto := j.lanes[0], j.lastWritten
	if !done {
		// A store claimed before the fdatasync may finish after it
		// starts: sync, but do not count those records as covered, so
		// that the next tick syncs again.
		upto = j.syncedSeq
	}
	// The pages below the one the records end in are whole: no store
	// touches them again. Writing them back first leaves the fdatasync
	// the last page or two, so it write-protects (and stores then fault
	// on) only those, for a short time (a mapped file stored into at
	// 20 MB/s with an fdatasync every 10 ms on this machine: 279 ms of
	// stores over 100 µs in 2.4 s, longest 86 ms; writing back first: 179
	// ms, longest 13 ms).
	whole := j.written &^ 4095
	from := min(j.wroteBack, whole)
	if j.curNum != j.wroteBackNum {
		from = 0
	}
	num := j.curNum
	// Those whole pages are unmapped first (MADV_DONTNEED, one TLB
	// flush for the range; their dirty bits go to the page cache, which
	// keeps them): written back while mapped, each page is write-protected
	// by the writeback (folio_mkclean()) with a TLB shootdown of its own,
	// an interprocessor interrupt to every CPU the server runs on.
	// BenchmarkApplyParallel, interval, 512 clients, 1,000,000 changes
	// (perf stat): 22,000-34,000 tlb:tlb_flush events left mapped,
	// 6,700-10,700 unmapped first. No store touches those pages again (one
	// still running into the last of them faults it back in, nothing
	// lost). The mapping stays as it is meanwhile: a rotation or a longer
	// mapping waits for flushing.
	var zap []byte
	if j.mapped != nil && whole > from {
		zap = j.mapped[from:whole]
	}
	j.mu.Unlock()
	t0 := time.Now()
	var err error
	if zap != nil {
		unix.Madvise(zap, unix.MADV_DONTNEED) // an error leaves the pages mapped: only slower
	}
	if rw, ok := f.(rangeWriter); ok && whole > from {
		err = rw.WriteBack(from, whole-from)
	}
	if err == nil {
		err = f.Sync()
	}
	took := time.Since(t0)
	j.mu.Lock()
	j.flushing = false
	j.cond.Broadcast()
	j.stats.SyncTime += took
	j.stats.Syncs++
	if err != nil {
		if j.failed == nil {
			j.setFailed(err)
			j.opt.Logf("journal: fdatasync: %v: changes acknowledged in the last interval may not survive a crash of the machine; every later change is refused until the server restarts", err)
		}
		return
	}
	j.syncedSeq = max(j.syncedSeq, upto)
	j.wroteBack, j.wroteBackNum = whole, num
}

// The mapped path. When the current file can be mapped (every file on
// disk; not the tests' fault injectors), the leader policies do not write
// records at all: append stores each one (storeSeg, no lock) into the file's
// MAP_SHARED mapping, whose pages are the page cache's, so the record is in
// the operating system — it survives a SIGKILL or a crash of the server
// exactly as a written one does, and the flusher's fdatasync makes it
// durable the same way — as soon as the store is done, and the change is
// acknowledged at once: no wait and no wake-up per change, and no system
// call but the one madvise per page of records (touchAhead).
// Under `nlemu load --netns 512` on 2 cores the write path costs a
// write(2) per change or a hand-off to a writer that switches every change
// out, which interleaves the 512 namespaces' changes one at a time and
// takes the handlers' caches with it (docs/STATE.md, Cost); the store
// keeps each client running its changes back to back, as without --state.
//
// The mapping is only touched below alloc, where the file's blocks exist
// (allocate made them: fallocate's unwritten extents, which read as zeros,
// or zeros written and synced where the file system has no fallocate), so
// a store never needs a new block: a full disk refuses the change in reserve, as on the write
// path, instead of faulting (SIGBUS) in the store. A crash in the middle
// of a store leaves that record torn: restore skips it (a hole) or cuts it
// (at the end), and it is exactly a change that was not acknowledged.

// writtenBatch is what append returns for a stored record: already done.
var writtenBatch = func() *batch {
	b := &batch{done: make(chan struct{})}
	close(b.done)
	return b
}()

// errBatch is a record that could not be stored: its change gets err.
func errBatch(err error) *batch {
	b := &batch{done: make(chan struct{}), err: err}
	close(b.done)
	return b
}

// mapCur maps the current file, when it can be, for the leader policies
// (mapper); otherwise records are written (await). Called with mu held.
func (j *Journal) mapCur() {
	m, ok := j.cur.(mapper)
	if !ok {
		return
	}
	n := max(j.opt.RotateBytes+2*j.opt.allocChunk, j.alloc)
	b, err := m.Map(n)
	if err != nil {
		j.opt.Logf("journal: cannot map %s (%v): writing records instead", journalName(j.curNum), err)
		return
	}
	j.mapped = b
}

// unmap drops the current file's mapping, if any. Its dirty pages stay in
// the page cache, for the next fdatasync. Called with mu held and no store
// in flight (the segment settled).
func (j *Journal) unmap() {
	if j.mapped != nil {
		unix.Munmap(j.mapped)
		j.mapped = nil
	}
}

// The lock-free store. A change claims its record's place in the current
// file's mapping — its sequence number and offset, both in one word
// (seg.state) — with one compare-and-swap, and stores the record there
// with no lock held; it is acknowledged once its own store is done. Under
// `nlemu load --netns 512` on 2 cores every other lock a change takes is
// its namespace's: a global mutex held across the store was the only point
// the namespaces' changes met, and a thread descheduled while it held it —
// at the page fault of a store, or a timer tick — stopped every change
// (docs/STATE.md, Cost).
//
// Stores run in parallel, so a crash can leave a record half stored (a
// hole) with whole, acknowledged records after it. A hole is never a
// change that was acknowledged, and nothing depends on it: a namespace's
// changes are stored one at a time under its entry mutex (the next one
// starts after this one's store is done) and namespace adds and deletes
// under the registry's lock, so no record after a hole is of the hole's
// namespace. Restore skips holes (scanJournal). A file is closed to claims
// before it is rotated, synced, unmapped or closed (settleSeg), and the
// stores in flight finish first, so a closed journal has no hole made
// after it was closed.

// seg is the current file's mapping as the store path sees it.
type seg struct {
	mapped []byte
	base   uint64 // the sequence number of the record of count 0
	start  int64  // the offset of the first record
	limit  int64  // no claim starts at or past this offset (rotation)
	// state is segClosed | count<<segCountShift | the next record's
	// offset: claims are one compare-and-swap.
	state atomic.Uint64
	// finished counts the claimed records whose store is over, stored
	// or faulted. Once s is closed its count is final (every claim is a
	// compare-and-swap from a state without segClosed), so the stores in
	// flight are the count less finished: settleSeg waits for them with
	// no counter of its own per claim. A change touches two shared words
	// per store, state and finished; a third and fourth (an in-flight
	// counter, up and down) were 40% of storeSeg's CPU under `nlemu load
	// --netns 512` on 2 cores (perf annotate: every atomic on a cache line
	// the other core wrote last).
	finished atomic.Uint64
	settled  bool // guarded by Journal.mu: settleSeg counted it
	// num is the journal file's number; alloc the end of its allocated
	// room, kept up to date while s is current (grewAlloc): the page a
	// store populates ahead (touchAhead) lies below it.
	num   uint64
	alloc atomic.Int64
}

const (
	segOffBits    = 38
	segOffMask    = 1<<segOffBits - 1
	segCountShift = segOffBits
	segCountMask  = 1<<25 - 1
	segClosed     = 1 << 63
)

// count and off decode a segment state.
func segCount(st uint64) uint64 { return st >> segCountShift & segCountMask }
func segOff(st uint64) int64    { return int64(st & segOffMask) }

// publishSeg makes the current mapping (if any) the segment changes store
// into, from the current end of the file. Called with mu held.
func (j *Journal) publishSeg() {
	if j.mapped == nil {
		j.seg.Store(nil)
		return
	}
	limit := min(j.opt.RotateBytes, segOffMask/2)
	if j.written >= limit {
		// A rotation failed (a full disk): go on in this file and try
		// again a chunk later.
		limit = min(j.written+j.opt.allocChunk, segOffMask/2)
	}
	s := &seg{mapped: j.mapped, base: j.lastWritten + 1, start: j.written, limit: limit, num: j.curNum}
	s.state.Store(uint64(j.written))
	s.alloc.Store(j.alloc)
	j.seg.Store(s)
}

// grewAlloc tells the current segment that the room grew (alloc), for
// touchAhead. Called with mu held after alloc grew in the current file.
func (j *Journal) grewAlloc() {
	if s := j.seg.Load(); s != nil {
		s.alloc.Store(j.alloc)
	}
}

// storeSeg stores record r, of n bytes and reserved, in segment s and
// reports whether it did; false: s is closed to claims (settleSeg, or this
// record is past its limit or its mapping), the caller turns to the next.
func (j *Journal) storeSeg(s *seg, r record, n int64) (*batch, bool) {
	for {
		old := s.state.Load()
		if old&segClosed != 0 {
			return nil, false
		}
		off, cnt := segOff(old), segCount(old)
		if off >= s.limit || off+n > int64(len(s.mapped)) || cnt == segCountMask {
			if s.state.CompareAndSwap(old, old|segClosed) {
				return nil, false
			}
			continue
		}
		if !s.state.CompareAndSwap(old, old+1<<segCountShift+uint64(n)) {
			continue
		}
		r.Seq = s.base + cnt
		if err := j.store(s.mapped[off:off+n], r); err != nil {
			// The change was applied and cannot be recorded: as after a
			// failed write, it is not acknowledged and every later change
			// is refused (settleSeg and reserve make it the journal's
			// failure). storeErr is set before the store is counted
			// finished, so whoever sees every claim finished sees it.
			j.storeFailed(s, err)
			s.finished.Add(1)
			return errBatch(err), true
		}
		if (off^(off+n))>>12 != 0 {
			j.touchAhead(s, (off+n)&^4095+touchPages*4096)
		}
		s.finished.Add(1) // after the touch: settleSeg waits for it too
		if (off^(off+n))>>kickShift != 0 {
			// The allocator is asked for room when the records cross a
			// kickShift boundary and little is left: reading room (a word
			// every reservation writes) at every store was one more cache
			// miss per change.
			j.kickIfLow()
		}
		return writtenBatch, true
	}
}

// touchPages is how many pages ahead of the one a store enters the store
// populates (touchAhead).
const touchPages = 4

// touchAhead makes the page at offset p of segment s present and writable
// (madvise MADV_POPULATE_WRITE), if it lies in the allocated room; the
// store that enters a page calls it for the page touchPages ahead, so
// that one thread faults each page in, before the stores get there,
// instead of the stores of both cores faulting on the page they all store
// into as they reach it: one of them then slept on the folio's lock
// (filemap_fault(), block_page_mkwrite()) while the other faulted it in,
// with its goroutine's P. Under `nlemu load --netns 512 --family 4
// --state DIR` (six alternating rounds, load average 3.4-3.9) the IPv4
// load took 0.37-0.47 s with it (median 0.41) against 0.44-0.56 s
// (median 0.54) without it, and 0.26-0.86 s (median 0.32) without state
// (docs/STATE.md, Cost). The page is read ahead already (readAheadRoom),
// so populating it reads nothing; it is made dirty (zeros) a few pages
// ahead of the records, so an fdatasync meanwhile writes it back as zeros
// (touchPages pages at most) and the stores fault on it again. The
// mapping stays in place meanwhile: the touch is part of the store, which
// settleSeg waits for. Past s.alloc the mapping is past the end of the
// file (EFAULT, no SIGBUS, but it is not tried); an error only leaves
// the stores to fault.
func (j *Journal) touchAhead(s *seg, p int64) {
	if p+4096 > s.alloc.Load() || p+4096 > int64(len(s.mapped)) {
		return
	}
	unix.Madvise(s.mapped[p:p+4096], unix.MADV_POPULATE_WRITE)
	if j.opt.onTouch != nil {
		j.opt.onTouch(s.num, p)
	}
}

// kickShift: a store checks the room left (kickIfLow) once per 2^kickShift
// bytes of records. Far below the two chunks the allocator keeps ahead
// (8 MiB): the room cannot run out between two checks. A journal whose
// chunks are smaller than that (tests) may find itself short in reserve,
// which then allocates under mu, as on the write path.
const kickShift = 16

// kickIfLow asks the allocator for room ahead when less than two chunks
// are left.
func (j *Journal) kickIfLow() {
	if j.room.Load() < 2*j.opt.allocChunk {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

// storeFailed records a store's fault without mu (stores run off it):
// later changes are refused, and s takes no more claims.
func (j *Journal) storeFailed(s *seg, err error) {
	if j.storeErr.CompareAndSwap(nil, &err) {
		j.opt.Logf("journal: %v: every later change is refused until the server restarts", err)
	}
	j.refusing.Store(true)
	closeSeg(s)
}

// closeSeg closes s to claims.
func closeSeg(s *seg) {
	for {
		old := s.state.Load()
		if old&segClosed != 0 || s.state.CompareAndSwap(old, old|segClosed) {
			return
		}
	}
}

// settleSeg closes s to claims, waits for the stores in flight in it to
// finish and brings the file's accounting (written, used, the last
// sequence number, the counters) up to its end. Called with mu held; the
// stores never take mu.
func (j *Journal) settleSeg(s *seg) {
	closeSeg(s)
	for s.finished.Load() != segCount(s.state.Load()) {
		runtime.Gosched() // a store claimed before the close is running
	}
	if p := j.storeErr.Load(); p != nil {
		j.setFailed(*p)
	}
	if s.settled {
		return
	}
	s.settled = true
	st := s.state.Load()
	off, cnt := segOff(st), segCount(st)
	j.written, j.used = off, off // the reservations became used: room is unchanged
	j.lastWritten = s.base + cnt - 1
	j.seq = j.lastWritten
	j.stats.Records += cnt
	j.stats.Bytes += uint64(off - s.start)
}

// peekSeg brings written and lastWritten up to what the current segment
// holds now, for the flusher, and reports whether every record claimed so
// far is stored (an fdatasync started now covers them all). Called with
// mu held.
func (j *Journal) peekSeg() bool {
	s := j.seg.Load()
	if s == nil || s.settled {
		return true
	}
	// finished first: it then counts stores of claims made before st at
	// most, so equal counts mean every claim in st is stored. Read the
	// other way round, a store claimed after st and finished could make
	// up for one claimed before it and still running.
	fin := s.finished.Load()
	st := s.state.Load()
	done := fin == segCount(st)
	j.written, j.lastWritten = segOff(st), s.base+segCount(st)-1
	return done
}

// turnSeg is a change's way past a closed segment s: it rotates the file
// when it is full and publishes the next segment (a new file's, or a
// longer mapping of this one), or returns the batch that refuses the
// change (a failed or closing journal). nil: store again, into the segment
// now current (or on the write path if there is none).
func (j *Journal) turnSeg(s *seg, n int64) *batch {
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		if j.seg.Load() != s {
			return nil // turned by another change meanwhile
		}
		if !j.flushing && !j.allocating && !j.readingAhead {
			break
		}
		// The flusher syncs and allocates on the current file's handles
		// (a rotation closes them), and the allocator writes zeros past
		// alloc: let them finish. mu is dropped meanwhile, so another
		// change may turn s first.
		j.cond.Wait()
	}
	// From here to publishSeg mu is held throughout: one change turns s.
	j.settleSeg(s)
	if j.failed != nil || j.closing {
		err := j.failed
		if err == nil {
			err = errClosed
		}
		return errBatch(err)
	}
	if j.written >= j.opt.RotateBytes {
		if j.failed == nil {
			f := j.cur
			j.rotate()
			if j.cur != f {
				j.syncedSeq = j.lastWritten // rotate synced the old file
			}
		}
	}
	if j.mapped != nil && j.written+n > int64(len(j.mapped)) {
		m := j.cur.(mapper)
		b, err := m.Map(max(2*int64(len(j.mapped)), j.written+n+j.opt.allocChunk))
		j.unmap()
		if err != nil {
			j.opt.Logf("journal: cannot map %s (%v): writing records instead", journalName(j.curNum), err)
		} else {
			j.mapped = b
		}
	}
	j.publishSeg()
	return nil
}

// errStoreFault is a store into the mapping that faulted.
var errStoreFault = fmt.Errorf("store into the journal's mapping faulted: %w", syscall.EIO)

// store encodes r into dst, a slice of the mapping with room for exactly
// the record. A fault in the store (SIGBUS: the file was cut under the
// mapping, or a file system that allocates at the first store, as a
// copy-on-write one does, found the disk full) becomes errStoreFault
// instead of killing the server (debug.SetPanicOnFault).
func (j *Journal) store(dst []byte, r record) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			if _, ok := p.(runtime.Error); !ok {
				panic(p)
			}
			err = errStoreFault
		}
	}()
	// putRecord stores the length first and the CRC last, over the
	// zeros allocated ahead: a store cut short leaves a zero CRC, which
	// tells restore it is a hole, not corruption (scanJournal).
	if len(dst) != recordSize(len(r.Payload)) {
		panic("journal: record size mismatch") // the claim and the record disagree
	}
	putRecord(dst, r)
	return nil
}
