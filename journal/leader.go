package journal

import (
	"fmt"
	"runtime"
	"runtime/debug"
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
	if !j.leader || b == writtenBatch {
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
		// The flusher syncs and allocates on the current file's handles:
		// let it finish before they are closed.
		for j.flushing || j.allocating {
			j.cond.Wait()
		}
		if j.failed == nil {
			j.rotate()
			if j.cur != f {
				j.syncedSeq = j.lastWritten // rotate synced the old file
			}
		}
	}
	if j.room.Load() < j.opt.allocChunk/2 {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
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
// fdatasyncs wait for an allocation (4 MiB of zeros and their fdatasync).
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
			j.mu.Unlock()
		case <-j.stopFlush:
			return
		}
	}
}

// syncWritten fdatasyncs the records written since the last fdatasync, if
// any, on the current file's lane (under Interval), then prefaults the
// mapping ahead of the records.
func (j *Journal) syncWritten() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.opt.Fsync == Interval {
		j.syncLocked()
	}
	j.prefault()
}

// prefaultMin and prefaultMax bound how far ahead of the records the
// mapping is prefaulted: twice what was stored in the last interval.
const (
	prefaultMin = 64 << 10
	prefaultMax = 4 << 20
)

// prefault makes the mapping's pages ahead of the records writable
// (madvise MADV_POPULATE_WRITE), so that a store under mu rarely takes a
// page fault: a write fault on a shared file page runs the file system's
// page_mkwrite (ext4_page_mkwrite(), which starts a journal handle for the
// time update and may wait for a commit), and under mu it stops every
// change (`nlemu load --netns 512` under a loaded machine: 28 stores over
// 1 ms, 1.4 s in all). An fdatasync write-protects the pages it cleans, so
// this follows each one. Populating changes no byte, so it runs off mu
// beside the stores; the mapping may be replaced meanwhile (a rotation),
// and madvise on the old range then fails or populates nothing that
// matters. Called with mu held; it drops it meanwhile.
func (j *Journal) prefault() {
	if j.mapped == nil || j.failed != nil {
		return
	}
	stored := j.written - j.prefaulted
	if stored <= 0 && j.prefaultEnd > j.written {
		return // nothing stored since: the pages ahead are still writable
	}
	ahead := min(max(2*stored, prefaultMin), prefaultMax)
	start := j.written &^ 4095
	end := min(j.alloc, start+ahead, int64(len(j.mapped)))
	j.prefaulted = j.written
	if end <= start {
		return
	}
	b := j.mapped[start:end]
	j.mu.Unlock()
	unix.Madvise(b, unix.MADV_POPULATE_WRITE) // EINVAL before Linux 5.14: no prefault
	j.mu.Lock()
	j.prefaultEnd = end
}

// syncLocked is syncWritten's fdatasync. Called with mu held; it drops it
// meanwhile.
func (j *Journal) syncLocked() {
	if j.failed != nil || j.lastWritten == j.syncedSeq || len(j.lanes) == 0 {
		return
	}
	j.flushing = true
	f, upto := j.lanes[0], j.lastWritten
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
	j.mu.Unlock()
	t0 := time.Now()
	var err error
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
// records at all: append stores each one, under mu, into the file's
// MAP_SHARED mapping, whose pages are the page cache's, so the record is in
// the operating system — it survives a SIGKILL or a crash of the server
// exactly as a written one does, and the flusher's fdatasync makes it
// durable the same way — as soon as the store is done, and the change is
// acknowledged at once: no system call, no wait and no wake-up per change.
// Under `nlemu load --netns 512` on 2 cores the write path costs a
// write(2) per change or a hand-off to a writer that switches every change
// out, which interleaves the 512 namespaces' changes one at a time and
// takes the handlers' caches with it (docs/STATE.md, Cost); the store
// keeps each client running its changes back to back, as without --state.
//
// The mapping is only touched below alloc, where the file's blocks exist
// (Allocate wrote them, zero, and synced them), so a store never needs a
// new block: a full disk refuses the change in reserve, as on the write
// path, instead of faulting (SIGBUS) in the store. Records are stored in
// sequence order under mu, so a crash in the middle of one leaves it torn
// and nothing valid after it: the restore's scan cuts exactly the change
// that was not acknowledged.

// writtenBatch is what append returns for a stored record: already done.
var writtenBatch = func() *batch {
	b := &batch{done: make(chan struct{})}
	close(b.done)
	return b
}()

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
// the page cache, for the next fdatasync. Called with mu held.
func (j *Journal) unmap() {
	if j.mapped != nil {
		unix.Munmap(j.mapped)
		j.mapped = nil
	}
}

// storeMapped stores record r, of n bytes and reserved, at the end of the
// current file's mapping and reports whether it did; it remaps a longer
// mapping when the file has grown past it (falling back to the write path
// if that fails). A full file is rotated once the record is stored. Called
// by append with mu held, the record numbered.
func (j *Journal) storeMapped(r record, n int64) (*batch, bool) {
	off := j.written
	if off+n > int64(len(j.mapped)) {
		m := j.cur.(mapper)
		b, err := m.Map(max(2*int64(len(j.mapped)), off+n+j.opt.allocChunk))
		if err != nil {
			j.opt.Logf("journal: cannot map %s (%v): writing records instead", journalName(j.curNum), err)
			j.unmap()
			return nil, false
		}
		j.unmap()
		j.mapped = b
	}
	if err := j.store(j.mapped[off:off:off+n], r); err != nil {
		// The change was applied and cannot be recorded: as after a
		// failed write, it is not acknowledged and every later change is
		// refused.
		j.setFailed(err)
		j.opt.Logf("journal: %v: every later change is refused until the server restarts", err)
		j.unmap()
		b := &batch{done: make(chan struct{}), err: err}
		close(b.done)
		return b, true
	}
	j.written = off + n
	j.lastWritten = r.Seq
	j.stats.Bytes += uint64(n)
	j.stats.Records++
	if j.failed == nil && j.written >= j.opt.RotateBytes {
		for j.flushing || j.allocating {
			j.cond.Wait()
		}
		if j.failed == nil {
			f := j.cur
			j.rotate()
			if j.cur != f {
				j.syncedSeq = j.lastWritten // rotate synced the old file
			}
		}
	}
	if j.room.Load() < j.opt.allocChunk/2 {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return writtenBatch, true
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
	if got := appendRecord(dst, r); len(got) != cap(dst) {
		panic("journal: record size mismatch") // recordSize and appendRecord disagree
	}
	return nil
}
