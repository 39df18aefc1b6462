package rtnl

import "syscall"

// iflaKind is the nla_policy type of an ifla_policy entry
// (net/core/rtnetlink.c at 6.18) for the attributes linkAttr handles.
type iflaKind uint8

const (
	iflaNone         iflaKind = iota // no entry: NLA_UNSPEC, unchecked
	iflaU8                           // NLA_U8
	iflaU32                          // NLA_U32 (min: NLA_POLICY_MIN)
	iflaS32                          // NLA_S32 (min: NLA_POLICY_MIN)
	iflaBinary                       // NLA_BINARY of at most max bytes
	iflaNested                       // NLA_NESTED
	iflaNulString                    // NLA_NUL_STRING
	iflaMinLen                       // { .len = N }: at least max bytes
	iflaReject                       // NLA_REJECT
	iflaString                       // NLA_STRING of at most max bytes
	iflaStrictUnspec                 // no entry at or above strict_start_type
)

// iflaAct is what do_setlink() / rtnl_newlink() do with a well-formed
// attribute nlemu has no field for.
type iflaAct uint8

const (
	// actIgnore: never read by do_setlink() or rtnl_newlink_create(), or
	// read only as a dump filter: accepted and dropped, as the kernel.
	actIgnore iflaAct = iota
	// actUnsupported: a real effect nlemu does not model: EOPNOTSUPP.
	actUnsupported
	// actSetOnly: ignored by do_setlink(), but rtnl_create_link() /
	// rtnl_newlink() act on it when a device is created.
	actSetOnly
	// actEmptyNest: a nest whose attributes would act (IFLA_VFINFO_LIST's
	// VFs, IFLA_XDP's program); with no attribute in it, nothing happens.
	actEmptyNest
	// actOperstate: set_operstate() changes the state only for the
	// transitions to IF_OPER_UP, IF_OPER_DORMANT and IF_OPER_TESTING.
	actOperstate
	// actZero: the value 0 is the state every nlemu device has
	// (IFLA_LINKMODE's IF_LINK_MODE_DEFAULT); another would show in dumps.
	actZero
	// actNoDevOp: do_setlink() calls a device operation none of the
	// devices nlemu models has (ndo_set_vf_port, ndo_change_carrier,
	// change_proto_down) and fails with the kernel's errno and text;
	// rtnl_create_link() never reads the attribute.
	actNoDevOp
	// actNetnsid: a netnsid, which nlemu namespaces never assign
	// (rtnl_net_getid() answers NETNSA_NSID -1): get_net_ns_by_id() finds
	// nothing, EINVAL.
	actNetnsid
	// actQueues: IFLA_NUM_TX_QUEUES / IFLA_NUM_RX_QUEUES: ignored by
	// do_setlink(); rtnl_create_link() sizes the new device with it, which
	// nlemu honours only as the bridge's own single queue.
	actQueues
	// actCreateUnsupported: ignored by do_setlink(); creating a device
	// with it fails with EOPNOTSUPP and no text (measured, IFLA_PROTINFO).
	actCreateUnsupported
)

// iflaEntry is one row of the table: the policy and the action.
type iflaEntry struct {
	kind iflaKind
	max  uint32 // iflaBinary / iflaMinLen length
	min  int64  // iflaU32 / iflaS32 NLA_POLICY_MIN (0: the type's own)
	act  iflaAct
}

