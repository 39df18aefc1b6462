package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// readAheadLog records the ranges the allocator read ahead
// (Options.onReadAhead) and checks, as each is reported, that it lies in
// the file's allocated size: the room is fallocated (the size grows with
// it), so a read-ahead past the size would be past the room.
type readAheadLog struct {
	t       *testing.T
	dir     string
	mu      sync.Mutex
	files   map[uint64]int // ranges read ahead per journal
	closed  bool           // Close returned: nothing may be read ahead or populated any more
	touches int            // pages populated ahead
}

func (l *readAheadLog) hook(num uint64, off, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.t.Errorf("journal %d read ahead [%d, %d) after Close", num, off, end)
	}
	fi, err := os.Stat(filepath.Join(l.dir, journalName(num)))
	if err != nil {
		l.t.Errorf("journal %d read ahead [%d, %d): %v", num, off, end, err)
		return
	}
	if off < 0 || off >= end || off%4096 != 0 || end > fi.Size() {
		l.t.Errorf("journal %d read ahead [%d, %d), allocated size %d: want a page-aligned range within it", num, off, end, fi.Size())
	}
	l.files[num]++
}

// TestRoomReadAheadStaysBelowAlloc: under Interval the allocator reads the
// room it allocated into the page cache (readAheadRoom) so that stores do
// not read around in their page faults, in every journal file (after
// rotations too), never past the file's allocated size and never after
// Close; the room ahead of the records is then resident, and records
// stored into those pages restore.
func TestRoomReadAheadStaysBelowAlloc(t *testing.T) {
	dir := t.TempDir()
	log := &readAheadLog{t: t, dir: dir, files: map[uint64]int{}}
	ticks := make(chan time.Time) // the flusher never ticks: Close syncs
	e := openEnv(t, dir, Options{Fsync: Interval, ticks: ticks, allocChunk: 16 << 10, RotateBytes: 64 << 10, onReadAhead: log.hook})
	const nss, rules = 20, 200 // about 240 KiB of records: two rotations at least
	addRulesRoundRobin(t, e, "ra", nss, rules)
	// The stores ask for room once per 64 KiB of records (kickShift),
	// more than this test's chunks: ask once more, for the room ahead now.
	e.j.kick <- struct{}{}
	waitAllocatorIdle(t, e.j)
	e.j.mu.Lock()
	e.j.peekSeg()
	num, m, start, end := e.j.curNum, e.j.mapped, e.j.written&^4095, min(e.j.alloc, int64(len(e.j.mapped)))
	ahead := e.j.readAhead
	e.j.mu.Unlock()
	if num < 3 {
		t.Fatalf("journal %d is current: fewer than two rotations", num)
	}
	log.mu.Lock()
	for n := uint64(1); n <= num; n++ {
		if log.files[n] == 0 {
			t.Errorf("journal %d: nothing read ahead", n)
		}
	}
	log.mu.Unlock()
	if ahead != end&^4095 {
		t.Errorf("read ahead to %d, room ends at %d", ahead, end)
	}
	if got, want := residentPages(t, m[start:end]), int((end-start)/4096); got != want {
		t.Errorf("%d of the %d pages of room ahead of the records (%d to %d, read ahead to %d) are in the page cache, want all: %v", got, want, start, end, ahead, residentMap(m[start:end]))
	}
	want := map[string]string{}
	for n := range nss {
		want[fmt.Sprint("ra", n)] = e.state(fmt.Sprint("ra", n))
	}
	e.close()
	log.mu.Lock()
	log.closed = true
	log.mu.Unlock()
	restoresAcknowledged(t, dir, want)
}

// residentPages counts the pages of b, a file mapping, whose page is in
// the page cache (mincore(2)), mapped or not.
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal("mincore:", errno)
	}
	var n int
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func residentMap(b []byte) []byte {
	vec := make([]byte, (len(b)+4095)/4096)
	unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	return vec
}

// touchHook is Options.onTouch: the page at off of journal num was
// populated ahead; it must lie within the file's allocated size.
func (l *readAheadLog) touchHook(num uint64, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.t.Errorf("journal %d: page %d populated after Close", num, off)
	}
	fi, err := os.Stat(filepath.Join(l.dir, journalName(num)))
	if err != nil {
		l.t.Errorf("journal %d: page %d populated: %v", num, off, err)
		return
	}
	if off < 0 || off%4096 != 0 || off+4096 > fi.Size() {
		l.t.Errorf("journal %d: page %d populated, allocated size %d: want a whole page within it", num, off, fi.Size())
	}
	l.touches++
}

// TestTouchAheadStaysBelowAlloc: a store that enters a page populates the
// page touchPages ahead (touchAhead), in every journal file, only where it
// lies within the allocated room (tiny chunks put it past the room
// often), never after Close; the records stored into populated pages
// restore.
func TestTouchAheadStaysBelowAlloc(t *testing.T) {
	for _, chunk := range []int64{4 << 10, 64 << 10} {
		t.Run(fmt.Sprint("chunk=", chunk), func(t *testing.T) {
			dir := t.TempDir()
			log := &readAheadLog{t: t, dir: dir, files: map[uint64]int{}}
			e := openEnv(t, dir, Options{Fsync: Interval, allocChunk: chunk, RotateBytes: 96 << 10, onTouch: log.touchHook})
			const nss, rules = 10, 300 // about 180 KiB of records: a rotation at least
			addRulesRoundRobin(t, e, "t", nss, rules)
			want := map[string]string{}
			for n := range nss {
				want[fmt.Sprint("t", n)] = e.state(fmt.Sprint("t", n))
			}
			e.close()
			log.mu.Lock()
			log.closed = true
			touches := log.touches
			log.mu.Unlock()
			if chunk >= 4*touchPages<<12 && touches == 0 {
				// Smaller chunks keep less room ahead than touchPages
				// pages: every page ahead lies past it.
				t.Error("no page populated ahead")
			}
			restoresAcknowledged(t, dir, want)
		})
	}
}

// restoresAcknowledged opens the state in dir again and checks that it
// restores want (namespace → state) whole: no torn bytes, no failed
// record, no hole.
func restoresAcknowledged(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	e := openEnv(t, dir, Options{Fsync: Interval})
	got := map[string]string{}
	for ns := range want {
		got[ns] = e.state(ns)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored state (-acknowledged +restored):\n%s", diff)
	}
	if e.rs.TornBytes != 0 || e.rs.Failed != 0 || e.rs.Holes != 0 {
		t.Errorf("restore: %+v", *e.rs)
	}
}

// addRulesRoundRobin adds namespaces PREFIX0..PREFIX(nss-1) and then rules
// IPv4 rules with priorities 100, 101, … to each, one namespace after the
// other, so that the namespaces' records interleave in the journal.
func addRulesRoundRobin(t *testing.T, e *env, prefix string, nss, rules int) {
	t.Helper()
	for n := range nss {
		if err := e.srv.Namespaces().Add(fmt.Sprint(prefix, n)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rules {
		for n := range nss {
			e.mustDo(fmt.Sprint(prefix, n), ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
		}
	}
}
