package netdev

import (
	"bytes"
	"slices"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// Changes to existing devices: do_setlink() and rtnl_dellink().

// Delete is rtnl_dellink() for device index: EOPNOTSUPP for a device
// without rtnl_link_ops (lo); a veth takes its peer with it
// (veth_dellink()), a bridge first releases its ports (br_dev_delete()).
func (d *Devices) Delete(index int32) ([]Event, *rtnl.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.begin()
	i := c.find(index)
	if i < 0 {
		return nil, rtnl.Errno(syscall.ENODEV)
	}
	l := c.links[i]
	if l.Kind == "" {
		return nil, rtnl.Errno(syscall.EOPNOTSUPP)
	}
	if l.Kind == KindBridge {
		for _, p := range c.portsOf(l.Index) {
			c.release(c.find(p))
		}
	}
	if l.Master != 0 {
		c.release(i)
	}
	dels := []int{c.find(index)}
	if l.Kind == KindVeth && l.Peer != 0 {
		if p := c.find(l.Peer); p >= 0 {
			if c.links[p].Master != 0 {
				c.release(p)
			}
			dels = append(dels, c.find(l.Peer))
		}
	}
	c.unregister(dels)
	c.bridgePass()
	c.runLinkwatch()
	return c.publish(), nil
}

// Set is do_setlink() on device index, in its order: IFLA_ADDRESS,
// IFLA_MTU, IFLA_GROUP, the new name, IFLA_BROADCAST, the flags,
// IFLA_MASTER, IFLA_TXQLEN; then netdev_state_change() when the group was
// set on a running device. As in the kernel, a failure leaves the steps
// before it applied (and announced).
func (d *Devices) Set(index int32, q *rtnl.LinkConf) ([]Event, *rtnl.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.begin()
	err := c.set(index, q)
	c.bridgePass()
	c.runLinkwatch()
	return c.publish(), err
}

func (c *change) set(index int32, q *rtnl.LinkConf) *rtnl.Error {
	i := c.find(index)
	if i < 0 {
		return rtnl.Errno(syscall.ENODEV)
	}
	if q.HasAddrGenMode && c.links[i].Inet6.Conf == nil {
		// validate_linkmsg() → inet6_validate_link_af(): a device
		// without an inet6_dev (its MTU is below 1280) refuses
		// IFLA_AF_SPEC's AF_INET6 before anything is changed.
		return rtnl.Errno(syscall.EAFNOSUPPORT)
	}
	notify := false
	if q.Bridge != nil {
		// rtnl_changelink(): the kind's options first, announced with
		// the rest (DO_SETLINK_NOTIFY).
		if c.links[i].Kind != KindBridge {
			return rtnl.Errno(syscall.EOPNOTSUPP)
		}
		if err := bridgeOptsErr(q.Bridge); err != nil {
			return err
		}
		c.applyBridgeOpts(i, q.Bridge)
		notify = true
	}
	// validate_linkmsg()
	if q.Address != nil && len(q.Address) < 6 {
		return rtnl.Errno(syscall.EINVAL)
	}
	if q.Broadcast != nil && len(q.Broadcast) < 6 {
		return rtnl.Errno(syscall.EINVAL)
	}
	if q.Address != nil {
		l := &c.links[i]
		a := q.Address[:6]
		// eth_prepare_mac_addr_change(): is_valid_ether_addr() (lo too:
		// its ndo_set_mac_address is eth_mac_addr()).
		if a[0]&1 != 0 || bytes.Equal(a, zeroMAC) {
			return rtnl.Errno(syscall.EADDRNOTAVAIL)
		}
		l.Address = append([]byte(nil), a...)
		l.AddrSet = true
		if l.Kind == KindBridge {
			// br_set_mac_address() → br_stp_change_bridge_id(): the port
			// state selection runs, and without live ports the carrier
			// goes.
			c.setBridgeID(i)
			c.portStates(i, true)
		}
		c.msg(i, 0)
		c.event(EvChangeAddr, i)
		if l.Master != 0 {
			c.recalcBridge(c.find(l.Master), true)
		}
	}
	if q.HasMTU && q.MTU != c.links[i].MTU {
		l := &c.links[i]
		if err := validateMTU(l, q.MTU); err != nil {
			return err
		}
		l.MTU = q.MTU
		if l.Kind == KindBridge {
			l.MTUSet = true
		}
		c.msg(i, 0)
		// inetdev_event() and addrconf_notify() (NETDEV_CHANGEMTU), after
		// the message: the inet and inet6 state follow the MTU.
		c.setMTU6(i)
		c.event(EvChangeMTU, i)
		l = &c.links[i]
		if l.Master != 0 {
			c.recalcBridge(c.find(l.Master), true)
		}
	}
	if q.HasGroup {
		c.links[i].Group = q.Group
		notify = true
	}
	if q.Index > 0 && q.HasName && len(q.Name) > 0 && string(q.Name) != c.links[i].Name {
		n, err := c.resolveName(string(q.Name), i)
		if err != nil {
			return err
		}
		if n != c.links[i].Name {
			old := c.links[i].Name
			c.links[i].Name = n
			c.evs = append(c.evs, Event{Kind: EvRename, Link: c.links[i], OldName: old,
				Msgs: []Notify{{Kind: NotifyNewLink, Link: c.links[i]}}})
		}
	}
	if q.Broadcast != nil {
		c.links[i].Broadcast = append([]byte(nil), q.Broadcast[:6]...)
	}
	if q.HasAlias {
		// dev_set_alias(); announced by netdev_state_change() below.
		c.links[i].Alias = string(q.Alias)
		notify = true
	}
	if q.Flags != 0 || q.Change != 0 {
		want := combineFlags(c.links[i].WireFlags(), q.Flags, q.Change)
		if err := c.changeFlags(i, want); err != nil {
			return err
		}
	}
	if q.HasMaster {
		if err := c.setMaster(i, int32(q.Master)); err != nil {
			return err
		}
	}
	if q.HasTxQLen && q.TxQLen != c.links[i].TxQueueLen {
		c.links[i].TxQueueLen = q.TxQLen
		c.msg(i, 0) // NETDEV_CHANGE_TX_QUEUE_LEN
	}
	if q.HasAddrGenMode {
		// inet6_set_link_af(): IN6_ADDR_GEN_MODE_EUI64 .. _RANDOM;
		// stable-privacy needs a secret nlemu cannot be given yet.
		if q.AddrGenMode > 3 || q.AddrGenMode == 2 {
			return rtnl.Errno(syscall.EINVAL)
		}
		c.links[i].Inet6.AddrGenMode = q.AddrGenMode
		notify = true
	}
	if notify && c.links[i].Flags&IFF_UP != 0 {
		c.msg(i, 0) // netdev_state_change()
		c.event(EvChange, i)
	}
	return nil
}

// plainFlags are the dev->flags bits __dev_change_flags() copies from the
// request; IFF_UP opens or closes the device, IFF_PROMISC and IFF_ALLMULTI
// are the user's share of the counters (dev->gflags).
const plainFlags = 0x4 | 0x20 | IFF_NOARP | 0x8000 | IFF_MULTICAST | 0x2000 | 0x4000 // DEBUG NOTRAILERS NOARP DYNAMIC MULTICAST PORTSEL AUTOMEDIA

// changeFlags is dev_change_flags() with want from rtnl_dev_combine_flags():
// the plain bits, then open or close, then promiscuity and allmulti; one
// RTM_NEWLINK carries every changed bit of dev->flags and dev->gflags
// (__dev_notify_flags()), then NETDEV_UP / NETDEV_DOWN (addrconf marks the
// inet6_dev ready or not and stamps it).
func (c *change) changeFlags(i int, want uint32) *rtnl.Error {
	l := &c.links[i]
	oldFlags, oldG := l.Flags, l.GFlags
	l.Flags = want&plainFlags | l.Flags&^plainFlags
	upChanged := (want^l.Flags)&IFF_UP != 0
	if upChanged {
		if want&IFF_UP != 0 {
			c.open(i)
		} else {
			c.close(i)
		}
	}
	l = &c.links[i]
	if (want^l.GFlags)&IFF_PROMISC != 0 {
		l.GFlags ^= IFF_PROMISC
		if want&IFF_PROMISC != 0 {
			l.Promiscuity++
		} else {
			l.Promiscuity--
		}
		setBit(&l.Flags, IFF_PROMISC, l.Promiscuity > 0)
	}
	if (want^l.GFlags)&IFF_ALLMULTI != 0 {
		l.GFlags ^= IFF_ALLMULTI
		if want&IFF_ALLMULTI != 0 {
			l.Allmulti++
		} else {
			l.Allmulti--
		}
		setBit(&l.Flags, IFF_ALLMULTI, l.Allmulti > 0)
	}
	changes := (oldFlags ^ l.Flags) | (oldG ^ l.GFlags)
	if changes == 0 {
		return nil
	}
	c.msg(i, changes)
	if upChanged {
		if want&IFF_UP != 0 {
			c.upDone(i)
		} else {
			c.downDone(i)
		}
	}
	return nil
}

func setBit(f *uint32, bit uint32, on bool) {
	if on {
		*f |= bit
	} else {
		*f &^= bit
	}
}

// featChange records netdev_update_features() on bridge m after a port
// change (br_add_if(), del_nbp()): NETDEV_FEAT_CHANGE's RTM_NEWLINK with
// IFLA_EVENT_FEATURES.
func (c *change) featChange(m int) {
	c.evs = append(c.evs, Event{Link: c.links[m], Msgs: []Notify{{Kind: NotifyNewLink, Link: c.links[m], Features: true}}})
}

// brNotify records br_ifinfo_notify() for port i: an AF_BRIDGE
// RTM_NEWLINK (or RTM_DELLINK) with the port's state.
func (c *change) brNotify(i int, del bool) {
	c.evs = append(c.evs, Event{Link: c.links[i], Msgs: []Notify{{Kind: NotifyBridge, Link: c.links[i], Del: del}}})
}

// portsOf lists the ports of bridge index in ifindex order.
func (c *change) portsOf(index int32) []int32 {
	var ps []int32
	for _, l := range c.links {
		if l.Master == index {
			ps = append(ps, l.Index)
		}
	}
	return ps
}

// setMaster is do_set_master(): 0 releases the device from its master;
// another index first releases it, then enslaves it there
// (ndo_add_slave(): br_add_if()).
func (c *change) setMaster(i int, master int32) *rtnl.Error {
	cur := c.links[i].Master
	if cur == master {
		return nil
	}
	if cur != 0 {
		c.release(i)
	}
	if master == 0 {
		return nil
	}
	m := c.find(master)
	if m < 0 {
		return rtnl.Errno(syscall.EINVAL)
	}
	if c.links[m].Kind != KindBridge {
		return rtnl.Errno(syscall.EOPNOTSUPP) // no ndo_add_slave
	}
	return c.enslave(m, i)
}

// enslave is br_add_if(): the port gets allmulti and promiscuity, becomes
// the bridge's lower (NETDEV_CHANGEUPPER: an RTM_NEWLINK of each), then
// the bridge recalculates its address, MTU and carrier.
func (c *change) enslave(m, i int) *rtnl.Error {
	p := &c.links[i]
	switch {
	case p.Kind == KindBridge:
		return rtnl.Errorf(syscall.ELOOP, "Can not enslave a bridge to a bridge")
	case p.Flags&IFF_LOOPBACK != 0 || p.Type != arphrdEther:
		return rtnl.Errno(syscall.EINVAL)
	}
	p.Master = c.links[m].Index
	p.Allmulti++
	p.Port = &rtnl.BridgePortInfo{
		Priority: 32, Cost: portCost(p), Learning: 1, UnicastFlood: 1,
		McastFlood: 1, BcastFlood: 1, MulticastRouter: 1, McastEHTHostsLimit: 512,
	}
	c.msg(i, 0)
	c.links[i].Promiscuity++
	setBit(&c.links[i].Flags, IFF_PROMISC, true)
	setBit(&c.links[i].Flags, IFF_ALLMULTI, true)
	c.msg(i, IFF_PROMISC)
	c.numberPort(m, i)
	c.featChange(m)
	c.brNotify(i, false)
	c.recalcBridge(m, true)
	return nil
}

// portCost is port_cost(): from the link speed; a veth reports 10 Gb/s
// (cost 2), a device without ethtool speed gets 100.
func portCost(l *Link) uint32 {
	if l.Kind == KindVeth {
		return 2
	}
	return 100
}

// numberPort gives port i the lowest free port number of bridge m
// (find_portno()) and its port id (br_make_port_id(): priority 0x8 in
// the top nibble).
func (c *change) numberPort(m, i int) {
	used := map[uint16]bool{}
	for _, x := range c.portsOf(c.links[m].Index) {
		if j := c.find(x); j != i && c.links[j].Port != nil {
			used[c.links[j].Port.No] = true
		}
	}
	no := uint16(1)
	for used[no] {
		no++
	}
	pi := *c.links[i].Port
	pi.No = no
	pi.ID = 0x8000 | no
	pi.DesignatedPort = pi.ID
	c.links[i].Port = &pi
}

// release is br_del_if() / del_nbp(): promiscuity and allmulti drop
// (one RTM_NEWLINK with IFF_PROMISC changed), the port leaves
// (NETDEV_CHANGEUPPER), and the bridge recalculates.
func (c *change) release(i int) {
	p := &c.links[i]
	m := c.find(p.Master)
	p.Promiscuity--
	p.Allmulti--
	setBit(&p.Flags, IFF_PROMISC, p.Promiscuity > 0)
	setBit(&p.Flags, IFF_ALLMULTI, p.Allmulti > 0)
	c.msg(i, IFF_PROMISC)
	// del_nbp(): br_stp_disable_port() announces the port disabled, then
	// it leaves.
	pi := *c.links[i].Port
	pi.State = brStateDisabled
	c.links[i].Port = &pi
	c.brNotify(i, false)
	c.brNotify(i, true)
	p = &c.links[i]
	p.Master = 0
	p.Port = nil
	c.msg(i, 0)
	if m >= 0 {
		c.recalcMTU(m)
		c.featChange(m)
		if len(c.portsOf(c.links[m].Index)) == 0 {
			c.setCarrier(m, false) // no live port left
		}
		c.recalcBridge(m, false)
	}
}

// recalcMTU is br_mtu_auto_adjust(): a bridge whose MTU the user did not
// set follows its smallest port (1500 with none).
func (c *change) recalcMTU(m int) bool {
	b := &c.links[m]
	if b.MTUSet {
		return false
	}
	mtu := uint32(0)
	for _, x := range c.portsOf(b.Index) {
		if pm := c.links[c.find(x)].MTU; mtu == 0 || pm < mtu {
			mtu = pm
		}
	}
	if mtu == 0 {
		mtu = 1500
	}
	if mtu == b.MTU {
		return false
	}
	b.MTU = mtu
	c.setMTU6(m)
	c.event(EvChangeMTU, m)
	return true
}

// setMTU6 is what the inet and inet6 notifiers do to the device itself
// at NETDEV_CHANGEMTU (their address and route work is the caller's):
//
//   - inetdev_event(): below 68 (inetdev_valid_mtu()) the in_device is
//     destroyed (Inet4Conf nil); from 68 on a device without one gets a
//     new one, a copy of the namespace's default block (inetdev_init():
//     so lo loses the NOXFRM and NOPOLICY it got at NETDEV_REGISTER).
//   - addrconf_notify(): below 1280 (IPV6_MIN_MTU) addrconf_ifdown(dev,
//     dev != loopback) destroys every inet6_dev but lo's (Inet6.Conf nil)
//     and leaves mtu6 alone; from 1280 on mtu6 follows the device, and a
//     device without an inet6_dev gets a new one (ipv6_add_dev(): the
//     default block, so addrgenmode is eui64 again).
func (c *change) setMTU6(i int) {
	l := &c.links[i]
	const ipv4MinMTU, ipv6MinMTU = 68, 1280
	switch {
	case l.MTU < ipv4MinMTU:
		l.Inet4Conf = nil
	case l.Inet4Conf == nil:
		l.Inet4Conf = inet4AllDefaults
		if l.Flags&IFF_UP != 0 {
			l.Inet4MCStamp = nowCentis() // inetdev_init() → ip_mc_up()
		}
	}
	switch {
	case l.MTU < ipv6MinMTU:
		if l.Flags&IFF_LOOPBACK == 0 {
			l.Inet6 = Inet6Dev{}
		}
	case l.Inet6.Conf == nil:
		l.Inet6 = c.newInet6Dev(l)
	default:
		conf := append([]int32(nil), l.Inet6.Conf...)
		conf[v6MTU6] = int32(l.MTU)
		l.Inet6.Conf = conf
	}
}

// newInet6Dev is ipv6_add_dev() for a device that lost its inet6_dev: the
// namespace's default block with mtu6 the device's, accept_dad -1 on a
// NOARP or loopback device, ready when the device is up with carrier.
func (c *change) newInet6Dev(l *Link) Inet6Dev {
	conf := append([]int32(nil), inet6AllDefaults...)
	conf[v6MTU6] = int32(l.MTU)
	conf[v6AcceptDAD] = 1
	if l.Flags&(IFF_NOARP|IFF_LOOPBACK) != 0 {
		conf[v6AcceptDAD] = -1
	}
	now := nowCentis()
	d := Inet6Dev{Tstamp: now, ReachableTime: c.d.rnd.reachableTime(), RetransTime: 1000, Conf: conf, MCStamp: now}
	if l.Flags&IFF_UP != 0 && l.Carrier {
		d.Flags = ifReady
	}
	return d
}

// recalcBridge is br_stp_recalculate_bridge_id() and br_mtu_auto_adjust()
// after a port change: a bridge without a user-set address takes the
// smallest of its ports' (all zero once it has none); an RTM_NEWLINK when
// something changed (NETDEV_CHANGEADDR / NETDEV_CHANGEMTU).
func (c *change) recalcBridge(m int, mtu bool) {
	if m < 0 {
		return
	}
	changed := false
	if mtu && c.recalcMTU(m) {
		changed = true
	}
	b := &c.links[m]
	if !b.AddrSet {
		var best []byte
		for _, x := range c.portsOf(b.Index) {
			a := c.links[c.find(x)].Address
			if best == nil || bytes.Compare(a, best) < 0 {
				best = a
			}
		}
		if best == nil {
			best = zeroMAC
		}
		if !bytes.Equal(best, b.Address) {
			b.Address = append([]byte(nil), best...)
			changed = true
		}
	}
	c.setBridgeID(m)
	c.setGSOLimits(m)
	c.portStates(m, changed)
	if changed {
		c.msg(m, 0)
	}
}

// setBridgeID sets bridge m's id and root id from its priority and
// address (br_stp_change_bridge_id()); a bridge that never had a port or
// an address set keeps the all-zero id it starts with.
func (c *change) setBridgeID(m int) {
	b := &c.links[m]
	if !b.AddrSet && len(c.portsOf(b.Index)) == 0 && [6]byte(b.Bridge.BridgeID[2:]) == ([6]byte{}) {
		return // the address part stays zero (a priority alone goes in: applyBridgeOpts)
	}
	bi := *b.Bridge
	bi.BridgeID[0], bi.BridgeID[1] = byte(bi.Priority>>8), byte(bi.Priority)
	copy(bi.BridgeID[2:], b.Address)
	bi.RootID = bi.BridgeID
	b.Bridge = &bi
	for _, x := range c.portsOf(b.Index) {
		j := c.find(x)
		pi := *c.links[j].Port
		pi.RootID, pi.BridgeID = bi.BridgeID, bi.BridgeID
		c.links[j].Port = &pi
	}
}

// portStates is br_port_state_selection() with STP off: a port is
// forwarding while it and the bridge are up and it has carrier, else
// disabled; a bridge with ports has carrier while one forwards.
func (c *change) portStates(m int, force bool) {
	b := c.links[m]
	ports := c.portsOf(b.Index)
	live := false
	for _, x := range ports {
		j := c.find(x)
		p := c.links[j]
		st := uint8(brStateDisabled)
		if b.Flags&IFF_UP != 0 && p.Flags&IFF_UP != 0 && p.Carrier {
			st = brStateForwarding
			live = true
		}
		if p.Port.State != st {
			pi := *p.Port
			pi.State = st
			c.links[j].Port = &pi
			c.brNotify(j, false) // br_stp_enable_port() / br_stp_disable_port()
		}
	}
	if len(ports) > 0 || force {
		c.setCarrier(m, live)
	}
}

// bridgePass recomputes every bridge's port states and carrier after a
// change (the kernel does it from the ports' NETDEV_UP / NETDEV_DOWN /
// NETDEV_CHANGE: br_device_event()).
func (c *change) bridgePass() {
	for m := range c.links {
		if c.links[m].Kind == KindBridge {
			c.portStates(m, false)
		}
	}
}

// tsoMaxSize is TSO_MAX_SIZE, what a bridge starts from when it takes its
// ports' TSO limits.
const tsoMaxSize = 524280

// setGSOLimits is br_set_gso_limits(): once it has had ports, a bridge's
// TSO limits are the smallest of its ports'.
func (c *change) setGSOLimits(m int) {
	size, segs := uint32(tsoMaxSize), uint32(65535)
	for _, x := range c.portsOf(c.links[m].Index) {
		p := c.links[c.find(x)]
		size, segs = min(size, p.TSOMaxSize), min(segs, p.TSOMaxSegs)
	}
	c.links[m].TSOMaxSize, c.links[m].TSOMaxSegs = size, segs
}

// SetGroup is rtnl_group_changelink(): do_setlink() with the request on
// every device of group, in ifindex order, stopping at the first error.
func (d *Devices) SetGroup(group uint32, q *rtnl.LinkConf) ([]Event, *rtnl.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.begin()
	var err *rtnl.Error
	for _, x := range c.groupMembers(group) {
		if err = c.set(x, q); err != nil {
			break
		}
	}
	c.bridgePass()
	c.runLinkwatch()
	return c.publish(), err
}

// DeleteGroup is rtnl_group_dellink(): ENODEV for an empty group,
// EOPNOTSUPP when a member has no dellink (lo), else every member goes in
// one unregister_netdevice_many() (veth peers with them).
func (d *Devices) DeleteGroup(group uint32) ([]Event, *rtnl.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.begin()
	members := c.groupMembers(group)
	if len(members) == 0 {
		return nil, rtnl.Errno(syscall.ENODEV)
	}
	for _, x := range members {
		if c.links[c.find(x)].Kind == "" {
			return nil, rtnl.Errno(syscall.EOPNOTSUPP)
		}
	}
	var dels []int32
	for _, x := range members {
		i := c.find(x)
		if i < 0 {
			continue
		}
		l := c.links[i]
		if l.Kind == KindBridge {
			for _, p := range c.portsOf(x) {
				c.release(c.find(p))
			}
		}
		if c.links[i].Master != 0 {
			c.release(i)
		}
		dels = append(dels, x)
		if l.Kind == KindVeth && l.Peer != 0 && !slices.Contains(members, l.Peer) {
			dels = append(dels, l.Peer)
		}
	}
	var is []int
	for _, x := range dels {
		if i := c.find(x); i >= 0 && !slices.Contains(is, i) {
			is = append(is, i)
		}
	}
	c.unregister(is)
	c.bridgePass()
	c.runLinkwatch()
	return c.publish(), nil
}

func (c *change) groupMembers(group uint32) []int32 {
	var out []int32
	for _, l := range c.links {
		if l.Group == group {
			out = append(out, l.Index)
		}
	}
	return out
}

// bridgeOptsErr is br_changelink()'s refusals for o before anything is
// applied: IFLA_BR_VLAN_FILTERING without VLAN filtering support
// (EOPNOTSUPP, as measured), hello_time outside [1 s, 10 s] and max_age
// outside [6 s, 40 s] (br_set_hello_time(), br_set_max_age(): ERANGE).
func bridgeOptsErr(o *rtnl.BridgeConf) *rtnl.Error {
	has := func(t int) bool { return o.Has&(1<<t) != 0 }
	switch {
	case o.VlanFiltering:
		return rtnl.Errno(syscall.EOPNOTSUPP)
	case has(rtnl.IFLA_BR_HELLO_TIME) && (o.HelloTime < 100 || o.HelloTime > 1000):
		return rtnl.Errno(syscall.ERANGE)
	case has(rtnl.IFLA_BR_MAX_AGE) && (o.MaxAge < 600 || o.MaxAge > 4000):
		return rtnl.Errno(syscall.ERANGE)
	}
	return nil
}

// applyBridgeOpts is br_changelink() on bridge m for the options nlemu
// implements. A priority goes into the bridge id (and the root id) at
// once, even while the id's address part is still zero.
func (c *change) applyBridgeOpts(m int, o *rtnl.BridgeConf) {
	has := func(t int) bool { return o.Has&(1<<t) != 0 }
	bi := *c.links[m].Bridge
	if has(rtnl.IFLA_BR_FORWARD_DELAY) {
		bi.ForwardDelay = o.ForwardDelay
	}
	if has(rtnl.IFLA_BR_HELLO_TIME) {
		bi.HelloTime = o.HelloTime
	}
	if has(rtnl.IFLA_BR_MAX_AGE) {
		bi.MaxAge = o.MaxAge
	}
	if has(rtnl.IFLA_BR_AGEING_TIME) {
		bi.AgeingTime = o.Ageing
	}
	if has(rtnl.IFLA_BR_MCAST_SNOOPING) {
		bi.McastSnooping = o.McastSnooping
	}
	if has(rtnl.IFLA_BR_PRIORITY) {
		bi.Priority = o.Priority
		bi.BridgeID[0], bi.BridgeID[1] = byte(o.Priority>>8), byte(o.Priority)
		bi.RootID[0], bi.RootID[1] = bi.BridgeID[0], bi.BridgeID[1]
	}
	c.links[m].Bridge = &bi
	if has(rtnl.IFLA_BR_PRIORITY) {
		c.setBridgeID(m)
	}
}
