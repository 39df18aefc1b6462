package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// pathName names the two ways the leader policies keep a record: stored
// into the file's mapping (files on disk) or written (files that cannot be
// mapped).
func pathName(mappable bool) string {
	if mappable {
		return "mapped"
	}
	return "written"
}

// intervalEnv opens a journal under Interval on a fault-injecting FS whose
// flusher ticks only when the test sends on the returned channel.
func intervalEnv(t *testing.T, dir string, mappable bool) (*env, *faultFS, chan time.Time) {
	t.Helper()
	fs := newFaultFS(dir)
	fs.mappable = mappable
	ticks := make(chan time.Time)
	e := openEnv(t, "", Options{FS: fs, Fsync: Interval, ticks: ticks})
	e.j.mu.Lock()
	mapped := e.j.mapped != nil
	e.j.mu.Unlock()
	if mapped != mappable {
		t.Fatalf("journal mapped: %v, want %v", mapped, mappable)
	}
	return e, fs, ticks
}

// synced reports whether an fdatasync has covered every record written.
func synced(j *Journal) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.peekSeg() // the stores of the mapped path count no record under mu
	return j.syncedSeq == j.lastWritten
}

// TestIntervalFlusherSyncsEachTick: under Interval a change is
// acknowledged without an fdatasync; at the flusher's next tick one
// fdatasync covers everything written; a tick with nothing new written
// syncs nothing. The clock is the test's: no timing is assumed.
func TestIntervalFlusherSyncsEachTick(t *testing.T) {
	for _, mappable := range []bool{true, false} {
		t.Run(pathName(mappable), func(t *testing.T) {
			e, fs, ticks := intervalEnv(t, t.TempDir(), mappable)
			base := fs.syncs.Load()
			for i := range 5 {
				e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
			}
			if got := fs.syncs.Load(); got != base {
				t.Fatalf("%d fdatasyncs before the first tick: the ACKs waited for them", got-base)
			}
			if synced(e.j) {
				t.Fatal("the records count as synced before any fdatasync")
			}
			ticks <- time.Time{}
			waitFor(func() bool { return synced(e.j) })
			if got := fs.syncs.Load() - base; got != 1 {
				t.Fatalf("%d fdatasyncs for one tick, want 1", got)
			}
			// The third send returns once the flusher is back from the
			// second tick: both were handled, with nothing to sync.
			for range 3 {
				ticks <- time.Time{}
			}
			if got := fs.syncs.Load() - base; got != 1 {
				t.Fatalf("%d fdatasyncs after idle ticks, want still 1", got)
			}
			e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 200))
			ticks <- time.Time{}
			waitFor(func() bool { return synced(e.j) })
			if got := fs.syncs.Load() - base; got != 2 {
				t.Fatalf("%d fdatasyncs after a change and a tick, want 2", got)
			}
			if st := e.j.Stats(); st.Syncs != 2 {
				t.Fatalf("Stats.Syncs %d, want 2", st.Syncs)
			}
		})
	}
}

// TestIntervalACKAfterTheWrite: on the write path a change is not
// acknowledged while its record's write is held, and the changes that
// arrive meanwhile are written together by one write when it returns
// (the waiter that takes the right to write writes the whole group).
func TestIntervalACKAfterTheWrite(t *testing.T) {
	e, fs, _ := intervalEnv(t, t.TempDir(), false)
	base := e.j.Stats()
	gate := make(chan struct{})
	fs.writeGate.Store(&gate)
	var acked atomic.Int32
	var wg sync.WaitGroup
	add := func(i int) {
		defer wg.Done()
		if errno := e.do("default", ruleAdd(rtnl.AF_INET, uint32(100+i), uint32(100+i))); errno != 0 {
			t.Errorf("rule %d: errno %d", i, errno)
		}
		acked.Add(1)
	}
	wg.Add(1)
	go add(0)
	waitFor(func() bool { return fs.inWrite.Load() == 1 })
	wg.Add(10)
	for i := 1; i <= 10; i++ {
		go add(i)
	}
	waitFor(func() bool { return e.j.Stats().Records == base.Records+11 })
	if n := acked.Load(); n != 0 {
		t.Fatalf("%d changes acknowledged while the write was held", n)
	}
	fs.writeGate.Store(nil)
	close(gate)
	wg.Wait()
	if got := e.j.Stats().Batches - base.Batches; got != 2 {
		t.Fatalf("%d writes for 11 records, want 2 (the held one, then the rest together)", got)
	}
	if got := e.j.Stats().Syncs; got != 0 {
		t.Fatalf("%d fdatasyncs without a tick", got)
	}
}

