package nsmgr

// Addresses: RTM_NEWADDR / RTM_DELADDR / RTM_GETADDR for IPv4
// (net/ipv4/devinet.c) and IPv6 (net/ipv6/addrconf.c), their
// RTNLGRP_IPV4_IFADDR / RTNLGRP_IPV6_IFADDR notifications, and what the
// inetaddr and netdevice notifier chains do with them: the routes the
// kernel derives from addresses (fib_add_ifaddr() / fib_del_ifaddr(),
// addrconf_prefix_route(), the IPv6 local routes of __ipv6_ifa_notify()),
// and the IPv6 configuration of a link that becomes ready (link-local
// address, fe80::/64 and ff00::/8 routes) or goes down (addrconf_ifdown()).
//
// Every change here runs under RTNL: the request rows are registered with
// lockRTNL, link events arrive with RTNL held, and DAD completion takes it.
// Notifications go out while RTNL is held, as the kernel sends them, in the
// kernel's order; no FIB writer lock is held then.

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
	"golang.org/x/sys/unix"
)

// addrState is the address side of a namespace.
type addrState struct {
	store *netdev.Addrs
	// dadDelay is how long an IPv6 address stays tentative once DAD starts
	// (the kernel: a random rtr_solicit_delay below 1 s, then one probe of
	// retrans_time 1 s). 0 completes DAD at once (tests).
	dadDelay time.Duration

	mu sync.Mutex // guards ready (also written under RTNL only)
	// ready holds the devices whose IPv6 is configured (idev->if_flags
	// IF_READY: up with carrier, addrconf_dev_config() done).
	ready map[int32]bool
	// v6Off holds the devices whose IPv6 stopped for an MTU below 1280
	// (written under RTNL only).
	v6Off map[int32]bool
}

// defaultDADDelay is nlemu's DAD duration: 0, DAD completes within the
// request that starts it (no other node can answer a probe in an
// emulated namespace), as nlemu runs linkwatch synchronously too. The
// kernel keeps the address tentative for 1–2 s (a random
// rtr_solicit_delay, then one probe of retrans_time); the notifications
// keep the kernel's order either way (the tentative RTM_NEWADDR, then the
// RTM_NEWADDR and local route of addrconf_dad_completed()). SetDADDelay
// makes DAD take time, as on the kernel.
const defaultDADDelay = 0

func newAddrState() *addrState {
	return &addrState{store: netdev.NewAddrs(), dadDelay: defaultDADDelay, ready: map[int32]bool{}, v6Off: map[int32]bool{}}
}

// Addrs returns the namespace's address store (read-only use: snapshots).
func (ns *Namespace) Addrs() *netdev.Addrs { return ns.addr.store }

// addrSet returns the current address snapshot.
func (ns *Namespace) addrSet() *netdev.AddrSet { return ns.addr.store.Snapshot() }

// SetDADDelay sets how long IPv6 addresses stay tentative (0: DAD
// completes at once). For tests.
func (ns *Namespace) SetDADDelay(d time.Duration) { ns.addr.dadDelay = d }

func init() {
	addrLinkEvent = (*Namespace).addrLinkEvent
}

// addrRows are the dispatch rows of the address handlers
// (devinet_init(), addrconf_init()).
func addrRows() []row {
	return []row{
		{family: rtnl.AF_INET, typ: rtnl.RTM_NEWADDR, doit: (*Namespace).newAddr, flags: lockRTNL},
		{family: rtnl.AF_INET, typ: rtnl.RTM_DELADDR, doit: (*Namespace).delAddr, flags: lockRTNL},
		{family: rtnl.AF_INET, typ: rtnl.RTM_GETADDR, dumpit: dumpAddrsRow(rtnl.AF_INET)},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_NEWADDR, doit: (*Namespace).newAddr, flags: lockRTNL},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_DELADDR, doit: (*Namespace).delAddr, flags: lockRTNL},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_GETADDR, doit: (*Namespace).getAddr6, dumpit: dumpAddrsRow(rtnl.AF_INET6)},
		// rtnetlink_init(): the PF_UNSPEC dumpit is rtnl_dump_all().
		{family: rtnl.AF_UNSPEC, typ: rtnl.RTM_GETADDR, flags: dumpAll},
	}
}

// addrGroup is the notification group of family's addresses.
func addrGroup(family uint8) uint32 {
	if family == rtnl.AF_INET6 {
		return rtnl.RTNLGRP_IPV6_IFADDR
	}
	return rtnl.RTNLGRP_IPV4_IFADDR
}

// addrMsg is the typed message of a stored address as inet_fill_ifaddr()
// and inet6_fill_ifaddr() fill it; lifetimes are reported as what is left
// of them (put_cacheinfo() after the jiffies arithmetic).
func addrMsg(a netdev.Addr) *rtnl.AddrMsg {
	m := &rtnl.AddrMsg{
		Family: a.Family, PrefixLen: a.PrefixLen, Flags: a.Flags, Scope: a.Scope, Index: a.Index,
		Local: a.Local, Address: a.Address, Broadcast: a.Broadcast, Label: a.Label,
		RtPriority: a.RtPriority, Proto: a.Proto,
		CacheInfo: rtnl.AddrCacheInfo{Preferred: a.Preferred, Valid: a.Valid, Cstamp: a.Cstamp, Tstamp: a.Tstamp},
	}
	if a.Family == rtnl.AF_INET6 {
		// inet6_fill_ifaddr(): IFA_ADDRESS is the address itself, with
		// IFA_LOCAL before it only for a peer address.
		m.Local, m.Address = netip.Addr{}, a.Local
		if a.Address.IsValid() {
			m.Local, m.Address = a.Local, a.Address
		}
	}
	if a.Valid != netdev.InfinityLife || a.Preferred != netdev.InfinityLife {
		elapsed := (nowCentis() - a.Tstamp) / 100
		m.CacheInfo.Valid = leftOf(a.Valid, elapsed)
		m.CacheInfo.Preferred = leftOf(a.Preferred, elapsed)
	}
	return m
}

