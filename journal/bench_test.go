package journal

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// BenchmarkApplyParallel: P clients, each in its own namespace, each
// waiting for every change's ACK (as nlemu load's clients do), with a
// handler that does nothing: what the journal alone costs per change,
// and how many writes it takes, under each policy.
func BenchmarkApplyParallel(b *testing.B) {
	for _, pol := range []Policy{Interval, None, Group} {
		for _, p := range []int{1, 64, 512} {
			b.Run(fmt.Sprintf("fsync=%s/clients=%d", pol, p), func(b *testing.B) { benchApply(b, pol, p) })
		}
	}
}

func benchApply(b *testing.B, pol Policy, p int) {
	j, nss := benchJournal(b, pol, p)
	msg := &rtnl.SplitDatagram(ruleAdd(rtnl.AF_INET, 0, 100))[0]
	before := j.Stats()
	b.ResetTimer()
	cpu0 := processCPU(b)
	eachClient(nss, b.N, func(ns *nsmgr.Namespace) {
		j.Apply(ns, msg, false, func() *rtnl.Error { return nil })
	})
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	// The process's CPU (user and system, every thread: the flusher's
	// and the allocator's system calls and the page faults of the stores
	// included) per change: steadier than ns/op on a shared machine, where
	// the wall time depends on what else runs.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/change")
	st := j.Stats()
	// Stored records (interval and none on a file on disk) take no
	// write at all: 0 writes per 1,000 changes.
	b.ReportMetric(1000*float64(st.Batches-before.Batches)/float64(max(st.Records-before.Records, 1)), "writes/1000changes")
}

// processCPU is the CPU time this process has used (getrusage
// RUSAGE_SELF, user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchJournal opens a journal under policy pol on a fresh manager with p
// namespaces, closed at the end of b.
func benchJournal(b *testing.B, pol Policy, p int) (*Journal, []*nsmgr.Namespace) {
	m := nsmgr.NewManager(&rtnl.LockConfig{})
	j, _, err := Open(b.TempDir(), m, Options{Fsync: pol})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	nss := make([]*nsmgr.Namespace, p)
	for i := range nss {
		name := fmt.Sprint("b", i)
		if err := m.Add(name); err != nil {
			b.Fatal(err)
		}
		nss[i], _ = m.Get(name)
	}
	return j, nss
}

// eachClient runs n calls of change in all, split over one goroutine per
// namespace of nss, and waits for them.
func eachClient(nss []*nsmgr.Namespace, n int, change func(*nsmgr.Namespace)) {
	var wg sync.WaitGroup
	per := (n + len(nss) - 1) / len(nss)
	for _, ns := range nss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				change(ns)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkApplyWork: P clients, each in its own namespace and waiting for
// every ACK, with a handler that spins for about a microsecond (a rule
// change's own work under nlemu load): what the journal's locks cost when
// the changes are not all journal. Under `interval` the journal's mutex is
// held for a few hundred nanoseconds per change; with 512 clients on 2
// cores waiting in sync.Mutex.Lock it went into starvation mode, which
// switches goroutines at every Unlock (lockHot).
func BenchmarkApplyWork(b *testing.B) {
	for _, p := range []int{2, 512} {
		b.Run(fmt.Sprintf("fsync=none/clients=%d", p), func(b *testing.B) { benchApplyWork(b, p, true) })
		b.Run(fmt.Sprintf("nojournal/clients=%d", p), func(b *testing.B) { benchApplyWork(b, p, false) })
	}
}

// spinWork burns about d of CPU without a system call.
func spinWork(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

func benchApplyWork(b *testing.B, p int, journaled bool) {
	j, nss := benchJournal(b, None, p)
	msg := &rtnl.SplitDatagram(ruleAdd(rtnl.AF_INET, 0, 100))[0]
	work := func() *rtnl.Error { spinWork(time.Microsecond); return nil }
	b.ResetTimer()
	eachClient(nss, b.N, func(ns *nsmgr.Namespace) {
		if journaled {
			j.Apply(ns, msg, false, work)
		} else {
			work()
		}
	})
}

// BenchmarkMappedStoreAdvice is a model of the mapped path's flusher
// (docs/STATE.md, Writing records): b.N records of 64 bytes stored into a
// fallocated file's shared mapping, one at a time, and every MiB a tick as
// the flusher's: the whole pages behind the records unmapped, written back
// and fdatasynced, then the file ahead of them prepared with the advice
// named (populate-write was the flusher's before; willneed is now). It
// reports the page faults (populate's included: getrusage) and the CPU
// (user and system) per stored record.
func BenchmarkMappedStoreAdvice(b *testing.B) {
	for _, adv := range []struct {
		name   string
		advice int
	}{
		{"populate-write", unix.MADV_POPULATE_WRITE},
		{"populate-read", unix.MADV_POPULATE_READ},
		{"willneed", unix.MADV_WILLNEED},
		{"none", -1},
	} {
		b.Run(adv.name, func(b *testing.B) { benchMappedStore(b, adv.advice) })
	}
}

func benchMappedStore(b *testing.B, advice int) {
	const rec, tick = 64, 1 << 20
	size := (int64(b.N)*rec + tick) &^ 4095
	fs := DirFS(b.TempDir())
	f, err := fs.Create("j")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	o := f.(osFile)
	if err := o.Fallocate(0, size); err != nil {
		b.Skip("fallocate:", err) // the model is of the fallocated path only
	}
	m, err := o.Map(size)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(m)
	r := record{Kind: kindRequest, Payload: make([]byte, rec-hdrLen)}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	var wroteBack int64
	for i := range int64(b.N) {
		off := i * rec
		r.Seq = uint64(i)
		putRecord(m[off:off+rec], r)
		if end := off + rec; end%tick == 0 {
			whole := end &^ 4095
			unix.Madvise(m[wroteBack:whole], unix.MADV_DONTNEED)
			if err := o.WriteBack(wroteBack, whole-wroteBack); err != nil {
				b.Fatal(err)
			}
			wroteBack = whole
			if err := o.Sync(); err != nil {
				b.Fatal(err)
			}
			if ahead := min(whole+2*tick, size); advice >= 0 && ahead > whole {
				unix.Madvise(m[whole:ahead], advice)
			}
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/record")
	b.ReportMetric(float64(ru1.Minflt+ru1.Majflt-ru0.Minflt-ru0.Majflt)/float64(max(size>>12, 1)), "faults/page")
}