// TestMappedRecordIsInTheFileWhenACKed: on the mapped path, by the time a
// change is acknowledged its record is in the file as another open of it
// reads it (the page cache), with no write and no fdatasync; a copy of the
// directory taken then — what a SIGKILL leaves — restores the change.
func TestMappedRecordIsInTheFileWhenACKed(t *testing.T) {
	dir := t.TempDir()
	e, fs, _ := intervalEnv(t, dir, true)
	base := fs.syncs.Load() // the new file's header, synced at Open
	req := ruleAdd(rtnl.AF_INET, 0, 4242)
	e.mustDo("default", req)
	b, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	if err != nil {
		t.Fatal(err)
	}
	sc := scanRecords(b)
	if sc.tail || len(sc.recs) == 0 {
		t.Fatalf("journal after the ACK: %d records, tail %v", len(sc.recs), sc.tail)
	}
	if last := sc.recs[len(sc.recs)-1]; last.Kind != kindRequest || !bytes.Equal(last.Payload, req) {
		t.Fatalf("last record in the file: kind %d, payload %x; want the request %x", last.Kind, last.Payload, req)
	}
	if st := e.j.Stats(); st.Batches != 0 || fs.syncs.Load() != base {
		t.Fatalf("stored records took %d writes and %d fdatasyncs", st.Batches, fs.syncs.Load()-base)
	}
	want := e.state("default")
	killed := copyState(t, dir, func(b []byte) []byte { return b })
	e2 := openEnv(t, killed, Options{Fsync: Interval})
	if got := e2.state("default"); got != want {
		t.Fatal("the state a SIGKILL leaves differs from the acknowledged one")
	}
}

// TestIntervalCloseSyncs: Close makes everything durable with an
// fdatasync, with no tick, and the state restores.
func TestIntervalCloseSyncs(t *testing.T) {
	for _, mappable := range []bool{true, false} {
		t.Run(pathName(mappable), func(t *testing.T) {
			dir := t.TempDir()
			e, fs, _ := intervalEnv(t, dir, mappable)
			load(e, "default")
			want := e.state("default")
			base := fs.syncs.Load()
			e.close()
			if fs.syncs.Load() == base {
				t.Fatal("Close did not fdatasync")
			}
			e2 := openEnv(t, dir, Options{Fsync: Interval})
			if got := e2.state("default"); got != want {
				t.Fatal("state after Close and restart differs")
			}
		})
	}
}

// TestIntervalSyncErrorRefusesLaterChanges: a failed fdatasync of the
// flusher is reported, and every later change is refused with its errno
// before it is applied, as after a failed write; dumps go on; the changes
// acknowledged before it stay (the file is not cut).
func TestIntervalSyncErrorRefusesLaterChanges(t *testing.T) {
	for _, mappable := range []bool{true, false} {
		t.Run(pathName(mappable), func(t *testing.T) {
			dir := t.TempDir()
			e, fs, ticks := intervalEnv(t, dir, mappable)
			e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 50))
			eio := error(syscall.EIO)
			fs.syncErr.Store(&eio)
			e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 51)) // acknowledged: written
			acked := e.state("default")
			ticks <- time.Time{}
			waitFor(func() bool { return strings.Contains(e.logs(), "fdatasync") })
			if !strings.Contains(e.logs(), "input/output error") {
				t.Fatalf("report: %s", e.logs())
			}
			if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 52)); errno != int32(syscall.EIO) {
				t.Fatalf("change after a failed fdatasync: errno %d, want EIO", errno)
			}
			if e.state("default") != acked {
				t.Fatal("a change after the failure was applied")
			}
			fs.syncErr.Store(nil)
			e.close()
			e2 := openEnv(t, dir, Options{Fsync: Interval})
			if got := e2.state("default"); got != acked {
				t.Fatal("state after restart is not the acknowledged one")
			}
		})
	}
}

// TestIntervalRotatesAndCompacts: the mapped path moves to a new file (and
// a new mapping) at every rotation, and the compacted state restores.
func TestIntervalRotatesAndCompacts(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{Fsync: Interval, RotateBytes: 600})
	for i := range 40 {
		e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(10+i)))
	}
	want := e.state("default")
	e.close()
	if st := e.j.Stats(); st.Compactions == 0 || st.Batches != 0 {
		t.Fatalf("stats: %+v (want compactions and no write)", st)
	}
	e2 := openEnv(t, dir, Options{Fsync: Interval, RotateBytes: 600})
	if got := e2.state("default"); got != want {
		t.Fatal("state after rotations differs")
	}
	if e2.rs.Failed != 0 || e2.rs.TornBytes != 0 {
		t.Fatalf("restore: %+v %s", *e2.rs, e2.logs())
	}
}