func leftOf(lft, elapsed uint32) uint32 {
	switch {
	case lft == netdev.InfinityLife:
		return lft
	case lft > elapsed:
		return lft - elapsed
	}
	return 0
}

// nowCentis is the kernel's jiffies in 1/100 s since boot (cstamp_delta()).
func nowCentis() uint32 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint32(ts.Sec*100 + ts.Nsec/10_000_000)
}

// notifyAddr sends an address notification: for IPv4 rtmsg_ifa() with the
// requester's seq and port, echoed to it with NLM_F_ECHO (nlmsg_notify());
// for IPv6 inet6_ifa_notify(), which names no requester and echoes nothing.
func (ns *Namespace) notifyAddr(typ uint16, a netdev.Addr, req *Request) {
	group := addrGroup(a.Family)
	var (
		seq, pid uint32
		echo     Listener
	)
	if req != nil && a.Family == rtnl.AF_INET {
		seq, pid = req.Msg.Header.Sequence, req.PortID
		if uint16(req.Msg.Header.Flags)&rtnl.NLM_F_ECHO != 0 {
			echo = req.Self
		}
	}
	bcast := ns.hasListeners(group, echo)
	if !bcast && echo == nil {
		return
	}
	b := rtnl.AppendAddr(nil, typ, 0, seq, pid, addrMsg(a))
	if bcast {
		ns.notify(group, b, echo)
	}
	if echo != nil {
		deliverGroup(echo, b, group)
	}
}

// newAddr is inet_rtm_newaddr() / inet6_rtm_newaddr().
func (ns *Namespace) newAddr(req *Request) *rtnl.Error {
	q, err := rtnl.DecodeAddrRequest(req.Msg)
	if err != nil {
		return err
	}
	if q.Family == rtnl.AF_INET6 {
		return withWarning(q.Warning, ns.newAddr6(req, q))
	}
	return withWarning(q.Warning, ns.newAddr4(req, q))
}

// delAddr is inet_rtm_deladdr() / inet6_rtm_deladdr().
func (ns *Namespace) delAddr(req *Request) *rtnl.Error {
	q, err := rtnl.DecodeAddrRequest(req.Msg)
	if err != nil {
		return err
	}
	if q.Family == rtnl.AF_INET6 {
		return withWarning(q.Warning, ns.delAddr6(req, q))
	}
	return withWarning(q.Warning, ns.delAddr4(req, q))
}

// lifetimes returns the request's IFA_CACHEINFO lifetimes, forever
// without one.
func lifetimes(q *rtnl.AddrMsg) (valid, preferred uint32) {
	if !q.HasCacheInfo {
		return netdev.InfinityLife, netdev.InfinityLife
	}
	return q.CacheInfo.Valid, q.CacheInfo.Preferred
}

// setLifetime is set_ifa_lifetime(): IFA_F_PERMANENT for an infinite valid
// lifetime, IFA_F_DEPRECATED for a zero preferred one; the stamps.
func setLifetime(a *netdev.Addr, valid, preferred uint32) {
	const ifaFDeprecated = 0x20
	a.Flags &^= netdev.IFA_F_PERMANENT | ifaFDeprecated
	a.Valid, a.Preferred = valid, preferred
	if valid == netdev.InfinityLife {
		a.Flags |= netdev.IFA_F_PERMANENT
	}
	if preferred == 0 {
		a.Flags |= ifaFDeprecated
	}
	a.Tstamp = nowCentis()
	if a.Cstamp == 0 {
		a.Cstamp = a.Tstamp
	}
}

