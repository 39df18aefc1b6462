// Package journal makes a server's state survive a restart (`nlemu serve
// --state DIR`, docs/STATE.md): an append-only journal of the accepted
// changes — namespace adds and deletes, and every rtnetlink request that
// succeeded, as the bytes it arrived as — stored into the file's shared
// mapping and synced by a background flusher (Interval, the default of
// `nlemu serve`; None) or written with group commit (Group, Always),
// compaction into a snapshot (live namespaces' rule histories rewritten as
// their rules), and restore by replaying the records through the same
// handlers before the socket is served.
//
// Ordering: a namespace's changes are recorded under a per-namespace mutex
// held across the handler and the append, so that the journal's order is
// the order they were applied in (rule priorities, ifindexes and the like
// come out the same on replay). Namespaces share nothing that a request can
// change, so their records may interleave freely. The wait for the fsync
// happens after every lock is released.
//
// Lock order: Manager's registry lock → a namespace's entry mutex → the
// handler's locks (RTNL, family writer locks) → Journal.mu.
package journal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// Policy is when a record is made durable (--fsync).
type Policy int

const (
	// Group: an ACK is sent once an fdatasync covers its record; records
	// that arrive while one fdatasync runs share the next one.
	Group Policy = iota
	// Always: one write and one fdatasync per record, in order.
	Always
	// None: the ACK waits until the record is written to the OS (it
	// survives the server's crash, not the machine's); nothing syncs it
	// but a rotation and Close.
	None
	// Interval (the default of `nlemu serve --state`): the ACK waits until
	// the record is written to the OS, as under None, and a background
	// flusher fdatasyncs every Options.Interval whatever was written
	// meanwhile, so a crash of the machine loses at most the changes of
	// the last interval (Redis's appendfsync everysec, MongoDB's journal
	// commit interval).
	Interval
)

// DefaultInterval is Interval's period unless Options.Interval says
// otherwise (`nlemu serve --fsync-interval`).
const DefaultInterval = 10 * time.Millisecond

func (p Policy) String() string {
	switch p {
	case Always:
		return "always"
	case None:
		return "none"
	case Interval:
		return "interval"
	}
	return "group"
}

// ParsePolicy parses a --fsync value.
func ParsePolicy(s string) (Policy, bool) {
	for _, p := range []Policy{Interval, Group, Always, None} {
		if p.String() == s {
			return p, true
		}
	}
	return 0, false
}

// Options configure a Journal.
type Options struct {
	// Fsync is the policy. Its zero value is Group; `nlemu serve --state`
	// defaults to Interval.
	Fsync Policy
	// Interval is the period of the flusher's fdatasync under Interval
	// (default DefaultInterval).
	Interval time.Duration
	// RotateBytes starts a new journal file once the current one is this
	// large (default 64 MiB); the closed files are compacted into the
	// snapshot once they are as large as it.
	RotateBytes int64
	// FS is where the files live (default: the directory given to Open).
	FS FS
	// Logf reports what restore repaired or could not replay (default:
	// discarded).
	Logf func(format string, args ...any)

	allocChunk int64 // fallocate step (tests make it small)
	syncDepth  int   // fdatasyncs in flight at once (default 4; tests make it 1)
	// ticks, when set, replaces the flusher's ticker (tests step it).
	ticks <-chan time.Time
	// onReadAhead, when set, is told of each range of journal num the
	// allocator read ahead (readAheadRoom), once it is read.
	onReadAhead func(num uint64, off, end int64)
	// onTouch, when set, is told of each page of journal num a store
	// populated ahead (touchAhead).
	onTouch func(num uint64, off int64)
}

const (
	defaultRotate = 64 << 20
	defaultChunk  = 4 << 20 // fallocate step
	maxBatch      = 4 << 20 // bytes of one group commit
	// defaultSyncDepth is how many fdatasyncs run at once. This machine's
	// disk completes concurrent ones about as fast as one (4 KiB pwrite +
	// fdatasync loops on one file: 1,100/s from one thread, 2,300/s from
	// two, 5,300/s from four), but under nlemu load --state more syncs in
	// flight made smaller batches and a slower load (512 namespaces x 256
	// IPv4 rules: 0.86 s and 1.30 s at depth 1, 2.21 s and 5.19 s at depth
	// 2, same runs): each sync then releases a smaller cohort. So one at a
	// time by default; the pipelining is kept (and tested at depth 2) for
	// disks where a sync takes longer than its cohort's next changes.
	defaultSyncDepth = 1
	snapName         = "snapshot"
	snapTmp          = "snapshot.tmp"
)

