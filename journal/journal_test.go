package journal

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

func serverOptions(ns string) server.Options { return server.Options{Namespace: ns} }

// load makes a namespace with a bit of everything: rules with automatic
// and explicit priorities in both families and a deleted one, a veth pair
// (random MACs), an address per family on an up device (derived routes,
// an IPv6 link-local from the MAC), blackhole routes.
func load(e *env, ns string) {
	e.mustDo(ns, ruleAdd(rtnl.AF_INET, 0, 100))
	e.mustDo(ns, ruleAdd(rtnl.AF_INET, 0, 101))
	e.mustDo(ns, ruleAdd(rtnl.AF_INET, 500, 102))
	e.mustDo(ns, ruleAdd(rtnl.AF_INET6, 0, 200))
	e.mustDo(ns, ruleAdd(rtnl.AF_INET6, 700, 201))
	e.mustDo(ns, ruleDel(rtnl.AF_INET, 500))
	e.mustDo(ns, vethAdd("va", "vb"))
	e.mustDo(ns, linkUp(2))
	e.mustDo(ns, linkUp(3))
	e.mustDo(ns, addrAdd(3, "10.1.2.3/24"))
	e.mustDo(ns, addrAdd(3, "2001:db8::3/64"))
	e.mustDo(ns, blackhole("10.9.0.0/16"))
	e.mustDo(ns, blackhole("2001:db8:9::/48"))
}

// snapshotOf is the state of the given namespaces and the namespace list.
func snapshotOf(e *env, names ...string) map[string]string {
	m := map[string]string{"list": strings.Join(e.srv.Namespaces().List(), ",")}
	for _, n := range names {
		m[n] = e.state(n)
	}
	return m
}

// TestRestoreGivesTheSameDumps: every kind of change, under every fsync
// policy, comes back after a restart with the same dump bytes (rules with
// automatic priorities, ifindexes, random MACs, derived addresses and
// routes), timestamps aside.
func TestRestoreGivesTheSameDumps(t *testing.T) {
	for _, p := range []Policy{Group, Always, None, Interval} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			e := openEnv(t, dir, Options{Fsync: p})
			load(e, "default")
			for _, n := range []string{"a", "b", "c"} {
				if err := e.srv.Namespaces().Add(n); err != nil {
					t.Fatal(err)
				}
				load(e, n)
			}
			if err := e.srv.Namespaces().Del("b"); err != nil {
				t.Fatal(err)
			}
			e.mustDo("c", ruleAdd(rtnl.AF_INET, 0, 300))
			want := snapshotOf(e, "default", "a", "c")
			e.close()

			e2 := openEnv(t, dir, Options{Fsync: p})
			if diff := cmp.Diff(want, snapshotOf(e2, "default", "a", "c")); diff != "" {
				t.Fatalf("state after restart (-before +after):\n%s", diff)
			}
			if e2.rs.Failed != 0 || e2.rs.Namespaces != 3 {
				t.Fatalf("restore: %+v, log %s", *e2.rs, e2.logs())
			}
			// And the restored state goes on being kept.
			e2.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 400))
			want = snapshotOf(e2, "default", "a", "c")
			e2.close()
			e3 := openEnv(t, dir, Options{Fsync: p})
			if diff := cmp.Diff(want, snapshotOf(e3, "default", "a", "c")); diff != "" {
				t.Fatalf("state after the second restart (-before +after):\n%s", diff)
			}
		})
	}
}

// tornFixture writes a journal with two rules in namespace a, then a
// third; it returns the directory, the journal's size before the third
// rule's record, and the state before it.
func tornFixture(t *testing.T) (dir string, before int64, want string) {
	dir = t.TempDir()
	e := openEnv(t, dir, Options{})
	if err := e.srv.Namespaces().Add("a"); err != nil {
		t.Fatal(err)
	}
	e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 10))
	e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 11))
	want = e.state("a")
	before = int64(recordsEnd(t, dir))
	e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 12))
	e.close()
	return dir, before, want
}