// newAddr4 is inet_validate_rtm(), inet_rtm_to_ifa() and the rest of
// inet_rtm_newaddr().
func (ns *Namespace) newAddr4(req *Request, q *rtnl.AddrMsg) *rtnl.Error {
	if q.PrefixLen > 32 {
		return rtnl.Errorf(syscall.EINVAL, "ipv4: Invalid prefix length")
	}
	if !q.Has(rtnl.IFA_LOCAL) {
		return rtnl.Errorf(syscall.EINVAL, "ipv4: Local address is not supplied")
	}
	valid, preferred := lifetimes(q)
	if q.HasCacheInfo && (valid == 0 || preferred > valid) {
		return rtnl.Errorf(syscall.EINVAL, "ipv4: address lifetime invalid")
	}
	l, ok := ns.devs.ByIndex(q.Index)
	if !ok {
		return rtnl.Errorf(syscall.ENODEV, "ipv4: Device not found")
	}
	if l.Inet4Conf == nil {
		// rtm_to_ifaddr(): no in_device (the MTU is below 68) is ENOBUFS,
		// without text (TestQuirkLoMTUBelow68NoInDevice).
		return rtnl.Errno(syscall.ENOBUFS)
	}
	a := netdev.Addr{
		Family: rtnl.AF_INET, Index: q.Index, Local: q.Local, Address: q.Local,
		PrefixLen: q.PrefixLen, Flags: q.Flags, Scope: q.Scope, Label: l.Name,
		RtPriority: q.RtPriority, Proto: q.Proto,
	}
	if q.Has(rtnl.IFA_ADDRESS) {
		a.Address = q.Address
	}
	if q.Has(rtnl.IFA_BROADCAST) {
		a.Broadcast = q.Broadcast
	}
	if q.HasLabel {
		a.Label = q.Label
	}
	flags := uint16(req.Msg.Header.Flags)
	if old, ok := ns.addr.store.Find4(a); ok {
		if flags&rtnl.NLM_F_EXCL != 0 || flags&rtnl.NLM_F_REPLACE == 0 {
			return rtnl.Errorf(syscall.EEXIST, "ipv4: Address already assigned")
		}
		// The replace path changes the metric (fib_modify_prefix_metric()),
		// the protocol and the lifetimes, nothing else.
		metricChanged := old.RtPriority != a.RtPriority
		n := old
		n.RtPriority, n.Proto = a.RtPriority, a.Proto
		setLifetime(&n, valid, preferred)
		ns.addr.store.Replace4(n)
		if metricChanged {
			ns.modifyPrefixMetric4(old, n, l)
		}
		ns.notifyAddr(rtnl.RTM_NEWADDR, n, req)
		return nil
	}
	setLifetime(&a, valid, preferred)
	stored, res := ns.addr.store.Insert4(a)
	switch res {
	case netdev.Exists:
		return rtnl.Errno(syscall.EEXIST)
	case netdev.BadScope:
		return rtnl.Errorf(syscall.EINVAL, "ipv4: Invalid scope value")
	}
	ns.notifyAddr(rtnl.RTM_NEWADDR, stored, req)
	// inetaddr_chain NETDEV_UP: fib_inetaddr_event() → fib_add_ifaddr().
	ns.fibAddIfaddr(stored, ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET, a.Index), l)
	return nil
}

// delAddr4 is inet_rtm_deladdr(): the first address matching the given
// local address, label and subnet goes.
func (ns *Namespace) delAddr4(req *Request, q *rtnl.AddrMsg) *rtnl.Error {
	l, ok := ns.devs.ByIndex(q.Index)
	if !ok {
		return rtnl.Errorf(syscall.ENODEV, "ipv4: Device not found")
	}
	dev := ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET, q.Index)
	for i, a := range dev {
		if q.Has(rtnl.IFA_LOCAL) && a.Local != q.Local {
			continue
		}
		if q.HasLabel && a.Label != q.Label {
			continue
		}
		if q.Has(rtnl.IFA_ADDRESS) && (q.PrefixLen != a.PrefixLen || !a.Matches4(q.Address)) {
			continue
		}
		ns.deleteAddr4(l, i, req)
		return nil
	}
	return rtnl.Errorf(syscall.EADDRNOTAVAIL, "ipv4: Address not found")
}

// promoteSecondaries reads IPV4_DEVCONF_PROMOTE_SECONDARIES of l.
func promoteSecondaries(l netdev.Link) bool {
	const idx = 20 // IPV4_DEVCONF_PROMOTE_SECONDARIES (1-based 21)
	return len(l.Inet4Conf) > idx && l.Inet4Conf[idx] != 0
}

// deleteAddr4 is __inet_del_ifa() for the i-th address of l, with each
// step's RTM_DELADDR / RTM_NEWADDR and its inetaddr_chain event.
func (ns *Namespace) deleteAddr4(l netdev.Link, i int, req *Request) {
	for _, st := range ns.addr.store.Delete4(l.Index, i, promoteSecondaries(l)) {
		if st.Del {
			ns.notifyAddr(rtnl.RTM_DELADDR, st.Addr, req)
			ns.fibInetaddrDown(st.Addr, st.List, l)
		} else {
			ns.notifyAddr(rtnl.RTM_NEWADDR, st.Addr, req)
			ns.fibAddIfaddr(st.Addr, st.List, l)
		}
	}
}

// fibInetaddrDown is fib_inetaddr_event(NETDEV_DOWN): fib_del_ifaddr(),
// and when the device has no IPv4 address left, fib_disable_ip(force),
// which flushes every IPv4 route through it, silently.
func (ns *Namespace) fibInetaddrDown(a netdev.Addr, list []netdev.Addr, l netdev.Link) {
	ns.fibDelIfaddr(a, list, l)
	if len(list) == 0 {
		ns.flushDevRoutes4(l.Index, true)
	}
}

