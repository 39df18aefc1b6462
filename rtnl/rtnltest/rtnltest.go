// Package rtnltest builds raw rtnetlink rule requests and renders replies
// readably, for tests that talk to nlemu or to a kernel at the byte level.
package rtnltest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/nlemu/nlemu/rtnl"
)

var ne = binary.NativeEndian

// Attr is one raw attribute.
type Attr struct {
	Type uint16
	Data []byte
}

// U8, U16, U32 build host-order integer attributes.
func U8(t uint16, v uint8) Attr   { return Attr{t, []byte{v}} }
func U16(t uint16, v uint16) Attr { b := make([]byte, 2); ne.PutUint16(b, v); return Attr{t, b} }
func U32(t uint16, v uint32) Attr { b := make([]byte, 4); ne.PutUint32(b, v); return Attr{t, b} }

// BE32, BE64 build big-endian integer attributes.
func BE32(t uint16, v uint32) Attr {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, v)
	return Attr{t, b}
}
func BE64(t uint16, v uint64) Attr {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return Attr{t, b}
}

// Str is a NUL-terminated string attribute.
func Str(t uint16, s string) Attr { return Attr{t, append([]byte(s), 0)} }

// Addr is an address attribute ("10.0.0.1" or "2001:db8::1").
func Addr(t uint16, s string) Attr {
	a := netip.MustParseAddr(s)
	return Attr{t, a.AsSlice()}
}

// Pair is two host-order u32s (FRA_UID_RANGE) or, with 16-bit halves,
// a port range.
func UIDRange(a, b uint32) Attr {
	d := make([]byte, 8)
	ne.PutUint32(d, a)
	ne.PutUint32(d[4:], b)
	return Attr{rtnl.FRA_UID_RANGE, d}
}
func PortRange(t uint16, a, b uint16) Attr {
	d := make([]byte, 4)
	ne.PutUint16(d, a)
	ne.PutUint16(d[2:], b)
	return Attr{t, d}
}

// Pref and Table are the common FRA_PRIORITY / FRA_TABLE attributes.
func Pref(p uint32) Attr  { return U32(rtnl.FRA_PRIORITY, p) }
func Table(t uint32) Attr { return U32(rtnl.FRA_TABLE, t) }

// Hdr is a fib_rule_hdr.
type Hdr struct {
	Family, DstLen, SrcLen, Tos, Table, Res1, Res2, Action uint8
	Flags                                                  uint32
}

// V4 and V6 return headers for a TO_TBL rule of that family.
func V4(table uint8) Hdr { return Hdr{Family: rtnl.AF_INET, Table: table, Action: rtnl.FR_ACT_TO_TBL} }
func V6(table uint8) Hdr { return Hdr{Family: rtnl.AF_INET6, Table: table, Action: rtnl.FR_ACT_TO_TBL} }

