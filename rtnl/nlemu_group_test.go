package rtnl

import "testing"

// TestGroupMask pins netlink_group_mask() as measured on Linux 6.18: an
// IPv4 rule notification (group 8) has nl_groups 0x80, an IPv6 one (19)
// 0x40000, and RTM_NEWMULTICAST on groups 37–39 (RTNLGRP_IPV4_MCADDR…)
// nl_groups 0 with NETLINK_PKTINFO still giving the group.
func TestGroupMask(t *testing.T) {
	for g, want := range map[uint32]uint32{0: 0, 1: 1, 8: 0x80, 19: 0x40000, 32: 0x80000000, 33: 0, 37: 0, 39: 0} {
		if got := GroupMask(g); got != want {
			t.Errorf("GroupMask(%d) = %#x, want %#x", g, got, want)
		}
	}
}
