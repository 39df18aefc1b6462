package fib

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

var loRoutes = []string{
	"127.0.0.0/8 dev 1 table 255 type 2 scope 254 proto 2 src 127.0.0.1",
	"127.0.0.1 dev 1 table 255 type 2 scope 254 proto 2 src 127.0.0.1",
	"127.255.255.255 dev 1 table 255 type 3 scope 253 proto 2 src 127.0.0.1",
}

func mergedFixture(t *testing.T) *Tables {
	tb := NewIPv4()
	for _, s := range append(loRoutes, "10.0.0.0/24 dev 3 proto 2 src 10.0.0.1", "127.0.0.0/8 dev 3 metric 9") {
		if _, err := tb.Insert(rt(s), fAdd); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return tb
}

// TestMergedLocalMainE2: while merged, local and main are one storage
// (ROUTES-SPEC 6, E2): dumps of each table show only their own entries,
// the merged lookup of main finds local routes (and reports them with
// their own table id; RTM_F_LOOKUP_TABLE says main because main answered),
// and local entries sort before main ones at a shared prefix.
func TestMergedLocalMainE2(t *testing.T) {
	tb := mergedFixture(t)
	s := tb.Snapshot()
	if !s.Merged() {
		t.Fatal("not merged")
	}
	want255 := []string{
		"127.0.0.0/8 t255 m0 p2 s254 y2 src 127.0.0.1 [dev 1]",
		"127.0.0.1/32 t255 m0 p2 s254 y2 src 127.0.0.1 [dev 1]",
		"127.255.255.255/32 t255 m0 p2 s253 y3 src 127.0.0.1 [dev 1]",
	}
	want254 := []string{
		"10.0.0.0/24 t254 m0 p2 s253 y1 src 10.0.0.1 [dev 3]",
		"127.0.0.0/8 t254 m9 p3 s253 y1 [dev 3]",
	}
	if d := cmp.Diff(want255, dump(tb, tableLocal)); d != "" {
		t.Errorf("table local (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want254, dump(tb, tableMain)); d != "" {
		t.Errorf("table main (-want +got):\n%s", d)
	}
	mm, ok := s.MergedMain()
	if !ok {
		t.Fatal("no merged main")
	}
	e, ok := mm.Lookup(netip.MustParseAddr("127.0.0.5"))
	if !ok || e.Len() != 2 || e.At(0).Table != tableLocal || e.At(1).Table != tableMain {
		t.Fatalf("merged lookup 127.0.0.5: %v %d entries", ok, e.Len())
	}
	v, _ := s.Table(tableMain)
	if e, ok := v.Lookup(netip.MustParseAddr("127.0.0.1")); !ok || e.Prefix() != pf("127.0.0.0/8") || e.Len() != 1 {
		t.Errorf("main's own view of 127.0.0.1: %v %v %d", ok, e.Prefix(), e.Len())
	}
	if got := s.lm.main; got != s.lm.local {
		t.Error("merged local and main do not share storage")
	}
}

// TestUnmergeSplitsStorage: Unmerge (fib_trie_unmerge()) gives local its
// own storage with the local entries, drops them from main, leaves the
// dumps as they were (ROUTES-SPEC 6: no difference in dumps) and leaves a
// snapshot taken before unchanged; later changes of one table do not
// touch the other.
func TestUnmergeSplitsStorage(t *testing.T) {
	tb := mergedFixture(t)
	before := tb.Snapshot()
	d255, d254 := dump(tb, tableLocal), dump(tb, tableMain)
	if err := tb.Unmerge(); err != nil {
		t.Fatal(err)
	}
	s := tb.Snapshot()
	if s.Merged() || !before.Merged() {
		t.Fatalf("merged after=%v before=%v", s.Merged(), before.Merged())
	}
	if d := cmp.Diff(d255, dump(tb, tableLocal)); d != "" {
		t.Errorf("local changed (-before +after):\n%s", d)
	}
	if d := cmp.Diff(d254, dump(tb, tableMain)); d != "" {
		t.Errorf("main changed (-before +after):\n%s", d)
	}
	for p, l := range s.lm.main.All() {
		for i := range l.len() {
			if l.at(i).r.Table != tableMain {
				t.Errorf("main storage keeps %v of table %d", p, l.at(i).r.Table)
			}
		}
	}
	if s.lm.local.Size() != 3 || s.lm.main.Size() != 2 {
		t.Errorf("sizes local %d main %d, want 3 2", s.lm.local.Size(), s.lm.main.Size())
	}
	if before.lm.main.Size() != 4 {
		t.Errorf("old snapshot's storage changed: %d prefixes", before.lm.main.Size())
	}
	if _, err := tb.Insert(rt("10.9.0.1 dev 3 table 255 type 2 scope 254"), fAdd); err != nil {
		t.Fatal(err)
	}
	if tb.Snapshot().lm.main.Size() != 2 {
		t.Error("a local insert after unmerge reached main")
	}
	// A reader that saw no custom rule before the unmerge still finds the
	// local routes through the merged view.
	mm, _ := tb.Snapshot().MergedMain()
	if e, ok := mm.Lookup(netip.MustParseAddr("127.0.0.1")); !ok || e.At(0).Table != tableLocal {
		t.Errorf("merged view after unmerge: %v %+v", ok, e)
	}
	tb.Unmerge()
	if tb.Unmerges() != 1 {
		t.Errorf("Unmerges = %d", tb.Unmerges())
	}
}

// TestUnmergeRaceWithInserts: local and main inserts (under a stand-in
// RTNL, as callers must hold it) race with Unmerge and with readers; no
// route is lost or left in the wrong storage, and every snapshot is
// consistent: merged with shared storage, or split with each storage
// holding only its table's entries. Run with -race.
func TestUnmergeRaceWithInserts(t *testing.T) {
	tb := NewIPv4()
	var rtnlMu sync.Mutex
	var held atomic.Bool
	tb.SetRTNLCheck(held.Load)
	lock := func() { rtnlMu.Lock(); held.Store(true) }
	unlock := func() { held.Store(false); rtnlMu.Unlock() }
	const n = 500
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad atomic.Value
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := tb.Snapshot()
				if s.lm.merged {
					if s.lm.main != s.lm.local {
						bad.Store("merged snapshot with split storage")
					}
					continue
				}
				if s.lm.main == nil {
					continue
				}
				for _, l := range s.lm.main.All() {
					if l.at(0).r.Table != tableMain {
						bad.Store("split snapshot with a local entry in main")
					}
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w, table := range []uint32{tableLocal, tableMain} {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range n {
				r := rt(fmt.Sprintf("10.%d.%d.%d dev 3 table %d", w, i/256, i%256, table))
				lock()
				_, err := tb.Insert(r, fAdd)
				unlock()
				if err != nil {
					bad.Store(err.Error())
				}
			}
		}()
	}
	writers.Add(1)
	go func() {
		defer writers.Done()
		lock()
		tb.Unmerge()
		unlock()
	}()
	writers.Wait()
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	s := tb.Snapshot()
	if s.lm.local.Size() != n || s.lm.main.Size() != n {
		t.Errorf("local %d main %d prefixes, want %d each", s.lm.local.Size(), s.lm.main.Size(), n)
	}
}

// TestIPv4ChangeWithoutRTNLPanics: "must hold RTNL" is asserted when a
// check is installed.
func TestIPv4ChangeWithoutRTNLPanics(t *testing.T) {
	tb := NewIPv4()
	tb.SetRTNLCheck(func() bool { return false })
	defer func() {
		if recover() == nil {
			t.Error("Insert without RTNL did not panic")
		}
	}()
	tb.Insert(rt("10.0.0.0/8 dev 3"), fAdd)
}

// TestSyncDownDev4E6 mirrors ROUTES-SPEC 5.5/E6 for IPv4: carrier loss
// flags every hop on the device linkdown except host-scope routes; admin
// down removes every route through it but the local ones, silently, in
// every table, and leaves a multipath route with the hop flagged dead;
// unregister removes everything through it, multipath included.
func TestSyncDownDev4E6(t *testing.T) {
	setup := []string{
		"10.0.0.0/24 dev 3 proto 2 src 10.0.0.1",
		"10.0.0.1 dev 3 table 255 type 2 scope 254 proto 2 src 10.0.0.1",
		"10.0.0.255 dev 3 table 255 type 3 scope 253 proto 2 src 10.0.0.1",
		"10.5.0.0/16 via 10.0.0.2 dev 3 table 100",
		"10.6.0.0/16 nexthop via 10.0.0.2 dev 3 nexthop via 10.1.0.2 dev 2",
		"10.7.0.0/16 dev 2",
	}
	build := func() *Tables {
		tb := NewIPv4()
		for _, s := range setup {
			if _, err := tb.Insert(rt(s), fAdd); err != nil {
				t.Fatal(err)
			}
		}
		return tb
	}
	all := func(tb *Tables) []string {
		var out []string
		for v := range tb.Snapshot().Tables() {
			for _, r := range v.Walk(Cursor{}) {
				out = append(out, brief(r))
			}
		}
		return out
	}
	tb := build()
	ch := tb.SyncDownDev(devV0, DevCarrierDown)
	if len(ch.Events)+len(ch.Silent) != 0 {
		t.Errorf("carrier loss changed routes: %+v", ch)
	}
	want := []string{
		"10.5.0.0/16 t100 m0 p3 s0 y1 [via 10.0.0.2 dev 3 f0x10]",
		"10.0.0.0/24 t254 m0 p2 s253 y1 src 10.0.0.1 [dev 3 f0x10]",
		"10.6.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.2 dev 3 f0x10] [via 10.1.0.2 dev 2]",
		"10.7.0.0/16 t254 m0 p3 s253 y1 [dev 2]",
		"10.0.0.1/32 t255 m0 p2 s254 y2 src 10.0.0.1 [dev 3]",
		"10.0.0.255/32 t255 m0 p2 s253 y3 src 10.0.0.1 [dev 3 f0x10]",
	}
	if d := cmp.Diff(want, all(tb)); d != "" {
		t.Errorf("carrier loss (-want +got):\n%s", d)
	}
	tb.SyncUpDev(devV0, rtnl.RTNH_F_LINKDOWN)
	if d := cmp.Diff(all(build()), all(tb)); d != "" {
		t.Errorf("carrier back (-want +got):\n%s", d)
	}

	ch = tb.SyncDownDev(devV0, DevDown)
	if len(ch.Events) != 0 || len(ch.Silent) != 3 {
		t.Errorf("down: %d events, %d silent, want 0 and 3", len(ch.Events), len(ch.Silent))
	}
	want = []string{
		"10.6.0.0/16 t254 m0 p3 s0 y1 [via 10.0.0.2 dev 3 f0x11] [via 10.1.0.2 dev 2]",
		"10.7.0.0/16 t254 m0 p3 s253 y1 [dev 2]",
		"10.0.0.1/32 t255 m0 p2 s254 y2 src 10.0.0.1 [dev 3]",
	}
	if d := cmp.Diff(want, all(tb)); d != "" {
		t.Errorf("down (-want +got):\n%s", d)
	}
	tb.SyncDownDev(devV1, DevDown)
	if got := all(tb); len(got) != 1 {
		t.Errorf("after both down: %q, want only the local route", got)
	}

	tb = build()
	tb.SyncDownDev(devV0, DevUnregister)
	if d := cmp.Diff([]string{"10.7.0.0/16 t254 m0 p3 s253 y1 [dev 2]"}, all(tb)); d != "" {
		t.Errorf("unregister (-want +got):\n%s", d)
	}
	if tb.Routes() != 1 || len(tb.pool) != 1 {
		t.Errorf("routes %d pool %d, want 1 1", tb.Routes(), len(tb.pool))
	}
}

// TestSyncDownDev6: IPv6 admin down removes the single-path routes on the
// device with a notification each, flags its hop of an ECMP set dead,
// and removes the set when every hop is dead; carrier loss flags hops
// linkdown but not local routes (ROUTES-SPEC 5.5, fib6_ifdown()).
func TestSyncDownDev6(t *testing.T) {
	tb := NewIPv6()
	for _, s := range []string{
		"2001:db8::/64 dev 3 metric 256 proto 2",
		"2001:db8::1 dev 3 table 255 type 2 metric 0 proto 2",
		"2001:db8:4::/64 nexthop via fe80::1 dev 3 nexthop via fe80::2 dev 2",
		"2001:db8:5::/64 dev 2",
	} {
		if _, err := tb.Insert(rt(s), fAdd); err != nil {
			t.Fatal(err)
		}
	}
	tb.SyncDownDev(devV0, DevCarrierDown)
	if got := show(tb, tableLocal, "2001:db8::1"); len(got) != 1 || got[0] != "2001:db8::1/128 t255 m0 p2 s0 y2 [dev 3]" {
		t.Errorf("carrier loss touched the local route: %q", got)
	}
	tb.SyncUpDev(devV0, rtnl.RTNH_F_LINKDOWN)
	ch := tb.SyncDownDev(devV0, DevDown)
	var got []string
	for _, e := range ch.Events {
		got = append(got, fmt.Sprintf("%d %s", e.Type, brief(e.Route)))
	}
	want := []string{
		"25 2001:db8::/64 t254 m256 p2 s0 y1 [dev 3]",
		"25 2001:db8::1/128 t255 m0 p2 s0 y2 [dev 3]",
	}
	// The order is the dump order (Linux 6.18, raw RTNLGRP_IPV6_ROUTE
	// listener during "ip link set w0 down": main's routes in walk order,
	// then local's).
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("down events (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"2001:db8:4::/64 t254 m1024 p3 s0 y1 [via fe80::1 dev 3 f0x11] [via fe80::2 dev 2]"}, show(tb, tableMain, "2001:db8:4::/64")); d != "" {
		t.Errorf("sibling set (-want +got):\n%s", d)
	}
	ch = tb.SyncDownDev(devV1, DevDown)
	if len(ch.Events) != 3 || tb.Routes() != 0 {
		t.Errorf("second device down: %d events, %d routes left; want 3 and 0", len(ch.Events), tb.Routes())
	}
}

// TestRemoveIf: the bulk removal reports routes silently or as
// RTM_DELROUTE events, in every table.
func TestRemoveIf(t *testing.T) {
	tb := NewIPv4()
	for _, s := range []string{"10.1.0.0/16 dev 3 src 10.0.0.1", "10.2.0.0/16 dev 3 table 7 src 10.0.0.1", "10.3.0.0/16 dev 3"} {
		tb.Insert(rt(s), fAdd)
	}
	src := netip.MustParseAddr("10.0.0.1")
	ch := tb.RemoveIf(func(r *Route) bool { return r.Prefsrc == src }, false)
	if len(ch.Silent) != 2 || len(ch.Events) != 0 || tb.Routes() != 1 {
		t.Errorf("silent %d events %d routes %d", len(ch.Silent), len(ch.Events), tb.Routes())
	}
	ch = tb.RemoveIf(func(r *Route) bool { return true }, true)
	if len(ch.Events) != 1 || ch.Events[0].Type != rtnl.RTM_DELROUTE || tb.Routes() != 0 {
		t.Errorf("events %+v routes %d", ch.Events, tb.Routes())
	}
}

// TestSyncDownDev6EventOrderMatchesKernel: the RTM_DELROUTEs of an IPv6
// admin down come in dump order, main's table before local's, as a raw
// RTNLGRP_IPV6_ROUTE listener showed on Linux 6.18 for "ip link set w0
// down" (w0 = ifindex 5 with 2001:db8:ff::1/64, a static route via it and
// an ECMP route with one hop on it, which only gets "dead linkdown").
func TestSyncDownDev6EventOrderMatchesKernel(t *testing.T) {
	tb := NewIPv6()
	for _, s := range []string{
		"ff00::/8 dev 5 table 255 type 5 metric 256 proto 2",
		"fe80::e824:66ff:fec6:ccaa dev 5 table 255 type 2 metric 0 proto 2",
		"2001:db8:ff::1 dev 5 table 255 type 2 metric 0 proto 2",
		"fe80::/64 dev 5 metric 256 proto 2",
		"2001:db8:ff::/64 dev 5 metric 256 proto 2",
		"2001:db8:e1::/64 via 2001:db8:ff::3 dev 5",
		"2001:db8:e0::/64 nexthop via 2001:db8:fe::2 dev 3 nexthop via 2001:db8:ff::2 dev 5",
	} {
		if _, err := tb.Insert(rt(s), fAdd); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var got []string
	for _, e := range tb.SyncDownDev(5, DevDown).Events {
		got = append(got, fmt.Sprintf("%d t%d %v", e.Type, e.Route.Table, e.Route.Dst))
	}
	want := []string{
		"25 t254 2001:db8:e1::/64",
		"25 t254 2001:db8:ff::/64",
		"25 t254 fe80::/64",
		"25 t255 2001:db8:ff::1/128",
		"25 t255 fe80::e824:66ff:fec6:ccaa/128",
		"25 t255 ff00::/8",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-kernel +ours):\n%s", d)
	}
	if d := cmp.Diff([]string{"2001:db8:e0::/64 t254 m1024 p3 s0 y1 [via 2001:db8:fe::2 dev 3] [via 2001:db8:ff::2 dev 5 f0x11]"}, show(tb, tableMain, "2001:db8:e0::/64")); d != "" {
		t.Errorf("ECMP route (-kernel +ours):\n%s", d)
	}
}
