package netdev

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// Link kinds nlemu creates (rtnl_link_ops->kind).
const (
	KindVeth   = "veth"
	KindBridge = "bridge"
	KindDummy  = "dummy"
)

// More device flags (<linux/if.h>).
const (
	IFF_BROADCAST = 0x2
	IFF_NOARP     = 0x80
	IFF_PROMISC   = 0x100
	IFF_MULTICAST = 0x1000
)

// More operational states.
const (
	OperLowerLayerDown = 3
)

// ARPHRD_ETHER.
const arphrdEther = 1

// v6AcceptDAD is DEVCONF_ACCEPT_DAD's index in IFLA_INET6_CONF.
const v6AcceptDAD = 27

// Bridge port states (BR_STATE_*).
const (
	brStateDisabled   = 0
	brStateForwarding = 3
)

// ifNameMax is IFNAMSIZ - 1.
const ifNameMax = 15

// numPossibleCPUs is num_possible_cpus(), which veth uses for its queue
// counts (veth_get_num_queues()).
var numPossibleCPUs = func() uint32 {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err == nil {
		n := 0
		for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
			lo, hi, ok := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			z := a
			var err2 error
			if ok {
				z, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || z < a {
				n = 0
				break
			}
			n += z - a + 1
		}
		if n > 0 {
			return uint32(n)
		}
	}
	return uint32(runtime.NumCPU())
}()

// randomMAC is eth_hw_addr_random(): a random unicast, locally
// administered address.
func randomMAC(r *source) []byte {
	b := make([]byte, 6)
	r.read(b) // the namespace's source (rand.go)
	b[0] = b[0]&^0x01 | 0x02
	return b
}

var broadcastMAC = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// etherDevice is a device after ether_setup() and alloc_netdev_mqs(): the
// common defaults of veth, bridge and dummy.
func etherDevice(kind string, r *source) Link {
	now := nowCentis()
	inet6 := append([]int32(nil), inet6AllDefaults...)
	inet6[v6MTU6] = 1500
	inet6[v6AcceptDAD] = 1 // ipv6_devconf_dflt.accept_dad (lo has -1)
	return Link{
		Kind: kind, Type: arphrdEther, Flags: IFF_BROADCAST | IFF_MULTICAST,
		MTU: 1500, MinMTU: 68, MaxMTU: 65535, TxQueueLen: 1000, OperState: OperUnknown,
		NumTxQueues: 1, NumRxQueues: 1,
		GSOMaxSegs: 65535, GSOMaxSize: 65536, GROMaxSize: 65536,
		GSOIPv4MaxSize: 65536, GROIPv4MaxSize: 65536,
		TSOMaxSize: 65536, TSOMaxSegs: 65535,
		Carrier: true, Address: randomMAC(r), Broadcast: broadcastMAC,
		Qdisc: "noop", Inet4Conf: inet4AllDefaults,
		Inet6: Inet6Dev{
			Tstamp: now, ReachableTime: r.reachableTime(), RetransTime: 1000,
			Conf: inet6, MCStamp: now,
		},
	}
}

// newDevice returns a fresh device of kind as its setup function leaves
// it (veth_setup(), br_dev_setup(), dummy_setup()).
func newDevice(kind string, r *source) Link {
	l := etherDevice(kind, r)
	switch kind {
	case KindVeth:
		l.NumTxQueues, l.NumRxQueues = numPossibleCPUs, numPossibleCPUs
		l.TSOMaxSize = 524280 // netif_set_tso_max_size(dev, GSO_MAX_SIZE) capped: measured
	case KindBridge:
		b := defaultBridge
		l.Bridge = &b
		l.NetnsImmutable = true // br_dev_setup(): dev->netns_immutable
	case KindDummy:
		// dummy_setup(): IFF_NOARP, no multicast, no MTU limits
		// (min_mtu = max_mtu = 0); carrier is never turned off, so its
		// operstate stays UNKNOWN. The kernel this was written on has no
		// dummy module: these are drivers/net/dummy.c's documented values.
		l.Flags = IFF_BROADCAST | IFF_NOARP
		l.MinMTU, l.MaxMTU = 0, 0
	}
	return l
}