func journalName(n uint64) string { return fmt.Sprintf("journal-%016d", n) }

func journalNum(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "journal-")
	if !ok || len(s) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// entry is a namespace's place in the journal.
type entry struct {
	mu      sync.Mutex // held across a change and its append
	id      uint64
	deleted bool     // guarded by mu
	j       *Journal // whose entry it is (DoCached)
	// The pad makes an entry a cache line of its own (64-byte size
	// class): two namespaces' mutexes in one line, locked from both
	// cores, made e.mu.Lock a third of Apply's own CPU under `nlemu load
	// --netns 512` (perf annotate).
	_ [64 - 32]byte
}

// batch is one group commit: records written with one write and made
// durable with one fdatasync.
type batch struct {
	buf    []byte
	last   uint64 // sequence number of its last record
	n      uint64 // records in it
	off    int64  // where it was written
	lane   int    // the index of the lane its fdatasync uses
	synced bool   // guarded by Journal.mu: its fdatasync returned
	done   chan struct{}
	err    error // set before done is closed
}

func (b *batch) wait() error {
	<-b.done
	return b.err
}

// Stats counts the journal's work.
type Stats struct {
	Records uint64 // records appended since Open
	Batches uint64 // writes (each followed by an fdatasync under Group and Always)
	Bytes   uint64 // bytes written
	// Syncs counts the fdatasyncs of records (under Interval the
	// flusher's, under Group and Always one per write).
	Syncs uint64
	// Compactions counts snapshots written.
	Compactions uint64
	// Rewrites counts the live namespaces' rule histories that
	// compactions replaced with the requests that rebuild their rules.
	Rewrites uint64
	// SyncTime is the time spent in fdatasyncs, summed (up to syncDepth
	// of them overlap).
	SyncTime time.Duration
}

// Journal is an open state directory.
type Journal struct {
	fs  FS
	opt Options
	mgr *nsmgr.Manager

	ents sync.Map // *nsmgr.Namespace -> *entry

	mu     sync.Mutex
	cond   *sync.Cond // signals the committer: a batch is queued, or closing
	seq    uint64     // guarded by mu: the last sequence number given out
	nextNS uint64     // guarded by mu: the next namespace id
	queue  []*batch   // guarded by mu: batches waiting for the committer
	// used, room and alloc account the current file's room: used is
	// written plus queued bytes, alloc what Allocate has reserved on disk,
	// room what is left of it once the records of the changes being
	// applied now are reserved (alloc - used - reserved, the reserved
	// bytes implicit). room >= 0 always, so a write never meets a full
	// disk. room is atomic so that a change reserves its record without
	// mu (reserve's fast path: one lock fewer per change); whoever
	// changes alloc or used under mu moves room by the same amount.
	used, alloc int64        // guarded by mu
	room        atomic.Int64 // alloc - used - reserved
	failed      error        // guarded by mu: a write or sync failed
	closing     bool         // guarded by mu
	// refusing is set (under mu) when failed or closing is, or when a
	// store faulted: reserve's fast path, which does not take mu, then
	// takes it to refuse.
	refusing atomic.Bool
	// seg is the current file's segment on the mapped path (storeSeg),
	// nil on the write path; storeErr is a store's fault, made the
	// journal's failure under mu by whoever sees it first.
	seg         atomic.Pointer[seg]
	storeErr    atomic.Pointer[error]
	cur         File // guarded by mu (written by the committer)
	curNum      uint64
	written     int64    // guarded by mu: bytes of cur that are written
	lastWritten uint64   // guarded by mu: sequence number of the last written record
	snapBytes   int64    // guarded by mu: the snapshot's size
	closedBytes int64    // guarded by mu: journals closed since the snapshot
	stats       Stats    // guarded by mu
	taken       uint64   // guarded by mu: records the committer has taken
	spare       [][]byte // guarded by mu: written batches' buffers, for reuse
	// flight holds the written batches whose fdatasync has not returned or
	// whose predecessors' has not, in write order (at most syncDepth);
	// lanes are the current file's handles their fdatasyncs use, freeLanes
	// the indexes of the idle ones (openLanes).
	flight    []*batch // guarded by mu
	released  bool     // guarded by mu: a batch was released since the committer last took one
	lanes     []File   // guarded by mu
	freeLanes []int    // guarded by mu

	// The leader path (Interval and None: the ACK waits for the write
	// only). Records go into open, the group being filled; whichever
	// waiter takes token (the right to write) writes the whole open group
	// with one write and releases its waiters, so that no goroutine is
	// handed a record and nobody is woken when there is no write running.
	leader bool
	mapped []byte        // guarded by mu: the current file's mapping, if any (storeMapped)
	open   *batch        // guarded by mu: the group being filled
	token  chan struct{} // holds the right to write when nobody writes
	// The flusher (flush) fdatasyncs under Interval; the allocator
	// allocates room ahead under both. flushing and allocating are set
	// while they use the current file (a rotation waits for them).
	flushing   bool   // guarded by mu
	allocating bool   // guarded by mu
	syncedSeq  uint64 // guarded by mu: the last record an fdatasync covered
	// readAhead is where the allocator's last read-ahead of the room
	// ended in the current file (readAheadRoom), and readingAhead is set
	// while it reads (a rotation or a new mapping waits for it).
	readAhead    int64 // guarded by mu
	readingAhead bool  // guarded by mu
	// wroteBack is where the flusher's last write-back of whole pages
	// ended, in journal wroteBackNum.
	wroteBack    int64         // guarded by mu
	wroteBackNum uint64        // guarded by mu
	kick         chan struct{} // asks the allocator to allocate room ahead
	stopFlush    chan struct{} // stops the flusher and the allocator
	flushDone    chan struct{}
	allocDone    chan struct{}

	lock       *os.File    // DIR/lock, flocked while the journal is open
	compactCh  chan uint64 // journals below the number sent may be compacted
	commitDone chan struct{}
	compactEnd chan struct{}
}

