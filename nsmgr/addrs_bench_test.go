package nsmgr

import (
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// BenchmarkAddrAddDel4 adds and deletes one IPv4 address with its three
// derived routes (and their notifications to one listener).
func BenchmarkAddrAddDel4(b *testing.B) {
	ns, _ := addrNS(b)
	add := startupReq(rtnl.RTM_NEWADDR, rtnl.NLM_F_ACK|rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(2, "10.0.0.1/24", 3))
	del := startupReq(rtnl.RTM_DELADDR, rtnl.NLM_F_ACK, addrReq(2, "10.0.0.1/24", 3))
	self := &recorder{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ns.Do(&Request{Msg: add, Self: self}); err != nil {
			b.Fatal(err)
		}
		if _, err := ns.Do(&Request{Msg: del, Self: self}); err != nil {
			b.Fatal(err)
		}
		self.got = self.got[:0]
	}
}

// BenchmarkAddrDump dumps 1,000 IPv4 addresses of one device.
func BenchmarkAddrDump(b *testing.B) {
	ns, mon := addrNS(b)
	ns.SetGroups(mon, 0)
	for i := range 1000 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), 24)
		if err := doReq(b, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(2, p.String(), 3)); err != nil {
			b.Fatal(err)
		}
	}
	req := startupReq(rtnl.RTM_GETADDR, rtnl.NLM_F_DUMP, []byte{2, 0, 0, 0, 0, 0, 0, 0})
	buf := make([]byte, 0, 32<<10)
	b.ReportAllocs()
	for b.Loop() {
		d, _ := ns.Do(&Request{Msg: req, Self: &recorder{}})
		for done := false; !done; {
			buf, done = d.Fill(buf[:0], 32<<10)
		}
	}
}
