package rtnl

import "syscall"

// LinkConf is what an RTM_NEWLINK / RTM_SETLINK asks of a device: the
// ifinfomsg and the attributes rtnl_newlink() and do_setlink() act on, as
// typed values. Attributes nlemu does not implement are not dropped: the
// offset of the first is in Unsupported, so that the handler refuses the
// request instead of half-applying it.
type LinkConf struct {
	Family        uint8
	Index         int32
	Flags, Change uint32
	// Warning is the extack text a request's liberal parse leaves behind
	// ("bytes leftover after parsing attributes", __nla_validate_parse()):
	// the ACK of a success carries it, an error without text keeps it.
	Warning string

	Name       []byte // IFLA_IFNAME, trailing NUL stripped
	HasName    bool
	AltName    []byte // IFLA_ALT_IFNAME
	HasAltName bool
	MTU        uint32
	HasMTU     bool
	Address    []byte // IFLA_ADDRESS (nil: absent)
	Broadcast  []byte // IFLA_BROADCAST
	TxQLen     uint32
	HasTxQLen  bool
	Group      uint32
	HasGroup   bool
	Master     uint32
	HasMaster  bool
	IfLink     uint32 // IFLA_LINK
	HasIfLink  bool
	Alias      []byte // IFLA_IFALIAS, up to its first NUL
	HasAlias   bool

	// AddrGenMode is IFLA_AF_SPEC/AF_INET6/IFLA_INET6_ADDR_GEN_MODE
	// (`ip link set DEV addrgenmode none`).
	AddrGenMode    uint8
	HasAddrGenMode bool

	HasLinkInfo bool
	Kind        string // IFLA_INFO_KIND (nla_strscpy()'d)
	HasInfoData bool
	// Peer is a veth's VETH_INFO_PEER: its own ifinfomsg and attributes.
	Peer *LinkConf
	// Bridge is a bridge's IFLA_INFO_DATA (the options nlemu implements).
	Bridge *BridgeConf

	Unsupported uint32
	// AFSpecErr is validate_linkmsg()'s refusal of IFLA_AF_SPEC, which the
	// handler returns once it has found the device (failing that, the
	// refusal do_setlink() gives for an attribute no nlemu device can act
	// on, linkAttrs): EAFNOSUPPORT for a
	// family without rtnl_af_ops, inet6_validate_link_af()'s EINVAL for an
	// AF_INET6 nest with neither IFLA_INET6_TOKEN nor
	// IFLA_INET6_ADDR_GEN_MODE (keeping the nested parse's leftover
	// warning as its text).
	AFSpecErr *Error
}

// BridgeConf is the part of a bridge's IFLA_INFO_DATA nlemu applies
// (br_changelink()); Has holds bit t for each IFLA_BR_* type t given.
type BridgeConf struct {
	Has                                     uint64
	ForwardDelay, HelloTime, MaxAge, Ageing uint32
	StpState                                uint32
	Priority                                uint16
	McastSnooping                           uint8
	// VlanFiltering is IFLA_BR_VLAN_FILTERING, which a kernel without
	// CONFIG_BRIDGE_VLAN_FILTERING (the one measured) refuses.
	VlanFiltering bool
}

// Bridge option attributes (IFLA_BR_*) nlemu reads.
const (
	IFLA_BR_FORWARD_DELAY  = 1
	IFLA_BR_HELLO_TIME     = 2
	IFLA_BR_MAX_AGE        = 3
	IFLA_BR_AGEING_TIME    = 4
	IFLA_BR_STP_STATE      = 5
	IFLA_BR_PRIORITY       = 6
	IFLA_BR_VLAN_FILTERING = 7
	IFLA_BR_MCAST_SNOOPING = 23
)

// u32Policy is NLA_U32 for policy errors.
var u32Policy = policy{kind: polU32}

func u32Err(a rawAttr) *Error {
	return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off, Policy: policyNest(u32Policy)}
}

// DecodeLinkConf decodes an RTM_NEWLINK / RTM_SETLINK request
// (nlmsg_parse_deprecated() with ifla_policy, then ifla_info_policy for
// IFLA_LINKINFO and, for a veth, veth_policy and the peer's ifinfomsg).
func DecodeLinkConf(m *Message) (*LinkConf, *Error) {
	d := m.Data
	if len(d) < IfInfoLen {
		return nil, Errorf(syscall.EINVAL, "Invalid header length")
	}
	c, err := decodeLinkConf(d, NLMSG_HDRLEN, uint16(m.Header.Type) == RTM_NEWLINK)
	if err == nil && AttrsLeftover(d[IfInfoLen:]) > 0 {
		c.Warning = "bytes leftover after parsing attributes"
	}
	return c, err
}

