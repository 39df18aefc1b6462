package nsmgr

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestLeftoverWarningInExtack: after a liberal parse (nlmsg_parse_deprecated)
// that stopped before the end of the message, __nla_validate_parse() sets
// the extack text "bytes leftover after parsing attributes" without failing:
// a link get, set or new, an address change and a route get that succeed
// are acknowledged with it, and one that fails with an error of no text of
// its own (inet6_rtm_deladdr()'s EINVAL for no address) keeps it (measured:
// integration's malformed corpus, cases "get link: 3 trailing bytes",
// "new link: nla_len 2", "set link: nla_len 0", "del addr6: 3 trailing
// bytes", "get route: nla_len 2"). A request without the tail gets none.
func TestLeftoverWarningInExtack(t *testing.T) {
	ns := newNamespace("warn", &rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	ifi := func(index byte) []byte { return []byte{0, 0, 0, 0, index, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} }
	tail := []byte{8, 0, 1} // an attribute header cut short
	const warn = "bytes leftover after parsing attributes"
	cases := []struct {
		name string
		typ  uint16
		body []byte
		want *rtnl.Error
	}{
		{"get link lo", rtnl.RTM_GETLINK, ifi(1), nil},
		{"get link lo, tail", rtnl.RTM_GETLINK, append(ifi(1), tail...), &rtnl.Error{Msg: warn}},
		{"get link unknown, tail", rtnl.RTM_GETLINK, append(ifi(9), tail...), &rtnl.Error{Errno: syscall.ENODEV, Msg: warn}},
		{"new link lo, tail", rtnl.RTM_NEWLINK, append(ifi(1), tail...), &rtnl.Error{Msg: warn}},
		{"set link lo, tail", rtnl.RTM_SETLINK, append(ifi(1), tail...), &rtnl.Error{Msg: warn}},
		{"del addr6 without address, tail", rtnl.RTM_DELADDR, append([]byte{rtnl.AF_INET6, 64, 0, 0, 1, 0, 0, 0}, tail...), &rtnl.Error{Errno: syscall.EINVAL, Msg: warn}},
	}
	for _, c := range cases {
		m := rtnl.SplitDatagram(rtnl.AppendMessage(nil, c.typ, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, 0, c.body))[0]
		_, err := ns.Do(&Request{Msg: &m})
		if d := cmp.Diff(c.want, err); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}
}
