package rtnl

import (
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// laShape are the payloads of testdata/linkattrs_setlink_lo.tsv.
var laShape = map[string][]byte{"0": nil, "1": {1}, "4": {1, 0, 0, 0}, "8": {1, 0, 0, 0, 0, 0, 0, 0}}

// laOutcome is what an RTM_SETLINK of one attribute comes to: the
// decoder's error, or the handler's refusal (AFSpecErr), or "unsupported",
// or nothing.
type laOutcome struct {
	Errno  int
	Msg    string
	Policy string
}

func laDecode(typ uint16, shape string, create bool) laOutcome {
	mt := uint16(RTM_SETLINK)
	if create {
		mt = RTM_NEWLINK
	}
	c, err := DecodeLinkConf(linkReq(mt, ifi(0, 1, 0, 0, attr(typ, laShape[shape]))))
	switch {
	case err != nil:
		return laOutcome{-int(err.Errno), err.Msg, hex.EncodeToString(err.Policy)}
	case c.AFSpecErr != nil:
		return laOutcome{-int(c.AFSpecErr.Errno), c.AFSpecErr.Msg, ""}
	case c.Unsupported != 0:
		return laOutcome{Msg: "unsupported"}
	}
	return laOutcome{}
}

// laDiffers are the lo rows where nlemu refuses what the kernel does
// (docs/LINKS.md): a value nlemu does not model, or a netns move.
var laDiffers = map[string]bool{
	"17/1": true, "17/4": true, "17/8": true, // IFLA_LINKMODE DORMANT
	"19/4": true, "19/8": true, // IFLA_NET_NS_PID
	"28/4": true, "28/8": true, // IFLA_NET_NS_FD
	"40/4": true, "40/8": true, // IFLA_GSO_MAX_SEGS
	"58/4": true, "58/8": true, // IFLA_GRO_MAX_SIZE
	"64/4": true, "64/8": true, // IFLA_GRO_IPV4_MAX_SIZE
}

// TestLinkAttrPolicyLikeKernel checks the decoder against the kernel's
// answers to an RTM_SETLINK of lo with each IFLA type 0..69 and 0, 1, 4 and
// 8 bytes (testdata/linkattrs_setlink_lo.tsv, Linux 6.18: type, shape,
// errno, extack, offset, policy): every policy error exactly (errno, text,
// offset 32, policy nest); every success a request nlemu accepts; every
// refusal after validation (the device's own) not a policy error.
func TestLinkAttrPolicyLikeKernel(t *testing.T) {
	raw, err := os.ReadFile("testdata/linkattrs_setlink_lo.tsv")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		f := append(strings.Split(line, "\t"), "", "", "", "", "", "")
		typ, _ := strconv.Atoi(f[0])
		errno, _ := strconv.Atoi(f[2])
		key := f[0] + "/" + f[1]
		got := laDecode(uint16(typ), f[1], false)
		rows++
		switch {
		case laDiffers[key]:
			if got.Msg != "unsupported" {
				t.Errorf("%s: %+v, want the documented refusal (unsupported)", key, got)
			}
		case f[5] != "" || f[4] == "32":
			// A policy error: copied byte for byte.
			want := laOutcome{errno, f[3], f[5]}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: policy error (-kernel +nlemu):\n%s", key, d)
			}
		case errno == 0:
			if got != (laOutcome{}) {
				t.Errorf("%s: the kernel accepts it; nlemu: %+v", key, got)
			}
		case got.Policy != "" || got.Msg == policyFailed:
			t.Errorf("%s: kernel %d %q after validation; nlemu fails the policy: %+v", key, errno, f[3], got)
		case errno == -int(syscall.EOPNOTSUPP) && got.Errno != 0:
			// do_setlink()'s own refusals nlemu decodes (IFLA_CARRIER,
			// IFLA_VF_PORTS, IFLA_PROTO_DOWN): the kernel's errno and text.
			if d := cmp.Diff(laOutcome{errno, f[3], ""}, got); d != "" {
				t.Errorf("%s: device refusal (-kernel +nlemu):\n%s", key, d)
			}
		}
	}
	if rows != 70*4 {
		t.Errorf("%d rows, want 280", rows)
	}
}

