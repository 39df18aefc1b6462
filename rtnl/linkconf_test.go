package rtnl

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func nested(t uint16, attrs ...[]byte) []byte {
	var b []byte
	for _, a := range attrs {
		b = append(b, a...)
	}
	return attr(t|nlaFNested, b)
}

func str(t uint16, s string) []byte { return attr(t, append([]byte(s), 0)) }

// vethBody is what `ip link add v0 type veth peer name v1 mtu 1400` sends
// (recorded from iproute2 6.1: ROUTES-SPEC E4 layout).
func vethBody() []byte {
	peer := ifi(0, 0, 0, 0, str(IFLA_IFNAME, "v1"), u32Attr(IFLA_MTU, 1400))
	return ifi(0, 0, 0, 0, str(IFLA_IFNAME, "v0"),
		nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "veth"), nested(IFLA_INFO_DATA, attr(VETH_INFO_PEER, peer))))
}

// confSummary is what the tests compare of a LinkConf.
type confSummary struct {
	Index             int32
	Flags, Change     uint32
	Name              string
	MTU               uint32
	HasMTU            bool
	Address           []byte
	Group, Master     uint32
	HasGroup, HasMstr bool
	Kind              string
	HasData           bool
	AddrGenMode       int
	Peer              *confSummary
	Unsupported       uint32
}

func summarizeConf(c *LinkConf) *confSummary {
	if c == nil {
		return nil
	}
	s := &confSummary{Index: c.Index, Flags: c.Flags, Change: c.Change, Name: string(c.Name), MTU: c.MTU, HasMTU: c.HasMTU,
		Address: c.Address, Group: c.Group, Master: c.Master, HasGroup: c.HasGroup, HasMstr: c.HasMaster,
		Kind: c.Kind, HasData: c.HasInfoData, AddrGenMode: -1, Peer: summarizeConf(c.Peer), Unsupported: c.Unsupported}
	if c.HasAddrGenMode {
		s.AddrGenMode = int(c.AddrGenMode)
	}
	return s
}

