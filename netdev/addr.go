package netdev

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Addr is one address of a device: struct in_ifaddr (IPv4) or struct
// inet6_ifaddr (IPv6), as inet_fill_ifaddr() / inet6_fill_ifaddr() report
// it. An Addr is a value.
type Addr struct {
	Family uint8 // AF_INET or AF_INET6
	Index  int32 // the device
	// Local is ifa_local (IPv4) or ifp->addr (IPv6).
	Local netip.Addr
	// Address is ifa_address for IPv4 (Local, or the peer of a
	// point-to-point address; always set) and ifp->peer_addr for IPv6 (the
	// zero Addr without a peer).
	Address   netip.Addr
	PrefixLen uint8
	Broadcast netip.Addr // IPv4 ifa_broadcast; zero = none
	Label     string     // IPv4 ifa_label
	Flags     uint32     // IFA_F_*
	Scope     uint8      // RT_SCOPE_*
	// RtPriority is the metric of the address's prefix route.
	RtPriority uint32
	Proto      uint8 // IFAPROT_*
	// Preferred and Valid are the lifetimes in seconds (InfinityLife =
	// forever); Cstamp and Tstamp the creation and last update times in
	// 1/100 s since boot.
	Preferred, Valid uint32
	Cstamp, Tstamp   uint32
}

// Address flags the store interprets (IFA_F_*).
const (
	IFA_F_SECONDARY     = 0x01
	IFA_F_NODAD         = 0x02
	IFA_F_OPTIMISTIC    = 0x04
	IFA_F_DADFAILED     = 0x08
	IFA_F_HOMEADDRESS   = 0x10
	IFA_F_TENTATIVE     = 0x40
	IFA_F_PERMANENT     = 0x80
	IFA_F_MANAGETEMP    = 0x100
	IFA_F_NOPREFIXROUTE = 0x200
	IFA_F_STABLEPRIV    = 0x800

	// ipv6OnlyFlags is IPV6ONLY_FLAGS, which __inet_insert_ifa() clears
	// from an IPv4 address.
	ipv6OnlyFlags = IFA_F_NODAD | IFA_F_OPTIMISTIC | IFA_F_DADFAILED | IFA_F_HOMEADDRESS |
		IFA_F_TENTATIVE | IFA_F_MANAGETEMP | IFA_F_STABLEPRIV
)

// InfinityLife is INFINITY_LIFE_TIME.
const InfinityLife = 0xffffffff

// Mask4 returns the IPv4 netmask of a prefix length as a uint32.
func Mask4(plen uint8) uint32 {
	if plen == 0 {
		return 0
	}
	return ^uint32(0) << (32 - uint32(min(plen, 32)))
}

