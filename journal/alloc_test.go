package journal

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// allocFS counts how the journal makes room in its files: zeros written
// and synced (File.Allocate) or blocks allocated unwritten (fallocator),
// with a budget for the latter (a full disk) and a switch that makes it
// unsupported (a file system without fallocate). Its files can be mapped,
// as files on disk are.
type allocFS struct {
	DirFS
	zeros, fallocs atomic.Int64 // calls of each
	budget         atomic.Int64 // bytes Fallocate may still allocate; < 0: no limit
	unsupported    bool
}

func newAllocFS(dir string) *allocFS {
	f := &allocFS{DirFS: DirFS(dir)}
	f.budget.Store(-1)
	return f
}

type allocFile struct {
	File
	fs *allocFS
}

func (f *allocFS) wrap(g File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &allocFile{g, f}, nil
}

func (f *allocFS) Create(name string) (File, error) { return f.wrap(f.DirFS.Create(name)) }

func (f *allocFS) OpenAppend(name string) (File, error) { return f.wrap(f.DirFS.OpenAppend(name)) }

func (f *allocFile) Allocate(off, n int64) error {
	f.fs.zeros.Add(1)
	return f.File.Allocate(off, n)
}

func (f *allocFile) Fallocate(off, n int64) error {
	if f.fs.unsupported {
		return errors.ErrUnsupported
	}
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
	f.fs.fallocs.Add(1)
	return f.File.(fallocator).Fallocate(off, n)
}

func (f *allocFile) Map(length int64) ([]byte, error) { return f.File.(mapper).Map(length) }

// TestLeaderPoliciesAllocateWithoutWriting: under Interval and None (the
// ACK waits for no fdatasync) the room ahead of the records is allocated
// with fallocate, never written; under Group and Always, whose ACKs wait
// for an fdatasync that should flush data only, it is written with zeros
// and synced; where fallocate is unsupported the leader policies write
// zeros too. Either way the state restores as it was acknowledged.
func TestLeaderPoliciesAllocateWithoutWriting(t *testing.T) {
	for _, tc := range []struct {
		pol         Policy
		unsupported bool
		wantFalloc  bool
	}{
		{Interval, false, true},
		{None, false, true},
		{Group, false, false},
		{Always, false, false},
		{Interval, true, false},
		{None, true, false},
	} {
		t.Run(fmt.Sprintf("%s/unsupported=%v", tc.pol, tc.unsupported), func(t *testing.T) {
			dir := t.TempDir()
			fs := newAllocFS(dir)
			fs.unsupported = tc.unsupported
			e := openEnv(t, "", Options{FS: fs, Fsync: tc.pol, allocChunk: 1 << 10})
			for i := range 100 { // 6 KiB of records: several chunks
				e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, uint32(100+i)))
			}
			want := e.state("default")
			e.close()
			got := struct{ Falloc, Zeros bool }{fs.fallocs.Load() > 0, fs.zeros.Load() > 0}
			if diff := cmp.Diff(struct{ Falloc, Zeros bool }{tc.wantFalloc, !tc.wantFalloc}, got); diff != "" {
				t.Errorf("how room was made (-want +got):\n%s", diff)
			}
			e2 := openEnv(t, dir, Options{Fsync: tc.pol})
			if diff := cmp.Diff(want, e2.state("default")); diff != "" {
				t.Errorf("restored state (-acknowledged +restored):\n%s", diff)
			}
			if e2.rs.TornBytes != 0 || e2.rs.Failed != 0 || e2.rs.Holes != 0 {
				t.Errorf("restore: %+v", *e2.rs)
			}
		})
	}
}

// TestFullDiskRefusesBeforeApplyingFallocated: under Interval a full disk
// makes fallocate fail, and the change is refused with ENOSPC before it is
// applied, as when zeros are written (TestFullDiskRefusesBeforeApplying);
// with room again changes go on, and the restart has every acknowledged
// one.
func TestFullDiskRefusesBeforeApplyingFallocated(t *testing.T) {
	dir := t.TempDir()
	fs := newAllocFS(dir)
	e := openEnv(t, "", Options{FS: fs, Fsync: Interval, allocChunk: 256})
	fs.budget.Store(0)
	// At most the first chunk and the two the allocator keeps ahead were
	// allocated before the budget ran out: 768 bytes, 12 records of these.
	refuseOnFullDisk(t, e, 40)
	fs.budget.Store(-1)
	e.mustDo("default", ruleAdd(rtnl.AF_INET, 0, 999))
	want := e.state("default")
	e.close()
	if fs.zeros.Load() != 0 {
		t.Errorf("%d allocations wrote zeros under Interval", fs.zeros.Load())
	}
	e2 := openEnv(t, dir, Options{Fsync: Interval})
	if diff := cmp.Diff(want, e2.state("default")); diff != "" {
		t.Errorf("restored state (-acknowledged +restored):\n%s", diff)
	}
}
