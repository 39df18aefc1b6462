package nsmgr

import (
	"fmt"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/rtnl"
)

// routeLoadPrefix is hack/routeload.sh's k-th route of a family:
// 10.(k>>8).(k&255).0/24 or 2001:db8:(k>>8):(k&255)::/64.
func routeLoadPrefix(k int, v6 bool) string {
	if v6 {
		return fmt.Sprintf("2001:db8:%x:%x::/64", k>>8, k&255)
	}
	return fmt.Sprintf("10.%d.%d.0/24", k>>8, k&255)
}

// routeBenchMsgs returns the requests `ip route add|del PREFIX dev lo` of
// the first n load prefixes as the handler receives them (decoded
// frames), built ahead so that the benchmark times the handler only.
func routeBenchMsgs(n int, v6 bool, cmd string) []rtnl.Message {
	msgs := make([]rtnl.Message, n)
	for k := range msgs {
		r := rtIP(cmd, routeLoadPrefix(k, v6), rtDevLo)
		b := rtnl.AppendRoute(nil, r.typ, r.flags, uint32(k+1), 4242, &r.m)
		msgs[k] = rtnl.SplitDatagram(b)[0]
	}
	return msgs
}

// BenchmarkRouteAdd40k measures one `ip route add` and one `ip route del`
// through the whole in-process handler path (dispatch, decode, checks,
// the FIB change, the notification when someone listens, the ACK's
// error value) in a namespace holding hack/routeload.sh's 40,000 routes
// of the family: each iteration deletes route k and adds it back, so the
// table stays at 40,000 (ns/op is per add+delete pair; ns/route, per
// request). "listener" adds an RTNLGRP_IPV4_ROUTE/IPV6_ROUTE subscriber,
// so that every change is also encoded as a notification. The transport
// (the socket round trip, the server's wake-ups) is not in it:
// hack/routeload.sh measures the whole.
func BenchmarkRouteAdd40k(b *testing.B) {
	const n = 40_000
	for _, v6 := range []bool{false, true} {
		for _, listen := range []bool{false, true} {
			name := map[bool]string{false: "ipv4", true: "ipv6"}[v6]
			if listen {
				name += "/listener"
			}
			b.Run(name, func(b *testing.B) {
				ns := routeTestNS(b)
				adds, dels := routeBenchMsgs(n, v6, "add"), routeBenchMsgs(n, v6, "del")
				for k := range adds {
					if _, err := ns.Do(&Request{Msg: &adds[k], PortID: 4242, Strict: true}); err != nil {
						b.Fatalf("add %s: %v", routeLoadPrefix(k, v6), err)
					}
				}
				if listen {
					group := uint32(rtnl.RTNLGRP_IPV4_ROUTE)
					if v6 {
						group = rtnl.RTNLGRP_IPV6_ROUTE
					}
					ns.SetGroups(nopListener{}, 1<<(group-1))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					k := i % n
					if _, err := ns.Do(&Request{Msg: &dels[k], PortID: 4242, Strict: true}); err != nil {
						b.Fatalf("del %s: %v", routeLoadPrefix(k, v6), err)
					}
					if _, err := ns.Do(&Request{Msg: &adds[k], PortID: 4242, Strict: true}); err != nil {
						b.Fatalf("add %s: %v", routeLoadPrefix(k, v6), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/route")
				if got := ns.routeTables(map[bool]uint8{false: rtnl.AF_INET, true: rtnl.AF_INET6}[v6]).Routes(); got < n {
					b.Fatalf("%d routes after the run, want at least %d", got, n)
				}
			})
		}
	}
}

// TestRouteBenchRequestsRoundTrip: the benchmark's prebuilt requests add
// and delete the routes they name (the benchmark measures real work).
func TestRouteBenchRequestsRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		ns := routeTestNS(t)
		adds, dels := routeBenchMsgs(300, v6, "add"), routeBenchMsgs(300, v6, "del")
		fam := uint8(rtnl.AF_INET)
		if v6 {
			fam = rtnl.AF_INET6
		}
		tb := ns.routeTables(fam)
		base := tb.Routes()
		for k := range adds {
			if _, err := ns.Do(&Request{Msg: &adds[k], PortID: 4242, Strict: true}); err != nil {
				t.Fatalf("add %s: %v", routeLoadPrefix(k, v6), err)
			}
		}
		if got := tb.Routes() - base; got != 300 {
			t.Fatalf("v6=%v: %d routes added, want 300", v6, got)
		}
		p := netip.MustParsePrefix(routeLoadPrefix(299, v6))
		if e, ok := tb.LookupTable(rtnl.RT_TABLE_MAIN, p.Addr().Next()); !ok || e.Prefix() != p {
			t.Fatalf("v6=%v: lookup in %v = %v %v", v6, p, e.Prefix(), ok)
		}
		for k := range dels {
			if _, err := ns.Do(&Request{Msg: &dels[k], PortID: 4242, Strict: true}); err != nil {
				t.Fatalf("del %s: %v", routeLoadPrefix(k, v6), err)
			}
		}
		if got := tb.Routes(); got != base {
			t.Fatalf("v6=%v: %d routes after deleting, want %d", v6, got, base)
		}
	}
}

// BenchmarkRouteLoad is hack/routeload.sh's load through the in-process
// handler path alone: n `ip route add PREFIX dev lo` requests of the
// family into a fresh namespace, in the script's order (n = 1,000 and
// 40,000), each followed by Namespace.Tidy as the server runs it after the
// reply. ns/route, cpu-ns/route (the process's CPU, the collector's
// included: steadier than the wall time on a shared machine), B/route and
// allocs/route are per request, averaged over the whole load (the table
// grows from 0 to n); the transport and the client are not in it.
func BenchmarkRouteLoad(b *testing.B) { benchRouteLoad(b, false) }

// BenchmarkRouteLoadAck is BenchmarkRouteLoad with each request's two
// parts timed: ack-ns/route is the wall time of Do (the part before the
// ACK), tidy-ns/route that of the Tidy after it. Each includes about one
// clock read (time.Now, ~80 ns here), which BenchmarkRouteLoad has none
// of: compare its cpu-ns/route, not this one's, across commits.
func BenchmarkRouteLoadAck(b *testing.B) { benchRouteLoad(b, true) }

func benchRouteLoad(b *testing.B, split bool) {
	for _, v6 := range []bool{false, true} {
		for _, n := range []int{1_000, 40_000} {
			name := fmt.Sprintf("%s/%dk", map[bool]string{false: "ipv4", true: "ipv6"}[v6], n/1000)
			b.Run(name, func(b *testing.B) {
				adds := routeBenchMsgs(n, v6, "add")
				fam := map[bool]uint8{false: rtnl.AF_INET, true: rtnl.AF_INET6}[v6]
				var ms0, ms1 runtime.MemStats
				var elapsed, cpu, ack, tidy time.Duration
				var mallocs, bytes uint64
				loads := 0
				for b.Loop() {
					b.StopTimer()
					ns := routeTestNS(b)
					runtime.GC()
					runtime.ReadMemStats(&ms0)
					b.StartTimer()
					t0, c0 := time.Now(), processCPU()
					for k := range adds {
						var t1 time.Time
						if split {
							t1 = time.Now()
						}
						if _, err := ns.Do(&Request{Msg: &adds[k], PortID: 4242, Strict: true}); err != nil {
							b.Fatalf("add %s: %v", routeLoadPrefix(k, v6), err)
						}
						if !split {
							ns.Tidy()
							continue
						}
						t2 := time.Now()
						ns.Tidy()
						ack += t2.Sub(t1)
						tidy += time.Since(t2)
					}
					elapsed += time.Since(t0)
					cpu += processCPU() - c0
					b.StopTimer()
					runtime.ReadMemStats(&ms1)
					mallocs += ms1.Mallocs - ms0.Mallocs
					bytes += ms1.TotalAlloc - ms0.TotalAlloc
					loads++
					if got := ns.routeTables(fam).Routes(); got < n {
						b.Fatalf("%d routes after the load, want at least %d", got, n)
					}
					b.StartTimer()
				}
				per := float64(loads * n)
				b.ReportMetric(float64(elapsed.Nanoseconds())/per, "ns/route")
				b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/route")
				if split {
					b.ReportMetric(float64(ack.Nanoseconds())/per, "ack-ns/route")
					b.ReportMetric(float64(tidy.Nanoseconds())/per, "tidy-ns/route")
				}
				b.ReportMetric(float64(bytes)/per, "B/route")
				b.ReportMetric(float64(mallocs)/per, "allocs/route")
			})
		}
	}
}

// processCPU is the process's user and system time so far (getrusage
// RUSAGE_SELF): the handler's CPU with the collector's share, which on a
// shared machine varies less than the wall time (a descheduled run adds
// wall time, not CPU).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRouteRequestReuseLeavesNothingBehind: changeRoute decodes every
// request into a reused RouteMsg; a request with many attributes (table,
// metric, protocol, type, encapsulation) followed by plain ones must leave
// nothing of the first in the routes the next ones store, in either
// family, and a failing decode in between changes nothing either.
func TestRouteRequestReuseLeavesNothingBehind(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		ns := routeTestNS(t)
		rich, plain := "10.9.0.0/24", "10.9.1.0/24"
		fam := uint8(rtnl.AF_INET)
		if v6 {
			rich, plain, fam = "2001:db8:9::/64", "2001:db8:9:1::/64", rtnl.AF_INET6
		}
		if err := rtDo(t, ns, nil, rtIP("add", rich, rtDevLo, rtTable(1234), rtMetric(77), rtProto(rtnl.RTPROT_STATIC))); err != nil {
			t.Fatalf("v6=%v: rich add: %v", v6, err)
		}
		// A request the decoder rejects (an IPv4 prefix longer than 32).
		bad := rtIP("add", "10.9.2.0/24", rtDevLo)
		bad.m.DstLen = 40
		if err := rtDo(t, ns, nil, bad); err == nil {
			t.Fatalf("v6=%v: a /40 IPv4 route was accepted", v6)
		}
		if err := rtDo(t, ns, nil, rtIP("add", plain, rtDevLo)); err != nil {
			t.Fatalf("v6=%v: plain add: %v", v6, err)
		}
		p := netip.MustParsePrefix(plain)
		e, ok := ns.routeTables(fam).LookupTable(rtnl.RT_TABLE_MAIN, p.Addr())
		if !ok || e.Prefix() != p {
			t.Fatalf("v6=%v: %v not in main: %v %v", v6, p, e.Prefix(), ok)
		}
		r := e.At(0)
		want := uint32(0)
		if v6 {
			want = 1024 // IP6_RT_PRIO_USER
		}
		if r.Table != rtnl.RT_TABLE_MAIN || r.Priority != want || r.Protocol != rtnl.RTPROT_BOOT || r.Metrics.Len() != 0 {
			t.Fatalf("v6=%v: the plain route kept the rich request's fields: table %d metric %d protocol %d metrics %d",
				v6, r.Table, r.Priority, r.Protocol, r.Metrics.Len())
		}
	}
}
