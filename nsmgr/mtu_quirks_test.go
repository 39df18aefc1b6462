package nsmgr

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// setMTU sends what `ip link set DEV mtu MTU` sends.
func setMTU(t *testing.T, ns *Namespace, idx byte, mtu uint32) {
	t.Helper()
	b := make([]byte, rtnl.IfInfoLen)
	b[4] = idx
	b = append(b, nla(rtnl.IFLA_MTU, binary.NativeEndian.AppendUint32(nil, mtu))...)
	if err := doReq(t, ns, rtnl.RTM_NEWLINK, 0, b); err != nil {
		t.Fatalf("mtu %d: %v", mtu, err)
	}
}

// setUp sends `ip link set DEV up|down`.
func setUp(t *testing.T, ns *Namespace, idx byte, up bool) {
	t.Helper()
	b := make([]byte, rtnl.IfInfoLen)
	b[4], b[12] = idx, 1
	if up {
		b[8] = 1
	}
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, b)
}

// TestQuirkLoMTUBelow68NoInDevice: lo accepts any MTU; below 68
// inetdev_event(NETDEV_CHANGEMTU) destroys its in_device: 127.0.0.1 and its
// local routes go (announced), an IPv4 address is then ENOBUFS, lo's
// IFLA_AF_SPEC and netconf lose AF_INET, and lo going up adds nothing. From
// 68 on the in_device is new and empty (without lo's NOXFRM / NOPOLICY);
// 127.0.0.1 comes back at the next up (link_lo_mtu_below_minimums.batch,
// link_lo_mtu_no_in_device.batch on the kernel).
func TestQuirkLoMTUBelow68NoInDevice(t *testing.T) {
	ns, mon := addrNS(t)
	mon.got = nil
	setMTU(t, ns, 1, 1000) // IPv6 goes first (TestQuirkLoMTUBelow1280KeepsInet6Dev)
	mon.got = nil
	setMTU(t, ns, 1, 60)
	want := []string{
		"link family 0 dev 1",
		"deladdr 127.0.0.1/8 dev 1 flags 0x80",
		"delroute table 255 type 2 127.0.0.0/8 dev 1",
		"delroute table 255 type 3 127.255.255.255/32 dev 1",
		"delroute table 255 type 2 127.0.0.1/32 dev 1",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo mtu 60 (-kernel +nlemu):\n%s", d)
	}
	if _, ok := ns.devs.Inet4Conf(1); ok {
		t.Errorf("lo at mtu 60 still has an IPv4 devconf (in_device)")
	}
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET, "10.1.1.1/24", 1)); err == nil || err.Errno != syscall.ENOBUFS || err.Msg != "" {
		t.Errorf("IPv4 address on lo without in_device: %v, want ENOBUFS without text", err)
	}
	l, _ := ns.devs.ByIndex(1)
	if m := linkMsg(l); m.Inet4Conf != nil || m.Inet6 == nil {
		t.Errorf("lo at mtu 60: IFLA_AF_SPEC inet %v inet6 %v, want only inet6", m.Inet4Conf != nil, m.Inet6 != nil)
	}
	setUp(t, ns, 1, false)
	setUp(t, ns, 1, true)
	if n := len(ns.addrSet().V4); n != 0 {
		t.Errorf("lo up at mtu 60 has %d IPv4 addresses, want 0", n)
	}
	setMTU(t, ns, 1, 68)
	c, ok := ns.devs.Inet4Conf(1)
	if !ok {
		t.Fatalf("lo at mtu 68 has no in_device")
	}
	vethConf, _ := ns.devs.Inet4Conf(2) // a veth's: the namespace's default block
	if d := cmp.Diff(vethConf, c); d != "" {
		t.Errorf("lo's new in_device is not the default block (-want +got):\n%s", d)
	}
	if n := len(ns.addrSet().V4); n != 0 {
		t.Errorf("lo at mtu 68 has %d IPv4 addresses, want 0 until its next up", n)
	}
	setUp(t, ns, 1, false)
	setUp(t, ns, 1, true)
	if a := ns.addrSet().V4; len(a) != 1 || a[0].Local != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("lo up at mtu 68: IPv4 addresses %v, want 127.0.0.1", a)
	}
}