// TestLinkAttrCostIsIgnoredLikeDoSetlink: IFLA_COST (8), which do_setlink()
// never reads, is accepted on both RTM_SETLINK and RTM_NEWLINK.
func TestLinkAttrCostIsIgnoredLikeDoSetlink(t *testing.T) {
	for _, create := range []bool{false, true} {
		if got := laDecode(8, "4", create); got != (laOutcome{}) {
			t.Errorf("create=%v: %+v", create, got)
		}
	}
}

// TestLinkAttrCreateQuirks: rtnl_create_link() never reads IFLA_CARRIER
// or IFLA_PROTO_DOWN (accepted on a create, refused by do_setlink());
// IFLA_PROTINFO is refused on a create only; IFLA_LINK_NETNSID names a
// netnsid nlemu never assigns on a create only.
func TestLinkAttrCreateQuirks(t *testing.T) {
	cases := []struct {
		typ       uint16
		set, make laOutcome
	}{
		{IFLA_CARRIER, laOutcome{Errno: -95}, laOutcome{}},
		{IFLA_PROTO_DOWN, laOutcome{Errno: -95, Msg: "Protodown not supported by device"}, laOutcome{}},
		{IFLA_PROTINFO, laOutcome{}, laOutcome{Errno: -95}},
		{37, laOutcome{}, laOutcome{Errno: -22, Msg: "Unknown network namespace id"}},
		{IFLA_TARGET_NETNSID, laOutcome{Errno: -22}, laOutcome{Errno: -22}},
	}
	for _, c := range cases {
		if got := laDecode(c.typ, "4", false); got != c.set {
			t.Errorf("setlink %d: %+v, want %+v", c.typ, got, c.set)
		}
		if got := laDecode(c.typ, "4", true); got != c.make {
			t.Errorf("newlink %d: %+v, want %+v", c.typ, got, c.make)
		}
	}
}

// TestIfnameEndsAtFirstNulLikeNlaStrscpy: IFLA_IFNAME "\x01\0\0\0" names
// the device "\x01" (measured: the kernel dumps a 2-byte name).
func TestIfnameEndsAtFirstNulLikeNlaStrscpy(t *testing.T) {
	c, err := DecodeLinkConf(linkReq(RTM_SETLINK, ifi(0, 1, 0, 0, attr(IFLA_IFNAME, []byte{1, 0, 0, 0}), attr(IFLA_IFALIAS, []byte{'a', 0, 'b'}))))
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Name) != "\x01" || string(c.Alias) != "a" {
		t.Errorf("name %q alias %q, want \"\\x01\" and \"a\"", c.Name, c.Alias)
	}
}

// TestOperstateOnlyNoOpTransitions: set_operstate() moves dev->operstate
// only towards IF_OPER_TESTING, _DORMANT and _UP; other values are no-ops
// nlemu accepts.
func TestOperstateOnlyNoOpTransitions(t *testing.T) {
	for v := byte(0); v < 8; v++ {
		c, err := DecodeLinkConf(linkReq(RTM_SETLINK, ifi(0, 1, 0, 0, attr(IFLA_OPERSTATE, []byte{v}))))
		if err != nil {
			t.Fatal(err)
		}
		if want := v >= 4 && v <= 6; (c.Unsupported != 0) != want {
			t.Errorf("operstate %d: unsupported %v, want %v", v, c.Unsupported != 0, want)
		}
	}
}

