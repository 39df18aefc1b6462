package journal

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

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