// Body encodes the header followed by the attributes.
func Body(h Hdr, attrs ...Attr) []byte {
	b := []byte{h.Family, h.DstLen, h.SrcLen, h.Tos, h.Table, h.Res1, h.Res2, h.Action, 0, 0, 0, 0}
	ne.PutUint32(b[8:], h.Flags)
	for _, a := range attrs {
		var ah [4]byte
		ne.PutUint16(ah[:], uint16(4+len(a.Data)))
		ne.PutUint16(ah[2:], a.Type)
		b = append(b, ah[:]...)
		b = append(b, a.Data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	return b
}

// Msg frames one request.
func Msg(typ, flags uint16, seq uint32, body []byte) []byte {
	return rtnl.AppendMessage(nil, typ, flags, seq, 0, body)
}

// Flags commonly used.
const (
	AddFlags = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK | rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	DelFlags = rtnl.NLM_F_REQUEST | rtnl.NLM_F_ACK
)

// Ack is a decoded NLMSG_ERROR.
type Ack struct {
	Errno    int // positive errno, 0 = success
	Msg      string
	Offset   uint32
	MissType uint32
	Policy   string // hex of the policy nest content
	Flags    uint16
	EchoLen  int // bytes of the request echoed
}

func (a Ack) String() string {
	s := fmt.Sprintf("errno=%d", a.Errno)
	if a.Msg != "" {
		s += fmt.Sprintf(" msg=%q", a.Msg)
	}
	if a.Offset != 0 {
		s += fmt.Sprintf(" offs=%d", a.Offset)
	}
	if a.MissType != 0 {
		s += fmt.Sprintf(" miss=%d", a.MissType)
	}
	if a.Policy != "" {
		s += " policy=" + a.Policy
	}
	return s
}

// ParseAck decodes the NLMSG_ERROR message m with rtnl.ParseAck (a
// message of another type is read as if it were one, as before).
func ParseAck(m rtnl.Message) Ack {
	a := Ack{Flags: uint16(m.Header.Flags)}
	if m.Header.Type != rtnl.NLMSG_DONE {
		m.Header.Type = rtnl.NLMSG_ERROR
	}
	r, ok := rtnl.ParseAck(&m)
	if !ok {
		return a
	}
	a.Errno = int(r.Err.Errno)
	a.Msg, a.Offset, a.MissType = r.Err.Msg, r.Err.Offset, uint32(r.Err.MissType)
	if r.Err.Policy != nil {
		a.Policy = fmt.Sprintf("%x", r.Err.Policy)
	}
	if r.Type == rtnl.NLMSG_ERROR && len(m.Data) >= 20 {
		a.EchoLen = r.EchoLen
	}
	return a
}

// forAttrs calls fn with each attribute's raw type and payload (rtnl.Attrs).
func forAttrs(b []byte, fn func(t uint16, v []byte)) {
	for a := range rtnl.Attrs(b) {
		fn(a.RawType(), a.Data)
	}
}

var fraNames = strings.Fields("UNSPEC DST SRC IIFNAME GOTO UNUSED2 PRIORITY UNUSED3 UNUSED4 UNUSED5 FWMARK FLOW " +
	"TUN_ID SUPPRESS_IFGROUP SUPPRESS_PREFIXLEN TABLE FWMASK OIFNAME PAD L3MDEV UID_RANGE " +
	"PROTOCOL IP_PROTO SPORT_RANGE DPORT_RANGE DSCP FLOWLABEL FLOWLABEL_MASK SPORT_MASK " +
	"DPORT_MASK DSCP_MASK")

// RenderRule renders an RTM_NEWRULE/DELRULE message like the spec's
// transcripts: header fields, then attributes in wire order.
func RenderRule(m rtnl.Message) string {
	d := m.Data
	if len(d) < 12 {
		return fmt.Sprintf("short rule % x", d)
	}
	kind := map[uint16]string{rtnl.RTM_NEWRULE: "NEWRULE", rtnl.RTM_DELRULE: "DELRULE"}[uint16(m.Header.Type)]
	s := fmt.Sprintf("%s fam=%d dst=%d src=%d tos=%d table=%d res=%d/%d act=%d flags=%#x [", kind, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], ne.Uint32(d[8:]))
	var parts []string
	forAttrs(d[12:], func(t uint16, v []byte) {
		name := fmt.Sprint(t)
		if int(t) < len(fraNames) {
			name = fraNames[t]
		}
		var val string
		switch t {
		case rtnl.FRA_IIFNAME, rtnl.FRA_OIFNAME:
			val = fmt.Sprintf("%q", string(v))
		case rtnl.FRA_DST, rtnl.FRA_SRC:
			if a, ok := netip.AddrFromSlice(v); ok {
				val = a.String()
			} else {
				val = fmt.Sprintf("%x", v)
			}
		case rtnl.FRA_TUN_ID:
			val = fmt.Sprint(binary.BigEndian.Uint64(v))
		case rtnl.FRA_FLOWLABEL, rtnl.FRA_FLOWLABEL_MASK:
			val = fmt.Sprintf("%#x", binary.BigEndian.Uint32(v))
		case rtnl.FRA_UID_RANGE:
			val = fmt.Sprintf("%d-%d", ne.Uint32(v), ne.Uint32(v[4:]))
		case rtnl.FRA_SPORT_RANGE, rtnl.FRA_DPORT_RANGE:
			val = fmt.Sprintf("%d-%d", ne.Uint16(v), ne.Uint16(v[2:]))
		default:
			switch len(v) {
			case 1:
				val = fmt.Sprint(v[0])
			case 2:
				val = fmt.Sprint(ne.Uint16(v))
			case 4:
				val = fmt.Sprint(int32(ne.Uint32(v)))
			default:
				val = fmt.Sprintf("%x", v)
			}
		}
		parts = append(parts, name+"="+val)
	})
	return s + strings.Join(parts, " ") + "]"
}

// NE is the host byte order.
var NE = ne

// ExtackMsg returns the NLMSGERR_ATTR_MSG text in a TLV area.
func ExtackMsg(b []byte) string {
	var s string
	forAttrs(b, func(t uint16, v []byte) {
		if t&0x3fff == rtnl.NLMSGERR_ATTR_MSG {
			s = strings.TrimRight(string(v), "\x00")
		}
	})
	return s
}
