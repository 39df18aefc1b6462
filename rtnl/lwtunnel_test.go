package rtnl

import (
	"encoding/binary"
	"encoding/hex"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lwtAttr is one nested attribute, padded as nla_put() pads it.
func lwtAttr(t uint16, payload []byte) []byte {
	b := appendAttrHdr(nil, t, len(payload))
	return appendPad(append(b, payload...), len(payload))
}

// lwtRaw is one attribute without its padding (vishvananda/netlink's
// LWTUNNEL_IP6_HOPLIMIT is a 5-byte attribute at the end of the nest).
func lwtRaw(t uint16, payload []byte) []byte {
	return append(appendAttrHdr(nil, t, len(payload)), payload...)
}

func lwtCat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func lwtHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// lwtEncapOff is where the probe's RTA_ENCAP attribute sat in its request
// (after the rtmsg, RTA_DST and RTA_OIF): the offsets below are the
// kernel's.
const lwtEncapOff = 44

// TestBuildEncapLikeKernel replays the encapsulations sent to Linux 6.18
// by a raw-netlink probe (RTM_NEWROUTE 192.168.x.0/24 dev lo with
// RTA_ENCAP at offset 44) and compares the state BuildEncap builds with
// the RTA_ENCAP payload the kernel dumped, or its error with the kernel's
// errno, extack text and offset.
func TestBuildEncapLikeKernel(t *testing.T) {
	ip6 := func(s string) []byte { return lwtHex(s) }
	be16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	u32 := func(v uint32) []byte { return ne.AppendUint32(nil, v) }
	ip4Dst1111 := lwtAttr(LWTUNNEL_IP_DST, []byte{1, 1, 1, 1})
	const ipZero = "0c000100000000000000000008000200000000000800030000000000050005000000000005000400000000000600060000000000"
	type want struct {
		Attrs   string // hex of the dumped nest
		Warning string
		Errno   syscall.Errno
		Msg     string
		Offset  uint32
		Policy  bool
	}
	for _, tc := range []struct {
		name string
		typ  uint16
		nest []byte
		want want
	}{
		{"vishvananda_ip6", LWTUNNEL_ENCAP_IP6, lwtCat(lwtRaw(1, make([]byte, 8)), lwtAttr(2, ip6("20010db8000000000000000000000000")), lwtAttr(3, make([]byte, 16)), lwtRaw(4, []byte{0})),
			want{Attrs: "0c00010000000000000000001400020020010db80000000000000000000000001400030000000000000000000000000000000000050005000000000005000400000000000600060000000000"}},
		{"ip6_every_field_flags_ffff", LWTUNNEL_ENCAP_IP6, lwtCat(lwtAttr(1, []byte{0, 0, 0, 0, 0, 0, 0, 5}), lwtAttr(2, ip6("20010db8000000000000000000000001")), lwtAttr(3, ip6("20010db8000000000000000000000002")), lwtAttr(4, []byte{7}), lwtAttr(5, []byte{9}), lwtAttr(6, be16(0xffff))),
			want{Attrs: "0c00010000000000000000051400020020010db80000000000000000000000011400030020010db8000000000000000000000002050005000900000005000400070000000600060027ff0000"}},
		{"ip_every_field_flags_ffff", LWTUNNEL_ENCAP_IP, lwtCat(lwtAttr(1, []byte{0, 0, 0, 0, 0, 0, 0, 5}), lwtAttr(2, []byte{10, 0, 0, 1}), lwtAttr(3, []byte{10, 0, 0, 2}), lwtAttr(4, []byte{7}), lwtAttr(5, []byte{9}), lwtAttr(6, be16(0xffff))),
			want{Attrs: "0c0001000000000000000005080002000a000001080003000a000002050005000900000005000400070000000600060027ff0000"}},
		{"ip_flags_csum", LWTUNNEL_ENCAP_IP, lwtAttr(6, be16(1)),
			want{Attrs: "0c000100000000000000000008000200000000000800030000000000050005000000000005000400000000000600060000010000"}},
		{"ip_flags_0x0100", LWTUNNEL_ENCAP_IP, lwtAttr(6, be16(0x0100)),
			want{Attrs: "0c000100000000000000000008000200000000000800030000000000050005000000000005000400000000000600060001000000"}},
		{"ip_empty", LWTUNNEL_ENCAP_IP, nil, want{Attrs: ipZero}},
		{"ip6_empty", LWTUNNEL_ENCAP_IP6, nil,
			want{Attrs: "0c000100000000000000000014000200000000000000000000000000000000001400030000000000000000000000000000000000050005000000000005000400000000000600060000000000"}},
		{"ip_dst_longer_reads_first_4", LWTUNNEL_ENCAP_IP, lwtAttr(2, ip6("00000000000000000000000000000001")), want{Attrs: ipZero}},
		{"ip_ttl_u32_reads_first_byte", LWTUNNEL_ENCAP_IP, lwtAttr(4, u32(0x01020304)),
			want{Attrs: "0c000100000000000000000008000200000000000800030000000000050005000000000005000400040000000600060000000000"}},
		{"ip_type_above_max_ignored", LWTUNNEL_ENCAP_IP, lwtAttr(9, u32(1)), want{Attrs: ipZero}},
		{"ip_type_0_ignored", LWTUNNEL_ENCAP_IP, lwtAttr(0, u32(1)), want{Attrs: ipZero}},
		{"ip_nested_flag_on_dst_accepted", LWTUNNEL_ENCAP_IP, lwtAttr(2|nlaFNested, []byte{1, 1, 1, 1}),
			want{Attrs: "0c000100000000000000000008000200010101010800030000000000050005000000000005000400000000000600060000000000"}},
		{"ip_trailing_bytes_warn", LWTUNNEL_ENCAP_IP, append(ip4Dst1111, 1, 2),
			want{Attrs: "0c000100000000000000000008000200010101010800030000000000050005000000000005000400000000000600060000000000", Warning: "bytes leftover after parsing attributes"}},
		{"ip_opts_empty_nested", LWTUNNEL_ENCAP_IP, lwtAttr(8|nlaFNested, nil), want{Attrs: ipZero}},
		{"ip_id_short", LWTUNNEL_ENCAP_IP, lwtAttr(1, u32(1)), want{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 48, Policy: true}},
		{"ip_dst_short", LWTUNNEL_ENCAP_IP, lwtAttr(2, []byte{1, 0}), want{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 48, Policy: true}},
		{"ip6_dst_short", LWTUNNEL_ENCAP_IP6, lwtAttr(2, []byte{1, 2, 3, 4}), want{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 48}},
		{"ip_flags_short", LWTUNNEL_ENCAP_IP, lwtAttr(6, []byte{1}), want{Errno: syscall.ERANGE, Msg: policyFailed, Offset: 48, Policy: true}},
		{"ip_opts_not_nested", LWTUNNEL_ENCAP_IP, lwtAttr(8, nil), want{Errno: syscall.EINVAL, Msg: "NLA_F_NESTED is missing", Offset: 48, Policy: true}},
		{"ip_opts_unknown_type", LWTUNNEL_ENCAP_IP, lwtAttr(8|nlaFNested, lwtAttr(9, nil)), want{Errno: syscall.EINVAL, Msg: "Unknown attribute type", Offset: 52}},
		{"no_encap_type", 0, ip4Dst1111, want{Errno: syscall.EINVAL, Msg: "Unknown LWT encapsulation type", Offset: 44}},
		{"encap_type_above_max", 11, ip4Dst1111, want{Errno: syscall.EINVAL, Msg: "Unknown LWT encapsulation type", Offset: 44}},
		{"mpls_module_missing", LWTUNNEL_ENCAP_MPLS, nil, want{Errno: syscall.EOPNOTSUPP, Msg: "LWT encapsulation type not supported", Offset: 44}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, warn, _, err := BuildEncap(tc.typ, AF_INET, tc.nest, lwtEncapOff)
			var got want
			if err != nil {
				got = want{Errno: err.Errno, Msg: err.Msg, Offset: err.Offset, Policy: err.Policy != nil}
			} else {
				got = want{Attrs: hex.EncodeToString(e.Attrs()), Warning: warn}
				if e.Type() != tc.typ {
					t.Errorf("type %d, want %d", e.Type(), tc.typ)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("BuildEncap (-kernel +nlemu):\n%s", d)
			}
		})
	}
}

// TestBuildEncapFlagsDropOptionBits: LWTUNNEL_IP_FLAGS loses the "options
// present" flags (GENEVE/VXLAN/ERSPAN/GTP), which only options set
// (ip_tunnel_clear_options_present()); measured 0xffff -> 0x27ff.
func TestBuildEncapFlagsDropOptionBits(t *testing.T) {
	for _, typ := range []uint16{LWTUNNEL_ENCAP_IP, LWTUNNEL_ENCAP_IP6} {
		for _, f := range []uint16{0x0800, 0x1000, 0x4000, 0x8000} {
			e, _, _, err := BuildEncap(typ, AF_INET, lwtAttr(LWTUNNEL_IP_FLAGS, binary.BigEndian.AppendUint16(nil, f|0x2000)), 0)
			if err != nil {
				t.Fatal(err)
			}
			a := e.Attrs()
			if got := binary.BigEndian.Uint16(a[len(a)-4:]); got != 0x2000 {
				t.Errorf("type %d flags %#x: stored %#x, want 0x2000", typ, f|0x2000, got)
			}
		}
	}
}

// TestBuildEncapUnimplementedTypes: bpf and seg6local are built into
// the reference kernel but not into nlemu: refused, and marked so that a
// delete matches as the kernel does when it cannot build the state.
func TestBuildEncapUnimplementedTypes(t *testing.T) {
	for _, typ := range []uint16{LWTUNNEL_ENCAP_BPF, LWTUNNEL_ENCAP_SEG6_LOCAL} {
		_, _, unimpl, err := BuildEncap(typ, AF_INET, nil, 0)
		if err == nil || err.Errno != syscall.EOPNOTSUPP || !unimpl {
			t.Errorf("type %d: err %v unimplemented %v, want EOPNOTSUPP and true", typ, err, unimpl)
		}
	}
}

// TestBuildEncapEqualStatesCompareEqual: two requests that differ only in
// what the kernel does not store (padding, a longer attribute, an ignored
// type, the option flags) build equal states, as lwtunnel_cmp_encap()
// finds them; a different value does not.
func TestBuildEncapEqualStatesCompareEqual(t *testing.T) {
	build := func(nest []byte) Encap {
		e, _, _, err := BuildEncap(LWTUNNEL_ENCAP_IP, AF_INET, nest, 0)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a := build(lwtAttr(LWTUNNEL_IP_DST, []byte{10, 0, 0, 1}))
	for _, nest := range [][]byte{
		lwtCat(lwtAttr(LWTUNNEL_IP_DST, []byte{10, 0, 0, 1, 9, 9}), lwtAttr(9, nil)),
		lwtCat(lwtAttr(LWTUNNEL_IP_ID, make([]byte, 8)), lwtAttr(LWTUNNEL_IP_DST, []byte{10, 0, 0, 1}), lwtAttr(LWTUNNEL_IP_FLAGS, []byte{0x08, 0})),
	} {
		if b := build(nest); b != a {
			t.Errorf("%x: %x, want %x", nest, b.Attrs(), a.Attrs())
		}
	}
	if b := build(lwtAttr(LWTUNNEL_IP_DST, []byte{10, 0, 0, 2})); b == a {
		t.Error("another destination compares equal")
	}
}

// seg6Tun is a struct seg6_iptunnel_encap: the mode, then an SRH of the
// given type, segments_left and first_segment over body (segments and
// TLVs), its hdrlen covering body.
func seg6Tun(mode int32, typ, segsLeft, first uint8, body []byte) []byte {
	b := ne.AppendUint32(nil, uint32(mode))
	b = append(b, 0, uint8(len(body)/8), typ, segsLeft, first, 0, 0, 0)
	return append(b, body...)
}

// TestSeg6LikeKernel replays seg6 encapsulations sent to Linux 6.18 (on
// IPv4 routes unless noted): accepted ones are dumped as given
// (seg6_fill_encap_info()), refused ones are bare EINVAL.
func TestSeg6LikeKernel(t *testing.T) {
	seg := lwtHex("fc000000000000000000000000000001")
	seg2 := append(lwtHex("fc000000000000000000000000000002"), seg...)
	srh := func(tun []byte) []byte { return lwtAttr(SEG6_IPTUNNEL_SRH, tun) }
	for _, tc := range []struct {
		name   string
		family uint8
		nest   []byte
		ok     bool
	}{
		{"encap_one_segment", AF_INET, srh(seg6Tun(1, 4, 0, 0, seg)), true},
		{"encap_two_segments", AF_INET, srh(seg6Tun(1, 4, 1, 1, seg2)), true},
		{"inline_ipv4_refused", AF_INET, srh(seg6Tun(0, 4, 0, 0, seg)), false},
		{"inline_ipv6", AF_INET6, srh(seg6Tun(0, 4, 0, 0, seg)), true},
		{"l2encap", AF_INET, srh(seg6Tun(2, 4, 0, 0, seg)), true},
		{"encap_red", AF_INET, srh(seg6Tun(3, 4, 0, 0, seg)), true},
		{"l2encap_red", AF_INET, srh(seg6Tun(4, 4, 0, 0, seg)), true},
		{"mode_5", AF_INET, srh(seg6Tun(5, 4, 0, 0, seg)), false},
		{"mode_minus_1", AF_INET, srh(seg6Tun(-1, 4, 0, 0, seg)), false},
		{"no_srh", AF_INET, lwtAttr(2, nil), false},
		{"short", AF_INET, srh(seg6Tun(1, 4, 0, 0, seg)[:27]), false},
		{"srh_type_3", AF_INET, srh(seg6Tun(1, 3, 0, 0, seg)), false},
		{"segments_left_above_first", AF_INET, srh(seg6Tun(1, 4, 1, 0, seg)), false},
		{"first_segment_beyond_segments", AF_INET, srh(seg6Tun(1, 4, 0, 1, seg)), false},
		{"tlv_fits", AF_INET, srh(seg6Tun(1, 4, 0, 0, append(append([]byte{}, seg...), 5, 6, 0, 0, 0, 0, 0, 0))), true},
		{"tlv_overruns", AF_INET, srh(seg6Tun(1, 4, 0, 0, append(append([]byte{}, seg...), 5, 7, 0, 0, 0, 0, 0, 0))), false},
		{"bytes_after_srh", AF_INET, srh(append(seg6Tun(1, 4, 0, 0, seg), make([]byte, 8)...)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _, err := BuildEncap(LWTUNNEL_ENCAP_SEG6, tc.family, tc.nest, lwtEncapOff)
			if !tc.ok {
				if err == nil || err.Errno != syscall.EINVAL || err.Msg != "" {
					t.Fatalf("got %v, want a bare EINVAL", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(hex.EncodeToString(tc.nest), hex.EncodeToString(e.Attrs())); d != "" {
				t.Errorf("dump (-sent +dumped):\n%s", d)
			}
		})
	}
	// The last SEG6_IPTUNNEL_SRH wins (nla_parse()).
	two := append(srh(seg6Tun(1, 4, 0, 0, seg)), srh(seg6Tun(1, 4, 0, 0, seg2[:16]))...)
	e, _, _, err := BuildEncap(LWTUNNEL_ENCAP_SEG6, AF_INET, two, lwtEncapOff)
	if err != nil || string(e.Attrs()) != string(srh(seg6Tun(1, 4, 0, 0, seg2[:16]))) {
		t.Errorf("two SRH attributes: %x, %v; want the second", e.Attrs(), err)
	}
}

// FuzzBuildEncap: any nest either fails with an extack pointing inside the
// request or builds a state whose attributes parse back to the fixed
// layout of its type.
func FuzzBuildEncap(f *testing.F) {
	f.Add(uint16(LWTUNNEL_ENCAP_IP), lwtAttr(LWTUNNEL_IP_DST, []byte{1, 2, 3, 4}))
	f.Add(uint16(LWTUNNEL_ENCAP_IP6), lwtCat(lwtRaw(1, make([]byte, 8)), lwtAttr(2, make([]byte, 16)), lwtRaw(4, []byte{0})))
	f.Add(uint16(LWTUNNEL_ENCAP_IP), lwtAttr(8|nlaFNested, lwtAttr(2, nil)))
	f.Add(uint16(LWTUNNEL_ENCAP_SEG6), lwtAttr(SEG6_IPTUNNEL_SRH, seg6Tun(1, 4, 0, 0, make([]byte, 16))))
	f.Fuzz(func(t *testing.T, typ uint16, nest []byte) {
		e, _, _, err := BuildEncap(typ, AF_INET6, nest, lwtEncapOff)
		if err != nil {
			if err.Offset != 0 && (err.Offset < lwtEncapOff || err.Offset >= lwtEncapOff+nlaHdrLen+uint32(len(nest))) {
				t.Fatalf("offset %d outside the nest", err.Offset)
			}
			return
		}
		n, wantN, maxType := 0, 6, uint16(LWTUNNEL_IP_FLAGS)
		if e.Type() == LWTUNNEL_ENCAP_SEG6 {
			wantN, maxType = 1, SEG6_IPTUNNEL_SRH
		}
		for a := range Attrs(e.Attrs()) {
			n++
			if a.Type < 1 || a.Type > maxType {
				t.Fatalf("dumped type %d", a.Type)
			}
		}
		if n != wantN || AttrsLeftover(e.Attrs()) != 0 {
			t.Fatalf("%d attributes, %d left over", n, AttrsLeftover(e.Attrs()))
		}
	})
}