// TestDecodeLinkConfLikeKernel: RTM_NEWLINK / RTM_SETLINK bodies as
// iproute2 sends them decode to the typed request rtnl_newlink() and
// do_setlink() act on; the kernel's policy errors come back with their
// offsets; what nlemu does not implement is reported, not dropped.
func TestDecodeLinkConfLikeKernel(t *testing.T) {
	long := append([]byte("0123456789abcdef"), 0)
	cases := []struct {
		name    string
		body    []byte
		want    *confSummary
		wantErr *errSummary
	}{
		{"veth with peer", vethBody(), &confSummary{Name: "v0", Kind: "veth", HasData: true, AddrGenMode: -1,
			Peer: &confSummary{Name: "v1", MTU: 1400, HasMTU: true, AddrGenMode: -1}}, nil},
		{"bridge", ifi(0, 0, 0, 0, str(IFLA_IFNAME, "br0"), nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "bridge"))),
			&confSummary{Name: "br0", Kind: "bridge", AddrGenMode: -1}, nil},
		{"kind ends at its NUL", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, attr(IFLA_INFO_KIND, []byte("veth\x00xx")))),
			&confSummary{Kind: "veth", AddrGenMode: -1}, nil},
		{"set up", ifi(0, 3, 1, 1), &confSummary{Index: 3, Flags: 1, Change: 1, AddrGenMode: -1}, nil},
		{"set address group master", ifi(0, 3, 0, 0, attr(IFLA_ADDRESS, []byte{2, 0, 0, 0, 0, 1}), u32Attr(IFLA_GROUP, 7), u32Attr(IFLA_MASTER, 0)),
			&confSummary{Index: 3, Address: []byte{2, 0, 0, 0, 0, 1}, Group: 7, HasGroup: true, HasMstr: true, AddrGenMode: -1}, nil},
		{"addrgenmode none", ifi(0, 3, 0, 0, nested(IFLA_AF_SPEC, nested(AF_INET6, attr(IFLA_INET6_ADDR_GEN_MODE, []byte{1})))),
			&confSummary{Index: 3, AddrGenMode: 1}, nil},
		{"inet6 token is not implemented", ifi(0, 3, 0, 0, nested(IFLA_AF_SPEC, nested(AF_INET6, attr(IFLA_INET6_TOKEN, make([]byte, 16))))),
			&confSummary{Index: 3, AddrGenMode: -1, Unsupported: 40}, nil},
		{"netns is not implemented", ifi(0, 3, 0, 0, u32Attr(19, 1)), &confSummary{Index: 3, AddrGenMode: -1, Unsupported: 32}, nil},
		{"bridge group_fwd_mask is not implemented", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "bridge"), nested(IFLA_INFO_DATA, attr(9, []byte{0, 0})))),
			&confSummary{Kind: "bridge", HasData: true, AddrGenMode: -1, Unsupported: 52}, nil},
		{"bridge stp_state 1 is not implemented", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "bridge"), nested(IFLA_INFO_DATA, u32Attr(IFLA_BR_STP_STATE, 1)))),
			&confSummary{Kind: "bridge", HasData: true, AddrGenMode: -1, Unsupported: 52}, nil},
		{"short bridge priority", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "bridge"), nested(IFLA_INFO_DATA, attr(IFLA_BR_PRIORITY, []byte{1})))),
			nil, &errSummary{syscall.ERANGE, "Attribute failed policy validation", 52, true}},
		{"name too long", ifi(0, 0, 0, 0, attr(IFLA_IFNAME, long)), nil, &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}},
		{"short mtu", ifi(0, 0, 0, 0, attr(IFLA_MTU, []byte{1, 0})), nil, &errSummary{syscall.ERANGE, "Attribute failed policy validation", 32, true}},
		{"short veth peer", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "veth"), nested(IFLA_INFO_DATA, attr(VETH_INFO_PEER, []byte{0, 0, 0, 0})))),
			nil, &errSummary{syscall.ERANGE, "Attribute failed policy validation", 52, false}},
		{"peer name too long", ifi(0, 0, 0, 0, nested(IFLA_LINKINFO, str(IFLA_INFO_KIND, "veth"), nested(IFLA_INFO_DATA, attr(VETH_INFO_PEER, ifi(0, 0, 0, 0, attr(IFLA_IFNAME, long)))))),
			nil, &errSummary{syscall.ERANGE, "Attribute failed policy validation", 72, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeLinkConf(linkReq(RTM_NEWLINK, c.body))
			if d := cmp.Diff(c.wantErr, summary(err)); d != "" {
				t.Fatalf("error (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.want, summarizeConf(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if _, err := DecodeLinkConf(linkReq(RTM_NEWLINK, []byte{0, 0, 0, 0})); err == nil || err.Msg != "Invalid header length" {
		t.Errorf("short header: %v", err)
	}
}

// FuzzDecodeLinkConf: any request body decodes or fails with an error that
// carries an offset inside the message; nothing panics, and a decoded
// request's slices stay inside the message.
func FuzzDecodeLinkConf(f *testing.F) {
	f.Add(vethBody())
	f.Add(ifi(0, 3, 1, 1, u32Attr(IFLA_MTU, 1400)))
	f.Add(ifi(0, 3, 0, 0, nested(IFLA_AF_SPEC, nested(AF_INET6, attr(IFLA_INET6_ADDR_GEN_MODE, []byte{1})))))
	f.Fuzz(func(t *testing.T, body []byte) {
		m := linkReq(RTM_NEWLINK, body)
		c, err := DecodeLinkConf(m)
		if err != nil {
			if err.Offset != 0 && int(err.Offset) >= len(m.Raw) {
				t.Fatalf("error offset %d beyond the message (%d bytes)", err.Offset, len(m.Raw))
			}
			return
		}
		for p := c; p != nil; p = p.Peer {
			if p.Unsupported != 0 && int(p.Unsupported) >= len(m.Raw) {
				t.Fatalf("unsupported offset %d beyond the message", p.Unsupported)
			}
			if len(p.Name) > ifNameMax {
				t.Fatalf("name %q longer than IFNAMSIZ-1", p.Name)
			}
		}
	})
}
