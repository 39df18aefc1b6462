package fib

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"

	"github.com/gaissmai/bart"
	"github.com/nlemu/nlemu/rtnl"
)

// route4 returns the i-th of a family of distinct IPv4 routes sharing one
// nexthop and attributes (what a daemon's table of learned prefixes looks
// like): /24s for the first 2^24, spread over the address space.
func route4(i int) Route {
	a := netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0})
	return Route{
		Family: afInet, Table: tableMain, Dst: netip.PrefixFrom(a, 24),
		Type: rtnl.RTN_UNICAST, Protocol: rtnl.RTPROT_STATIC, Scope: rtnl.RT_SCOPE_UNIVERSE,
		Nexthops: []Nexthop{{Gateway: netip.MustParseAddr("10.0.0.2"), Dev: devV0, Weight: 1}},
	}
}

func fill(b testing.TB, tb *Tables, n int) {
	for i := range n {
		if _, err := tb.Insert(route4(i), fAdd); err != nil {
			b.Fatal(err)
		}
	}
}

// fillFast builds the same table as fill without the persistent path
// copies: a private bart table filled in place, then published (setup
// for benchmarks that measure something else than the fill).
func fillFast(tb *Tables, n int) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.create(tableMain)
	bt := new(bart.Table[leaf])
	for i := range n {
		r := route4(i)
		bt.Insert(r.Dst, leaf{head: tb.intern(r)})
	}
	tb.routes.Add(int64(n))
	tb.publish(tableMain, storeOf(bt))
}

// BenchmarkInsert measures inserting a new route into a table holding n
// routes and deleting its oldest one, so the size stays n and the small
// table's merges into the large one are paid as they come: with
// persistent bart updates the cost depends on the trie's depth and
// fan-out, not on n (compare the 1k and 1M figures).
func BenchmarkInsert(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			tb := NewIPv4()
			fillFast(tb, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := tb.Insert(route4(n+i), fAdd); err != nil {
					b.Fatal(err)
				}
				m := Match{Family: afInet, Table: tableMain, Dst: route4(i).Dst, Scope: rtnl.RT_SCOPE_NOWHERE}
				if _, err := tb.Delete(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerRoute1M reports the retained heap per route with
// 1,000,000 IPv4 routes in one namespace's main table (target ≤ 100 B).
func BenchmarkMemoryPerRoute1M(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		before := heapInUse()
		tb := NewIPv4()
		fill(b, tb, n)
		after := heapInUse()
		b.ReportMetric(float64(after-before)/n, "B/route")
		runtime.KeepAlive(tb)
	}
}

// BenchmarkMemory4096x64 reports the retained heap per route of 4,096
// namespaces' IPv4 and IPv6 table sets holding 64 IPv4 routes each, the
// fixed cost of each table set included.
func BenchmarkMemory4096x64(b *testing.B) {
	const ns, per = 4096, 64
	for b.Loop() {
		before := heapInUse()
		sets := make([]*Tables, 0, 2*ns)
		for range ns {
			v4, v6 := NewIPv4(), NewIPv6()
			fill(b, v4, per)
			sets = append(sets, v4, v6)
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/(ns*per), "B/route")
		b.ReportMetric(float64(after-before)/ns, "B/namespace")
		runtime.KeepAlive(sets)
	}
}

// BenchmarkLookupTable measures a longest-prefix match in a 1M-route
// table through a snapshot, from every core.
func BenchmarkLookupTable(b *testing.B) {
	tb := NewIPv4()
	fillFast(tb, 1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			v, _ := tb.Snapshot().Table(tableMain)
			j := i % 1_000_000 // inside the table (route4(0..999,999))
			a := netip.AddrFrom4([4]byte{byte(1 + j>>16), byte(j >> 8), byte(j), 7})
			if _, ok := v.Lookup(a); !ok {
				b.Fatal("miss")
			}
			i++
		}
	})
}

