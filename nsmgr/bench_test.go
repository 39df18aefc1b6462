package nsmgr_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// sink is the requester in benchmarks: it drops echo copies.
type sink struct{}

func (sink) Deliver([]byte) {}

func newNS(b *testing.B) *nsmgr.Namespace {
	m := nsmgr.NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	if err := m.Add("bench"); err != nil {
		b.Fatal(err)
	}
	ns, _ := m.Get("bench")
	return ns
}

// addReq encodes `rule add from all table t [pref p]` as ip sends it.
func addReq(fam uint8, table, pref uint32) []byte {
	attrs := []T.Attr{T.Table(table)}
	if pref != 0 {
		attrs = append(attrs, T.Pref(pref))
	}
	return T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, 1, T.Body(T.Hdr{Family: fam, Action: rtnl.FR_ACT_TO_TBL}, attrs...))
}

func do(b *testing.B, ns *nsmgr.Namespace, req []byte) {
	m := rtnl.SplitDatagram(req)[0]
	if _, err := ns.Do(&nsmgr.Request{Msg: &m, PortID: 1, Self: sink{}}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNewRule measures one RTM_NEWRULE through decode, validation,
// duplicate check and insertion, with the list at about `at` rules:
// automatic priority (inserted near the head, as `ip -batch` of the seed
// does) and ascending explicit priority (appended at the tail, the
// kernel's quadratic case).
func BenchmarkNewRule(b *testing.B) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		for _, mode := range []string{"auto", "ascending"} {
			for _, at := range []int{1000, 50000} {
				b.Run(fmt.Sprintf("v%d/%s/at%dk", map[uint8]int{2: 4, 10: 6}[fam], mode, at/1000), func(b *testing.B) {
					batch := at / 5
					var ns *nsmgr.Namespace
					reqs := make([][]byte, 0, at+batch)
					for i := 0; i < at+batch; i++ {
						pref := uint32(0)
						if mode == "ascending" {
							pref = uint32(i + 1)
						}
						reqs = append(reqs, addReq(fam, uint32(i+1), pref))
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if i%batch == 0 {
							b.StopTimer()
							ns = newNS(b)
							for _, r := range reqs[:at] {
								do(b, ns, r)
							}
							b.StartTimer()
						}
						do(b, ns, reqs[at+i%batch])
					}
				})
			}
		}
	}
}

// BenchmarkDumpRules measures a full RTM_GETRULE dump of 1,027 IPv4 rules
// in 32 KiB datagrams.
func BenchmarkDumpRules(b *testing.B) {
	ns := newNS(b)
	for i := 1; i <= 1024; i++ {
		do(b, ns, addReq(rtnl.AF_INET, uint32(i), 0))
	}
	req := T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, T.Body(T.Hdr{Family: rtnl.AF_INET}))
	m := rtnl.SplitDatagram(req)[0]
	buf := make([]byte, 0, rtnl.DumpMaxSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, _ := ns.Do(&nsmgr.Request{Msg: &m, PortID: 1, Self: sink{}})
		n := 0
		for done := false; !done; {
			var out []byte
			out, done = d.Fill(buf[:0], rtnl.DumpMaxSize)
			n += len(rtnl.SplitDatagram(out))
		}
		if n != 1027 {
			b.Fatalf("dumped %d rules", n)
		}
	}
	b.ReportMetric(1027, "rules/op")
}

// BenchmarkLoad50kAscending is the kernel baseline's worst case: 50,000
// rules with ascending explicit priorities into one namespace (the kernel
// takes 23 s for IPv4 and 420 s for IPv6 on this machine). It reports the
// wall time per load and the heap bytes each rule costs.
func BenchmarkLoad50kAscending(b *testing.B) {
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		b.Run(fmt.Sprintf("v%d", map[uint8]int{2: 4, 10: 6}[fam]), func(b *testing.B) {
			const n = 50000
			reqs := make([][]byte, n)
			for i := range reqs {
				reqs[i] = addReq(fam, uint32(i+1), uint32(i+1))
			}
			var bytesPerRule float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				b.StartTimer()
				ns := newNS(b)
				for _, r := range reqs {
					do(b, ns, r)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&m1)
				if got := ns.Rules(fam).Len(); got < n {
					b.Fatalf("%d rules", got)
				}
				bytesPerRule = float64(m1.HeapAlloc-m0.HeapAlloc) / n
				runtime.KeepAlive(ns)
				b.StartTimer()
			}
			b.ReportMetric(bytesPerRule, "heapB/rule")
		})
	}
}

// BenchmarkMemorySeedScale loads the seed's 4,096 namespaces x 1,024 rules
// (both families) through Namespace.Do and reports the live heap per rule
// and in total after a GC: what the rule state itself costs.
func BenchmarkMemorySeedScale(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		m := nsmgr.NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
		reqs := map[uint8][][]byte{}
		for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
			for t := 1; t <= 1024; t++ {
				reqs[fam] = append(reqs[fam], addReq(fam, uint32(t), 0))
			}
		}
		for n := 1; n <= 4096; n++ {
			name := fmt.Sprintf("ns-%d", n)
			m.Add(name)
			ns, _ := m.Get(name)
			for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
				for _, r := range reqs[fam] {
					do(b, ns, r)
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		live := float64(m1.HeapAlloc - m0.HeapAlloc)
		b.ReportMetric(live/(1<<20), "liveMiB")
		b.ReportMetric(live/(4096*2048), "B/rule")
		runtime.KeepAlive(m)
	}
}