// recordsEnd is where the first journal's records end (zeros allocated
// ahead follow).
func recordsEnd(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	if err != nil {
		t.Fatal(err)
	}
	s := scanRecords(b)
	if s.tail {
		t.Fatal("journal has a torn tail")
	}
	return s.good
}

// copyState copies a state directory, passing the journal's bytes through
// edit.
func copyState(t *testing.T, dir string, edit func([]byte) []byte) string {
	t.Helper()
	out := t.TempDir()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range es {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if de.Name() == journalName(1) {
			b = edit(b)
		}
		if err := os.WriteFile(filepath.Join(out, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTornLastRecordAtEveryOffset: a journal cut anywhere inside its last
// record restores without that record (never half of it), reports the cut
// bytes, and goes on appending after the cut.
func TestTornLastRecordAtEveryOffset(t *testing.T) {
	dir, before, want := tornFixture(t)
	end := int64(recordsEnd(t, dir))
	for cut := before; cut < end; cut++ {
		d := copyState(t, dir, func(b []byte) []byte { return b[:cut] })
		e := openEnv(t, d, Options{})
		if got := e.state("a"); got != want {
			t.Fatalf("cut at %d of %d: state differs from the one before the last record", cut, end)
		}
		if e.rs.TornBytes != cut-before {
			t.Fatalf("cut at %d: TornBytes %d, want %d", cut, e.rs.TornBytes, cut-before)
		}
		if cut == before+7 || cut == end-1 {
			// The journal goes on after the cut.
			e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 13))
			after := e.state("a")
			e.close()
			e2 := openEnv(t, d, Options{})
			if e2.state("a") != after || e2.rs.TornBytes != 0 {
				t.Fatalf("cut at %d: the change after the repair was not kept (%+v)", cut, *e2.rs)
			}
		}
	}
}

// TestCRCMismatchInLastRecord: any byte of the last record flipped makes
// it invalid; restore drops it and keeps the rest.
func TestCRCMismatchInLastRecord(t *testing.T) {
	dir, before, want := tornFixture(t)
	full, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	if err != nil {
		t.Fatal(err)
	}
	end := int64(recordsEnd(t, dir))
	for off := before; off < end; off++ {
		d := copyState(t, dir, func(b []byte) []byte { b[off] ^= 0x5a; return b })
		e := openEnv(t, d, Options{})
		if got := e.state("a"); got != want {
			t.Fatalf("byte %d flipped: state differs from the one before the last record", off)
		}
		if e.rs.TornBytes != int64(len(full))-before {
			t.Fatalf("byte %d flipped: TornBytes %d", off, e.rs.TornBytes)
		}
	}
}

// TestCorruptRecordBeforeGoodOnesIsReported: a bad record followed by good
// ones is not a torn write; restore stops there and says how many records
// it dropped.
func TestCorruptRecordBeforeGoodOnesIsReported(t *testing.T) {
	dir, before, _ := tornFixture(t)
	// The second rule's record ends where the third's begins; flip a byte
	// of its payload's end.
	d := copyState(t, dir, func(b []byte) []byte { b[before-3] ^= 0xff; return b })
	e := openEnv(t, d, Options{})
	if !strings.Contains(e.logs(), "1 record(s) after the torn tail were dropped") {
		t.Fatalf("no report of the dropped record: %s", e.logs())
	}
}

// TestCorruptSnapshotRefusesToStart: a snapshot is renamed into place only
// when whole, so a bad one is corruption: Open fails instead of serving a
// partial state.
func TestCorruptSnapshotRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{RotateBytes: 200})
	for i := range 20 {
		e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
	}
	e.close()
	p := filepath.Join(dir, snapName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tryOpenEnv(t, dir, Options{}); err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Fatalf("Open with a corrupt snapshot: %v", err)
	}
}