// errClosed refuses changes after Close.
var errClosed = errors.New("journal closed")

// Open restores the state kept in dir into mgr (which must hold only its
// default namespace) and returns the journal that keeps every later change:
// it is installed in mgr for namespace changes, and the server's
// connections must send their requests through Apply.
func Open(dir string, mgr *nsmgr.Manager, opt Options) (*Journal, *Restored, error) {
	var lock *os.File
	if opt.FS == nil {
		if err := mkdirPrivate(dir); err != nil {
			return nil, nil, err
		}
		var err error
		if lock, err = lockDir(dir); err != nil {
			return nil, nil, err
		}
		opt.FS = DirFS(dir)
	}
	if opt.RotateBytes <= 0 {
		opt.RotateBytes = defaultRotate
	}
	if opt.allocChunk <= 0 {
		opt.allocChunk = defaultChunk
	}
	if opt.syncDepth <= 0 {
		opt.syncDepth = defaultSyncDepth
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	j := &Journal{fs: opt.FS, opt: opt, mgr: mgr, compactCh: make(chan uint64, 1), nextNS: 1,
		commitDone: make(chan struct{}), compactEnd: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	j.leader = opt.Fsync == Interval || opt.Fsync == None
	j.token = make(chan struct{}, 1)
	j.token <- struct{}{}
	j.kick = make(chan struct{}, 1)
	j.stopFlush, j.flushDone, j.allocDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	def, _ := mgr.Get(nsmgr.DefaultName)
	j.ents.Store(def, &entry{id: 0, j: j})
	j.lock = lock
	rs, err := j.restore()
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, nil, err
	}
	j.room.Store(j.alloc - j.used) // nothing is reserved yet
	mgr.SetJournal(j)
	j.syncedSeq = j.lastWritten
	if j.leader {
		j.mapCur()
		j.publishSeg()
		close(j.commitDone)
		go j.flush()
		go j.allocator()
		j.kick <- struct{}{} // room ahead from the start (allocateAhead)
	} else {
		close(j.flushDone)
		close(j.allocDone)
		go j.commit()
	}
	go j.compactor()
	if !rs.seeded {
		// A fresh state: seed the default namespace, which existed
		// before the journal, and keep its seed first.
		var seed [32]byte
		rand.Read(seed[:])
		def.Seed(seed)
		n := int64(recordSize(len(seed)))
		err := j.reserve(n)
		if err == nil {
			err = j.await(j.append(record{Kind: kindSeed, Payload: seed[:]}, n))
		}
		if err != nil {
			j.Close()
			return nil, nil, err
		}
	}
	for _, name := range rs.ephemeral {
		// Journaled like any delete: the next restore does not see it.
		if err := mgr.Del(name); err != nil {
			j.Close()
			return nil, nil, err
		}
		opt.Logf("journal: ephemeral namespace %s not restored: its sockets did not survive", name)
	}
	return j, rs, nil
}

// Apply runs do, which applies request m to ns, and records m if it
// succeeded; it returns do's result once the record is durable (as the
// policy promises). A change that cannot be recorded is refused before do
// runs: ENOSPC on a full disk, EIO after a failed write. Requests of a
// namespace that has been deleted are applied and not recorded (the
// namespace does not survive a restart anyway).
func (j *Journal) Apply(ns *nsmgr.Namespace, m *rtnl.Message, strict bool, do func() *rtnl.Error) *rtnl.Error {
	v, ok := j.ents.Load(ns)
	if !ok {
		return do()
	}
	return j.applyEntry(v.(*entry), m, strict, do)
}

// applyEntry is Apply once ns's entry e is found.
func (j *Journal) applyEntry(e *entry, m *rtnl.Message, strict bool, do func() *rtnl.Error) *rtnl.Error {
	e.mu.Lock()
	if e.deleted {
		e.mu.Unlock()
		return do()
	}
	raw := m.Raw // the request as received, before a handler rewrites it
	n := int64(recordSize(len(raw)))
	if err := j.reserve(n); err != nil {
		e.mu.Unlock()
		return rtnl.Errno(errnoOf(err))
	}
	res := do()
	if res != nil && res.Errno != 0 {
		j.unreserve(n)
		e.mu.Unlock()
		return res
	}
	var flags uint8
	if strict {
		flags |= flagStrict
	}
	b := j.append(record{Kind: kindRequest, Flags: flags, NSID: e.id, Payload: raw}, n)
	e.mu.Unlock()
	if err := j.await(b); err != nil {
		return rtnl.Errno(errnoOf(err))
	}
	return res
}

// Do applies request req to ns (Namespace.Do) through the journal, as
// Apply does: the server's path (server.Journal). The closure Apply is
// given here stays on the stack (Apply's do does not escape); one made by
// the server and passed through an interface escaped, an allocation per
// change.
func (j *Journal) Do(ns *nsmgr.Namespace, req *nsmgr.Request) *rtnl.Error {
	return j.Apply(ns, req.Msg, req.Strict, func() *rtnl.Error {
		_, err := ns.Do(req)
		return err
	})
}

// DoCached is Do for a caller that keeps a cache per socket (its
// namespace fixed, used under its lock: server.conn.jcache): ns's entry is
// looked up in ents once per socket and loaded from *cache afterwards.
// The lookup (internal/sync.HashTrieMap.Load) was 7.6% of the samples of
// BenchmarkApplyParallel (interval, 512 clients; perf record), a tenth of
// the journal's own CPU per change. A deleted namespace's entry stays
// valid in a cache: it is marked deleted, and applyEntry then records
// nothing, as Apply does for a namespace it no longer finds.
func (j *Journal) DoCached(cache *any, ns *nsmgr.Namespace, req *nsmgr.Request) *rtnl.Error {
	e, _ := (*cache).(*entry)
	if e == nil || e.j != j {
		v, ok := j.ents.Load(ns)
		if !ok {
			// Not journaled (an ephemeral namespace being restored,
			// a namespace deleted): nothing to cache.
			_, err := ns.Do(req)
			return err
		}
		e = v.(*entry)
		*cache = e
	}
	return j.applyEntry(e, req.Msg, req.Strict, func() *rtnl.Error {
		_, err := ns.Do(req)
		return err
	})
}

// Added implements nsmgr.NamespaceJournal.
func (j *Journal) Added(ns *nsmgr.Namespace) (func() error, error) {
	var seed [32]byte
	rand.Read(seed[:])
	payload := append(seed[:], ns.Name()...)
	n := int64(recordSize(len(payload)))
	if err := j.reserve(n); err != nil {
		return nil, err
	}
	ns.Seed(seed) // nobody sees ns yet: Manager holds its lock
	j.mu.Lock()
	id := j.nextNS
	j.nextNS++
	j.mu.Unlock()
	j.ents.Store(ns, &entry{id: id, j: j})
	b := j.append(record{Kind: kindNetnsAdd, NSID: id, Payload: payload}, n)
	return func() error { return j.await(b) }, nil
}

// Deleted implements nsmgr.NamespaceJournal.
func (j *Journal) Deleted(ns *nsmgr.Namespace) (func() error, error) {
	v, ok := j.ents.Load(ns)
	if !ok {
		return func() error { return nil }, nil
	}
	e := v.(*entry)
	e.mu.Lock()
	defer e.mu.Unlock()
	n := int64(recordSize(0))
	if err := j.reserve(n); err != nil {
		return nil, err
	}
	e.deleted = true
	j.ents.Delete(ns)
	b := j.append(record{Kind: kindNetnsDel, NSID: e.id}, n)
	return func() error { return j.await(b) }, nil
}

// Ephemeral records that namespace ns lives only while it has sockets
// (server/ephemeral.go). Its sockets do not survive a restart, so restore
// deletes it (and records the deletion) instead of bringing it back as a
// namespace nobody holds. It returns once the record is durable.
func (j *Journal) Ephemeral(ns *nsmgr.Namespace) error {
	wait, err := j.EphemeralThen(ns)
	if err != nil {
		return err
	}
	return wait()
}

// EphemeralThen is Ephemeral without the wait for the record, which it
// returns instead (never nil): the server records it under the lock of
// its ephemeral namespaces and waits after releasing it.
func (j *Journal) EphemeralThen(ns *nsmgr.Namespace) (func() error, error) {
	v, ok := j.ents.Load(ns)
	if !ok {
		return noWait, nil
	}
	e := v.(*entry)
	e.mu.Lock()
	if e.deleted {
		e.mu.Unlock()
		return noWait, nil
	}
	n := int64(recordSize(0))
	if err := j.reserve(n); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	b := j.append(record{Kind: kindEphemeral, NSID: e.id}, n)
	e.mu.Unlock()
	return func() error { return j.await(b) }, nil
}

func noWait() error { return nil }

// errnoOf is the errno a client is told for a journal failure.
func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) && en != 0 {
		return en
	}
	return syscall.EIO
}

