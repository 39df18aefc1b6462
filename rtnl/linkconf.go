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

	Unsupported uint32
}

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
	return decodeLinkConf(d, NLMSG_HDRLEN)
}

// decodeLinkConf parses an ifinfomsg and its attributes starting at offset
// base of the message.
func decodeLinkConf(d []byte, base int) (*LinkConf, *Error) {
	c := &LinkConf{Family: d[0], Index: int32(ne.Uint32(d[4:])), Flags: ne.Uint32(d[8:]), Change: ne.Uint32(d[12:])}
	unsupported := func(a rawAttr) {
		if c.Unsupported == 0 {
			c.Unsupported = a.off
		}
	}
	var linkinfo *rawAttr
	err := walkAttrs(d[IfInfoLen:], base+IfInfoLen, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_IFNAME:
			if err := validateIfname(a); err != nil {
				return err
			}
			c.Name, c.HasName = trimNul(a.data), true
		case IFLA_ALT_IFNAME:
			c.AltName, c.HasAltName = trimNul(a.data), true
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
			// ifla_policy: NLA_STRING of at most IFALIASZ-1 (255) bytes.
			if len(trimNul(a.data)) > 255 {
				return &Error{Errno: syscall.ERANGE, Msg: policyFailed, Offset: a.off, Policy: policyNest(policy{kind: polString})}
			}
			c.Alias, c.HasAlias = trimNul(a.data), true
		case IFLA_ADDRESS:
			c.Address = a.data
		case IFLA_BROADCAST:
			c.Broadcast = a.data
		case IFLA_LINKINFO:
			la := a
			linkinfo = &la
		case IFLA_AF_SPEC:
			// rtnl_set_link_af(): each family's set_link_af. nlemu takes
			// inet6's IFLA_INET6_ADDR_GEN_MODE (inet6_set_link_af());
			// anything else is refused.
			return walkAttrs(a.data, int(a.off)+nlaHdrLen, func(f rawAttr) *Error {
				if f.typ != AF_INET6 {
					unsupported(f)
					return nil
				}
				return walkAttrs(f.data, int(f.off)+nlaHdrLen, func(g rawAttr) *Error {
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
			unsupported(a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if linkinfo != nil {
		if err := c.decodeLinkInfo(*linkinfo, base); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// decodeLinkInfo is the ifla_info_policy parse of IFLA_LINKINFO and the
// kind's own policy for IFLA_INFO_DATA.
func (c *LinkConf) decodeLinkInfo(li rawAttr, base int) *Error {
	c.HasLinkInfo = true
	var data *rawAttr
	err := walkAttrs(li.data, int(li.off)+nlaHdrLen, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_INFO_KIND:
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
			da := a
			data = &da
		default:
			if c.Unsupported == 0 {
				c.Unsupported = a.off
			}
		}
		return nil
	})
	if err != nil || data == nil {
		return err
	}
	c.HasInfoData = true
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
		p, err := decodeLinkConf(a.data, int(a.off)+nlaHdrLen)
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
