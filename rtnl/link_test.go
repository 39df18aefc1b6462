package rtnl

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func linkReq(typ uint16, body []byte) *Message {
	return &SplitDatagram(AppendMessage(nil, typ, NLM_F_REQUEST, 1, 0, body))[0]
}

func ifi(family uint8, index int32, flags, change uint32, attrs ...[]byte) []byte {
	b := make([]byte, IfInfoLen)
	b[0] = family
	ne.PutUint32(b[4:], uint32(index))
	ne.PutUint32(b[8:], flags)
	ne.PutUint32(b[12:], change)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func attr(t uint16, data []byte) []byte {
	e := linkEnc{}
	e.put(t, data)
	return e.b
}

func u32Attr(t uint16, v uint32) []byte { return attr(t, ne.AppendUint32(nil, v)) }

// errSummary keeps what the ACK shows of an *Error.
type errSummary struct {
	Errno  syscall.Errno
	Msg    string
	Offset uint32
	Policy bool
}

func summary(e *Error) *errSummary {
	if e == nil {
		return nil
	}
	return &errSummary{e.Errno, e.Msg, e.Offset, len(e.Policy) > 0}
}

// TestDecodeLinkRequestLikeKernel: the header and policy errors of
// rtnl_getlink() (rtnl_valid_getlink_req()) and rtnl_newlink() /
// rtnl_setlink() (__nlmsg_parse() with ifla_policy), and which name a
// request looks up (rtnl_dev_get(): IFLA_ALT_IFNAME first). The texts were
// measured on Linux 6.18.
func TestDecodeLinkRequestLikeKernel(t *testing.T) {
	long := append([]byte("xxxxxxxxxxxxxxxx"), 0) // 16 characters: IFNAMSIZ-1 is 15
	cases := []struct {
		name        string
		kind        int
		body        []byte
		wantErr     *errSummary
		wantName    string
		wantMask    uint32
		unsupported bool
	}{
		{"get short header", LinkGet, []byte{0, 0, 0, 0}, &errSummary{syscall.EINVAL, "Invalid header for get link", 0, false}, "", 0, false},
		{"set short header", LinkSet, []byte{0, 0, 0, 0}, &errSummary{syscall.EINVAL, "Invalid header length", 0, false}, "", 0, false},
		{"dump rtgenmsg", LinkDump, []byte{0, 0, 0, 0}, nil, "", 0, false},
		{"get name too long", LinkGet, ifi(0, 0, 0, 0, attr(IFLA_IFNAME, long)), &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}, "", 0, false},
		{"set name too long", LinkSet, ifi(0, 0, 0, 0, attr(IFLA_IFNAME, long)), &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}, "", 0, false},
		{"dump name too long is ignored", LinkDump, ifi(0, 0, 0, 0, u32Attr(IFLA_EXT_MASK, 8), attr(IFLA_IFNAME, long)), nil, "", 0, false},
		{"name and ext mask", LinkGet, ifi(0, 0, 0, 0, attr(IFLA_IFNAME, []byte("lo\x00")), u32Attr(IFLA_EXT_MASK, 9)), nil, "lo", 9, false},
		{"alt name wins", LinkGet, ifi(0, 0, 0, 0, attr(IFLA_ALT_IFNAME, []byte("lo\x00")), attr(IFLA_IFNAME, []byte("eth0\x00"))), nil, "lo", 0, false},
		{"short ext mask", LinkGet, ifi(0, 0, 0, 0, attr(IFLA_EXT_MASK, []byte{1, 0})), &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}, "", 0, false},
		{"mtu is not supported yet", LinkSet, ifi(0, 1, 0, 0, u32Attr(IFLA_MTU, 1500)), nil, "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, unsupported, err := DecodeLinkRequest(linkReq(RTM_GETLINK, c.body), c.kind)
			if d := cmp.Diff(c.wantErr, summary(err)); d != "" {
				t.Fatalf("error (-want +got):\n%s", d)
			}
			if err != nil {
				return
			}
			if string(l.Name) != c.wantName || l.ExtMask != c.wantMask || (unsupported != 0) != c.unsupported {
				t.Errorf("name %q mask %#x unsupported %d, want %q %#x %v", l.Name, l.ExtMask, unsupported, c.wantName, c.wantMask, c.unsupported)
			}
		})
	}
}