// newAddr6 is inet6_rtm_newaddr() and inet6_addr_add().
func (ns *Namespace) newAddr6(req *Request, q *rtnl.AddrMsg) *rtnl.Error {
	// extract_addr(): IFA_LOCAL is the address; an IFA_ADDRESS that
	// differs is the peer.
	var pfx, peer netip.Addr
	if q.Has(rtnl.IFA_ADDRESS) {
		pfx = q.Address
	}
	if q.Has(rtnl.IFA_LOCAL) {
		if pfx.IsValid() && pfx != q.Local {
			peer = pfx
		}
		pfx = q.Local
	}
	if !pfx.IsValid() {
		return rtnl.Errno(syscall.EINVAL)
	}
	valid, preferred := lifetimes(q)
	l, ok := ns.devs.ByIndex(q.Index)
	if !ok {
		return rtnl.Errorf(syscall.ENODEV, "ipv6: Unable to find the interface")
	}
	flags := q.Flags & (netdev.IFA_F_NODAD | netdev.IFA_F_HOMEADDRESS | netdev.IFA_F_MANAGETEMP |
		netdev.IFA_F_NOPREFIXROUTE | 0x400 /* MCAUTOJOIN */ | netdev.IFA_F_OPTIMISTIC)
	// ipv6_allow_optimistic_dad(): optimistic_dad is 0 by default.
	flags &^= netdev.IFA_F_OPTIMISTIC
	nlFlags := uint16(req.Msg.Header.Flags)
	if old, ok := ns.addr.store.Find6(q.Index, pfx); ok {
		if nlFlags&rtnl.NLM_F_EXCL != 0 || nlFlags&rtnl.NLM_F_REPLACE == 0 {
			return rtnl.Errorf(syscall.EEXIST, "ipv6: address already assigned")
		}
		return ns.modifyAddr6(old, q, flags, valid, preferred, l)
	}
	if q.PrefixLen > 128 {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: Invalid prefix length")
	}
	if flags&netdev.IFA_F_MANAGETEMP != 0 && q.PrefixLen != 64 {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: address with \"mngtmpaddr\" flag must have a prefix length of 64")
	}
	if valid == 0 || preferred > valid {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: address lifetime invalid")
	}
	if l.Inet6.Conf == nil {
		// addrconf_add_dev() → ipv6_find_idev() → ipv6_add_dev(): a
		// device whose MTU is below 1280 has no inet6_dev and gets none
		// (EINVAL, no text). lo keeps its own below 1280.
		return rtnl.Errno(syscall.EINVAL)
	}
	// inet6_addr_add() -> addrconf_add_dev(): the device's ff00::/8
	// multicast route comes first, and stays when the address checks
	// below fail (addrconf_add_mroute(); ip6_route_add() refuses a device
	// that is down, silently). A device up without carrier has it linkdown.
	if l.Flags&netdev.IFF_LOOPBACK == 0 && l.Flags&netdev.IFF_UP != 0 {
		ns.addMulticastRoute6(l)
	}
	// ipv6_add_addr()'s address checks.
	switch {
	case pfx.IsUnspecified():
		return rtnl.Errorf(syscall.EADDRNOTAVAIL, "ipv6: Invalid address")
	case pfx.IsMulticast() && flags&0x400 == 0:
		return rtnl.Errorf(syscall.EADDRNOTAVAIL, "ipv6: Cannot assign multicast address without \"IFA_F_MCAUTOJOIN\" flag")
	case pfx.IsLoopback() && l.Flags&netdev.IFF_LOOPBACK == 0:
		return rtnl.Errorf(syscall.EADDRNOTAVAIL, "ipv6: Cannot assign loopback address on this device")
	}
	a := netdev.Addr{
		Family: rtnl.AF_INET6, Index: q.Index, Local: pfx, Address: peer, PrefixLen: q.PrefixLen,
		Flags: flags | netdev.IFA_F_TENTATIVE, Scope: scope6(pfx), RtPriority: q.RtPriority, Proto: q.Proto,
	}
	setLifetime(&a, valid, preferred)
	ns.addr.store.Insert6(a)
	if flags&netdev.IFA_F_NOPREFIXROUTE == 0 {
		ns.addrconfPrefixRoute(a, l)
	}
	// "Send a netlink notification if DAD is enabled and optimistic flag
	// is not set".
	if flags&(netdev.IFA_F_OPTIMISTIC|netdev.IFA_F_NODAD) == 0 {
		ns.notifyAddr(rtnl.RTM_NEWADDR, a, nil)
	}
	ns.dadStart(a, l)
	return nil
}

// scope6 is ipv6_addr_scope() as an rtm scope: host for ::1, link for
// fe80::/10, universe otherwise.
func scope6(a netip.Addr) uint8 {
	switch {
	case a.IsLoopback():
		return rtnl.RT_SCOPE_HOST
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return rtnl.RT_SCOPE_LINK
	}
	return rtnl.RT_SCOPE_UNIVERSE
}

// modifyAddr6 is inet6_addr_modify(): new lifetimes, metric and the
// flags that may change; the prefix route follows the metric and
// noprefixroute.
func (ns *Namespace) modifyAddr6(old netdev.Addr, q *rtnl.AddrMsg, flags, valid, preferred uint32, l netdev.Link) *rtnl.Error {
	if valid == 0 || preferred > valid {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: address lifetime invalid")
	}
	n := old
	const changeable = netdev.IFA_F_NODAD | netdev.IFA_F_HOMEADDRESS | netdev.IFA_F_MANAGETEMP | netdev.IFA_F_NOPREFIXROUTE
	n.Flags = (old.Flags &^ changeable) | (flags & changeable)
	// A metric is changed only when the request names one.
	if q.RtPriority != 0 {
		n.RtPriority = q.RtPriority
	}
	if q.Proto != 0 {
		n.Proto = q.Proto
	}
	setLifetime(&n, valid, preferred)
	ns.addr.store.Update6(n)
	// The address is announced before its prefix route changes
	// (`ip monitor` on Linux 6.18).
	if n.Flags&netdev.IFA_F_TENTATIVE == 0 {
		ns.notifyAddr(rtnl.RTM_NEWADDR, n, nil)
	}
	hadRoute := old.Flags&netdev.IFA_F_NOPREFIXROUTE == 0
	wantRoute := n.Flags&netdev.IFA_F_NOPREFIXROUTE == 0
	switch {
	case wantRoute && hadRoute:
		// modify_prefix_route(): the route addrconf_get_prefix_route()
		// finds (the device's first of the prefix, maybe a hand-made
		// one) is replaced when its metric is not the address's; none
		// found ("prefix route could have been deleted; if so restore
		// it") is added again, with the address's own prefix length.
		prio := n.RtPriority
		if prio == 0 {
			prio = ip6RtPrioAddrconf
		}
		r, ok := ns.prefixRoute6(old, l)
		if ok && r.Priority != prio {
			ns.delPrefixRoute6(old, l)
			ok = false
		}
		if !ok {
			ns.addrconfPrefixRoute(n, l)
		}
	case wantRoute:
		ns.addrconfPrefixRoute(n, l)
	case hadRoute:
		ns.delPrefixRoute6(old, l)
	}
	return nil
}