// iflaTable covers every ifla_policy type that decodeLinkConf has no case
// of its own for; types it lacks (0, above IFLA_MAX) are skipped by the
// liberal parse. Measured against Linux 6.18 with an RTM_SETLINK on lo of
// each type with 0, 1, 4 and 8 bytes (integration/linkattrs_diff_test.go).
var iflaTable = map[uint16]iflaEntry{
	IFLA_QDISC:                      {act: actIgnore},                                 // 6: no entry, never read
	IFLA_STATS:                      {act: actIgnore},                                 // 7: read-only counters
	8:                               {act: actIgnore},                                 // IFLA_COST
	9:                               {act: actIgnore},                                 // IFLA_PRIORITY
	11:                              {act: actIgnore},                                 // IFLA_WIRELESS
	IFLA_PROTINFO:                   {act: actCreateUnsupported},                      // 12: do_setlink() never reads it
	IFLA_MAP:                        {kind: iflaMinLen, max: 32, act: actUnsupported}, // ndo_set_config
	15:                              {kind: iflaU32, act: actIgnore},                  // IFLA_WEIGHT
	IFLA_OPERSTATE:                  {kind: iflaU8, act: actOperstate},
	IFLA_LINKMODE:                   {kind: iflaU8, act: actZero},
	19:                              {kind: iflaU32, act: actUnsupported},  // IFLA_NET_NS_PID: a move
	21:                              {act: actIgnore},                      // IFLA_NUM_VF
	22:                              {kind: iflaNested, act: actEmptyNest}, // IFLA_VFINFO_LIST
	IFLA_STATS64:                    {act: actIgnore},
	24:                              {kind: iflaNested, act: actNoDevOp},  // IFLA_VF_PORTS
	25:                              {kind: iflaNested, act: actNoDevOp},  // IFLA_PORT_SELF
	28:                              {kind: iflaU32, act: actUnsupported}, // IFLA_NET_NS_FD: a move
	IFLA_EXT_MASK:                   {kind: iflaU32, act: actIgnore},
	IFLA_PROMISCUITY:                {kind: iflaU32, act: actIgnore},
	IFLA_NUM_TX_QUEUES:              {kind: iflaU32, act: actQueues},
	IFLA_NUM_RX_QUEUES:              {kind: iflaU32, act: actQueues},
	IFLA_CARRIER:                    {kind: iflaU8, act: actNoDevOp},
	34:                              {kind: iflaBinary, max: 32, act: actIgnore}, // IFLA_PHYS_PORT_ID
	IFLA_CARRIER_CHANGES:            {kind: iflaU32, act: actIgnore},
	36:                              {kind: iflaBinary, max: 32, act: actIgnore}, // IFLA_PHYS_SWITCH_ID
	37:                              {kind: iflaS32, act: actNetnsid},            // IFLA_LINK_NETNSID
	38:                              {act: actIgnore},                            // IFLA_PHYS_PORT_NAME
	IFLA_PROTO_DOWN:                 {kind: iflaU8, act: actNoDevOp},
	IFLA_GSO_MAX_SEGS:               {kind: iflaU32, act: actUnsupported},
	IFLA_GSO_MAX_SIZE:               {kind: iflaU32, min: 193, act: actUnsupported}, // MAX_TCP_HEADER + 1
	42:                              {act: actIgnore},                               // IFLA_PAD
	IFLA_XDP:                        {kind: iflaNested, act: actEmptyNest},
	IFLA_EVENT:                      {kind: iflaU32, act: actIgnore},
	45:                              {act: actIgnore}, // IFLA_NEW_NETNSID
	IFLA_TARGET_NETNSID:             {kind: iflaS32, act: actNetnsid},
	IFLA_CARRIER_UP_COUNT:           {kind: iflaU32, act: actIgnore},
	IFLA_CARRIER_DOWN_COUNT:         {kind: iflaU32, act: actIgnore},
	49:                              {kind: iflaS32, min: 1, act: actIgnore}, // IFLA_NEW_IFINDEX
	IFLA_MIN_MTU:                    {kind: iflaU32, act: actIgnore},
	IFLA_MAX_MTU:                    {kind: iflaU32, act: actIgnore},
	52:                              {kind: iflaNested, act: actIgnore},    // IFLA_PROP_LIST: RTM_NEWLINKPROP's
	54:                              {kind: iflaReject},                    // IFLA_PERM_ADDRESS
	55:                              {kind: iflaNested, act: actNoDevOp},   // IFLA_PROTO_DOWN_REASON
	56:                              {kind: iflaNulString, act: actIgnore}, // IFLA_PARENT_DEV_NAME
	57:                              {act: actIgnore},                      // IFLA_PARENT_DEV_BUS_NAME
	IFLA_GRO_MAX_SIZE:               {kind: iflaU32, act: actUnsupported},
	IFLA_TSO_MAX_SIZE:               {kind: iflaReject},
	IFLA_TSO_MAX_SEGS:               {kind: iflaReject},
	IFLA_ALLMULTI:                   {kind: iflaReject},
	IFLA_DEVLINK_PORT:               {act: actIgnore},
	IFLA_GSO_IPV4_MAX_SIZE:          {kind: iflaU32, min: 193, act: actUnsupported},
	IFLA_GRO_IPV4_MAX_SIZE:          {kind: iflaU32, act: actUnsupported},
	IFLA_DPLL_PIN:                   {kind: iflaStrictUnspec},
	IFLA_MAX_PACING_OFFLOAD_HORIZON: {kind: iflaStrictUnspec},
	IFLA_NETNS_IMMUTABLE:            {kind: iflaReject},
	IFLA_HEADROOM:                   {kind: iflaReject},
	IFLA_TAILROOM:                   {kind: iflaReject},
}