// reserve makes room for a record of n bytes in the current file before
// the change it records is applied. The common case takes no lock: the
// room allocated ahead (allocator) covers the record, and one atomic
// subtraction reserves it. Under `nlemu load --netns 512` a second
// acquisition of mu per change, by 512 clients on 2 cores, kept mu's
// waiters queued (sync.Mutex then hands the lock to the next waiter at
// every Unlock, a goroutine switch each: docs/STATE.md, Cost).
func (j *Journal) reserve(n int64) error {
	if !j.refusing.Load() {
		if j.room.Add(-n) >= 0 {
			return nil
		}
		j.room.Add(n)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if p := j.storeErr.Load(); p != nil {
		j.setFailed(*p)
	}
	if j.failed != nil {
		return j.failed
	}
	if j.closing {
		return errClosed
	}
	for j.allocating {
		// The allocator writes zeros past alloc with mu dropped: growing
		// alloc over them now would let records be stored where its
		// zeros then land.
		j.cond.Wait()
	}
	for j.room.Add(-n) < 0 {
		// Short of room: allocate more, under mu (nobody else changes
		// alloc meanwhile), at least what this record needs.
		short := -j.room.Add(n) + n
		grow := max(j.opt.allocChunk, short)
		if err := j.allocate(j.cur, j.alloc, grow); err != nil {
			return err
		}
		j.alloc += grow
		j.grewAlloc()
		j.room.Add(grow)
	}
	return nil
}

func (j *Journal) unreserve(n int64) { j.room.Add(n) }

// allocate makes the bytes [off, off+n) of f room for records. Under the
// leader policies (Interval, None) it allocates the blocks without writing
// them (fallocator) where the file system can: a change's ACK waits for no
// fdatasync there, so a data-only fdatasync (what zeros written and synced
// ahead buy: File.Allocate) saves a change nothing, while writing them
// doubled what went to the disk, and the changes waited for it. Under
// `nlemu load --netns 512 --family 4 --state DIR` (31 MiB of records in
// well under a second) the allocator fell behind: the block profile had
// 97 s of the clients' summed time in reserve, waiting for it, against
// 26 s in RTNL. Otherwise, and under Group and Always, whose ACKs wait for
// an fdatasync, it writes zeros and syncs them (File.Allocate).
func (j *Journal) allocate(f File, off, n int64) error {
	if fa, ok := f.(fallocator); ok && j.leader {
		if err := fa.Fallocate(off, n); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	return f.Allocate(off, n)
}

// reservedLocked is the bytes reserved by changes being applied now.
// Called with mu held; changes may reserve more meanwhile (reserve's fast
// path), so it is a lower bound.
func (j *Journal) reservedLocked() int64 { return j.alloc - j.used - j.room.Load() }

// setFailed records the journal's first failure; every later change is
// refused with it. Called with mu held.
func (j *Journal) setFailed(err error) {
	if j.failed == nil {
		j.failed = err
		j.refusing.Store(true)
	}
}

// lockHot takes mu for a change's append on the write path (the mapped
// path takes no lock: storeSeg). It tries, and on contention
// lets another goroutine run and tries again, before it waits in Lock:
// a change holds mu for a few hundred nanoseconds, and 512 clients on 2
// cores waiting in Lock keep sync.Mutex in its starvation mode, where
// every Unlock hands mu to the next waiter and switches to it (two
// goroutine switches per change, and each client's caches lost, under
// `nlemu load --netns 512`). A client that yields instead goes to the back
// of the run queue with its change ready, as it would wait for a turn on
// a CPU anyway; a long hold (an allocation, a rotation under mu) ends the
// tries and the client waits in Lock.
func (j *Journal) lockHot() {
	for range hotTries {
		if j.mu.TryLock() {
			return
		}
		runtime.Gosched()
	}
	j.mu.Lock()
}

// hotTries is how many times lockHot tries mu before it waits in Lock.
const hotTries = 64

// append turns a reservation of n bytes into record r (numbered now) and
// returns the batch that will carry it.
func (j *Journal) append(r record, n int64) *batch {
	for {
		s := j.seg.Load()
		if s == nil {
			break // the write path
		}
		if b, ok := j.storeSeg(s, r, n); ok {
			return b
		}
		if b := j.turnSeg(s, n); b != nil {
			return b
		}
	}
	j.lockHot()
	defer j.mu.Unlock()
	j.used += n // the reservation becomes used: room is unchanged
	j.seq++
	r.Seq = j.seq
	var b *batch
	switch k := len(j.queue); {
	case j.leader && j.open != nil:
		b = j.open
	case j.leader:
		b = j.newBatch()
		j.open = b
	case k > 0 && j.opt.Fsync != Always && len(j.queue[k-1].buf) < maxBatch:
		b = j.queue[k-1]
	default:
		b = j.newBatch()
		j.queue = append(j.queue, b)
		j.cond.Signal()
	}
	b.buf = appendRecord(b.buf, r)
	b.last = r.Seq
	b.n++
	j.stats.Records++
	return b
}

// newBatch returns an empty batch with a buffer, reused if one is spare.
// Called with mu held.
func (j *Journal) newBatch() *batch {
	b := &batch{done: make(chan struct{})}
	if k := len(j.spare); k > 0 {
		b.buf, j.spare = j.spare[k-1][:0], j.spare[:k-1]
	} else {
		b.buf = make([]byte, 0, batchCap)
	}
	return b
}

// batchCap is a fresh batch buffer's capacity: buffers are reused, so
// that a record costs one append into memory already there.
const batchCap = 256 << 10

// commit is the committer: it writes the queued batches in order, each with
// one write, and starts each one's fdatasync (unless the policy is None)
// without waiting for the previous one's: up to syncDepth run at once, each
// on its own lane, and whatever arrived meanwhile is the next batch.
// Batches are released in write order (release).
func (j *Journal) commit() {
	defer close(j.commitDone)
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		for len(j.queue) == 0 && !j.closing || len(j.queue) > 0 && len(j.flight) >= j.opt.syncDepth {
			j.cond.Wait()
		}
		if len(j.queue) == 0 { // closing
			for len(j.flight) > 0 {
				j.cond.Wait()
			}
			return
		}
		if j.released {
			j.released = false
			j.letReleasedRun()
		}
		b := j.queue[0]
		j.queue[0] = nil
		j.queue = j.queue[1:]
		j.taken += b.n
		f, off, err := j.cur, j.written, j.failed
		size := int64(len(b.buf))
		if err == nil {
			j.mu.Unlock()
			_, err = f.WriteAt(b.buf, off)
			j.mu.Lock()
			if err != nil {
				j.fail(err, f, off)
				err = j.failed
			}
		}
		if cap(b.buf) <= 2*maxBatch && len(j.spare) < 2*j.opt.syncDepth {
			j.spare = append(j.spare, b.buf)
		}
		b.buf = nil
		if err != nil {
			b.err = err
			close(b.done)
			continue
		}
		j.written = off + size
		j.lastWritten = b.last
		j.stats.Batches++
		j.stats.Bytes += uint64(size)
		b.off = off
		j.flight = append(j.flight, b)
		if j.opt.Fsync == None {
			b.synced = true
			j.release()
		} else {
			k := len(j.freeLanes) - 1
			b.lane, j.freeLanes = j.freeLanes[k], j.freeLanes[:k]
			go j.sync(b, j.lanes[b.lane])
		}
		if j.failed == nil && j.written >= j.opt.RotateBytes {
			// The old file's syncs finish before it is closed.
			for len(j.flight) > 0 {
				j.cond.Wait()
			}
			if j.failed == nil {
				j.rotate()
			}
		}
		j.allocateAhead()
	}
}

// letReleasedRun lets the waiters just released run before the next
// write: they are queued on the releasing goroutine's P, and their next
// changes then join the next batch instead of the one after (without it,
// changes fall into cohorts that each take their own fdatasync). A few
// yields at most, while the batch keeps growing. Called by the committer
// with mu held; it drops mu meanwhile.
func (j *Journal) letReleasedRun() {
	for range 4 {
		n := j.stats.Records
		j.mu.Unlock()
		runtime.Gosched()
		j.mu.Lock()
		if j.stats.Records == n {
			break
		}
	}
}

// sync makes batch b durable with an fdatasync on lane f, a handle of its
// own: Linux reports a writeback error once per open file description
// (errseq_t), so two fdatasyncs racing on one handle could leave one of
// them returning success for pages the other was told had failed.
func (j *Journal) sync(b *batch, f File) {
	t0 := time.Now()
	err := f.Sync()
	took := time.Since(t0)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stats.SyncTime += took
	j.stats.Syncs++
	j.freeLanes = append(j.freeLanes, b.lane)
	if err != nil {
		j.fail(err, j.cur, b.off)
		b.err = err
	}
	b.synced = true
	j.release()
	j.cond.Signal()
}

// fail records the journal's first write or sync failure and truncates the
// file back to before the failed batch (restore would cut it anyway).
// Called with mu held.
func (j *Journal) fail(err error, f File, off int64) {
	if j.failed == nil {
		j.setFailed(err)
		f.Truncate(off)
	}
}

// release acknowledges the batches at the head of flight whose fdatasync
// has returned, in write order: a batch is durable once its own sync
// returned, but its waiters are told so only after every earlier batch's
// waiters, so that an acknowledged change never depends on one that was
// not. After a failure every batch not yet released gets the error, even
// one whose own sync succeeded (conservative: it is not acknowledged, and
// may or may not be there after a restart). Called with mu held.
func (j *Journal) release() {
	for len(j.flight) > 0 && j.flight[0].synced {
		b := j.flight[0]
		j.flight[0] = nil
		j.flight = j.flight[1:]
		if b.err == nil {
			b.err = j.failed
		}
		close(b.done)
		j.released = true
	}
}

// openLanes opens the handles that journal num's fdatasyncs use, before
// any record is written to it (a handle sees the writeback errors that
// happen after it is opened), and makes them the current lanes. Called
// with mu held and no sync in flight.
func (j *Journal) openLanes(num uint64) error {
	name := journalName(num)
	lanes := make([]File, 0, j.opt.syncDepth)
	for range j.opt.syncDepth {
		f, err := j.fs.OpenAppend(name)
		if err != nil {
			for _, f := range lanes {
				f.Close()
			}
			return err
		}
		lanes = append(lanes, f)
	}
	j.closeLanes()
	j.lanes = lanes
	for i := range lanes {
		j.freeLanes = append(j.freeLanes, i)
	}
	return nil
}

func (j *Journal) closeLanes() {
	for _, f := range j.lanes {
		f.Close()
	}
	j.lanes, j.freeLanes = nil, j.freeLanes[:0]
}

// allocateAhead extends the current file a chunk at a time while less
// than a chunk is left (two under the leader policies), so that changes
// rarely wait for an allocation in reserve: on a busy disk writing a
// chunk's zeros and their fdatasync took longer than `nlemu load --netns
// 512 --state` took to store half a chunk, and every change then waited
// for the one allocating in reserve, under mu. Called by the committer or
// the allocator with mu held; it drops mu while it writes past alloc,
// where no record is stored, and reserve does not grow alloc meanwhile
// (it waits for allocating).
func (j *Journal) allocateAhead() {
	want := j.opt.allocChunk
	if j.leader {
		want *= 2 // the allocator: nothing else waits for it
	}
	for j.failed == nil && j.room.Load() < want {
		f, off := j.cur, j.alloc
		j.mu.Unlock()
		err := j.allocate(f, off, j.opt.allocChunk)
		j.mu.Lock()
		if err != nil || j.cur != f {
			return
		}
		if end := off + j.opt.allocChunk; end > j.alloc {
			j.room.Add(end - j.alloc)
			j.alloc = end
			j.grewAlloc()
		}
	}
}

// rotate starts the next journal file. Called by the committer with mu
// held, between batches: everything written so far is in the old file.
// Queued batches and reservations move to the new file, which is allocated
// for them first: if that fails (a full disk) the old file goes on.
func (j *Journal) rotate() {
	num := j.curNum + 1
	name := journalName(num)
	f, err := j.fs.Create(name)
	if err != nil {
		j.opt.Logf("journal: cannot start %s: %v", name, err)
		return
	}
	hdr := appendRecord(nil, record{Seq: j.lastWritten, Kind: kindJournal, Payload: le.AppendUint64(nil, num)})
	queued := j.used - j.written
	// Rounded up to whole pages, as the chunks are: a page that the end
	// of the file cuts is left out of the page cache by the allocator's
	// read-ahead (the kernel leaves it not up to date, and reads it in
	// the fault of the store that reaches it), and the end of the room
	// moves by whole chunks from here.
	need := (int64(len(hdr)) + queued + j.reservedLocked() + j.opt.allocChunk + 4095) &^ 4095
	fail := func(err error) {
		j.opt.Logf("journal: cannot start %s: %v", name, err)
		f.Close()
		j.fs.Remove(name)
	}
	if err := j.allocate(f, 0, need); err != nil {
		fail(err)
		return
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		fail(err)
		return
	}
	// The old file must be durable before the new one takes records (under
	// None it was not synced), and the new file's entry must be.
	if err := j.cur.Sync(); err != nil {
		fail(err)
		return
	}
	if err := f.Sync(); err != nil {
		fail(err)
		return
	}
	if err := j.fs.SyncDir(); err != nil {
		fail(err)
		return
	}
	if err := j.openLanes(num); err != nil {
		fail(err)
		return
	}
	j.cur.Close()
	j.closedBytes += j.written
	j.cur, j.curNum = f, num
	j.written = int64(len(hdr))
	oldFree := j.alloc - j.used
	j.used = j.written + queued
	j.alloc = need
	// The reservations move to the new file with room: those made since
	// need was computed are covered by its spare chunk.
	j.room.Add((j.alloc - j.used) - oldFree)
	if j.mapped != nil {
		j.unmap()
		j.mapCur()
		j.readAhead = 0
		select {
		case j.kick <- struct{}{}: // the allocator reads the new file's room ahead
		default:
		}
	}
	if j.closedBytes >= j.snapBytes && !j.closing { // Close closes compactCh
		select {
		case j.compactCh <- num:
		default:
			// A compaction is queued; it will be told again at the
			// next rotation.
		}
	}
}

// Stats returns the journal's counters.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.stats
	if s := j.seg.Load(); s != nil && !s.settled {
		v := s.state.Load()
		st.Records += segCount(v)
		st.Bytes += uint64(segOff(v) - s.start)
	}
	return st
}