// delAddr6 is inet6_rtm_deladdr() and inet6_addr_del().
func (ns *Namespace) delAddr6(req *Request, q *rtnl.AddrMsg) *rtnl.Error {
	var pfx netip.Addr
	if q.Has(rtnl.IFA_ADDRESS) {
		pfx = q.Address
	}
	if q.Has(rtnl.IFA_LOCAL) {
		pfx = q.Local
	}
	if !pfx.IsValid() {
		return rtnl.Errno(syscall.EINVAL)
	}
	if q.PrefixLen > 128 {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: Invalid prefix length")
	}
	l, ok := ns.devs.ByIndex(q.Index)
	if !ok {
		return rtnl.Errorf(syscall.ENODEV, "ipv6: Unable to find the interface")
	}
	for _, a := range ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET6, q.Index) {
		if a.PrefixLen == q.PrefixLen && a.Local == pfx {
			ns.deleteAddr6(a, l)
			return nil
		}
	}
	return rtnl.Errorf(syscall.EADDRNOTAVAIL, "ipv6: address not found")
}

// deleteAddr6 is ipv6_del_addr(): RTM_DELADDR, the local route, then the
// prefix route unless another address of the device still has the prefix
// (check_cleanup_prefix_route()).
func (ns *Namespace) deleteAddr6(a netdev.Addr, l netdev.Link) {
	if _, ok := ns.addr.store.Delete6(a.Index, a.Local); !ok {
		return
	}
	ns.notifyAddr(rtnl.RTM_DELADDR, a, nil)
	if a.Flags&netdev.IFA_F_TENTATIVE == 0 {
		// __ipv6_ifa_notify(RTM_DELADDR): the peer's route, then the
		// local route.
		if a.Address.IsValid() {
			ns.delPeerRoute6(a)
		}
		ns.delLocalRoute6(a)
	}
	// Only a permanent address with a prefix route cleans it up
	// (ipv6_del_addr()): one with a finite lifetime leaves its route to
	// expire (on lo, where the route has no expiry, it stays).
	// check_cleanup_prefix_route(): another address of the device in the
	// prefix keeps it; that one being permanent or noprefixroute is NOP,
	// otherwise the kernel sets the route's expiry to its lifetime
	// (CLEANUP_PREFIX_RT_EXPIRE), which nlemu leaves as it is.
	if a.Flags&netdev.IFA_F_NOPREFIXROUTE != 0 || a.Flags&netdev.IFA_F_PERMANENT == 0 {
		return
	}
	p := netip.PrefixFrom(a.Local, int(a.PrefixLen)).Masked()
	for _, b := range ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET6, a.Index) {
		if b.PrefixLen == a.PrefixLen && p.Contains(b.Local) {
			return
		}
	}
	ns.delPrefixRoute6(a, l)
}

// dadStart is addrconf_dad_start() / addrconf_dad_begin(): an address
// with nodad, on a loopback device, completes at once; otherwise it stays
// tentative until the device is ready, then for the DAD time.
func (ns *Namespace) dadStart(a netdev.Addr, l netdev.Link) {
	if a.Flags&netdev.IFA_F_NODAD != 0 || l.Flags&netdev.IFF_LOOPBACK != 0 {
		ns.dadCompleted(a)
		return
	}
	if !ns.isReady6(l.Index) {
		return // addrconf_dad_run() starts it when the link is ready
	}
	ns.dadSchedule(a)
}

// dadSchedule runs DAD for a: success after dadDelay (no other node
// answers in an emulated namespace).
func (ns *Namespace) dadSchedule(a netdev.Addr) {
	if ns.addr.dadDelay <= 0 {
		ns.dadCompleted(a)
		return
	}
	time.AfterFunc(ns.addr.dadDelay, func() {
		if ns.cfg != nil && ns.cfg.RTNL != nil {
			ns.cfg.RTNL.Lock()
			defer ns.cfg.RTNL.Unlock()
		}
		cur, ok := ns.addr.store.Find6(a.Index, a.Local)
		if !ok || cur.Cstamp != a.Cstamp || cur.Flags&netdev.IFA_F_TENTATIVE == 0 || !ns.isReady6(a.Index) {
			return
		}
		ns.dadCompleted(cur)
	})
}

// dadCompleted is addrconf_dad_completed() → ipv6_ifa_notify(RTM_NEWADDR):
// the address loses IFA_F_TENTATIVE, is announced, and gets its local
// route (__ipv6_ifa_notify()).
func (ns *Namespace) dadCompleted(a netdev.Addr) {
	a.Flags &^= netdev.IFA_F_TENTATIVE
	if !ns.addr.store.Update6(a) {
		return
	}
	ns.notifyAddr(rtnl.RTM_NEWADDR, a, nil)
	ns.addLocalRoute6(a)
	if a.Address.IsValid() {
		ns.addPeerRoute6(a)
	}
}

func (ns *Namespace) isReady6(index int32) bool {
	ns.addr.mu.Lock()
	defer ns.addr.mu.Unlock()
	return ns.addr.ready[index]
}