// altIfnamePolicy is ifla_policy's IFLA_ALT_IFNAME: NLA_STRING of at most
// ALTIFNAMSIZ-1 bytes.
var altIfnamePolicy = iflaEntry{kind: iflaString, max: 127}

// policy attributes decodeLinkConf's own cases do not already encode.
const (
	nlPolicyMinValueS   = 2
	nlPolicyMaxValueS   = 3
	nlAttrTypeS32       = 8
	nlAttrTypeNulString = 12
)

// nest encodes a policy nest (netlink_policy_dump_attr_size_estimate()'s
// attributes, in __netlink_policy_dump_write_attr()'s order).
func (e iflaEntry) nest() []byte {
	var b []byte
	put := func(typ uint16, v []byte) {
		h := make([]byte, 4, 4+len(v))
		ne.PutUint16(h, uint16(4+len(v)))
		ne.PutUint16(h[2:], typ)
		b = append(append(b, h...), v...)
	}
	u32 := func(v uint32) []byte { x := make([]byte, 4); ne.PutUint32(x, v); return x }
	u64 := func(v uint64) []byte { x := make([]byte, 8); ne.PutUint64(x, v); return x }
	switch e.kind {
	case iflaU8:
		put(NL_POLICY_TYPE_ATTR_MIN_VALUE_U, u64(0))
		put(NL_POLICY_TYPE_ATTR_MAX_VALUE_U, u64(0xff))
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(NL_ATTR_TYPE_U8))
	case iflaU32:
		put(NL_POLICY_TYPE_ATTR_MIN_VALUE_U, u64(uint64(e.min)))
		put(NL_POLICY_TYPE_ATTR_MAX_VALUE_U, u64(0xffffffff))
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(NL_ATTR_TYPE_U32))
	case iflaS32:
		min := int64(-1 << 31)
		if e.min != 0 {
			min = e.min
		}
		put(nlPolicyMinValueS, u64(uint64(min)))
		put(nlPolicyMaxValueS, u64(1<<31-1))
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(nlAttrTypeS32))
	case iflaBinary:
		put(NL_POLICY_TYPE_ATTR_MAX_LENGTH, u32(e.max))
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(NL_ATTR_TYPE_BINARY))
	case iflaString:
		put(NL_POLICY_TYPE_ATTR_MAX_LENGTH, u32(e.max))
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(NL_ATTR_TYPE_STRING))
	case iflaNested:
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(NL_ATTR_TYPE_NESTED))
	case iflaNulString:
		put(NL_POLICY_TYPE_ATTR_TYPE, u32(nlAttrTypeNulString))
	default:
		return nil
	}
	return b
}

// validate is validate_nla() for one entry: ERANGE "Attribute failed
// policy validation" for a short value, "integer out of range" below an
// NLA_POLICY_MIN, EINVAL for NLA_REJECT and a NUL_STRING without its NUL,
// "Unsupported attribute" for an entry-less type at or above
// strict_start_type (IFLA_DPLL_PIN).
func (e iflaEntry) validate(a rawAttr) *Error {
	n := len(a.data)
	fail := func(errno syscall.Errno, msg string) *Error {
		return &Error{Errno: errno, Msg: msg, Offset: a.off, Policy: e.nest()}
	}
	switch e.kind {
	case iflaU8:
		if n < 1 {
			return fail(syscall.ERANGE, policyFailed)
		}
	case iflaU32, iflaS32:
		if n < 4 {
			return fail(syscall.ERANGE, policyFailed)
		}
		v := int64(ne.Uint32(a.data))
		if e.kind == iflaS32 {
			v = int64(int32(ne.Uint32(a.data)))
		}
		if e.min != 0 && v < e.min {
			return fail(syscall.ERANGE, "integer out of range")
		}
	case iflaBinary:
		if n > int(e.max) {
			return fail(syscall.ERANGE, policyFailed)
		}
	case iflaString:
		// validate_nla(): at least a byte; at most max, a trailing NUL
		// not counted.
		l := n
		if l > 0 && a.data[l-1] == 0 {
			l--
		}
		if n < 1 || l > int(e.max) {
			return fail(syscall.ERANGE, policyFailed)
		}
	case iflaNested:
		if n != 0 && n < nlaHdrLen {
			return fail(syscall.ERANGE, policyFailed)
		}
	case iflaMinLen:
		if n < int(e.max) {
			return fail(syscall.ERANGE, policyFailed)
		}
	case iflaNulString:
		nul := false
		for _, c := range a.data {
			if c == 0 {
				nul = true
				break
			}
		}
		if !nul {
			return fail(syscall.EINVAL, policyFailed)
		}
	case iflaReject:
		return &Error{Errno: syscall.EINVAL, Msg: policyFailed, Offset: a.off}
	case iflaStrictUnspec:
		return AttrError(syscall.EINVAL, "Unsupported attribute", a.off)
	}
	return nil
}