// TestSnapshotPlusJournalRestore: with small journal files the state is
// compacted into snapshots many times (deleted namespaces' records are
// dropped) and restore from snapshot + journals gives the same state.
func TestSnapshotPlusJournalRestore(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{RotateBytes: 512})
	var names []string
	for i := range 30 {
		n := "ns" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := e.srv.Namespaces().Add(n); err != nil {
			t.Fatal(err)
		}
		e.mustDo(n, ruleAdd(rtnl.AF_INET, 0, uint32(10+i)))
		e.mustDo(n, ruleAdd(rtnl.AF_INET6, 0, uint32(10+i)))
		if i%2 == 1 {
			if err := e.srv.Namespaces().Del(n); err != nil {
				t.Fatal(err)
			}
			continue
		}
		names = append(names, n)
	}
	e.mustDo("default", vethAdd("x", "y"))
	want := snapshotOf(e, append(names, "default")...)
	appended := e.j.Stats().Records
	e.close()
	st := e.j.Stats()
	if st.Compactions == 0 {
		t.Fatalf("no compaction: %+v", st)
	}
	e2 := openEnv(t, dir, Options{RotateBytes: 512})
	if diff := cmp.Diff(want, snapshotOf(e2, append(names, "default")...)); diff != "" {
		t.Fatalf("state after restart (-before +after):\n%s", diff)
	}
	if !e2.rs.Snapshot || e2.rs.Failed != 0 {
		t.Fatalf("restore: %+v %s", *e2.rs, e2.logs())
	}
	if uint64(e2.rs.Records) >= appended {
		t.Fatalf("replayed %d records of %d appended: the deleted namespaces' were not compacted away", e2.rs.Records, appended)
	}
}

// faultFS injects a full disk, failing writes and held fdatasyncs.
type faultFS struct {
	DirFS
	budget   atomic.Int64 // bytes Allocate may still reserve; < 0: no limit
	writeErr atomic.Value // error for WriteAt, when set
	gate     atomic.Pointer[chan struct{}]
	inSync   atomic.Int32                  // Syncs waiting at the gate
	gateOnce atomic.Pointer[chan struct{}] // held by the next Sync only
	syncErr  atomic.Pointer[error]         // error for Syncs, when set
	syncs    atomic.Int32
	// writeGate, when set, holds every WriteAt (inWrite counts them).
	writeGate atomic.Pointer[chan struct{}]
	inWrite   atomic.Int32
	// mappable files can be mapped (the leader policies then store
	// records instead of writing them); others make them write.
	mappable bool
}

func newFaultFS(dir string) *faultFS {
	f := &faultFS{DirFS: DirFS(dir)}
	f.budget.Store(-1)
	return f
}

type faultFile struct {
	File
	fs *faultFS
}

// mappableFile is a faultFile that can be mapped.
type mappableFile struct{ *faultFile }

func (f mappableFile) Map(length int64) ([]byte, error) { return f.File.(mapper).Map(length) }

func (f *faultFS) wrap(g File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	if f.mappable {
		return mappableFile{&faultFile{g, f}}, nil
	}
	return &faultFile{g, f}, nil
}

func (f *faultFS) Create(name string) (File, error) { return f.wrap(f.DirFS.Create(name)) }

func (f *faultFS) OpenAppend(name string) (File, error) { return f.wrap(f.DirFS.OpenAppend(name)) }

func (f *faultFile) Allocate(off, n int64) error {
	for {
		b := f.fs.budget.Load()
		if b < 0 {
			break
		}
		if n > b {
			return syscall.ENOSPC
		}
		if f.fs.budget.CompareAndSwap(b, b-n) {
			break
		}
	}
	return f.File.Allocate(off, n)
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if g := f.fs.writeGate.Load(); g != nil {
		f.fs.inWrite.Add(1)
		<-*g
		f.fs.inWrite.Add(-1)
	}
	if err, ok := f.fs.writeErr.Load().(error); ok && err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	var err error
	if p := f.fs.syncErr.Load(); p != nil {
		err = *p
	}
	if g := f.fs.gateOnce.Swap(nil); g != nil {
		f.fs.inSync.Add(1)
		<-*g
		f.fs.inSync.Add(-1)
	} else if g := f.fs.gate.Load(); g != nil {
		f.fs.inSync.Add(1)
		<-*g
		f.fs.inSync.Add(-1)
	}
	f.fs.syncs.Add(1)
	if err != nil {
		return err
	}
	return f.File.Sync()
}