func (ns *Namespace) setReady6(index int32, ready bool) {
	ns.addr.mu.Lock()
	defer ns.addr.mu.Unlock()
	if ready {
		ns.addr.ready[index] = true
	} else {
		delete(ns.addr.ready, index)
	}
}

// linkReady is addrconf_link_ready(): up and operationally up (or
// unknown, as lo is).
func linkReady(l netdev.Link) bool {
	return l.Flags&netdev.IFF_UP != 0 && (l.OperState == netdev.OperUp || l.OperState == netdev.OperUnknown) && l.Carrier
}

// addrLinkEvent is what the inet and inet6 netdevice notifiers do with a
// link event: fib_netdev_event() and addrconf_notify().
func (ns *Namespace) addrLinkEvent(ev netdev.Event) {
	l := ev.Link
	switch ev.Kind {
	case netdev.EvRegister:
		if l.Inet6.Conf == nil {
			// Created with an MTU below 1280: no inet6_dev yet.
			ns.addr.v6Off[l.Index] = true
		}
	case netdev.EvUp:
		ns.inetUp(l)
		ns.v4.SyncUpDev(l.Index, rtnl.RTNH_F_DEAD)
		ns.fibNetdevUp(l)
		if !ns.addr.v6Off[l.Index] {
			// addrconf_notify(NETDEV_UP) restores the permanent
			// addresses' prefix routes before it asks whether the
			// device is ready: a device up without carrier has them
			// (linkdown), and so has lo.
			ns.addrconfPermanentAddr(l)
			if linkReady(l) {
				ns.addrconfReady(l)
				if l.MTU < 1280 {
					// addrconf_notify(NETDEV_UP) ends with "the changed
					// mtu during down is lower than IPV6_MIN_MTU":
					// addrconf_ifdown() again, so lo up below 1280
					// announces ::1 and its route, then deletes them
					// (TestQuirkLoUpBelow1280AnnouncesThenDeletesLoopback6).
					ns.addrconfIfdown(l, false)
				}
			}
		}
	case netdev.EvChange:
		if linkReady(l) {
			ns.setLinkdown(l.Index, false)
			if !ns.isReady6(l.Index) && !ns.addr.v6Off[l.Index] {
				ns.addrconfReady(l)
			}
		} else if l.Flags&netdev.IFF_UP != 0 {
			ns.setLinkdown(l.Index, true)
		}
	case netdev.EvDown:
		// fib_netdev_event(NETDEV_DOWN): fib_disable_ip() — every route
		// through the device but the scope-host ones, silently; the
		// addresses stay. addrconf_ifdown(): routes, then addresses.
		ns.flushDevRoutes4(l.Index, false)
		ns.addrconfIfdown(l, false)
	case netdev.EvRename:
		ns.inetdevChangename(l)
	case netdev.EvChangeMTU:
		// inetdev_event(NETDEV_CHANGEMTU): below 68 the in_device is
		// destroyed (netdev cleared Inet4Conf), its addresses with it,
		// each as inet_del_ifa() removes it; the last one's
		// fib_disable_ip() flushes every route through the device,
		// silently. From 68 on the new in_device has no address: lo's
		// 127.0.0.1 comes back only at its next NETDEV_UP.
		if l.Inet4Conf == nil && len(ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET, l.Index)) > 0 {
			ns.inetdevDestroy(l)
			ns.flushDevRoutes4(l.Index, true)
		}
		// addrconf_notify(NETDEV_CHANGEMTU): below IPV6_MIN_MTU IPv6
		// stops on the device (addrconf_ifdown(), its inet6_dev
		// destroyed); back at 1280 or more a ready device is configured
		// again, as a new inet6_dev (measured). lo keeps its inet6_dev
		// (addrconf_ifdown(dev, dev != loopback)): its addresses and
		// routes go, nothing comes back at 1280, and addresses can still
		// be added below it (TestQuirkLoMTUBelow1280KeepsInet6Dev).
		const ipv6MinMTU = 1280
		if l.Flags&netdev.IFF_LOOPBACK != 0 {
			if l.MTU < ipv6MinMTU {
				ns.addrconfIfdown(l, false)
			}
		} else if l.MTU < ipv6MinMTU {
			if !ns.addr.v6Off[l.Index] {
				ns.addrconfIfdown(l, true)
				ns.addr.v6Off[l.Index] = true
			}
		} else if ns.addr.v6Off[l.Index] {
			delete(ns.addr.v6Off, l.Index)
			if linkReady(l) {
				ns.addrconfReady(l)
			}
		}
	case netdev.EvUnregister:
		ns.inetdevDestroy(l)
		ns.flushDevRoutes4(l.Index, true)
		ns.addrconfIfdown(l, true)
	}
}

// inetdevDestroy is inetdev_destroy(): with the in_device dead, each
// address from the head of the list goes as inet_del_ifa() removes it (its
// RTM_DELADDR, then fib_del_ifaddr() without the scan for addresses still
// needing a route: the local route's RTM_DELROUTE).
func (ns *Namespace) inetdevDestroy(l netdev.Link) {
	for len(ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET, l.Index)) > 0 {
		for _, st := range ns.addr.store.Delete4(l.Index, 0, false) {
			ns.notifyAddr(rtnl.RTM_DELADDR, st.Addr, nil)
			ns.fibDelIfaddrDead(st.Addr, l)
		}
	}
}

