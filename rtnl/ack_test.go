package rtnl

import (
	"encoding/hex"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseAckKernelRoundTrip parses every NLMSG_ERROR and NLMSG_DONE the
// kernel sent in testdata/routes.golden and re-encodes the parsed error with
// AppendAck / AppendDone: the bytes must be the kernel's, so ParseAck reads
// every TLV the encoder writes (message, offset, policy) and the echo rules
// (capped success, full echo without NETLINK_CAP_ACK, padding before TLVs).
func TestParseAckKernelRoundTrip(t *testing.T) {
	n := 0
	for _, c := range loadGolden(t) {
		if c.req == nil {
			continue // a notification case
		}
		req := &SplitDatagram(c.req)[0]
		for _, rep := range c.reps {
			m := &SplitDatagram(rep)[0]
			a, ok := ParseAck(m)
			if typ := m.Header.Type; typ != NLMSG_ERROR && typ != NLMSG_DONE {
				if ok {
					t.Errorf("%s: ParseAck accepted type %d", c.name, typ)
				}
				continue
			}
			if !ok {
				t.Fatalf("%s: not parsed: %x", c.name, rep)
			}
			n++
			var got []byte
			err := a.Error()
			if a.Type == NLMSG_DONE {
				got = AppendDoneFlags(nil, m.Header.Sequence, m.Header.PID, err, true, a.Flags&NLM_F_DUMP_FILTERED)
			} else {
				if a.EchoLen != len(a.Echo) || (err != nil && a.EchoLen != len(req.Raw)) {
					t.Errorf("%s: echo %d/%d bytes", c.name, len(a.Echo), a.EchoLen)
				}
				got = AppendAck(nil, req, m.Header.PID, err, AckOptions{ExtAck: true})
			}
			if d := cmp.Diff(hex.EncodeToString(rep), hex.EncodeToString(got)); d != "" {
				t.Errorf("%s: (-kernel +re-encoded):\n%s", c.name, d)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d acks", n)
	}
}

// TestParseAckShapes covers what the kernel recording lacks: a capped error
// (NETLINK_CAP_ACK), a success with a warning, MISS_TYPE, truncated bodies
// and other message types.
func TestParseAckShapes(t *testing.T) {
	req := &SplitDatagram(AppendMessage(nil, RTM_NEWROUTE, NLM_F_REQUEST|NLM_F_ACK, 5, 0, make([]byte, 20)))[0]
	full := &Error{Errno: syscall.EINVAL, Msg: "m", Offset: 28, MissType: 7, Policy: []byte{8, 0, 1, 0, 4, 0, 0, 0}}
	cases := []struct {
		name string
		b    []byte
		want Ack
		ok   bool
	}{
		{"capped error", AppendAck(nil, req, 9, full, AckOptions{ExtAck: true, CapAck: true}),
			Ack{Type: NLMSG_ERROR, Flags: NLM_F_CAPPED | NLM_F_ACK_TLVS, Err: *full, Echo: req.Raw[:16], EchoLen: 16}, true},
		{"warning", AppendAck(nil, req, 9, Warning("bytes leftover after parsing attributes"), AckOptions{ExtAck: true}),
			Ack{Type: NLMSG_ERROR, Flags: NLM_F_CAPPED | NLM_F_ACK_TLVS, Err: Error{Msg: "bytes leftover after parsing attributes"}, Echo: req.Raw[:16], EchoLen: 16}, true},
		{"no extack", AppendAck(nil, req, 9, full, AckOptions{}),
			Ack{Type: NLMSG_ERROR, Err: Error{Errno: syscall.EINVAL}, Echo: req.Raw, EchoLen: len(req.Raw)}, true},
		{"done", AppendDone(nil, 5, 9, Errorf(syscall.ENOENT, "ipv4: FIB table does not exist"), true),
			Ack{Type: NLMSG_DONE, Flags: NLM_F_MULTI | NLM_F_ACK_TLVS, Err: Error{Errno: syscall.ENOENT, Msg: "ipv4: FIB table does not exist"}}, true},
		{"short", AppendMessage(nil, NLMSG_ERROR, 0, 1, 1, []byte{1, 2}), Ack{}, false},
		{"truncated echo", AppendMessage(nil, NLMSG_ERROR, 0, 1, 1, []byte{0xea, 0xff, 0xff, 0xff, 40, 0}),
			Ack{Type: NLMSG_ERROR, Err: Error{Errno: syscall.EINVAL}, Echo: []byte{40, 0}, EchoLen: 2}, true},
		{"route", AppendRoute(nil, RTM_NEWROUTE, 0, 1, 1, &RouteMsg{Family: AF_INET}), Ack{}, false},
	}
	for _, c := range cases {
		got, ok := ParseAck(&SplitDatagram(c.b)[0])
		if ok != c.ok {
			t.Errorf("%s: ok %v", c.name, ok)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}

// TestAttrsWalker checks the exported walker against the kernel's nla_ok()
// rules: short and over-long attributes end the walk, a cut padding is
// accepted, flags are stripped from the type.
func TestAttrsWalker(t *testing.T) {
	b := append(rtAttr(RTA_DST, 1, 2, 3, 4), rtAttr(RTA_METRICS|nlaFNested, rtAttr(RTAX_MTU, 0xdc, 5, 0, 0)...)...)
	b = append(b, rtAttr(RTA_PREF, 1)[:5]...) // padding cut
	var got []string
	for a := range Attrs(b) {
		got = append(got, strings.Join([]string{itoa(int(a.Type)), itoa(len(a.Data)), itoa(a.Off), map[bool]string{true: "nested", false: "-"}[a.Nested]}, "/"))
	}
	want := []string{"1/4/0/-", "8/8/8/nested", "20/1/20/-"}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
	for a := range Attrs(rtAttr(RTA_DST|nlaFNested|nlaFNetByteOrder, 1)) {
		if !a.Nested || !a.NetByteOrder || a.Type != RTA_DST || a.RawType() != RTA_DST|nlaFNested|nlaFNetByteOrder {
			t.Errorf("flags: %+v", a)
		}
	}
	if n := AttrsLeftover(b); n != -3 {
		t.Errorf("leftover %d", n)
	}
	for _, bad := range [][]byte{{2, 0, 1, 0}, {9, 0, 1, 0, 0}, {1, 2, 3}} {
		for a := range Attrs(bad) {
			t.Errorf("%x: walked %+v", bad, a)
		}
		if AttrsLeftover(bad) != len(bad) {
			t.Errorf("%x: leftover %d", bad, AttrsLeftover(bad))
		}
	}
	n := 0
	for range Attrs(append(rtAttr(1, 1), rtAttr(2, 2)...)) {
		n++
		break
	}
	if n != 1 {
		t.Error("break ignored")
	}
}

// TestAckEchoPaddedQuirk: netlink_ack() appends the echoed request with
// nlmsg_append(), so a request whose length is not a multiple of 4 comes
// back padded and nlmsg_len counts the pad, with or without TLVs (recorded:
// a 17-byte DELROUTE gets a 40-byte NLMSG_ERROR).
func TestAckEchoPaddedQuirk(t *testing.T) {
	req := &SplitDatagram(AppendMessage(nil, RTM_DELROUTE, NLM_F_REQUEST|NLM_F_ACK, 1, 0, []byte{AF_INET}))[0]
	for _, o := range []AckOptions{{}, {ExtAck: true}} {
		for _, err := range []*Error{Errno(syscall.EINVAL), Errorf(syscall.EINVAL, "x")} {
			b := AppendAck(nil, req, 1, err, o)
			if n := ne.Uint32(b); n != uint32(len(b)) || n%4 != 0 || n < 40 {
				t.Errorf("%+v %v: nlmsg_len %d of %d bytes", o, err, n, len(b))
			}
		}
	}
}