// TestQuirkLoMTUBelow1280KeepsInet6Dev: below 1280 addrconf_ifdown(lo,
// false) deletes ::1 and its route but keeps lo's inet6_dev, so IPv6
// addresses can still be added below 1280 and nothing comes back at 1280;
// a veth's inet6_dev goes (no AF_INET6 in IFLA_AF_SPEC, EINVAL for an
// address) and comes back from the defaults at 1280, addrgenmode eui64
// again.
func TestQuirkLoMTUBelow1280KeepsInet6Dev(t *testing.T) {
	ns, mon := addrNS(t)
	mon.got = nil
	setMTU(t, ns, 1, 1279)
	want := []string{
		"link family 0 dev 1",
		"delroute table 255 type 2 ::1/128 dev 1",
		"deladdr ::1/128 dev 1 flags 0x80",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo mtu 1279 (-kernel +nlemu):\n%s", d)
	}
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "2001:db8::5/64", 1)); err != nil {
		t.Errorf("IPv6 address on lo at mtu 1279: %v, want success", err)
	}
	mon.got = nil
	setMTU(t, ns, 1, 1280)
	if d := cmp.Diff([]string{"link family 0 dev 1"}, describe(t, mon.got)); d != "" {
		t.Errorf("lo mtu 1280 (-kernel +nlemu):\n%s", d)
	}
	if _, ok := ns.addr.store.Find6(1, netip.IPv6Loopback()); ok {
		t.Errorf("::1 came back at mtu 1280; the kernel adds it only at lo's next up")
	}

	setMTU(t, ns, 3, 1000)
	l, _ := ns.devs.ByIndex(3)
	if m := linkMsg(l); m.Inet6 != nil || m.Inet4Conf == nil {
		t.Errorf("veth at mtu 1000: IFLA_AF_SPEC inet %v inet6 %v, want only inet", m.Inet4Conf != nil, m.Inet6 != nil)
	}
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "2001:db8:1::1/64", 3)); err == nil || err.Errno != syscall.EINVAL {
		t.Errorf("IPv6 address on a veth at mtu 1000: %v, want EINVAL", err)
	}
}

// TestQuirkLoUpBelow1280AnnouncesThenDeletesLoopback6: lo coming up below
// 1280 is configured as usual (::1 and its local route announced), and
// addrconf_notify(NETDEV_UP) then ends with addrconf_ifdown() because "the
// changed mtu during down is lower than IPV6_MIN_MTU": both are deleted
// again within the same request.
func TestQuirkLoUpBelow1280AnnouncesThenDeletesLoopback6(t *testing.T) {
	ns, mon := addrNS(t)
	setMTU(t, ns, 1, 1000)
	setUp(t, ns, 1, false)
	mon.got = nil
	setUp(t, ns, 1, true)
	want := []string{
		"link family 0 dev 1",
		"route table 255 type 3 127.255.255.255/32 dev 1",
		"addr ::1/128 dev 1 flags 0x80",
		"route table 255 type 2 ::1/128 dev 1",
		"link family 10 dev 1",
		"delroute table 255 type 2 ::1/128 dev 1",
		"deladdr ::1/128 dev 1 flags 0x80",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo up at mtu 1000 (-kernel +nlemu):\n%s", d)
	}
}

// TestQuirkDelAddr6DeletesFirstPrefixRouteOfDevice: deleting an IPv6
// address deletes the first route of its prefix in main through its device
// without a gateway (cleanup_prefix_route() → addrconf_get_prefix_route()),
// whatever its metric: a hand-made metric 5 route goes, the address's own
// metric 300 route stays (route_addr_delete_shared_prefix.batch).
func TestQuirkDelAddr6DeletesFirstPrefixRouteOfDevice(t *testing.T) {
	ns, _ := addrNS(t)
	dev3 := func(m *rtnl.RouteMsg) { m.OIF = 3; m.Set(rtnl.RTA_OIF) }
	dev2 := func(m *rtnl.RouteMsg) { m.OIF = 2; m.Set(rtnl.RTA_OIF) }
	for _, r := range []routeTestReq{
		rtIP("add", "2001:db8::/64", dev3, rtMetric(5)),
		rtIP("add", "2001:db8::/64", dev2, rtMetric(1)),
		rtIP("add", "2001:db8::/64", dev3, rtMetric(2000), rtProto(rtnl.RTPROT_STATIC)),
	} {
		if err := rtDo(t, ns, nil, r); err != nil {
			t.Fatal(err)
		}
	}
	metric := binary.NativeEndian.AppendUint32(nil, 300)
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "2001:db8::1/64", 3,
		nla(rtnl.IFA_FLAGS, binary.NativeEndian.AppendUint32(nil, 0x2 /* nodad */)), nla(rtnl.IFA_RT_PRIORITY, metric))); err != nil {
		t.Fatal(err)
	}
	if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(rtnl.AF_INET6, "2001:db8::1/64", 3)); err != nil {
		t.Fatal(err)
	}
	v, _ := ns.v6.Snapshot().Table(rtnl.RT_TABLE_MAIN)
	e, _ := v.Get(netip.MustParsePrefix("2001:db8::/64"))
	var got [][2]uint32
	for r := range e.All() {
		got = append(got, [2]uint32{uint32(r.Nexthops[0].Dev), r.Priority})
	}
	want := [][2]uint32{{2, 1}, {3, 300}, {3, 2000}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("2001:db8::/64 in main after the delete, (dev, metric) (-kernel +nlemu):\n%s", d)
	}
}