// inetUp is inetdev_event(NETDEV_UP) for lo: the first up of a loopback
// device configures 127.0.0.1/8 scope host (its routes come with
// fib_netdev_event()).
func (ns *Namespace) inetUp(l netdev.Link) {
	if l.Flags&netdev.IFF_LOOPBACK == 0 || l.Inet4Conf == nil {
		// inetdev_event() without an in_device (MTU below 68) does
		// nothing.
		return
	}
	// Every NETDEV_UP inserts it again: inet_insert_ifa() refuses it
	// silently when 127.0.0.1/8 is still there (EEXIST) or a same-subnet
	// address has another scope (EINVAL), and adds it, as a secondary
	// beside another 127/8 address, after `ip addr flush dev lo`.
	lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	a := netdev.Addr{Family: rtnl.AF_INET, Index: l.Index, Local: lo, Address: lo, PrefixLen: 8,
		Scope: rtnl.RT_SCOPE_HOST, Label: l.Name}
	setLifetime(&a, netdev.InfinityLife, netdev.InfinityLife)
	stored, res := ns.addr.store.Insert4(a)
	if res != netdev.Inserted {
		return
	}
	// inet_insert_ifa() announces it; its NETDEV_UP on the inetaddr chain
	// adds the local route, the rest comes from fib_netdev_event() below.
	ns.notifyAddr(rtnl.RTM_NEWADDR, stored, nil)
}

// fibNetdevUp is fib_netdev_event(NETDEV_UP): fib_add_ifaddr() for each
// address of the device.
func (ns *Namespace) fibNetdevUp(l netdev.Link) {
	dev := ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET, l.Index)
	for _, a := range dev {
		ns.fibAddIfaddr(a, dev, l)
	}
}

// addrconfReady is addrconf_notify() for a device that became ready:
// IF_READY, then addrconf_dev_config() (ff00::/8, the link-local address
// and fe80::/64) or init_loopback() (::1), the permanent addresses' prefix
// routes (addrconf_permanent_addr()), DAD for the tentative ones
// (addrconf_dad_run()), and inet6_ifinfo_notify().
func (ns *Namespace) addrconfReady(l netdev.Link) {
	ns.setReady6(l.Index, true)
	if l.Flags&netdev.IFF_LOOPBACK != 0 {
		lo := netip.IPv6Loopback()
		if _, ok := ns.addr.store.Find6(l.Index, lo); !ok {
			a := netdev.Addr{Family: rtnl.AF_INET6, Index: l.Index, Local: lo, PrefixLen: 128,
				Scope: rtnl.RT_SCOPE_HOST, Proto: rtnl.IFAPROT_KERNEL_LO, Flags: netdev.IFA_F_TENTATIVE}
			setLifetime(&a, netdev.InfinityLife, netdev.InfinityLife)
			ns.addr.store.Insert6(a)
			ns.dadCompleted(a)
		}
	} else {
		ns.addMulticastRoute6(l)
		if ll, ok := eui64LinkLocal(l); ok {
			if _, exists := ns.addr.store.Find6(l.Index, ll); !exists {
				a := netdev.Addr{Family: rtnl.AF_INET6, Index: l.Index, Local: ll, PrefixLen: 64,
					Scope: rtnl.RT_SCOPE_LINK, Proto: rtnl.IFAPROT_KERNEL_LL, Flags: netdev.IFA_F_TENTATIVE}
				setLifetime(&a, netdev.InfinityLife, netdev.InfinityLife)
				ns.addr.store.Insert6(a)
				ns.addrconfPrefixRoute(a, l)
			}
		}
		for _, a := range ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET6, l.Index) {
			if a.Flags&netdev.IFA_F_TENTATIVE != 0 {
				ns.dadSchedule(a)
			}
		}
	}
	if ns.hasListeners(rtnlgrpIPv6Ifinfo, nil) {
		ns.notify(rtnlgrpIPv6Ifinfo, rtnl.AppendInet6Link(nil, 0, 0, 0, linkMsg(l)), nil)
	}
}

// addrconfPermanentAddr is addrconf_permanent_addr() at NETDEV_UP, ready
// or not: fixup_permanent_addr() gives every permanent address configured
// while the device was down its prefix route. It does not run when the
// device becomes ready later (NETDEV_CHANGE), so a prefix route deleted
// in between stays deleted.
func (ns *Namespace) addrconfPermanentAddr(l netdev.Link) {
	for _, a := range ns.addr.store.Snapshot().OfDevice(rtnl.AF_INET6, l.Index) {
		if a.Flags&netdev.IFA_F_NOPREFIXROUTE == 0 && a.Flags&netdev.IFA_F_PERMANENT != 0 {
			ns.addrconfPrefixRoute(a, l)
		}
	}
}

// eui64LinkLocal is addrconf_addr_gen() with addrgenmode eui64: fe80:: and
// the modified EUI-64 of an Ethernet MAC (ipv6_generate_eui64()).
func eui64LinkLocal(l netdev.Link) (netip.Addr, bool) {
	const arphrdEther = 1
	if l.Type != arphrdEther || len(l.Address) != 6 || l.Inet6.AddrGenMode != 0 {
		return netip.Addr{}, false
	}
	m := l.Address
	return netip.AddrFrom16([16]byte{0xfe, 0x80, 8: m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]}), true
}

