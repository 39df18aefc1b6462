package rtnl

// Netlink message types and flags (include/uapi/linux/netlink.h).
const (
	NLMSG_NOOP    = 0x1
	NLMSG_ERROR   = 0x2
	NLMSG_DONE    = 0x3
	NLMSG_OVERRUN = 0x4
	// NLMSG_MIN_TYPE is the first type handed to a protocol; lower types are
	// control messages that the kernel only acknowledges.
	NLMSG_MIN_TYPE = 0x10

	NLM_F_REQUEST  = 0x01
	NLM_F_MULTI    = 0x02
	NLM_F_ACK      = 0x04
	NLM_F_ECHO     = 0x08
	NLM_F_ROOT     = 0x100
	NLM_F_MATCH    = 0x200
	NLM_F_DUMP     = NLM_F_ROOT | NLM_F_MATCH
	NLM_F_REPLACE  = 0x100
	NLM_F_EXCL     = 0x200
	NLM_F_CREATE   = 0x400
	NLM_F_APPEND   = 0x800
	NLM_F_CAPPED   = 0x100
	NLM_F_ACK_TLVS = 0x200

	NLMSG_HDRLEN = 16
)

// Extended-ack TLVs in NLMSG_ERROR / NLMSG_DONE (enum nlmsgerr_attrs).
const (
	NLMSGERR_ATTR_MSG       = 1
	NLMSGERR_ATTR_OFFS      = 2
	NLMSGERR_ATTR_COOKIE    = 3
	NLMSGERR_ATTR_POLICY    = 4
	NLMSGERR_ATTR_MISS_TYPE = 5
	NLMSGERR_ATTR_MISS_NEST = 6
)

// Policy description attributes (enum netlink_policy_type_attr) and types
// (enum netlink_attribute_type) used in NLMSGERR_ATTR_POLICY.
const (
	NL_POLICY_TYPE_ATTR_TYPE        = 1
	NL_POLICY_TYPE_ATTR_MIN_VALUE_U = 4
	NL_POLICY_TYPE_ATTR_MAX_VALUE_U = 5
	NL_POLICY_TYPE_ATTR_MAX_LENGTH  = 7

	NL_ATTR_TYPE_U8     = 2
	NL_ATTR_TYPE_U16    = 3
	NL_ATTR_TYPE_U32    = 4
	NL_ATTR_TYPE_STRING = 11
)

// Socket options at SOL_NETLINK (include/uapi/linux/netlink.h).
const (
	SOL_NETLINK             = 270
	SOL_SOCKET              = 1
	SO_SNDBUF               = 7
	SO_RCVBUF               = 8
	NETLINK_ADD_MEMBERSHIP  = 1
	NETLINK_DROP_MEMBERSHIP = 2
	NETLINK_PKTINFO         = 3
	NETLINK_NO_ENOBUFS      = 5
	NETLINK_LISTEN_ALL_NSID = 8
	NETLINK_CAP_ACK         = 10
	NETLINK_EXT_ACK         = 11
	NETLINK_GET_STRICT_CHK  = 12
	// NLEMU_RECVLEN is nlemu's own option: the receive buffer size a client
	// reads with, which sizes dump datagrams as the kernel's
	// nlk->max_recvmsg_len does.
	NLEMU_RECVLEN = 0xFE00
)

// nlemu control message types (docs/PROTOCOL.md).
const (
	NLEMU_HELLO      = 0xFE00
	NLEMU_SETSOCKOPT = 0xFE01
	NLEMU_BIND       = 0xFE02
	NLEMU_SOCKERR    = 0xFE03
	// Administration requests, answered with NLMSG_ERROR (and, for LIST and
	// STATS, a reply of the same type before it).
	NLEMU_NETNS_ADD  = 0xFE10
	NLEMU_NETNS_DEL  = 0xFE11
	NLEMU_NETNS_LIST = 0xFE12
	NLEMU_STATS      = 0xFE13
	// NLEMU_CTRL_MIN..NLEMU_CTRL_MAX are reserved for control messages.
	NLEMU_CTRL_MIN = 0xFE00
	NLEMU_CTRL_MAX = 0xFEFF
)