// U32 returns an IPv4 address as a host-order uint32 (0 for others).
func U32(a netip.Addr) uint32 {
	if !a.Is4() {
		return 0
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// FromU32 is U32's inverse.
func FromU32(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Matches4 is inet_ifa_match(addr, ifa): addr is in a's subnet (taken from
// ifa_address).
func (a Addr) Matches4(addr netip.Addr) bool {
	m := Mask4(a.PrefixLen)
	return (U32(addr)^U32(a.Address))&m == 0
}

// SameSubnet4 reports whether b has a's mask and lies in a's subnet (the
// test __inet_insert_ifa() and __inet_del_ifa() use for secondaries).
func (a Addr) SameSubnet4(b Addr) bool {
	return a.PrefixLen == b.PrefixLen && b.Matches4(a.Address)
}

// AddrSet is an immutable snapshot of a namespace's addresses, each
// family's list ordered as the dumps walk it: devices by ifindex, and on a
// device the kernel's list order (IPv4: primaries by scope, then
// secondaries, as __inet_insert_ifa() links them; IPv6: by falling scope,
// newest first, as ipv6_link_dev_addr() links them).
type AddrSet struct {
	V4, V6 []Addr
}

// Family returns the list of family (AF_INET or AF_INET6).
func (s *AddrSet) Family(family uint8) []Addr {
	if family == afInet6 {
		return s.V6
	}
	return s.V4
}

// OfDevice returns the addresses of family on device index, in list order
// (a sub-slice of the snapshot: do not modify).
func (s *AddrSet) OfDevice(family uint8, index int32) []Addr {
	l := s.Family(family)
	i, j := devRange(l, index)
	return l[i:j:j]
}

func devRange(l []Addr, index int32) (int, int) {
	i, _ := slices.BinarySearchFunc(l, index, func(a Addr, x int32) int { return int(a.Index) - int(x) })
	j := i
	for j < len(l) && l[j].Index == index {
		j++
	}
	return i, j
}

const (
	afInet  = 2
	afInet6 = 10
)

// Addrs is the address store of one namespace. Readers take Snapshot()
// without locking; changes run under RTNL in nsmgr and also serialize on
// the store's own mutex, publishing a new snapshot each.
type Addrs struct {
	mu  sync.Mutex
	set atomic.Pointer[AddrSet]
}

// NewAddrs returns an empty store (a fresh namespace has no address, not
// even on lo, until lo comes up).
func NewAddrs() *Addrs {
	s := &Addrs{}
	s.set.Store(&AddrSet{})
	return s
}

// Snapshot returns the current addresses.
func (s *Addrs) Snapshot() *AddrSet { return s.set.Load() }

// setDevice replaces device index's list of family with dev.
func (s *Addrs) setDevice(family uint8, index int32, dev []Addr) {
	old := s.set.Load()
	l := old.Family(family)
	i, j := devRange(l, index)
	nl := make([]Addr, 0, len(l)-(j-i)+len(dev))
	nl = append(nl, l[:i]...)
	nl = append(nl, dev...)
	nl = append(nl, l[j:]...)
	ns := *old
	if family == afInet6 {
		ns.V6 = nl
	} else {
		ns.V4 = nl
	}
	s.set.Store(&ns)
}

// AddrStep is one step of an address change in the kernel's order: an
// RTM_NEWADDR (with NETDEV_UP on the inetaddr chain) or RTM_DELADDR (with
// NETDEV_DOWN). List is the device's addresses of the family right after
// the step, what the notifier (fib_add_ifaddr() / fib_del_ifaddr()) sees.
type AddrStep struct {
	Del  bool
	Addr Addr
	List []Addr
}

// Insert4Result is what Insert4 did.
type Insert4Result uint8

// Insert4 outcomes.
const (
	Inserted Insert4Result = iota
	// Exists: the same local address in the same subnet is there (EEXIST).
	Exists
	// BadScope: a secondary with another scope than its primary
	// ("ipv4: Invalid scope value").
	BadScope
)

// Find4 is find_matching_ifa(): the address on a's device with a's mask, in
// a's subnet and with a's local address.
func (s *Addrs) Find4(a Addr) (Addr, bool) {
	for _, b := range s.Snapshot().OfDevice(afInet, a.Index) {
		if b.PrefixLen == a.PrefixLen && a.Matches4(b.Address) && b.Local == a.Local {
			return b, true
		}
	}
	return Addr{}, false
}

// Insert4 is __inet_insert_ifa(): a becomes a secondary when a primary of
// its subnet exists, a primary is linked after the last primary of a
// scope at least as wide, a secondary at the end. It returns the address
// as stored.
func (s *Addrs) Insert4(a Addr) (Addr, Insert4Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Flags &^= IFA_F_SECONDARY | ipv6OnlyFlags
	dev := s.Snapshot().OfDevice(afInet, a.Index)
	lastPrimary := 0
	for i, b := range dev {
		if b.Flags&IFA_F_SECONDARY == 0 && a.Scope <= b.Scope {
			lastPrimary = i + 1
		}
		if b.PrefixLen == a.PrefixLen && a.Matches4(b.Address) {
			if b.Local == a.Local {
				return b, Exists
			}
			if b.Scope != a.Scope {
				return b, BadScope
			}
			a.Flags |= IFA_F_SECONDARY
		}
	}
	pos := len(dev)
	if a.Flags&IFA_F_SECONDARY == 0 {
		pos = lastPrimary
	}
	nd := slices.Insert(slices.Clone(dev), pos, a)
	s.setDevice(afInet, a.Index, nd)
	return a, Inserted
}

// Replace4 updates the stored address equal to a (Find4) in place: its
// metric, flags and lifetimes (inet_rtm_newaddr() with NLM_F_REPLACE).
func (s *Addrs) Replace4(a Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(afInet, a.Index))
	for i, b := range dev {
		if b.PrefixLen == a.PrefixLen && a.Matches4(b.Address) && b.Local == a.Local {
			dev[i] = a
		}
	}
	s.setDevice(afInet, a.Index, dev)
}

// Delete4 is __inet_del_ifa() for dev[i] of device index: deleting a
// primary deletes the secondaries of its subnet first (promote false) or
// promotes the first of them (promote true, promote_secondaries). It
// returns the steps in the kernel's order.
func (s *Addrs) Delete4(index int32, i int, promote bool) []AddrStep {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(afInet, index))
	if i < 0 || i >= len(dev) {
		return nil
	}
	a1 := dev[i]
	var steps []AddrStep
	promoted := -1
	if a1.Flags&IFA_F_SECONDARY == 0 {
		for j := i + 1; j < len(dev); j++ {
			b := dev[j]
			if b.Flags&IFA_F_SECONDARY == 0 || !a1.SameSubnet4(b) {
				continue
			}
			if promote {
				promoted = j
				break
			}
			dev = slices.Delete(dev, j, j+1)
			j--
			steps = append(steps, AddrStep{Del: true, Addr: b, List: slices.Clone(dev)})
		}
	}
	// Unlink and announce the address itself.
	for j := range dev {
		if dev[j] == a1 {
			dev = slices.Delete(dev, j, j+1)
			if promoted > j {
				promoted--
			}
			break
		}
	}
	steps = append(steps, AddrStep{Del: true, Addr: a1, List: slices.Clone(dev)})
	if promoted >= 0 {
		p := dev[promoted]
		p.Flags &^= IFA_F_SECONDARY
		// The promoted address moves to after the last primary.
		dev = slices.Delete(dev, promoted, promoted+1)
		last := 0
		for j, b := range dev {
			if b.Flags&IFA_F_SECONDARY == 0 && p.Scope <= b.Scope {
				last = j + 1
			}
		}
		dev = slices.Insert(dev, last, p)
		steps = append(steps, AddrStep{Addr: p, List: slices.Clone(dev)})
	}
	s.setDevice(afInet, index, dev)
	return steps
}

// Map4 replaces each IPv4 address of device index by f of it (in list
// order) and returns the new list.
func (s *Addrs) Map4(index int32, f func(i int, a Addr) Addr) []Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(afInet, index))
	for i := range dev {
		dev[i] = f(i, dev[i])
	}
	s.setDevice(afInet, index, dev)
	return dev
}