// addrconfIfdown is addrconf_ifdown() with keep_addr_on_down 0: IF_READY
// cleared, every IPv6 route through the device deleted (with
// RTM_DELROUTE), then every address (RTM_DELADDR each).
func (ns *Namespace) addrconfIfdown(l netdev.Link, unregister bool) {
	ns.setReady6(l.Index, false)
	ns.flushDevRoutes6(l.Index, unregister)
	for _, a := range ns.addr.store.Flush(rtnl.AF_INET6, l.Index) {
		ns.notifyAddr(rtnl.RTM_DELADDR, a, nil)
	}
}

// dumpAddrsRow is the dumpit of family: inet_dump_ifaddr() /
// inet6_dump_ifaddr().
func dumpAddrsRow(family uint8) dumpitFunc {
	return func(ns *Namespace, req *Request) (Dumper, *rtnl.Error) {
		q, err := rtnl.DecodeAddrDump(req.Msg, family, req.Strict)
		d := &addrDump{seq: req.Msg.Header.Sequence, pid: req.PortID}
		if err != nil {
			d.err = err
			return d, nil
		}
		if q.Index != 0 {
			d.answer = rtnl.NLM_F_DUMP_FILTERED
			if !ns.hasDevice(q.Index) {
				d.err = rtnl.Errno(syscall.ENODEV)
				return d, nil
			}
		}
		set := ns.addr.store.Snapshot()
		d.addrs = set.Family(family)
		if q.Index != 0 {
			d.addrs = set.OfDevice(family, q.Index)
		}
		return d, nil
	}
}

// addrDump walks one family's snapshot; the position is the index in the
// snapshot the dump started from, which no change alters.
type addrDump struct {
	addrs    []netdev.Addr
	i        int
	seq, pid uint32
	err      *rtnl.Error
	answer   uint16
}

func (d *addrDump) Err() *rtnl.Error { return d.err }

// AnswerFlags is NLM_F_DUMP_FILTERED for a dump filtered by device.
func (d *addrDump) AnswerFlags() uint16 { return d.answer }

func (d *addrDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for ; d.i < len(d.addrs); d.i++ {
		n := len(dst)
		dst = rtnl.AppendAddr(dst, rtnl.RTM_NEWADDR, rtnl.NLM_F_MULTI|d.answer, d.seq, d.pid, addrMsg(d.addrs[d.i]))
		if len(dst) > limit && n > 0 {
			return dst[:n], false
		}
	}
	return dst, true
}

// getAddr6 is inet6_rtm_getaddr() (IPv4 has no RTM_GETADDR doit:
// EOPNOTSUPP): the address named by IFA_LOCAL / IFA_ADDRESS, unicast as an
// RTM_NEWADDR. A device index that names no device searches every device,
// as the kernel's dev_get_by_index() returning NULL does.
func (ns *Namespace) getAddr6(req *Request) *rtnl.Error {
	m := req.Msg
	if len(m.Data) < 8 {
		return rtnl.Errorf(syscall.EINVAL, "ipv6: Invalid header for get address request")
	}
	if req.Strict {
		// inet6_rtm_valid_getaddr_req().
		if m.Data[1] != 0 || m.Data[2] != 0 || m.Data[3] != 0 {
			return rtnl.Errorf(syscall.EINVAL, "ipv6: Invalid values in header for get address request")
		}
	}
	q, err := rtnl.DecodeAddrRequest(m)
	if err != nil {
		return err
	}
	if req.Strict {
		for t := 1; t <= rtnl.IFA_MAX; t++ {
			if q.Has(t) && t != rtnl.IFA_ADDRESS && t != rtnl.IFA_LOCAL && t != rtnl.IFA_TARGET_NETNSID {
				return rtnl.Errorf(syscall.EINVAL, "ipv6: Unsupported attribute in get address request")
			}
		}
	}
	var pfx netip.Addr
	if q.Has(rtnl.IFA_ADDRESS) {
		pfx = q.Address
	}
	if q.Has(rtnl.IFA_LOCAL) {
		pfx = q.Local
	}
	if !pfx.IsValid() {
		return rtnl.Errno(syscall.EINVAL)
	}
	set := ns.addr.store.Snapshot()
	list := set.V6
	if q.Index != 0 && ns.hasDevice(q.Index) {
		list = set.OfDevice(rtnl.AF_INET6, q.Index)
	}
	for _, a := range list {
		if a.Local == pfx {
			if req.Self != nil {
				req.Self.Deliver(rtnl.AppendAddr(nil, rtnl.RTM_NEWADDR, 0, m.Header.Sequence, req.PortID, addrMsg(a)))
			}
			return nil
		}
	}
	return rtnl.Errno(syscall.EADDRNOTAVAIL)
}

// inetdevChangename is inetdev_changename(): every IPv4 label becomes the
// new device name; from the second address on it keeps its ":suffix", and
// one without a suffix gets ":N" (N its position, the first being 1) — a quirk of the
// kernel's code, kept. Each address is announced again.
func (ns *Namespace) inetdevChangename(l netdev.Link) {
	const ifNameSize = 16
	list := ns.addr.store.Map4(l.Index, func(i int, a netdev.Addr) netdev.Addr {
		old := a.Label
		a.Label = l.Name
		if i == 0 {
			return a
		}
		dot := ""
		if j := strings.IndexByte(old, ':'); j >= 0 {
			dot = old[j:]
		} else {
			dot = ":" + strconv.Itoa(i+1)
		}
		if len(dot)+len(l.Name) < ifNameSize {
			a.Label += dot
		} else {
			a.Label = a.Label[:min(len(a.Label), ifNameSize-len(dot)-1)] + dot
		}
		return a
	})
	for _, a := range list {
		ns.notifyAddr(rtnl.RTM_NEWADDR, a, nil)
	}
}