// TestMappedStoreFaultFailsTheJournal: a store into the mapping that
// faults (here the file is cut under it, so the store lands past its end:
// SIGBUS) does not kill the server: the change is refused with EIO, the
// fault is reported, every later change is refused before it is applied,
// and dumps go on.
func TestMappedStoreFaultFailsTheJournal(t *testing.T) {
	dir := t.TempDir()
	e, _, _ := intervalEnv(t, dir, true)
	e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 50))
	// The allocator, which keeps room ahead, writes past the end: done
	// after the cut, it would grow the file under the mapping again.
	waitAllocatorIdle(t, e.j)
	if err := os.Truncate(filepath.Join(dir, journalName(1)), 0); err != nil {
		t.Fatal(err)
	}
	if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 51)); errno != int32(syscall.EIO) {
		t.Fatalf("change whose store faulted: errno %d, want EIO", errno)
	}
	if !strings.Contains(e.logs(), "faulted") {
		t.Fatalf("report: %s", e.logs())
	}
	mid := e.state("default")
	if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 52)); errno != int32(syscall.EIO) {
		t.Fatalf("change after the fault: errno %d, want EIO", errno)
	}
	if e.state("default") != mid {
		t.Fatal("a change after the fault was applied")
	}
}

// waitAllocatorIdle waits until the allocator has the room it keeps ahead
// (allocateAhead) and is not writing.
func waitAllocatorIdle(t *testing.T, j *Journal) {
	t.Helper()
	for i := 0; ; i++ {
		j.mu.Lock()
		idle := !j.allocating && !j.readingAhead && j.room.Load() >= 2*j.opt.allocChunk && len(j.kick) == 0
		j.mu.Unlock()
		if idle {
			return
		}
		if i == 10000 {
			t.Fatalf("the allocator never caught up: allocating %v readingAhead %v room %d kick %d", j.allocating, j.readingAhead, j.room.Load(), len(j.kick))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIntervalUnmapsWholePagesBeforeTheSync: on the mapped path the
// flusher unmaps the whole pages behind the records before it writes them
// back (so that the writeback write-protects no page the server has
// mapped), and that loses nothing: they are mapped after the stores, not
// after a tick, and the state restores whole, with the records stored
// after the tick.
func TestIntervalUnmapsWholePagesBeforeTheSync(t *testing.T) {
	dir := t.TempDir()
	e, _, ticks := intervalEnv(t, dir, true)
	for i := range 200 { // about 13 KiB of records: 3 whole pages at least
		e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
	}
	e.j.mu.Lock()
	e.j.peekSeg()
	mapped, whole := e.j.mapped, e.j.written&^4095
	e.j.mu.Unlock()
	if whole < 3*4096 {
		t.Fatalf("records end at %d: fewer than 3 whole pages", whole)
	}
	if got := presentPages(t, mapped[:whole]); got != int(whole/4096) {
		t.Fatalf("after the stores %d of the %d whole pages are mapped, want all", got, whole/4096)
	}
	ticks <- time.Time{}
	waitFor(func() bool { return synced(e.j) })
	if got := presentPages(t, mapped[:whole]); got != 0 {
		t.Errorf("after the tick %d of the %d whole pages are still mapped, want none", got, whole/4096)
	}
	for i := range 50 {
		e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(1000+i)))
	}
	want := e.state("default")
	e.close()
	e2 := openEnv(t, dir, Options{Fsync: Interval})
	if diff := cmp.Diff(want, e2.state("default")); diff != "" {
		t.Errorf("restored state (-acknowledged +restored):\n%s", diff)
	}
	if e2.rs.TornBytes != 0 || e2.rs.Failed != 0 || e2.rs.Holes != 0 {
		t.Errorf("restore: %+v", *e2.rs)
	}
}

// presentPages counts the pages of b that are mapped in this process's
// page table (/proc/self/pagemap: bit 63 of each page's entry).
func presentPages(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := len(b) / 4096
	ent := make([]byte, 8*n)
	if _, err := f.ReadAt(ent, int64(uintptr(unsafe.Pointer(&b[0]))/4096*8)); err != nil {
		t.Fatal(err)
	}
	var present int
	for i := range n {
		if le.Uint64(ent[8*i:])>>63 != 0 {
			present++
		}
	}
	return present
}
