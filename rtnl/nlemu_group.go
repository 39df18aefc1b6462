package rtnl

// nlemu's multicast-group framing (docs/PROTOCOL.md, "Notifications").
const (
	// NLEMU_GROUP is the control message that precedes a notification in
	// the same datagram, for a client that set NLEMU_GROUPFRAMES: a 16-byte
	// nlmsghdr and a u32 group (the kernel's NETLINK_CB(skb).dst_group).
	NLEMU_GROUP = 0xFE04
	// NLEMU_ACK answers a SETSOCKOPT or BIND sent with NLM_F_ACK: a
	// 16-byte nlmsghdr with the request's nlmsg_seq and an i32 error (0 or
	// -errno), alone in its datagram.
	NLEMU_ACK = 0xFE05
	// NLEMU_GROUPFRAMES is nlemu's SOL_NETLINK option (value 1) asking the
	// server to frame notifications with NLEMU_GROUP.
	NLEMU_GROUPFRAMES = 0xFE01
	// NLEMU_GROUP_LEN is the length of an NLEMU_GROUP message.
	NLEMU_GROUP_LEN = NLMSG_HDRLEN + 4
	// RTNL_NGROUPS is nlk->ngroups of a NETLINK_ROUTE socket: the kernel's
	// RTNLGRP_MAX (39 on Linux 6.18, measured: NETLINK_ADD_MEMBERSHIP of
	// 39 succeeds, 40 is EINVAL).
	RTNL_NGROUPS = 39
	// RTNLGRP_IPV4_MROUTE_R and RTNLGRP_IPV6_MROUTE_R need CAP_NET_ADMIN
	// to join (rtnetlink_bind()).
	RTNLGRP_IPV4_MROUTE_R = 30
	RTNLGRP_IPV6_MROUTE_R = 31
)

// GroupMask is the sender address's nl_groups for a datagram of group g
// (netlink_group_mask(): the group's bit for groups 1..32, else 0).
func GroupMask(g uint32) uint32 {
	if g == 0 || g > 32 {
		return 0
	}
	return 1 << (g - 1)
}
