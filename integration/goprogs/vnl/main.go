// Command vnl drives rules, links (a bridge and a veth pair), addresses,
// routes, RouteGet and link and route subscriptions with
// github.com/vishvananda/netlink and prints a canonical transcript, for the
// differential runs in integration/goclients_test.go: built static
// (CGO_ENABLED=0), it runs in a kernel namespace and under `nlemu exec`,
// and both transcripts must be identical.
package main

import (
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func p(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func cidr(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

// updateWait bounds the wait for a notification of the program's own
// change; it only keeps a broken run from hanging (a change that was
// refused is not waited for).
const updateWait = 10 * time.Second

func main() {
	done := make(chan struct{})
	defer close(done)
	routes := make(chan netlink.RouteUpdate, 64)
	links := make(chan netlink.LinkUpdate, 64)
	p("route subscribe: %s", errText(netlink.RouteSubscribe(routes, done)))
	p("link subscribe: %s", errText(netlink.LinkSubscribe(links, done)))

	// Rules.
	rule := netlink.NewRule()
	rule.Priority, rule.Table, rule.Src = 100, 100, cidr("192.0.2.0/24")
	p("rule add: %s", errText(netlink.RuleAdd(rule)))
	p("rule add again: %s", errText(netlink.RuleAdd(rule)))
	rule6 := netlink.NewRule()
	rule6.Family, rule6.Priority, rule6.Table, rule6.Mark = unix.AF_INET6, 200, 200, 7
	p("rule6 add: %s", errText(netlink.RuleAdd(rule6)))
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := netlink.RuleList(fam)
		p("rule list %d: %s", fam, errText(err))
		for _, r := range rules {
			p("rule prio=%d table=%d src=%v dst=%v mark=%d", r.Priority, r.Table, r.Src, r.Dst, r.Mark)
		}
	}

	// Links.
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	brErr := netlink.LinkAdd(br)
	p("link add bridge: %s", errText(brErr))
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1"}
	p("link add veth: %s", errText(netlink.LinkAdd(veth)))
	for _, name := range []string{"br0", "v0", "v1"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			p("link by name %s: %s", name, errText(err))
			continue
		}
		p("link set up %s: %s", name, errText(netlink.LinkSetUp(l)))
	}
	if v0, err := netlink.LinkByName("v0"); err == nil {
		if b, err := netlink.LinkByName("br0"); err == nil {
			p("link set master: %s", errText(netlink.LinkSetMaster(v0, b)))
		}
	}
	all, err := netlink.LinkList()
	p("link list: %s", errText(err))
	for _, l := range all {
		a := l.Attrs()
		p("link %d %s type=%s up=%v mtu=%d master=%d", a.Index, a.Name, l.Type(), a.Flags&net.FlagUp != 0, a.MTU, a.MasterIndex)
	}

	// Addresses.
	brl, brLookup := netlink.LinkByName("br0")
	addrErr := brLookup
	if brLookup == nil {
		addrErr = netlink.AddrAdd(brl, &netlink.Addr{IPNet: cidr("192.0.2.1/24")})
		p("addr add: %s", errText(addrErr))
		p("addr add 2001:db8::1/64: %s", errText(netlink.AddrAdd(brl, &netlink.Addr{IPNet: cidr("2001:db8::1/64"), Flags: unix.IFA_F_NODAD})))
		addrs, err := netlink.AddrList(brl, netlink.FAMILY_ALL)
		p("addr list: %s", errText(err))
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() {
				// Derived from the random MAC address, and made when
				// the bridge's carrier comes up (asynchronous, as
				// above).
				continue
			}
			p("addr %v scope=%d label=%s", a.IPNet, a.Scope, a.Label)
		}
	}

	// Routes.
	var routeErr error = brLookup
	if brLookup == nil {
		r := &netlink.Route{LinkIndex: brl.Attrs().Index, Dst: cidr("198.51.100.0/24"), Gw: net.ParseIP("192.0.2.254")}
		routeErr = netlink.RouteAdd(r)
		p("route add: %s", errText(routeErr))
		p("route add again: %s", errText(netlink.RouteAdd(r)))
		r6 := &netlink.Route{LinkIndex: brl.Attrs().Index, Dst: cidr("2001:db8:1::/48"), Gw: net.ParseIP("2001:db8::fe")}
		p("route6 add: %s", errText(netlink.RouteAdd(r6)))
	}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := netlink.RouteList(nil, fam)
		p("route list %d: %s", fam, errText(err))
		for _, r := range rs {
			if r.Dst != nil && r.Dst.IP.IsLinkLocalUnicast() {
				// The kernel adds a device's fe80::/64 when addrconf
				// runs after its carrier comes up, which for a veth
				// pair is linkwatch's work, asynchronous: present or
				// not, in either order, from run to run (measured).
				continue
			}
			p("route dst=%v gw=%v dev=%d src=%v table=%d proto=%d scope=%d prio=%d", r.Dst, r.Gw, r.LinkIndex, r.Src, r.Table, r.Protocol, r.Scope, r.Priority)
		}
	}
	for _, dst := range []string{"198.51.100.7", "192.0.2.9", "203.0.113.1", "2001:db8:1::5"} {
		rs, err := netlink.RouteGet(net.ParseIP(dst))
		p("route get %s: %s", dst, errText(err))
		for _, r := range rs {
			p("  dst=%v gw=%v dev=%d src=%v table=%d type=%d", r.Dst, r.Gw, r.LinkIndex, r.Src, r.Table, r.Type)
		}
	}

	// The subscriptions saw the program's own changes.
	if routeErr == nil {
		waitRoute(routes)
	}
	if brErr == nil {
		waitLink(links)
	}

	// Clean up what can be: deleting the veth takes its peer.
	if v0, err := netlink.LinkByName("v0"); err == nil {
		p("link del v0: %s", errText(netlink.LinkDel(v0)))
	}
	_, err = netlink.LinkByName("v1")
	p("link by name v1 after del: %s", errText(err))
	p("rule del: %s", errText(netlink.RuleDel(rule)))
	p("rule del again: %s", errText(netlink.RuleDel(rule)))
	_ = addrErr
}

// waitRoute prints the notification of the IPv4 route the program added.
func waitRoute(ch chan netlink.RouteUpdate) {
	timeout := time.After(updateWait)
	for {
		select {
		case u := <-ch:
			if u.Dst != nil && u.Dst.String() == "198.51.100.0/24" {
				p("route update type=%d dst=%v gw=%v table=%d", u.Type, u.Dst, u.Gw, u.Table)
				return
			}
		case <-timeout:
			p("route update: none")
			return
		}
	}
}

// waitLink prints the first notification about br0.
func waitLink(ch chan netlink.LinkUpdate) {
	timeout := time.After(updateWait)
	for {
		select {
		case u := <-ch:
			if u.Attrs().Name == "br0" {
				p("link update type=%d name=%s kind=%s", u.Header.Type, u.Attrs().Name, u.Type())
				return
			}
		case <-timeout:
			p("link update: none")
			return
		}
	}
}