// TestLinkInfoNestedTypesIgnoredLikeRtnlNewlink: rtnl_newlink() parses
// IFLA_LINKINFO with nla_parse_nested_deprecated(), which ignores types
// above IFLA_INFO_MAX, and reads neither IFLA_INFO_UNSPEC, IFLA_INFO_XSTATS
// nor IFLA_INFO_SLAVE_KIND (measured on lo: each accepted, nothing
// changed; an empty IFLA_INFO_SLAVE_KIND is ERANGE, its NLA_STRING
// policy). IFLA_INFO_SLAVE_DATA, a port's options, stays refused.
func TestLinkInfoNestedTypesIgnoredLikeRtnlNewlink(t *testing.T) {
	for _, c := range []struct {
		name        string
		attr        []byte
		errno       syscall.Errno
		unsupported uint32
	}{
		{"unspec", attr(0, []byte("0000")), 0, 0},
		{"xstats", attr(IFLA_INFO_XSTATS, []byte("0000")), 0, 0},
		{"slave kind", attr(IFLA_INFO_SLAVE_KIND, []byte("bridge\x00")), 0, 0},
		{"slave kind empty", attr(IFLA_INFO_SLAVE_KIND, nil), syscall.ERANGE, 0},
		{"above IFLA_INFO_MAX", attr(0x3030, []byte("0000")), 0, 0},
		{"slave data", attr(IFLA_INFO_SLAVE_DATA, attr(1, []byte{1, 0, 0, 0})), 0, 36},
	} {
		got, err := DecodeLinkConf(linkReq(RTM_NEWLINK, ifi(0, 1, 0, 0, attr(IFLA_LINKINFO, c.attr))))
		if c.errno != 0 {
			if err == nil || err.Errno != c.errno {
				t.Errorf("%s: error %v, want %v", c.name, err, c.errno)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Unsupported != c.unsupported {
			t.Errorf("%s: unsupported at %d, want %d", c.name, got.Unsupported, c.unsupported)
		}
	}
}

// TestSetlinkIgnoresLinkInfoLikeDoSetlink: do_setlink() never reads
// IFLA_LINKINFO, so an RTM_SETLINK carrying one, even an IFLA_INFO_DATA
// with no kind or one nlemu would refuse on an RTM_NEWLINK, is accepted
// and changes nothing (measured on lo).
func TestSetlinkIgnoresLinkInfoLikeDoSetlink(t *testing.T) {
	for _, li := range [][]byte{
		attr(IFLA_INFO_DATA, attr(1, []byte{1, 0, 0, 0})),
		append(attr(IFLA_INFO_KIND, []byte("bridge\x00")), attr(IFLA_INFO_DATA, attr(1, []byte{1, 0, 0, 0}))...),
		attr(IFLA_INFO_SLAVE_DATA, nil),
	} {
		c, err := DecodeLinkConf(linkReq(RTM_SETLINK, ifi(0, 1, 0, 0, attr(IFLA_LINKINFO, li))))
		if err != nil {
			t.Fatal(err)
		}
		if c.Unsupported != 0 || c.Bridge != nil || c.Kind != "" || c.HasInfoData {
			t.Errorf("linkinfo %x: %+v, want it ignored", li, c)
		}
	}
}

// FuzzLinkAttrs: one attribute of any type and payload, on a setlink or a
// newlink, decodes or fails at an offset inside it; nothing panics.
func FuzzLinkAttrs(f *testing.F) {
	f.Add(uint16(8), []byte{1, 0, 0, 0}, false)
	f.Add(uint16(IFLA_XDP), []byte{8, 0, 1, 0, 1, 0, 0, 0}, true)
	f.Add(uint16(56), []byte{'a'}, false)
	f.Fuzz(func(t *testing.T, typ uint16, v []byte, create bool) {
		if len(v) > 1000 {
			return
		}
		mt := uint16(RTM_SETLINK)
		if create {
			mt = RTM_NEWLINK
		}
		c, err := DecodeLinkConf(linkReq(mt, ifi(0, 1, 0, 0, attr(typ&^nlaFNested, v))))
		if err != nil {
			// The attribute (32) or one nested in it (an IFLA_AF_SPEC's
			// inet6 policy error points at the inner attribute, as
			// inet6_validate_link_af()'s extack does).
			if err.Offset != 0 && (err.Offset < 32 || int(err.Offset) >= 32+nlaHdrLen+len(v)) {
				t.Fatalf("error at offset %d, outside the attribute", err.Offset)
			}
			return
		}
		// The attribute itself (32) or one nested in it (an
		// IFLA_LINKINFO's IFLA_INFO_SLAVE_DATA).
		if c.Unsupported != 0 && (c.Unsupported < 32 || int(c.Unsupported) >= 32+nlaHdrLen+len(v)) {
			t.Fatalf("unsupported offset %d, outside the attribute", c.Unsupported)
		}
	})
}

// TestLinkAttrBridgeFamilyStaysRefused: an AF_BRIDGE RTM_SETLINK is
// rtnl_bridge_setlink()'s (`bridge link set ... cost 5` sends its port
// options in IFLA_PROTINFO): nlemu does not implement it, so the
// attributes AF_UNSPEC ignores are refused there.
func TestLinkAttrBridgeFamilyStaysRefused(t *testing.T) {
	c, err := DecodeLinkConf(linkReq(RTM_SETLINK, ifi(AF_BRIDGE, 3, 0, 0, nested(IFLA_PROTINFO, u32Attr(3, 5)))))
	if err != nil {
		t.Fatal(err)
	}
	if c.Unsupported != 32 {
		t.Errorf("unsupported at %d, want 32", c.Unsupported)
	}
}