// defaultBridge is a new bridge's br_fill_info() (br_dev_setup(),
// br_multicast_init()), as measured on 6.18.
var defaultBridge = rtnl.BridgeInfo{
	ForwardDelay: 1500, HelloTime: 200, MaxAge: 2000, AgeingTime: 30000,
	Priority: 0x8000, GroupAddr: [6]byte{0x01, 0x80, 0xc2},
	BoolOptMask: 0x1f, McastRouter: 1, McastSnooping: 1,
	McastHashElasticity: 16, McastHashMax: 4096,
	McastLastMemberCnt: 2, McastStartupQueryCnt: 2,
	McastIGMPVersion: 2, McastMLDVersion: 1,
	McastLastMemberIntvl: 100, McastMembershipIntvl: 26000, McastQuerierIntvl: 25500,
	McastQueryIntvl: 12500, McastQueryResponseIntvl: 1000, McastStartupQueryIntvl: 3124,
}

// change is one device change in progress: a private copy of the device
// table, the events so far and the linkwatch queue. The caller holds d.mu;
// publish stores the copy.
type change struct {
	d     *Devices
	links []Link
	evs   []Event
	watch []int32 // linkwatch_fire_event() order
}

func (d *Devices) begin() *change {
	return &change{d: d, links: append([]Link(nil), *d.links.Load()...)}
}

func (c *change) publish() []Event {
	links := c.links
	c.d.links.Store(&links)
	return c.evs
}

func (c *change) find(index int32) int {
	for i, l := range c.links {
		if l.Index == index {
			return i
		}
	}
	return -1
}