// Close writes what is queued, stops the committer and the compactor and
// closes the journal. Changes after Close are refused.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		return nil
	}
	j.closing = true
	j.refusing.Store(true)
	j.cond.Broadcast()
	j.mu.Unlock()
	j.mgr.SetJournal(nil)
	<-j.commitDone
	if j.leader {
		// Take the right to write for good: the last group is written
		// here, and nobody rotates (which sends on compactCh) any more.
		<-j.token
		j.mu.Lock()
		if j.open != nil {
			j.writeOpen()
		}
		j.mu.Unlock()
		close(j.stopFlush)
	}
	<-j.flushDone
	<-j.allocDone
	close(j.compactCh) // the committer or the leaders, which send on it, have stopped
	<-j.compactEnd
	j.mu.Lock()
	defer j.mu.Unlock()
	if s := j.seg.Load(); s != nil {
		j.settleSeg(s) // no store runs into the mapping any more
	}
	j.unmap() // its dirty pages stay in the page cache for the fdatasync
	err := j.cur.Sync()
	j.closeLanes()
	if cerr := j.cur.Close(); err == nil {
		err = cerr
	}
	if j.lock != nil {
		j.lock.Close() // releases the directory's flock
	}
	if err == nil {
		err = j.failed
	}
	return err
}

// journals returns the journal files' numbers, ascending.
func journals(fs FS) ([]uint64, error) {
	names, err := fs.List()
	if err != nil {
		return nil, err
	}
	var nums []uint64
	for _, n := range names {
		if k, ok := journalNum(n); ok {
			nums = append(nums, k)
		}
	}
	sort.Slice(nums, func(a, b int) bool { return nums[a] < nums[b] })
	return nums, nil
}