// TestReadersDuringWriters: readers take snapshots, look up and walk
// while writers insert and delete in several tables of both families;
// every snapshot stays internally consistent (a walked table is sorted
// in dump order and each prefix's entries are sorted). Run with -race.
func TestReadersDuringWriters(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		tb := NewIPv4()
		if v6 {
			tb = NewIPv6()
		}
		stop := make(chan struct{})
		var readers, writers sync.WaitGroup
		errs := make(chan string, 4)
		for range 3 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for v := range tb.Snapshot().Tables() {
						var last netip.Prefix
						for c, r := range v.Walk(Cursor{}) {
							if c.Pos == 0 && last.IsValid() && !dumpLess(last, r.Dst) {
								select {
								case errs <- fmt.Sprintf("table %d: %v before %v", v.ID(), last, r.Dst):
								default:
								}
							}
							last = r.Dst
						}
						v.Lookup(netip.MustParseAddr("10.1.2.3"))
					}
				}
			}()
		}
		for w := range 2 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				for i := range 3000 {
					var r Route
					if v6 {
						r = rt(fmt.Sprintf("2001:db8:%x::/48 dev 3 table %d", i%200, 10+w))
					} else {
						r = rt(fmt.Sprintf("10.%d.%d.0/24 dev 3 table %d", i%7, i%200, 10+w))
					}
					tb.Insert(r, fAdd)
					if i%3 == 0 {
						tb.Delete(Match{Family: r.Family, Table: r.Table, Dst: r.Dst, Scope: rtnl.RT_SCOPE_NOWHERE})
					}
				}
			}()
		}
		writers.Wait()
		close(stop)
		readers.Wait()
		select {
		case e := <-errs:
			t.Errorf("v6=%v: %s", v6, e)
		default:
		}
	}
}

// BenchmarkLoad40k measures loading hack/routeload.sh's 40,000 routes
// (10.(k>>8).(k&255).0/24, 2001:db8:(k>>8):(k&255)::/64) into a fresh
// table, per route: the FIB's share of the seed's ip -batch load.
func BenchmarkLoad40k(b *testing.B) {
	const n = 40_000
	for _, v6 := range []bool{false, true} {
		b.Run(map[bool]string{false: "ipv4", true: "ipv6"}[v6], func(b *testing.B) {
			routes := make([]Route, n)
			for k := range routes {
				if v6 {
					routes[k] = rt(fmt.Sprintf("2001:db8:%x:%x::/64 dev 3", k>>8, k&255))
				} else {
					routes[k] = rt(fmt.Sprintf("10.%d.%d.0/24 dev 3", k>>8, k&255))
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				tb := NewIPv4()
				if v6 {
					tb = NewIPv6()
				}
				for _, r := range routes {
					if _, err := tb.Insert(r, fAdd); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/route")
		})
	}
}

// BenchmarkFoldCadence loads hack/routeload.sh's 40,000 routes per family
// into a fresh table (as BenchmarkLoad40k) and then deletes and re-adds
// each once (the table at 40,000), for several smallMax: the figures that
// chose the default. smallMax=1 folds every new prefix at once (one
// table).
func BenchmarkFoldCadence(b *testing.B) {
	const n = 40_000
	defer func(m int) { smallMax = m }(smallMax)
	for _, v6 := range []bool{false, true} {
		routes := make([]Route, n)
		for k := range routes {
			if v6 {
				routes[k] = rt(fmt.Sprintf("2001:db8:%x:%x::/64 dev 3", k>>8, k&255))
			} else {
				routes[k] = rt(fmt.Sprintf("10.%d.%d.0/24 dev 3", k>>8, k&255))
			}
		}
		for _, m := range []int{1, 8, 16, 32, 64, 128} {
			b.Run(fmt.Sprintf("%s/smallMax=%d", map[bool]string{false: "ipv4", true: "ipv6"}[v6], m), func(b *testing.B) {
				smallMax = m
				b.ReportAllocs()
				for b.Loop() {
					tb := NewIPv4()
					if v6 {
						tb = NewIPv6()
					}
					for _, r := range routes {
						if _, err := tb.Insert(r, fAdd); err != nil {
							b.Fatal(err)
						}
					}
					for _, r := range routes {
						if _, err := tb.Delete(Match{Family: r.Family, Table: r.Table, Dst: r.Dst, Scope: rtnl.RT_SCOPE_NOWHERE}); err != nil {
							b.Fatal(err)
						}
						if _, err := tb.Insert(r, fAdd); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*3*n), "ns/change")
			})
		}
	}
}
