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
