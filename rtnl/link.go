package rtnl

import (
	"github.com/mdlayher/netlink"
)

// Link attributes (IFLA_*) that nlemu reads or writes.
const (
	IFLA_ADDRESS         = 1
	IFLA_BROADCAST       = 2
	IFLA_IFNAME          = 3
	IFLA_MTU             = 4
	IFLA_QDISC           = 6
	IFLA_TXQLEN          = 13
	IFLA_OPERSTATE       = 16
	IFLA_LINKMODE        = 17
	IFLA_GROUP           = 27
	IFLA_PROMISCUITY     = 30
	IFLA_NUM_TX_QUEUES   = 31
	IFLA_NUM_RX_QUEUES   = 32
	IFLA_CARRIER         = 33
	IFLA_CARRIER_CHANGES = 35
	IFLA_MIN_MTU         = 50
	IFLA_MAX_MTU         = 51
	IFLA_ALT_IFNAME      = 53
	IfInfoLen            = 16
	ifinfoAttrBase       = NLMSG_HDRLEN + IfInfoLen
)

// LinkMsg is a typed RTM_NEWLINK / RTM_GETLINK message: struct ifinfomsg
// and the attributes nlemu uses.
type LinkMsg struct {
	Family uint8
	Type   uint16
	Index  int32
	Flags  uint32
	Change uint32

	Name    []byte // IFLA_IFNAME (request: trailing NUL stripped)
	HasName bool
	MTU     uint32
}

// DecodeLinkRequest decodes an RTM_GETLINK request: the ifinfomsg when the
// body holds one, and IFLA_IFNAME / IFLA_ALT_IFNAME.
func DecodeLinkRequest(m *Message) *LinkMsg {
	l := &LinkMsg{}
	d := m.Data
	if len(d) >= 1 {
		l.Family = d[0]
	}
	if len(d) < IfInfoLen {
		return l
	}
	l.Type = ne.Uint16(d[2:])
	l.Index = int32(ne.Uint32(d[4:]))
	l.Flags = ne.Uint32(d[8:])
	l.Change = ne.Uint32(d[12:])
	_ = walkAttrs(d[IfInfoLen:], ifinfoAttrBase, func(a rawAttr) *Error {
		if a.typ == IFLA_IFNAME || a.typ == IFLA_ALT_IFNAME {
			l.Name, l.HasName = trimNul(a.data), true
		}
		return nil
	})
	return l
}

// AppendLink appends an RTM_NEWLINK message describing a device, with the
// attributes a fresh kernel reports for a software device.
func AppendLink(dst []byte, flags uint16, seq, pid uint32, l *LinkMsg) []byte {
	var h [IfInfoLen]byte
	h[0] = l.Family
	ne.PutUint16(h[2:], l.Type)
	ne.PutUint32(h[4:], uint32(l.Index))
	ne.PutUint32(h[8:], l.Flags)
	ne.PutUint32(h[12:], l.Change)
	ae := netlink.NewAttributeEncoder()
	ae.String(IFLA_IFNAME, string(l.Name))
	ae.Uint32(IFLA_TXQLEN, 1000)
	ae.Uint8(IFLA_OPERSTATE, 0)
	ae.Uint8(IFLA_LINKMODE, 0)
	ae.Uint32(IFLA_MTU, l.MTU)
	ae.Uint32(IFLA_MIN_MTU, 0)
	ae.Uint32(IFLA_MAX_MTU, 0)
	ae.Uint32(IFLA_GROUP, 0)
	ae.Uint32(IFLA_PROMISCUITY, 0)
	ae.Uint32(IFLA_NUM_TX_QUEUES, 1)
	ae.Uint32(IFLA_NUM_RX_QUEUES, 1)
	ae.Uint8(IFLA_CARRIER, 1)
	ae.String(IFLA_QDISC, "noop")
	ae.Uint32(IFLA_CARRIER_CHANGES, 0)
	ae.Bytes(IFLA_ADDRESS, make([]byte, 6))
	ae.Bytes(IFLA_BROADCAST, make([]byte, 6))
	attrs, _ := ae.Encode()
	return AppendMessage(dst, RTM_NEWLINK, flags, seq, pid, h[:], attrs)
}