// rtnetlink message types (include/uapi/linux/rtnetlink.h).
const (
	RTM_NEWLINK  = 16
	RTM_DELLINK  = 17
	RTM_GETLINK  = 18
	RTM_SETLINK  = 19
	RTM_NEWADDR  = 20
	RTM_GETADDR  = 22
	RTM_NEWROUTE = 24
	RTM_GETROUTE = 26
	RTM_NEWRULE  = 32
	RTM_DELRULE  = 33
	RTM_GETRULE  = 34
	RTM_NEWNSID  = 88
	RTM_GETNSID  = 90
	// RTM_MAX is the kernel's: (((__RTM_MAX + 3) & ~3) - 1) with
	// RTM_GETTUNNEL (122) last, 123 on Linux 6.18; a type above it is
	// EOPNOTSUPP in rtnetlink_rcv_msg() before any length check (measured:
	// 123 with no payload is acked, 124 is EOPNOTSUPP; client's
	// TestConnMethodsMatchKernel/execute_errors_extack).
	RTM_MAX = 123
)

// Address and rule families.
const (
	AF_UNSPEC         = 0
	AF_INET           = 2
	AF_INET6          = 10
	RTNL_FAMILY_IPMR  = 128
	RTNL_FAMILY_IP6MR = 129
)

// rtnetlink multicast groups (enum rtnetlink_groups).
const (
	RTNLGRP_LINK      = 1
	RTNLGRP_IPV4_RULE = 8
	RTNLGRP_IPV6_RULE = 19
)

// Fib rule attributes (include/uapi/linux/fib_rules.h).
const (
	FRA_UNSPEC = iota
	FRA_DST
	FRA_SRC
	FRA_IIFNAME
	FRA_GOTO
	FRA_UNUSED2
	FRA_PRIORITY
	FRA_UNUSED3
	FRA_UNUSED4
	FRA_UNUSED5
	FRA_FWMARK
	FRA_FLOW
	FRA_TUN_ID
	FRA_SUPPRESS_IFGROUP
	FRA_SUPPRESS_PREFIXLEN
	FRA_TABLE
	FRA_FWMASK
	FRA_OIFNAME
	FRA_PAD
	FRA_L3MDEV
	FRA_UID_RANGE
	FRA_PROTOCOL
	FRA_IP_PROTO
	FRA_SPORT_RANGE
	FRA_DPORT_RANGE
	FRA_DSCP
	FRA_FLOWLABEL
	FRA_FLOWLABEL_MASK
	FRA_SPORT_MASK
	FRA_DPORT_MASK
	FRA_DSCP_MASK
	FRA_MAX = FRA_DSCP_MASK
)

// Rule flags (FIB_RULE_*).
const (
	FIB_RULE_PERMANENT    = 0x1
	FIB_RULE_INVERT       = 0x2
	FIB_RULE_UNRESOLVED   = 0x4
	FIB_RULE_IIF_DETACHED = 0x8
	FIB_RULE_OIF_DETACHED = 0x10
	FIB_RULE_FIND_SADDR   = 0x10000
)

// Rule actions (FR_ACT_*).
const (
	FR_ACT_UNSPEC      = 0
	FR_ACT_TO_TBL      = 1
	FR_ACT_GOTO        = 2
	FR_ACT_NOP         = 3
	FR_ACT_BLACKHOLE   = 6
	FR_ACT_UNREACHABLE = 7
	FR_ACT_PROHIBIT    = 8
)

// Well-known routing table ids.
const (
	RT_TABLE_UNSPEC  = 0
	RT_TABLE_COMPAT  = 252
	RT_TABLE_DEFAULT = 253
	RT_TABLE_MAIN    = 254
	RT_TABLE_LOCAL   = 255
)

// Route protocols used by default rules.
const RTPROT_KERNEL = 2

// Route message types not listed above (include/uapi/linux/rtnetlink.h).
const RTM_DELROUTE = 25

// Route attributes (enum rtattr_type_t).
const (
	RTA_UNSPEC = iota
	RTA_DST
	RTA_SRC
	RTA_IIF
	RTA_OIF
	RTA_GATEWAY
	RTA_PRIORITY
	RTA_PREFSRC
	RTA_METRICS
	RTA_MULTIPATH
	RTA_PROTOINFO
	RTA_FLOW
	RTA_CACHEINFO
	RTA_SESSION
	RTA_MP_ALGO
	RTA_TABLE
	RTA_MARK
	RTA_MFC_STATS
	RTA_VIA
	RTA_NEWDST
	RTA_PREF
	RTA_ENCAP_TYPE
	RTA_ENCAP
	RTA_EXPIRES
	RTA_PAD
	RTA_UID
	RTA_TTL_PROPAGATE
	RTA_IP_PROTO
	RTA_SPORT
	RTA_DPORT
	RTA_NH_ID
	RTA_FLOWLABEL
	RTA_MAX = RTA_FLOWLABEL
)