// Find6 is ipv6_get_ifaddr() on one device: the address with local addr.
func (s *Addrs) Find6(index int32, addr netip.Addr) (Addr, bool) {
	for _, b := range s.Snapshot().OfDevice(afInet6, index) {
		if b.Local == addr {
			return b, true
		}
	}
	return Addr{}, false
}

// srcScope6 is ipv6_addr_src_scope() for the unicast addresses nlemu has.
func srcScope6(a netip.Addr) int {
	switch {
	case a.IsLoopback(), a.IsLinkLocalUnicast():
		return 0x2
	case a.Is6() && a.As16()[0] == 0xfe && a.As16()[1]&0xc0 == 0xc0:
		return 0x5 // site-local
	}
	return 0xe
}

// Insert6 is ipv6_add_addr() → ipv6_link_dev_addr(): a goes before the
// first address of the device whose scope is not wider (the list runs from
// global to link scope, newest first). The caller checked Find6.
func (s *Addrs) Insert6(a Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := s.Snapshot().OfDevice(afInet6, a.Index)
	pos := len(dev)
	sc := srcScope6(a.Local)
	for i, b := range dev {
		if sc >= srcScope6(b.Local) {
			pos = i
			break
		}
	}
	s.setDevice(afInet6, a.Index, slices.Insert(slices.Clone(dev), pos, a))
}

// Update6 replaces the device's address with a's local address by a (DAD
// completion, inet6_addr_modify()); it reports whether one was there.
func (s *Addrs) Update6(a Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(afInet6, a.Index))
	for i, b := range dev {
		if b.Local == a.Local {
			dev[i] = a
			s.setDevice(afInet6, a.Index, dev)
			return true
		}
	}
	return false
}

// Delete6 removes the device's address with local addr (ipv6_del_addr()).
func (s *Addrs) Delete6(index int32, addr netip.Addr) (Addr, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(afInet6, index))
	for i, b := range dev {
		if b.Local == addr {
			s.setDevice(afInet6, index, slices.Delete(dev, i, i+1))
			return b, true
		}
	}
	return Addr{}, false
}

// Flush removes every address of family on device index and returns them
// in list order (addrconf_ifdown(), inetdev_destroy()).
func (s *Addrs) Flush(family uint8, index int32) []Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := slices.Clone(s.Snapshot().OfDevice(family, index))
	if len(dev) > 0 {
		s.setDevice(family, index, nil)
	}
	return dev
}