// secondSynced reports whether j has two batches in flight and the second
// one's fdatasync has returned (the first one's is held).
func secondSynced(j *Journal) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.flight) == 2 && j.flight[1].synced
}

// waitFor spins until cond holds (the goroutines it waits for make no
// progress otherwise: there is no deadline to guess).
func waitFor(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

// TestGroupCommitSharesOneSync: changes that arrive while the fdatasyncs
// run (here one at a time, syncDepth 1) are written together and made
// durable by the next one, and none of them is acknowledged before it;
// under Always each has its own.
func TestGroupCommitSharesOneSync(t *testing.T) {
	for _, tc := range []struct {
		p           Policy
		wantBatches uint64
	}{{Group, 2}, {Always, 11}} {
		t.Run(tc.p.String(), func(t *testing.T) {
			fs := newFaultFS(t.TempDir())
			e := openEnv(t, "", Options{FS: fs, Fsync: tc.p, syncDepth: 1})
			base := e.j.Stats()
			gate := make(chan struct{})
			fs.gate.Store(&gate)
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
			waitFor(func() bool { return fs.inSync.Load() == 1 })
			wg.Add(10)
			for i := 1; i <= 10; i++ {
				go add(i)
			}
			waitFor(func() bool { return e.j.Stats().Records == base.Records+11 })
			if n := acked.Load(); n != 0 {
				t.Fatalf("%d changes acknowledged before their fdatasync", n)
			}
			close(gate)
			wg.Wait()
			fs.gate.Store(nil)
			if got := e.j.Stats().Batches - base.Batches; got != tc.wantBatches {
				t.Fatalf("%d writes for 11 records, want %d", got, tc.wantBatches)
			}
		})
	}
}

// TestSyncsOverlapAndReleaseInOrder: a batch's write and fdatasync start
// while the previous batch's fdatasync still runs (pipelining), and its
// changes are acknowledged only once that earlier sync has returned too,
// so that the acknowledged changes are always a prefix of the journal.
func TestSyncsOverlapAndReleaseInOrder(t *testing.T) {
	fs := newFaultFS(t.TempDir())
	e := openEnv(t, "", Options{FS: fs, syncDepth: 2})
	base := e.j.Stats()
	gate := make(chan struct{})
	fs.gateOnce.Store(&gate)
	var acked [2]atomic.Bool
	var wg sync.WaitGroup
	add := func(i int) {
		defer wg.Done()
		if errno := e.do("default", ruleAdd(rtnl.AF_INET, uint32(100+i), uint32(100+i))); errno != 0 {
			t.Errorf("rule %d: errno %d", i, errno)
		}
		acked[i].Store(true)
	}
	wg.Add(1)
	go add(0)
	waitFor(func() bool { return fs.inSync.Load() == 1 })
	wg.Add(1)
	go add(1)
	// The second batch is written and synced while the first's sync is
	// held.
	waitFor(func() bool { return secondSynced(e.j) })
	if got := e.j.Stats().Batches - base.Batches; got != 2 {
		t.Fatalf("%d writes while the first sync is held, want 2", got)
	}
	if acked[0].Load() || acked[1].Load() {
		t.Fatalf("acknowledged before the first batch's fdatasync returned: %v %v", acked[0].Load(), acked[1].Load())
	}
	close(gate)
	wg.Wait()
}

// TestSyncErrorFailsLaterBatches: when an fdatasync fails, its batch and
// every later one get EIO, even a later one whose own sync succeeded, and
// later changes are refused before they are applied.
func TestSyncErrorFailsLaterBatches(t *testing.T) {
	dir := t.TempDir()
	fs := newFaultFS(dir)
	e := openEnv(t, "", Options{FS: fs, syncDepth: 2})
	e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 50))
	gate := make(chan struct{})
	fs.gateOnce.Store(&gate)
	eio := error(syscall.EIO)
	fs.syncErr.Store(&eio)
	var errs [2]atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0].Store(e.do("default", ruleAdd(rtnl.AF_INET, 0, 51)))
	}()
	waitFor(func() bool { return fs.inSync.Load() == 1 })
	fs.syncErr.Store(nil)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[1].Store(e.do("default", ruleAdd(rtnl.AF_INET, 0, 52)))
	}()
	waitFor(func() bool { return secondSynced(e.j) })
	close(gate)
	wg.Wait()
	for i := range errs {
		if got := errs[i].Load(); got != int32(syscall.EIO) {
			t.Fatalf("change %d: errno %d, want EIO", i, got)
		}
	}
	mid := e.state("default")
	if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 53)); errno != int32(syscall.EIO) {
		t.Fatalf("change after a failed sync: errno %d, want EIO", errno)
	}
	if e.state("default") != mid {
		t.Fatal("a change after the failure was applied")
	}
}

