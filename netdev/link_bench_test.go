package netdev

import (
	"fmt"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// BenchmarkCreateVeth measures one veth pair create (and, to keep the
// table size steady, its delete) in a namespace already holding n pairs:
// each change copies the device table (an immutable snapshot), so the
// cost grows with n.
func BenchmarkCreateVeth(b *testing.B) {
	for _, n := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("devices=%d", 2*n), func(b *testing.B) {
			d := New()
			for i := range n {
				if _, err := d.Create(KindVeth, veth(fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Create(KindVeth, veth("x0", "x1")); err != nil {
					b.Fatal(err)
				}
				if _, err := d.Delete(d.IndexByName([]byte("x0"))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSetUpDown measures `ip link set DEV up` and `down` on one end
// of a veth pair whose peer is up (carrier and linkwatch on both ends).
func BenchmarkSetUpDown(b *testing.B) {
	d := New()
	if _, err := d.Create(KindVeth, veth("v0", "v1")); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Set(2, &rtnl.LinkConf{Index: 2, Flags: IFF_UP, Change: IFF_UP}); err != nil {
		b.Fatal(err)
	}
	up := &rtnl.LinkConf{Index: 3, Flags: IFF_UP, Change: IFF_UP}
	down := &rtnl.LinkConf{Index: 3, Change: IFF_UP}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Set(3, up); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Set(3, down); err != nil {
			b.Fatal(err)
		}
	}
}