// linkAttrs collects what linkAttr found across a request's attributes:
// the first unsupported one and the first error do_setlink() or
// rtnl_newlink_create() would give after finding the device.
type linkAttrs struct {
	create bool
	// bridge is an AF_BRIDGE request: the kernel's rtnl_bridge_setlink()
	// (bridge port options in IFLA_PROTINFO), which parses none of
	// ifla_policy; nlemu refuses its attributes as before.
	bridge      bool
	unsupported uint32 // offset of the first unsupported attribute
	devErr      *Error
	queues      []rawAttr // IFLA_NUM_*_QUEUES of a create, checked once the kind is known
}

func (s *linkAttrs) unsupp(a rawAttr) {
	if s.unsupported == 0 {
		s.unsupported = a.off
	}
}

func (s *linkAttrs) fail(e *Error) {
	if s.devErr == nil {
		s.devErr = e
	}
}

// add handles an IFLA_* attribute decodeLinkConf has no field for: the
// policy error, else whether the request is refused (unsupported, or the
// kernel's own refusal) or the attribute accepted and ignored.
func (s *linkAttrs) add(a rawAttr) *Error {
	if s.bridge {
		s.unsupp(a)
		return nil
	}
	e, ok := iflaTable[a.typ]
	if !ok {
		// Type 0 and types above IFLA_MAX: the liberal parse skips them.
		if a.typ != 0 && a.typ <= iflaMax {
			s.unsupp(a)
		}
		return nil
	}
	if err := e.validate(a); err != nil {
		return err
	}
	switch e.act {
	case actUnsupported:
		s.unsupp(a)
	case actSetOnly:
		if s.create {
			s.unsupp(a)
		}
	case actCreateUnsupported:
		if s.create {
			s.fail(Errno(syscall.EOPNOTSUPP))
		}
	case actEmptyNest:
		it := attrIter{b: a.data}
		if _, any := it.next(); any {
			s.unsupp(a)
		}
	case actOperstate:
		// set_operstate(): only IF_OPER_TESTING (4), IF_OPER_DORMANT (5)
		// and IF_OPER_UP (6) can change dev->operstate.
		if v := a.data[0]; v >= 4 && v <= 6 {
			s.unsupp(a)
		}
	case actZero:
		if a.data[0] != 0 {
			s.unsupp(a)
		}
	case actNoDevOp:
		if s.create {
			break
		}
		switch a.typ {
		case IFLA_PROTO_DOWN, 55: // do_set_proto_down()
			s.fail(Errorf(syscall.EOPNOTSUPP, "Protodown not supported by device"))
		default: // do_setlink(): no ndo_set_vf_port / ndo_change_carrier
			s.fail(Errno(syscall.EOPNOTSUPP))
		}
	case actNetnsid:
		if a.typ == IFLA_TARGET_NETNSID {
			// rtnl_link_get_net_capable(): no text.
			s.fail(Errno(syscall.EINVAL))
		} else if s.create {
			// rtnl_newlink_create()'s link_net lookup.
			s.fail(Errorf(syscall.EINVAL, "Unknown network namespace id"))
		}
	case actQueues:
		if s.create {
			s.queues = append(s.queues, a)
		}
	}
	return nil
}

// finish applies what needs the whole request (the kind) and stores the
// result in c.
func (s *linkAttrs) finish(c *LinkConf) {
	for _, a := range s.queues {
		if c.Kind != "bridge" || ne.Uint32(a.data) != 1 {
			s.unsupp(a)
		}
	}
	if s.unsupported != 0 && (c.Unsupported == 0 || s.unsupported < c.Unsupported) {
		c.Unsupported = s.unsupported
	}
	if c.AFSpecErr == nil {
		c.AFSpecErr = s.devErr
	}
}