// Route types (RTN_*).
const (
	RTN_UNSPEC = iota
	RTN_UNICAST
	RTN_LOCAL
	RTN_BROADCAST
	RTN_ANYCAST
	RTN_MULTICAST
	RTN_BLACKHOLE
	RTN_UNREACHABLE
	RTN_PROHIBIT
	RTN_THROW
	RTN_NAT
	RTN_XRESOLVE
	RTN_MAX = RTN_XRESOLVE
)

// Route scopes (enum rt_scope_t).
const (
	RT_SCOPE_UNIVERSE = 0
	RT_SCOPE_SITE     = 200
	RT_SCOPE_LINK     = 253
	RT_SCOPE_HOST     = 254
	RT_SCOPE_NOWHERE  = 255
)

// Route protocols (RTPROT_*) besides RTPROT_KERNEL.
const (
	RTPROT_UNSPEC   = 0
	RTPROT_REDIRECT = 1
	RTPROT_BOOT     = 3
	RTPROT_STATIC   = 4
	RTPROT_RA       = 9
	RTPROT_DHCP     = 16
)

// Route metrics, nested in RTA_METRICS (RTAX_*).
const (
	RTAX_UNSPEC = iota
	RTAX_LOCK
	RTAX_MTU
	RTAX_WINDOW
	RTAX_RTT
	RTAX_RTTVAR
	RTAX_SSTHRESH
	RTAX_CWND
	RTAX_ADVMSS
	RTAX_REORDERING
	RTAX_HOPLIMIT
	RTAX_INITCWND
	RTAX_FEATURES
	RTAX_RTO_MIN
	RTAX_INITRWND
	RTAX_QUICKACK
	RTAX_CC_ALGO
	RTAX_FASTOPEN_NO_COOKIE
	RTAX_MAX = RTAX_FASTOPEN_NO_COOKIE
)

// RTAX_FEATURES bits (RTAX_FEATURE_*); RTAX_FEATURE_MASK is what
// ip_metrics_convert() accepts.
const (
	RTAX_FEATURE_ECN         = 1 << 0
	RTAX_FEATURE_SACK        = 1 << 1
	RTAX_FEATURE_TIMESTAMP   = 1 << 2
	RTAX_FEATURE_ALLFRAG     = 1 << 3
	RTAX_FEATURE_TCP_USEC_TS = 1 << 4
	RTAX_FEATURE_MASK        = RTAX_FEATURE_ECN | RTAX_FEATURE_SACK | RTAX_FEATURE_TIMESTAMP | RTAX_FEATURE_ALLFRAG | RTAX_FEATURE_TCP_USEC_TS
)

// Nexthop flags (RTNH_F_*), in rtnexthop.rtnh_flags and the low byte of
// rtm_flags.
const (
	RTNH_F_DEAD       = 0x1
	RTNH_F_PERVASIVE  = 0x2
	RTNH_F_ONLINK     = 0x4
	RTNH_F_OFFLOAD    = 0x8
	RTNH_F_LINKDOWN   = 0x10
	RTNH_F_UNRESOLVED = 0x20
	RTNH_F_TRAP       = 0x40
)

// rtm_flags bits (RTM_F_*).
const (
	RTM_F_NOTIFY         = 0x100
	RTM_F_CLONED         = 0x200
	RTM_F_EQUALIZE       = 0x400
	RTM_F_PREFIX         = 0x800
	RTM_F_LOOKUP_TABLE   = 0x1000
	RTM_F_FIB_MATCH      = 0x2000
	RTM_F_OFFLOAD        = 0x4000
	RTM_F_TRAP           = 0x8000
	RTM_F_OFFLOAD_FAILED = 0x20000000
)

// Route multicast groups.
const (
	RTNLGRP_IPV4_ROUTE = 7
	RTNLGRP_IPV6_ROUTE = 11
)

// Policy types used in NLMSGERR_ATTR_POLICY besides those above.
const (
	NL_ATTR_TYPE_U64    = 5
	NL_ATTR_TYPE_BINARY = 10
	NL_ATTR_TYPE_NESTED = 13
)

// RtmsgLen is sizeof(struct rtmsg).
const RtmsgLen = 12

// RtnexthopLen is sizeof(struct rtnexthop).
const RtnexthopLen = 8

// CacheInfoLen is sizeof(struct rta_cacheinfo).
const CacheInfoLen = 32