// decodeLinkConf parses an ifinfomsg and its attributes starting at offset
// base of the message; create is true for an RTM_NEWLINK, which may
// create the device (linkAttr).
func decodeLinkConf(d []byte, base int, create bool) (*LinkConf, *Error) {
	c := &LinkConf{Family: d[0], Index: int32(ne.Uint32(d[4:])), Flags: ne.Uint32(d[8:]), Change: ne.Uint32(d[12:])}
	unsupported := func(a rawAttr) {
		if c.Unsupported == 0 {
			c.Unsupported = a.off
		}
	}
	var linkinfo *rawAttr
	la := linkAttrs{create: create, bridge: c.Family == AF_BRIDGE}
	err := walkAttrs(d[IfInfoLen:], base+IfInfoLen, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_IFNAME:
			// ifla_policy: NLA_STRING, which validate_nla() refuses empty.
			if len(a.data) == 0 {
				return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off, Policy: policyNest(ifnamePolicy)}
			}
			if err := validateIfname(a); err != nil {
				return err
			}
			c.Name, c.HasName = cutNul(a.data), true
		case IFLA_ALT_IFNAME:
			if err := altIfnamePolicy.validate(a); err != nil {
				return err
			}
			c.AltName, c.HasAltName = cutNul(a.data), true
		case IFLA_MTU, IFLA_TXQLEN, IFLA_GROUP, IFLA_MASTER, IFLA_LINK, IFLA_EXT_MASK:
			if len(a.data) < 4 {
				return u32Err(a)
			}
			v := ne.Uint32(a.data)
			switch a.typ {
			case IFLA_MTU:
				c.MTU, c.HasMTU = v, true
			case IFLA_TXQLEN:
				c.TxQLen, c.HasTxQLen = v, true
			case IFLA_GROUP:
				c.Group, c.HasGroup = v, true
			case IFLA_MASTER:
				c.Master, c.HasMaster = v, true
			case IFLA_LINK:
				c.IfLink, c.HasIfLink = v, true
			}
		case IFLA_IFALIAS:
			// ifla_policy: NLA_BINARY of at most IFALIASZ-1 (255) bytes
			// (so that an empty alias removes it); dev_set_alias()
			// strscpy()s it, up to the first NUL.
			if err := (iflaEntry{kind: iflaBinary, max: 255}).validate(a); err != nil {
				return err
			}
			c.Alias, c.HasAlias = cutNul(a.data), true
		case IFLA_ADDRESS:
			c.Address = a.data
		case IFLA_BROADCAST:
			c.Broadcast = a.data
		case IFLA_LINKINFO:
			// ifla_policy: NLA_NESTED, empty or at least an attribute
			// header (validate_nla()).
			if n := len(a.data); n > 0 && n < nlaHdrLen {
				return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off, Policy: policyNest(policy{kind: polNested})}
			}
			la := a
			linkinfo = &la
		case IFLA_AF_SPEC:
			if err := (iflaEntry{kind: iflaNested}).validate(a); err != nil {
				return err
			}
			// rtnl_set_link_af(): each family's set_link_af. nlemu takes
			// inet6's IFLA_INET6_ADDR_GEN_MODE (inet6_set_link_af());
			// anything else is refused.
			return walkAttrs(a.data, int(a.off)+nlaHdrLen, func(f rawAttr) *Error {
				switch f.typ {
				case AF_INET6:
				case AF_INET, AF_BRIDGE, afMPLS:
					// Families with rtnl_af_ops nlemu does not apply.
					unsupported(f)
					return nil
				default:
					// rtnl_af_lookup() found no ops.
					if c.AFSpecErr == nil {
						c.AFSpecErr = Errno(syscall.EAFNOSUPPORT)
					}
					return nil
				}
				var token, mode bool
				defer func() {
					if !token && !mode && c.AFSpecErr == nil {
						c.AFSpecErr = Errno(syscall.EINVAL)
						if AttrsLeftover(f.data) > 0 {
							c.AFSpecErr.Msg = "bytes leftover after parsing attributes"
						}
					}
				}()
				return walkAttrs(f.data, int(f.off)+nlaHdrLen, func(g rawAttr) *Error {
					token = token || g.typ == IFLA_INET6_TOKEN
					mode = mode || g.typ == IFLA_INET6_ADDR_GEN_MODE
					if g.typ != IFLA_INET6_ADDR_GEN_MODE {
						unsupported(g)
						return nil
					}
					if len(g.data) < 1 {
						return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: g.off, Policy: policyNest(policy{kind: polU8})}
					}
					c.AddrGenMode, c.HasAddrGenMode = g.data[0], true
					return nil
				})
			})
		default:
			// ifla_policy's other entries: policy errors first, then
			// the attributes do_setlink() never acts on are ignored.
			return la.add(a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only rtnl_newlink() reads IFLA_LINKINFO: do_setlink() (RTM_SETLINK)
	// and rtnl_dellink() see it through ifla_policy alone.
	if linkinfo != nil && create {
		if err := c.decodeLinkInfo(*linkinfo, base, create); err != nil {
			return nil, err
		}
	}
	la.finish(c)
	return c, nil
}

// afMPLS is AF_MPLS, whose rtnl_af_ops the mpls module registers.
const afMPLS = 28

