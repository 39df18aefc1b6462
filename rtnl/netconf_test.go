package rtnl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDelNetconfCarriesOnlyIfindexLikeNotifyDevconf: the RTM_DELNETCONF of
// an unregistration is inet_netconf_notify_devconf() with type 0: a
// netconfmsg and NETCONFA_IFINDEX alone, no requester.
func TestDelNetconfCarriesOnlyIfindexLikeNotifyDevconf(t *testing.T) {
	got := AppendDelNetconf(nil, AF_INET6, 3)
	want := []byte{
		28, 0, 0, 0, RTM_DELNETCONF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // nlmsghdr
		AF_INET6, 0, 0, 0, // netconfmsg, padded
		8, 0, netconfaIfindex, 0, 3, 0, 0, 0,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("RTM_DELNETCONF (-want +got):\n%s", d)
	}
}