// refuseOnFullDisk adds n rules to namespace default of e, whose disk is
// full from some point on: each change is acknowledged or refused with
// ENOSPC and then not applied, and at least one is refused.
func refuseOnFullDisk(t *testing.T, e *env, n int) {
	t.Helper()
	var refused int
	for i := range n {
		before := e.state("default")
		errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
		if errno == 0 {
			continue
		}
		if errno != int32(syscall.ENOSPC) {
			t.Fatalf("rule %d: errno %d, want ENOSPC", i, errno)
		}
		if e.state("default") != before {
			t.Fatalf("rule %d refused but applied", i)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("a full disk refused nothing")
	}
}

// TestFullDiskRefusesBeforeApplying: when the journal cannot reserve room
// for a change's record the change is refused with ENOSPC and not applied;
// reads go on; once there is room changes work again, and what is on disk
// is exactly what was acknowledged.
func TestFullDiskRefusesBeforeApplying(t *testing.T) {
	dir := t.TempDir()
	fs := newFaultFS(dir)
	e := openEnv(t, "", Options{FS: fs, allocChunk: 256})
	fs.budget.Store(0)
	refuseOnFullDisk(t, e, 20)
	if err := e.srv.Namespaces().Add("x"); !errorsIsErrno(err, syscall.ENOSPC) {
		t.Fatalf("netns add on a full disk: %v", err)
	}
	if _, ok := e.srv.Namespaces().Get("x"); ok {
		t.Fatal("refused namespace exists")
	}
	fs.budget.Store(-1)
	e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 999))
	want := e.state("default")
	e.close()
	e2 := openEnv(t, dir, Options{})
	if got := e2.state("default"); got != want {
		t.Fatal("state after restart differs from the acknowledged one")
	}
	if e2.rs.TornBytes != 0 || e2.rs.Failed != 0 {
		t.Fatalf("restore: %+v", *e2.rs)
	}
}

func errorsIsErrno(err error, e syscall.Errno) bool {
	en, ok := err.(syscall.Errno)
	return ok && en == e
}

// TestWriteErrorRefusesLaterChanges: a failed write fails the change that
// was waiting for it (it is not acknowledged) and every later change is
// refused before it is applied; dumps go on.
func TestWriteErrorRefusesLaterChanges(t *testing.T) {
	dir := t.TempDir()
	fs := newFaultFS(dir)
	e := openEnv(t, "", Options{FS: fs})
	e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 50))
	durable := e.state("default")
	fs.writeErr.Store(error(syscall.EIO))
	if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 51)); errno != int32(syscall.EIO) {
		t.Fatalf("change whose write failed: errno %d, want EIO", errno)
	}
	mid := e.state("default")
	if errno := e.do("default", ruleAdd(rtnl.AF_INET, 0, 52)); errno != int32(syscall.EIO) {
		t.Fatalf("change after a failed write: errno %d, want EIO", errno)
	}
	if e.state("default") != mid {
		t.Fatal("a change after the failure was applied")
	}
	e.close()
	e2 := openEnv(t, dir, Options{})
	if got := e2.state("default"); got != durable {
		t.Fatal("state after restart is not the last acknowledged one")
	}
}

