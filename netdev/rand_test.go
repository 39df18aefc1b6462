package netdev

import (
	"bytes"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// draws creates three bridges in d and returns what was drawn at random:
// their MAC addresses and every device's IPv6 reachable time (lo's too).
func draws(t *testing.T, d *Devices) []byte {
	t.Helper()
	for _, n := range []string{"b0", "b1", "b2"} {
		if _, err := d.Create(KindBridge, &rtnl.LinkConf{Name: []byte(n), HasName: true}); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	for _, l := range d.Links() {
		out = append(out, l.Address...)
		out = le32(out, l.Inet6.ReachableTime)
	}
	return out
}

func le32(b []byte, v uint32) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }

// TestSeededDevicesDrawTheSame: two namespaces seeded alike make the same
// random MAC addresses and reachable times for the same changes (what a
// journal replay relies on); another seed, and no seed, make others.
func TestSeededDevicesDrawTheSame(t *testing.T) {
	seed := [32]byte{1, 2, 3}
	a, b, c, u := New(), New(), New(), New()
	a.Seed(seed)
	b.Seed(seed)
	c.Seed([32]byte{9})
	da, db, dc, du := draws(t, a), draws(t, b), draws(t, c), draws(t, u)
	if !bytes.Equal(da, db) {
		t.Fatalf("same seed, different draws:\n%x\n%x", da, db)
	}
	if bytes.Equal(da, dc) || bytes.Equal(da, du) {
		t.Fatal("another seed (or none) drew the same values")
	}
	for _, l := range a.Links() {
		if r := l.Inet6.ReachableTime; r < 15000 || r >= 45000 || r%4 != 0 {
			t.Fatalf("%s: seeded reachable time %d outside neigh_rand_reach_time()'s range", l.Name, r)
		}
		if l.Index != LoopbackIndex && (l.Address[0]&1 != 0 || l.Address[0]&2 == 0) {
			t.Fatalf("%s: seeded MAC %x is not unicast and locally administered", l.Name, l.Address)
		}
	}
}