// TestDecodeLinkDumpStrict: with NETLINK_GET_STRICT_CHK a link dump is
// validated as rtnl_valid_dump_ifinfo_req() / rtnl_dump_ifinfo() do, and
// an AF_INET6 one as inet6_valid_dump_ifinfo() does; without it nothing
// fails.
func TestDecodeLinkDumpStrict(t *testing.T) {
	cases := []struct {
		name    string
		body    []byte
		wantErr *errSummary
	}{
		{"short", []byte{0, 0, 0, 0}, &errSummary{syscall.EINVAL, "Invalid header for link dump", 0, false}},
		{"index", ifi(0, 1, 0, 0), &errSummary{syscall.EINVAL, "Filter by device index not supported for link dumps", 0, false}},
		{"flags", ifi(0, 0, 1, 0), &errSummary{syscall.EINVAL, "Invalid values in header for link dump request", 0, false}},
		{"ifname", ifi(0, 0, 0, 0, attr(IFLA_IFNAME, []byte("lo\x00"))), &errSummary{syscall.EINVAL, "Unsupported attribute in link dump request", 0, false}},
		{"short ext mask", ifi(0, 0, 0, 0, attr(IFLA_EXT_MASK, []byte{1, 0})), &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}},
		{"ext mask and master", ifi(0, 0, 0, 0, u32Attr(IFLA_EXT_MASK, 9), u32Attr(IFLA_MASTER, 5)), nil},
		{"inet6 short", []byte{10, 0, 0, 0}, &errSummary{syscall.EINVAL, "ipv6: Invalid header for link dump request", 0, false}},
		{"inet6 index", ifi(10, 1, 0, 0), &errSummary{syscall.EINVAL, "ipv6: Invalid values in header for dump request", 0, false}},
		{"inet6 attribute", ifi(10, 0, 0, 0, u32Attr(IFLA_EXT_MASK, 1)), &errSummary{syscall.EINVAL, "ipv6: Invalid data after header", 0, false}},
		{"inet6", ifi(10, 0, 0, 0), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := linkReq(RTM_GETLINK, c.body)
			_, err := DecodeLinkDump(m, true)
			if d := cmp.Diff(c.wantErr, summary(err)); d != "" {
				t.Errorf("strict (-want +got):\n%s", d)
			}
			if _, err := DecodeLinkDump(m, false); err != nil {
				t.Errorf("not strict: %v", err)
			}
		})
	}
}

// TestAppendLinkSkipStats: RTEXT_FILTER_SKIP_STATS drops only the inet6
// counters (IFLA_INET6_STATS, IFLA_INET6_ICMP6STATS: 304 + 56 bytes plus
// headers), not IFLA_STATS64 / IFLA_STATS, as on 6.18; lo's message is
// 1468 bytes, 1100 without them.
func TestAppendLinkSkipStats(t *testing.T) {
	l := &LinkMsg{Name: []byte("lo"), Address: make([]byte, 6), Broadcast: make([]byte, 6), Qdisc: "noop",
		Inet4Conf: make([]int32, 33), Inet6: &Inet6Info{Conf: make([]int32, 60)}}
	for _, c := range []struct {
		mask uint32
		want int
	}{{0, 1468}, {1, 1468}, {RTEXT_FILTER_SKIP_STATS, 1100}, {1 | RTEXT_FILTER_SKIP_STATS, 1100}} {
		if got := len(AppendLink(nil, 0, 0, 0, l, c.mask)); got != c.want {
			t.Errorf("ext mask %#x: %d bytes, want %d", c.mask, got, c.want)
		}
	}
}
