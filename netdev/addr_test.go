package netdev

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func v4(dev int32, s string, scope uint8) Addr {
	p := netip.MustParsePrefix(s)
	return Addr{Family: afInet, Index: dev, Local: p.Addr(), Address: p.Addr(), PrefixLen: uint8(p.Bits()), Scope: scope, Flags: IFA_F_PERMANENT}
}

func v6(dev int32, s string) Addr {
	p := netip.MustParsePrefix(s)
	return Addr{Family: afInet6, Index: dev, Local: p.Addr(), PrefixLen: uint8(p.Bits()), Flags: IFA_F_PERMANENT}
}

func locals(l []Addr) []string {
	var out []string
	for _, a := range l {
		s := a.Local.String()
		if a.Flags&IFA_F_SECONDARY != 0 {
			s += " secondary"
		}
		out = append(out, s)
	}
	return out
}

// TestInsert4SecondaryAndOrder checks __inet_insert_ifa(): a second address
// of a subnet is a secondary at the end, a new primary goes after the last
// primary, host-scope primaries before universe ones, and devices stay in
// ifindex order.
func TestInsert4SecondaryAndOrder(t *testing.T) {
	s := NewAddrs()
	for _, a := range []Addr{
		v4(3, "10.0.0.1/24", 0), v4(3, "10.0.0.77/24", 0), v4(3, "10.1.0.1/24", 0),
		v4(2, "10.9.0.1/16", 0), v4(3, "127.0.0.5/8", 254),
	} {
		if _, r := s.Insert4(a); r != Inserted {
			t.Fatalf("insert %v: %v", a.Local, r)
		}
	}
	want := []string{"10.9.0.1", "127.0.0.5", "10.0.0.1", "10.1.0.1", "10.0.0.77 secondary"}
	if d := cmp.Diff(want, locals(s.Snapshot().V4)); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if _, r := s.Insert4(v4(3, "10.0.0.1/24", 0)); r != Exists {
		t.Errorf("duplicate: %v, want Exists", r)
	}
	if _, r := s.Insert4(v4(3, "10.0.0.9/24", 253)); r != BadScope {
		t.Errorf("secondary with another scope: %v, want BadScope", r)
	}
	// Same local address with another prefix length is another address.
	if _, r := s.Insert4(v4(3, "10.0.0.1/25", 0)); r != Inserted {
		t.Errorf("same local, other mask: %v", r)
	}
}

// TestDelete4PrimaryTakesSecondaries checks __inet_del_ifa() without
// promote_secondaries: the secondaries of the subnet go first, each its
// own step, then the primary; other subnets stay.
func TestDelete4PrimaryTakesSecondaries(t *testing.T) {
	s := NewAddrs()
	for _, a := range []Addr{v4(3, "10.0.0.1/24", 0), v4(3, "10.0.0.77/24", 0), v4(3, "10.1.0.1/24", 0), v4(3, "10.0.0.78/24", 0)} {
		s.Insert4(a)
	}
	steps := s.Delete4(3, 0, false)
	var got []string
	for _, st := range steps {
		got = append(got, st.Addr.Local.String()+" -> "+joinLocals(st.List))
	}
	want := []string{
		"10.0.0.77 -> 10.0.0.1 10.1.0.1 10.0.0.78",
		"10.0.0.78 -> 10.0.0.1 10.1.0.1",
		"10.0.0.1 -> 10.1.0.1",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
}

// TestDelete4PromoteSecondaries checks promote_secondaries=1: the first
// secondary becomes primary (RTM_NEWADDR after the RTM_DELADDR).
func TestDelete4PromoteSecondaries(t *testing.T) {
	s := NewAddrs()
	for _, a := range []Addr{v4(3, "10.0.0.1/24", 0), v4(3, "10.1.0.1/24", 0), v4(3, "10.0.0.77/24", 0), v4(3, "10.0.0.78/24", 0)} {
		s.Insert4(a)
	}
	steps := s.Delete4(3, 0, true)
	if len(steps) != 2 || !steps[0].Del || steps[1].Del || steps[1].Addr.Local.String() != "10.0.0.77" {
		t.Fatalf("steps %+v", steps)
	}
	if d := cmp.Diff([]string{"10.1.0.1", "10.0.0.77", "10.0.0.78 secondary"}, locals(s.Snapshot().V4)); d != "" {
		t.Errorf("after promotion (-want +got):\n%s", d)
	}
}

func joinLocals(l []Addr) string {
	s := ""
	for i, a := range l {
		if i > 0 {
			s += " "
		}
		s += a.Local.String()
	}
	return s
}

// TestInsert6Order checks ipv6_link_dev_addr(): global addresses before
// link-local ones, newest first within a scope (the order `ip -6 addr`
// prints on the kernel).
func TestInsert6Order(t *testing.T) {
	s := NewAddrs()
	for _, a := range []Addr{v6(3, "fe80::1/64"), v6(3, "2001:db8::1/64"), v6(3, "2001:db8:1::1/64"), v6(2, "fe80::2/64")} {
		s.Insert6(a)
	}
	want := []string{"fe80::2", "2001:db8:1::1", "2001:db8::1", "fe80::1"}
	if d := cmp.Diff(want, locals(s.Snapshot().V6)); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if _, ok := s.Delete6(3, netip.MustParseAddr("2001:db8::1")); !ok {
		t.Fatal("delete")
	}
	if got := s.Flush(afInet6, 3); len(got) != 2 {
		t.Errorf("flush returned %d", len(got))
	}
	if d := cmp.Diff([]string{"fe80::2"}, locals(s.Snapshot().V6)); d != "" {
		t.Errorf("after flush (-want +got):\n%s", d)
	}
}
