package netdev

import "testing"

// TestFreshNamespaceHasOnlyLo: every namespace starts with lo, ifindex 1,
// down (IFF_LOOPBACK only), as a fresh kernel namespace does.
func TestFreshNamespaceHasOnlyLo(t *testing.T) {
	d := New()
	if got := d.IndexByName([]byte("lo")); got != LoopbackIndex {
		t.Fatalf("lo has ifindex %d", got)
	}
	if got := d.IndexByName([]byte("eth0")); got != 0 {
		t.Fatalf("eth0 has ifindex %d, want none", got)
	}
	l, ok := d.ByIndex(1)
	if !ok || l.Name != "lo" || l.Flags != iffLoopback || l.Type != arphrdLoopback {
		t.Fatalf("ByIndex(1) = %+v, %v", l, ok)
	}
	if links := d.Links(); len(links) != 1 {
		t.Fatalf("%d links", len(links))
	}
}

// TestLoUpDown follows lo through `ip link set lo up`, a repeated up and
// `down` as dev_change_flags() and addrconf_notify() change it: the wire
// flags gain IFF_RUNNING|IFF_LOWER_UP (dev_get_flags()), operstate reads
// DOWN only while down, the qdisc becomes noqueue at the first up and
// stays, and IF_READY is set by NETDEV_UP after the RTM_NEWLINK was built
// (Notified) and cleared by NETDEV_DOWN after it.
func TestLoUpDown(t *testing.T) {
	d := New()
	before, _ := d.ByIndex(LoopbackIndex)
	type state struct {
		Wire      uint32
		Oper      uint8
		Qdisc     string
		Inet6Flag uint32
	}
	of := func(l Link) state { return state{l.WireFlags(), l.WireOperState(), l.Qdisc, l.Inet6.Flags} }
	if got, want := of(before), (state{IFF_LOOPBACK, OperDown, "noop", 0}); got != want {
		t.Fatalf("fresh lo: %+v, want %+v", got, want)
	}
	upFlags := uint32(IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP)
	steps := []struct {
		name          string
		flags         uint32
		noChange      bool
		notified, aft state
	}{
		{"up", IFF_UP, false, state{upFlags, OperUnknown, "noqueue", 0}, state{upFlags, OperUnknown, "noqueue", ifReady}},
		{"up again", IFF_UP, true, state{}, state{}},
		{"down", 0, false, state{IFF_LOOPBACK, OperDown, "noqueue", ifReady}, state{IFF_LOOPBACK, OperDown, "noqueue", 0}},
		{"down again, other bits ignored", IFF_LOOPBACK | IFF_RUNNING, true, state{}, state{}},
	}
	for _, st := range steps {
		ch, ok := d.ChangeFlags(LoopbackIndex, st.flags)
		if !ok {
			t.Fatalf("%s: lo not found", st.name)
		}
		if st.noChange {
			if ch != nil {
				t.Errorf("%s: change %+v, want none (no notification)", st.name, ch)
			}
			continue
		}
		if ch == nil {
			t.Fatalf("%s: no change", st.name)
		}
		if ch.Changed != IFF_UP || ch.Up != (st.flags&IFF_UP != 0) {
			t.Errorf("%s: Changed %#x Up %v", st.name, ch.Changed, ch.Up)
		}
		if got := of(ch.Notified); got != st.notified {
			t.Errorf("%s: notified %+v, want %+v", st.name, got, st.notified)
		}
		if got := of(ch.After); got != st.aft {
			t.Errorf("%s: after %+v, want %+v", st.name, got, st.aft)
		}
		if now, _ := d.ByIndex(LoopbackIndex); of(now) != st.aft {
			t.Errorf("%s: published %+v, want %+v", st.name, of(now), st.aft)
		}
	}
	// Snapshots are values: what a reader held is not changed.
	if of(before) != (state{IFF_LOOPBACK, OperDown, "noop", 0}) {
		t.Errorf("earlier snapshot changed: %+v", of(before))
	}
	if _, ok := d.ChangeFlags(2, IFF_UP); ok {
		t.Error("ChangeFlags on ifindex 2 found a device")
	}
}

// TestReachableTimeInKernelRange: neigh_rand_reach_time() of 30 s gives
// [15 s, 45 s) in whole jiffies (HZ=250: multiples of 4 ms).
func TestReachableTimeInKernelRange(t *testing.T) {
	for range 1000 {
		if r := randReachableTime(); r < 15000 || r >= 45000 || r%4 != 0 {
			t.Fatalf("reachable time %d ms", r)
		}
	}
}