func (c *change) findName(name string) int {
	for i, l := range c.links {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// msg records an RTM_NEWLINK of device i with ifi_change ch.
func (c *change) msg(i int, ch uint32) {
	c.evs = append(c.evs, Event{Link: c.links[i], Msgs: []Notify{{Kind: NotifyNewLink, Link: c.links[i], Change: ch}}})
}

func (c *change) event(kind EventKind, i int) {
	c.evs = append(c.evs, Event{Kind: kind, Link: c.links[i]})
}

// setCarrier is netif_carrier_on() / netif_carrier_off(): a change counts
// and queues a linkwatch event.
func (c *change) setCarrier(i int, on bool) {
	l := &c.links[i]
	if l.Carrier == on {
		return
	}
	l.Carrier = on
	if on {
		l.CarrierUp++
	} else {
		l.CarrierDown++
	}
	c.watch = append(c.watch, l.Index)
}

// defaultOperstate is default_operstate() (net/core/link_watch.c): without
// carrier a device whose iflink is another device reports
// LOWERLAYERDOWN when that one has no carrier either.
func (c *change) defaultOperstate(l *Link) uint8 {
	if l.Carrier {
		return OperUp
	}
	if l.Peer == 0 {
		return OperDown
	}
	if p := c.find(l.Peer); p >= 0 && !c.links[p].Carrier {
		return OperLowerLayerDown
	}
	return OperDown
}

// runLinkwatch runs the queued linkwatch events now (linkwatch_do_dev()),
// where the kernel runs them from a work queue up to a second later:
// nlemu's operstate is synchronous. Each device gets rfc2863_policy() and,
// when it is up, netdev_state_change(): NETDEV_CHANGE and an RTM_NEWLINK.
func (c *change) runLinkwatch() {
	for len(c.watch) > 0 {
		idx := c.watch[0]
		c.watch = c.watch[1:]
		i := c.find(idx)
		if i < 0 {
			continue
		}
		l := &c.links[i]
		l.OperState = c.defaultOperstate(l)
		if l.Flags&IFF_UP != 0 {
			// netdev_state_change(): the NETDEV_CHANGE notifiers (addrconf's
			// routes) run before the RTM_NEWLINK (measured).
			c.event(EvChange, i)
			c.msg(i, 0)
		}
	}
}

// allocIndex is dev_index_reserve(): an explicit index if free (EBUSY
// otherwise), else the next free one after the last handed out.
func (c *change) allocIndex(want int32) (int32, *rtnl.Error) {
	if want > 0 {
		if c.find(want) >= 0 {
			return 0, rtnl.Errno(syscall.EBUSY)
		}
		return want, nil
	}
	n := c.d.lastIndex
	for {
		n++
		if n <= 0 {
			n = 1
		}
		if c.find(n) < 0 {
			c.d.lastIndex = n
			return n, nil
		}
	}
}

// validName is dev_valid_name().
func validName(name string) bool {
	if name == "" || len(name) > ifNameMax || name == "." || name == ".." {
		return false
	}
	for _, r := range []byte(name) {
		if r == '/' || r == ':' || r == ' ' || (r >= '\t' && r <= '\r') {
			return false
		}
	}
	return true
}

// resolveName is dev_get_valid_name() / dev_alloc_name(): a name with
// one %d gets the lowest free number; EINVAL for an invalid name, EEXIST
// for a taken one. self is the device being renamed (-1 for a new one).
func (c *change) resolveName(name string, self int) (string, *rtnl.Error) {
	if !validName(name) {
		return "", rtnl.Errno(syscall.EINVAL)
	}
	if p := strings.IndexByte(name, '%'); p >= 0 {
		if !strings.HasPrefix(name[p:], "%d") || strings.Contains(name[p+2:], "%") {
			return "", rtnl.Errno(syscall.EINVAL)
		}
		for n := 0; n < 32768; n++ {
			cand := name[:p] + strconv.Itoa(n) + name[p+2:]
			if len(cand) > ifNameMax {
				break
			}
			if j := c.findName(cand); j < 0 || j == self {
				return cand, nil
			}
		}
		return "", rtnl.Errno(syscall.ENFILE)
	}
	if j := c.findName(name); j >= 0 && j != self {
		return "", rtnl.Errno(syscall.EEXIST)
	}
	return name, nil
}

// validateMTU is dev_validate_mtu().
func validateMTU(l *Link, mtu uint32) *rtnl.Error {
	if int32(mtu) < 0 || mtu < l.MinMTU {
		return rtnl.Errorf(syscall.EINVAL, "mtu less than device minimum")
	}
	if l.MaxMTU > 0 && mtu > l.MaxMTU {
		return rtnl.Errorf(syscall.EINVAL, "mtu greater than device maximum")
	}
	return nil
}

// ErrUnknownKind is rtnl_newlink()'s answer for a kind with no
// rtnl_link_ops (and no module to load).
func ErrUnknownKind() *rtnl.Error { return rtnl.Errorf(syscall.EOPNOTSUPP, "Unknown device type") }

// KnownKind reports whether nlemu can create devices of kind.
func KnownKind(kind string) bool {
	return kind == KindVeth || kind == KindBridge || kind == KindDummy
}

// build is rtnl_create_link(): a new device of kind with the request's
// name (or kind%d), MTU, address, broadcast, txqlen and group, not yet
// registered.
func (c *change) build(kind string, q *rtnl.LinkConf) (Link, *rtnl.Error) {
	l := newDevice(kind, c.d.rnd)
	if q.HasMTU {
		if err := validateMTU(&l, q.MTU); err != nil {
			return l, err
		}
		// rtnl_create_link() sets dev->mtu directly: a bridge created
		// with an MTU still follows its ports (BROPT_MTU_SET_BY_USER is
		// only set by br_change_mtu()).
		l.MTU = q.MTU
	}
	if q.Address != nil {
		if len(q.Address) < 6 {
			return l, rtnl.Errno(syscall.EINVAL)
		}
		l.Address = append([]byte(nil), q.Address[:6]...)
		l.AddrSet = true
	}
	if q.Broadcast != nil && len(q.Broadcast) >= 6 {
		l.Broadcast = append([]byte(nil), q.Broadcast[:6]...)
	}
	if q.HasTxQLen {
		l.TxQueueLen = q.TxQLen
	}
	if q.HasGroup {
		l.Group = q.Group
	}
	if q.HasAlias {
		l.Alias = string(q.Alias)
	}
	name := kind + "%d"
	if q.HasName && len(q.Name) > 0 {
		name = string(q.Name)
	}
	n, err := c.resolveName(name, -1)
	if err != nil {
		return l, err
	}
	l.Name = n
	return l, nil
}

// register is register_netdevice(): the device gets its ifindex and is
// announced to the notifier chain (NETDEV_REGISTER).
func (c *change) register(l Link, want int32) (int, *rtnl.Error) {
	idx, err := c.allocIndex(want)
	if err != nil {
		return -1, err
	}
	l.Index = idx
	if l.MTU >= 1280 { // IPV6_MIN_MTU: addrconf sets mtu6 from dev->mtu
		l.Inet6.Conf = append([]int32(nil), l.Inet6.Conf...)
		l.Inet6.Conf[v6MTU6] = int32(l.MTU)
	} else {
		// addrconf_notify(NETDEV_REGISTER) makes no inet6_dev below
		// IPV6_MIN_MTU (measured: a veth created with mtu 1000 has no
		// addrgenmode and no inet6 netconf until its MTU is raised).
		l.Inet6 = Inet6Dev{}
	}
	if l.Kind == KindBridge {
		b := *l.Bridge
		l.Bridge = &b
	}
	// Keep ifindex order: dumps walk the devices by index
	// (for_each_netdev_dump()).
	i := len(c.links)
	for i > 0 && c.links[i-1].Index > idx {
		i--
	}
	c.links = append(c.links, Link{})
	copy(c.links[i+1:], c.links[i:])
	c.links[i] = l
	c.event(EvRegister, i)
	return i, nil
}

// configure is rtnl_configure_link(): ifi_flags, then the first
// RTM_NEWLINK (change ^0) and NETDEV_UP when the request opened it.
func (c *change) configure(i int, q *rtnl.LinkConf) *rtnl.Error {
	opened := false
	if q.Flags != 0 || q.Change != 0 {
		want := combineFlags(c.links[i].WireFlags(), q.Flags, q.Change)
		l := &c.links[i]
		l.Flags = want&plainFlags | l.Flags&^plainFlags
		if want&IFF_UP != 0 {
			c.open(i)
			opened = true
		}
		l = &c.links[i]
		if want&IFF_PROMISC != 0 {
			l.GFlags |= IFF_PROMISC
			l.Promiscuity++
			l.Flags |= IFF_PROMISC
		}
		if want&IFF_ALLMULTI != 0 {
			l.GFlags |= IFF_ALLMULTI
			l.Allmulti++
			l.Flags |= IFF_ALLMULTI
		}
	}
	c.msg(i, ^uint32(0))
	if opened {
		c.upDone(i)
	}
	return nil
}

// upDone is what NETDEV_UP does to the device itself, after the
// RTM_NEWLINK was built: addrconf marks the inet6_dev ready and stamps it,
// ip_mc_up() joins 224.0.0.1.
func (c *change) upDone(i int) {
	l := &c.links[i]
	l.Inet6.Tstamp = nowCentis()
	l.Inet6.Flags |= ifReady
	l.Inet4MCStamp = l.Inet6.Tstamp
	c.event(EvUp, i)
}

// downDone is NETDEV_DOWN's part on the device (addrconf_ifdown()).
func (c *change) downDone(i int) {
	l := &c.links[i]
	l.Inet6.Tstamp = nowCentis()
	l.Inet6.Flags &^= ifReady
	c.event(EvDown, i)
}

// combineFlags is rtnl_dev_combine_flags().
func combineFlags(cur, flags, change uint32) uint32 {
	if change == 0 {
		return flags
	}
	return (flags & change) | (cur &^ change)
}

// Create is rtnl_newlink() for a device that does not exist: kind must be
// KnownKind. It returns the events in the kernel's order (for a veth: the
// peer's register and RTM_NEWLINK, then the device's). A failure after the
// peer was registered unregisters it again, as veth_newlink() does, and
// the events say so.
func (d *Devices) Create(kind string, q *rtnl.LinkConf) ([]Event, *rtnl.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.begin()
	if !KnownKind(kind) {
		return nil, ErrUnknownKind()
	}
	if q.HasName && len(q.Name) == 0 {
		return nil, rtnl.Errno(syscall.EINVAL)
	}
	l, err := c.build(kind, q)
	if err != nil {
		return nil, err
	}
	peer := -1
	if kind == KindVeth {
		// veth_newlink(): the peer is created and registered first, from
		// VETH_INFO_PEER's attributes or, without it, the device's own.
		pq := q.Peer
		if pq == nil {
			pq = &rtnl.LinkConf{HasMTU: q.HasMTU, MTU: q.MTU, HasTxQLen: q.HasTxQLen, TxQLen: q.TxQLen}
		}
		if !pq.HasName {
			pq.Name, pq.HasName = []byte("veth%d"), true
		}
		p, err := c.build(KindVeth, pq)
		if err != nil {
			return nil, err
		}
		// The device's name is checked only at its own registration, after
		// the peer took its name.
		peer, err = c.register(p, pq.Index)
		if err != nil {
			return nil, err
		}
		c.setCarrier(peer, false) // before rtnl_configure_link(peer), as measured
		if err := c.configure(peer, pq); err != nil {
			return nil, err
		}
		if q.Address == nil {
			l.Address = randomMAC(c.d.rnd)
		}
		name := string(q.Name)
		if !q.HasName || name == "" {
			name = "veth%d"
		}
		n, err := c.resolveName(name, -1)
		if err == nil && n == c.links[peer].Name {
			err = rtnl.Errno(syscall.EEXIST)
		}
		if err != nil {
			c.unregister([]int{peer})
			return c.publish(), err
		}
		l.Name = n
	}
	var peerIndex int32
	if peer >= 0 {
		peerIndex = c.links[peer].Index
	}
	if kind == KindBridge && q.Bridge != nil {
		// br_dev_newlink(): br_changelink() runs after
		// register_netdevice(); when it fails the bridge goes again
		// unannounced, its ifindex consumed.
		if err := bridgeOptsErr(q.Bridge); err != nil {
			if _, ierr := c.allocIndex(q.Index); ierr == nil {
				c.publish()
			}
			return nil, err
		}
	}
	i, err := c.register(l, q.Index)
	if err != nil {
		if peer >= 0 {
			c.unregister([]int{peer})
			return c.publish(), err
		}
		return nil, err
	}
	if kind == KindBridge && q.Bridge != nil {
		c.applyBridgeOpts(i, q.Bridge)
	}
	// Positions move as devices are inserted in ifindex order.
	peer = c.find(peerIndex)
	if c.links[i].Kind == KindBridge && c.links[i].AddrSet {
		// br_dev_newlink(): br_stp_change_bridge_id(), whose
		// br_port_state_selection() finds no live port: carrier off.
		c.setBridgeID(i)
		c.setCarrier(i, false)
	}
	if peer >= 0 {
		c.links[peer].Peer = c.links[i].Index
		c.links[i].Peer = c.links[peer].Index
		c.setCarrier(i, false)
	}
	if err := c.configure(i, q); err != nil {
		return c.publish(), err
	}
	if q.HasMaster && q.Master != 0 {
		if err := c.setMaster(i, int32(q.Master)); err != nil {
			// rtnl_newlink_create(): a failed do_set_master() goes to
			// out_unregister, which takes the new device away again
			// (a veth with its peer, veth_dellink()): nothing stays
			// (TestNewLinkUnknownMasterCreatesNothing).
			gone := []int{c.find(c.links[i].Index)}
			if p := c.find(peerIndex); peerIndex != 0 && p >= 0 {
				gone = append(gone, p)
			}
			c.unregister(gone)
			return c.publish(), err
		}
	}
	c.bridgePass()
	c.runLinkwatch()
	return c.publish(), nil
}

// open is __dev_open() for device i: IFF_UP, the driver's ndo_open
// (veth_open(): carrier on both ends once both are up) and dev_activate()
// (noqueue for these IFF_NO_QUEUE devices).
func (c *change) open(i int) {
	l := &c.links[i]
	l.Flags |= IFF_UP
	l.Qdisc = "noqueue"
	if l.Kind == KindVeth && l.Peer != 0 {
		if p := c.find(l.Peer); p >= 0 && c.links[p].Flags&IFF_UP != 0 {
			c.setCarrier(i, true)
			c.setCarrier(p, true)
		}
	}
}

// close is __dev_close() for device i (veth_close(): carrier off on both
// ends).
func (c *change) close(i int) {
	l := &c.links[i]
	l.Flags &^= IFF_UP
	if l.Kind == KindVeth {
		c.setCarrier(i, false)
		if p := c.find(l.Peer); p >= 0 {
			c.setCarrier(p, false)
		}
	}
}

// unregister is unregister_netdevice_many() for devices is: every open one
// is closed (dev_close_many(): RTM_NEWLINK with change IFF_UP|IFF_RUNNING,
// NETDEV_DOWN), then each in turn gets NETDEV_UNREGISTER and its
// RTM_DELLINK, built after dev_shutdown() (qdisc noop) and after the
// protocols freed their state (an empty IFLA_AF_SPEC).
func (c *change) unregister(is []int) {
	idx := make([]int32, len(is))
	for k, i := range is {
		idx[k] = c.links[i].Index
	}
	// veth_dellink() clears both peer pointers before the devices are
	// queued, so every message below reports IFLA_LINK 0.
	for _, x := range idx {
		if i := c.find(x); i >= 0 && c.links[i].Kind == KindVeth {
			c.links[i].Peer = 0
		}
		if p := c.findPeerOf(x); p >= 0 {
			c.links[p].Peer = 0
		}
	}
	var closed []int32
	for _, x := range idx {
		if i := c.find(x); i >= 0 && c.links[i].Flags&IFF_UP != 0 {
			c.close(i)
			closed = append(closed, x)
		}
	}
	// dev_close_many() sends its messages after closing them all.
	for _, x := range closed {
		i := c.find(x)
		c.msg(i, IFF_UP|IFF_RUNNING)
		c.downDone(i)
	}
	for _, x := range idx {
		i := c.find(x)
		if i < 0 {
			continue
		}
		last := c.links[i]
		c.evs = append(c.evs, Event{Kind: EvUnregister, Link: last})
		last.Qdisc = "noop"
		c.evs = append(c.evs, Event{Link: last, Msgs: []Notify{{Kind: NotifyDelLink, Link: last, Change: ^uint32(0)}}})
		c.links = append(c.links[:i:i], c.links[i+1:]...)
	}
	// Queued linkwatch events of the devices that went are dropped.
}

func (c *change) findPeerOf(x int32) int {
	for i, l := range c.links {
		if l.Peer == x {
			return i
		}
	}
	return -1
}

// String renders an event for test failures.
func (ev Event) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d:%s", ev.Kind, ev.Link.Index, ev.Link.Name)
	for _, n := range ev.Msgs {
		fmt.Fprintf(&b, " msg%d(%d:%s ch %#x)", n.Kind, n.Link.Index, n.Link.Name, n.Change)
	}
	return b.String()
}