// decodeLinkInfo is the ifla_info_policy parse of IFLA_LINKINFO and the
// kind's own policy for IFLA_INFO_DATA.
func (c *LinkConf) decodeLinkInfo(li rawAttr, base int, create bool) *Error {
	c.HasLinkInfo = true
	var data *rawAttr
	err := walkAttrs(li.data, int(li.off)+nlaHdrLen, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_INFO_KIND:
			// ifla_info_policy: NLA_STRING of at least one byte; the
			// nested parse has no extack, so the ERANGE has no text.
			if len(a.data) < 1 {
				return Errno(syscall.ERANGE)
			}
			// nla_strscpy() into char kind[MODULE_NAME_LEN]: the name ends
			// at the first NUL.
			k := a.data
			for i, b := range k {
				if b == 0 {
					k = k[:i]
					break
				}
			}
			c.Kind = string(k)
		case IFLA_INFO_DATA:
			// ifla_info_policy: NLA_NESTED (validate_nla(), no extack).
			if n := len(a.data); n > 0 && n < nlaHdrLen {
				return Errno(syscall.ERANGE)
			}
			da := a
			data = &da
		case IFLA_INFO_SLAVE_KIND:
			// ifla_info_policy: NLA_STRING (no extack); rtnl_newlink()
			// never reads it (a dump-only attribute).
			if len(a.data) < 1 {
				return Errno(syscall.ERANGE)
			}
		case IFLA_INFO_SLAVE_DATA:
			// The port's options for its master's kind
			// (m_ops->slave_changelink()), which nlemu does not model.
			if c.Unsupported == 0 {
				c.Unsupported = a.off
			}
		default:
			// IFLA_INFO_UNSPEC, IFLA_INFO_XSTATS and every type above
			// IFLA_INFO_MAX: nla_parse_nested_deprecated() ignores the
			// types above its maxtype and rtnl_newlink() reads none of
			// them (measured: accepted, nothing changed).
		}
		return nil
	})
	if err != nil || data == nil {
		return err
	}
	c.HasInfoData = true
	if c.Kind == "bridge" {
		return c.decodeBridge(*data)
	}
	if c.Kind != "veth" {
		if len(data.data) > 0 && c.Unsupported == 0 {
			c.Unsupported = data.off
		}
		return nil
	}
	return walkAttrs(data.data, int(data.off)+nlaHdrLen, func(a rawAttr) *Error {
		if a.typ != VETH_INFO_PEER {
			return nil
		}
		if len(a.data) < IfInfoLen {
			// veth_policy: VETH_INFO_PEER { .len = sizeof(struct ifinfomsg) }
			return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off}
		}
		p, err := decodeLinkConf(a.data, int(a.off)+nlaHdrLen, create)
		if err != nil {
			return err
		}
		c.Peer = p
		if p.Unsupported != 0 && c.Unsupported == 0 {
			c.Unsupported = p.Unsupported
		}
		return nil
	})
}

// decodeBridge is br_policy's parse of a bridge's IFLA_INFO_DATA for the
// options nlemu applies; the others are reported in Unsupported.
func (c *LinkConf) decodeBridge(data rawAttr) *Error {
	b := &BridgeConf{}
	c.Bridge = b
	return walkAttrs(data.data, int(data.off)+nlaHdrLen, func(a rawAttr) *Error {
		short := func(n int, k policyKind) *Error {
			if len(a.data) < n {
				return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off, Policy: policyNest(policy{kind: k})}
			}
			return nil
		}
		switch a.typ {
		case IFLA_BR_FORWARD_DELAY, IFLA_BR_HELLO_TIME, IFLA_BR_MAX_AGE, IFLA_BR_AGEING_TIME, IFLA_BR_STP_STATE:
			if err := short(4, polU32); err != nil {
				return err
			}
			v := ne.Uint32(a.data)
			switch a.typ {
			case IFLA_BR_FORWARD_DELAY:
				b.ForwardDelay = v
			case IFLA_BR_HELLO_TIME:
				b.HelloTime = v
			case IFLA_BR_MAX_AGE:
				b.MaxAge = v
			case IFLA_BR_AGEING_TIME:
				b.Ageing = v
			case IFLA_BR_STP_STATE:
				b.StpState = v
				if v != 0 && c.Unsupported == 0 {
					c.Unsupported = a.off // STP's port states and timers are not emulated
				}
			}
		case IFLA_BR_PRIORITY:
			if err := short(2, polU16); err != nil {
				return err
			}
			b.Priority = ne.Uint16(a.data)
		case IFLA_BR_MCAST_SNOOPING:
			if err := short(1, polU8); err != nil {
				return err
			}
			b.McastSnooping = a.data[0]
		case IFLA_BR_VLAN_FILTERING:
			b.VlanFiltering = true
		default:
			if c.Unsupported == 0 {
				c.Unsupported = a.off
			}
			return nil
		}
		if a.typ < 64 {
			b.Has |= 1 << a.typ
		}
		return nil
	})
}

// cutNul is b up to its first NUL: nla_strscpy(), which rtnl_newlink()
// and do_setlink() copy IFLA_IFNAME and IFLA_ALT_IFNAME with (measured:
// IFLA_IFNAME "\x01\0\0\0" names the device "\x01").
func cutNul(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