// TestDeletedNamespaceSocketNotJournaled: a socket that outlives its
// namespace's deletion goes on changing it (as in the kernel), but those
// changes are not recorded: a namespace of the same name added later does
// not inherit them after a restart.
func TestDeletedNamespaceSocketNotJournaled(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{})
	m := e.srv.Namespaces()
	if err := m.Add("x"); err != nil {
		t.Fatal(err)
	}
	c, err := e.srv.Dial(serverOptions("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := m.Del("x"); err != nil {
		t.Fatal(err)
	}
	if errno := sendAck(t, c, ruleAdd(rtnl.AF_INET, 0, 77)); errno != 0 {
		t.Fatalf("change through the orphaned socket: errno %d", errno)
	}
	if err := m.Add("x"); err != nil {
		t.Fatal(err)
	}
	want := e.state("x")
	e.close()
	e2 := openEnv(t, dir, Options{})
	if got := e2.state("x"); got != want {
		t.Fatal("the new namespace x inherited the deleted one's change")
	}
}

// TestStateDirIsLocked: a second server cannot open a state directory in
// use; once the first closes it, it can.
func TestStateDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{})
	if _, err := tryOpenEnv(t, dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use by another server") {
		t.Fatalf("second Open of a directory in use: %v", err)
	}
	e.close()
	openEnv(t, dir, Options{})
}

// TestCrashWhileStartingAJournal: a crash after a new journal file was
// created and before its header was whole leaves a file with no record;
// restore removes it and goes on with the one before (or a fresh one).
func TestCrashWhileStartingAJournal(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{RotateBytes: 300})
	for i := range 12 {
		e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
	}
	want := e.state("default")
	e.close()
	nums, err := journals(DirFS(dir))
	if err != nil || len(nums) == 0 {
		t.Fatalf("journals: %v %v", nums, err)
	}
	next := filepath.Join(dir, journalName(nums[len(nums)-1]+1))
	if err := os.WriteFile(next, []byte{40, 0, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	e2 := openEnv(t, dir, Options{RotateBytes: 300})
	if e2.state("default") != want {
		t.Fatal("state differs after a crash while starting a journal")
	}
	e2.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 999))
	want = e2.state("default")
	e2.close()
	if e3 := openEnv(t, dir, Options{}); e3.state("default") != want {
		t.Fatal("the change after the repair was not kept")
	}

	// The very first start: journal 1 torn in its header.
	fresh := t.TempDir()
	if err := os.WriteFile(filepath.Join(fresh, journalName(1)), []byte{1, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	e4 := openEnv(t, fresh, Options{})
	e4.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 5))
	want = e4.state("default")
	e4.close()
	if e5 := openEnv(t, fresh, Options{}); e5.state("default") != want {
		t.Fatal("state after a first start over a torn header was not kept")
	}
}

// TestEphemeralNamespaceNotRestored: an ephemeral namespace (deleted with
// its last socket) that existed when the server died does not come back
// as a namespace nobody holds; its deletion is recorded.
func TestEphemeralNamespaceNotRestored(t *testing.T) {
	dir := t.TempDir()
	e := openEnv(t, dir, Options{})
	c, err := e.srv.Dial(server.Options{Namespace: "tmp", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if errno := sendAck(t, c, ruleAdd(rtnl.AF_INET, 0, 9)); errno != 0 {
		t.Fatalf("rule in the ephemeral namespace: errno %d", errno)
	}
	if err := e.srv.Namespaces().Add("kept"); err != nil {
		t.Fatal(err)
	}
	// The server dies with the socket open: what is on disk now.
	crashed := copyState(t, dir, func(b []byte) []byte { return b })
	e2 := openEnv(t, crashed, Options{})
	if got := strings.Join(e2.srv.Namespaces().List(), ","); got != "default,kept" {
		t.Fatalf("namespaces after the restart: %s", got)
	}
	if e2.rs.Failed != 0 || !strings.Contains(e2.logs(), "ephemeral namespace tmp not restored") {
		t.Fatalf("restore: %+v %s", *e2.rs, e2.logs())
	}
	e2.close()
	e3 := openEnv(t, crashed, Options{})
	if got := strings.Join(e3.srv.Namespaces().List(), ","); got != "default,kept" || e3.logs() != "[]" {
		t.Fatalf("second restart: %s %s", got, e3.logs())
	}
}
