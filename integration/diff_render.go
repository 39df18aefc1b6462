package integration

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rendering turns netlink bytes into lines for cmp.Diff: one line per
// header / field group, every byte accounted for (values that are not of the
// expected size are shown in hex, non-zero padding is shown). Comparisons are
// made on bytes; the rendering only explains a difference.

var msgTypeNames = map[uint16]string{
	nlmsgNoop: "NLMSG_NOOP", nlmsgError: "NLMSG_ERROR", nlmsgDone: "NLMSG_DONE", nlmsgOverrun: "NLMSG_OVERRUN",
	rtmNewRule: "RTM_NEWRULE", rtmDelRule: "RTM_DELRULE", rtmGetRule: "RTM_GETRULE",
}

var fraNames = [...]string{
	"FRA_UNSPEC", "FRA_DST", "FRA_SRC", "FRA_IIFNAME", "FRA_GOTO", "FRA_UNUSED2", "FRA_PRIORITY",
	"FRA_UNUSED3", "FRA_UNUSED4", "FRA_UNUSED5", "FRA_FWMARK", "FRA_FLOW", "FRA_TUN_ID",
	"FRA_SUPPRESS_IFGROUP", "FRA_SUPPRESS_PREFIXLEN", "FRA_TABLE", "FRA_FWMASK", "FRA_OIFNAME",
	"FRA_PAD", "FRA_L3MDEV", "FRA_UID_RANGE", "FRA_PROTOCOL", "FRA_IP_PROTO", "FRA_SPORT_RANGE",
	"FRA_DPORT_RANGE", "FRA_DSCP", "FRA_FLOWLABEL", "FRA_FLOWLABEL_MASK", "FRA_SPORT_MASK",
	"FRA_DPORT_MASK", "FRA_DSCP_MASK",
}

func typeName(t uint16) string {
	if n, ok := msgTypeNames[t]; ok {
		return fmt.Sprintf("%s(%d)", n, t)
	}
	return fmt.Sprintf("type(%d)", t)
}

func flagNames(typ, f uint16) string {
	var names []string
	add := func(bit uint16, name string) {
		if f&bit != 0 {
			names = append(names, name)
			f &^= bit
		}
	}
	add(nlmFRequest, "REQUEST")
	add(nlmFMulti, "MULTI")
	add(nlmFAck, "ACK")
	add(nlmFEcho, "ECHO")
	add(nlmFDumpIntr, "DUMP_INTR")
	add(nlmFDumpFilt, "DUMP_FILTERED")
	switch {
	case typ == nlmsgError || typ == nlmsgDone:
		add(nlmFCapped, "CAPPED")
		add(nlmFAckTLVs, "ACK_TLVS")
	case typ >= 16 && (typ-16)&3 == 2: // GET
		add(nlmFRoot, "ROOT")
		add(nlmFMatch, "MATCH")
	case typ >= 16 && (typ-16)&3 == 0: // NEW
		add(nlmFReplace, "REPLACE")
		add(nlmFExcl, "EXCL")
		add(nlmFCreate, "CREATE")
		add(nlmFAppend, "APPEND")
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", f))
	}
	return strings.Join(names, "|")
}

func errnoName(e int32) string {
	if e == 0 {
		return "0 (OK)"
	}
	n := e
	if n < 0 {
		n = -n
	}
	name := unix.ErrnoName(syscall.Errno(n))
	if name == "" {
		name = "?"
	}
	return fmt.Sprintf("%d (%s)", e, name)
}

// RenderReply renders every datagram of r. With boundaries, each datagram is
// introduced by a "datagram N" line; otherwise messages are listed as one
// stream (dumps: the kernel's datagram packing depends on buffer sizes).
func RenderReply(r Reply, boundaries bool) []string {
	var out []string
	if r.Problem != "" {
		out = append(out, "PROBLEM: "+r.Problem)
	}
	for i, d := range r.Datagrams {
		if boundaries {
			out = append(out, fmt.Sprintf("datagram %d (%d bytes)", i, len(d.B)))
		}
		out = append(out, RenderMsgs(d.B, d.Ported)...)
	}
	return out
}

// RenderMsgs renders a byte stream of netlink messages. ported[i] marks
// message i's pid as a normalized port id (rendered "pid=PORT").
func RenderMsgs(b []byte, ported []bool) []string {
	var out []string
	msgs, rest := splitMsgs(b)
	for i, m := range msgs {
		out = append(out, renderMsg(m, i < len(ported) && ported[i])...)
	}
	if len(rest) > 0 {
		out = append(out, "trailing bytes: "+hex.EncodeToString(rest))
	}
	return out
}

func renderMsg(m rawMsg, ported bool) []string {
	pid := fmt.Sprint(m.Pid)
	if ported {
		pid = "PORT"
	}
	out := []string{fmt.Sprintf("%s flags=%#x<%s> seq=%d pid=%s len=%d",
		typeName(m.Type), m.Flags, flagNames(m.Type, m.Flags), m.Seq, pid, nlmsgHdrLen+len(m.Payload))}
	if pad := m.Raw[nlmsgHdrLen+len(m.Payload):]; !allZero(pad) {
		out = append(out, "  message padding: "+hex.EncodeToString(pad))
	}
	switch m.Type {
	case nlmsgError:
		out = append(out, renderError(m)...)
	case nlmsgDone:
		out = append(out, renderDone(m)...)
	case rtmNewRule, rtmDelRule, rtmGetRule:
		out = append(out, renderRule("  ", m.Payload)...)
	default:
		if len(m.Payload) > 0 {
			out = append(out, "  payload "+hex.EncodeToString(m.Payload))
		}
	}
	return out
}

func renderError(m rawMsg) []string {
	p := m.Payload
	if len(p) < 4 {
		return []string{"  short error payload " + hex.EncodeToString(p)}
	}
	out := []string{"  error " + errnoName(int32(binary.NativeEndian.Uint32(p)))}
	p = p[4:]
	if len(p) < nlmsgHdrLen {
		return append(out, "  short echoed header "+hex.EncodeToString(p))
	}
	inLen := int(binary.NativeEndian.Uint32(p))
	out = append(out, fmt.Sprintf("  echoed hdr len=%d %s flags=%#x seq=%d pid=%d",
		inLen, typeName(binary.NativeEndian.Uint16(p[4:])), binary.NativeEndian.Uint16(p[6:]),
		binary.NativeEndian.Uint32(p[8:]), binary.NativeEndian.Uint32(p[12:])))
	echoed := nlmsgHdrLen // NLM_F_CAPPED: only the header was copied
	if m.Flags&nlmFCapped == 0 {
		echoed = nlmsgAlign(inLen)
		if echoed > len(p) || inLen < nlmsgHdrLen {
			return append(out, "  echoed request (bad length) "+hex.EncodeToString(p[nlmsgHdrLen:]))
		}
		if inLen > nlmsgHdrLen {
			out = append(out, "  echoed body "+hex.EncodeToString(p[nlmsgHdrLen:inLen]))
		}
		if pad := p[inLen:echoed]; !allZero(pad) {
			out = append(out, "  echoed padding "+hex.EncodeToString(pad))
		}
	}
	tlvs := p[echoed:]
	if m.Flags&nlmFAckTLVs == 0 {
		if len(tlvs) > 0 {
			out = append(out, "  unexpected bytes without ACK_TLVS "+hex.EncodeToString(tlvs))
		}
		return out
	}
	return append(out, renderExtack(tlvs)...)
}

func renderDone(m rawMsg) []string {
	p := m.Payload
	if len(p) < 4 {
		return []string{"  done payload " + hex.EncodeToString(p)}
	}
	out := []string{"  done " + errnoName(int32(binary.NativeEndian.Uint32(p)))}
	if m.Flags&nlmFAckTLVs != 0 {
		return append(out, renderExtack(p[4:])...)
	}
	if len(p) > 4 {
		out = append(out, "  extra "+hex.EncodeToString(p[4:]))
	}
	return out
}

// attr is one netlink attribute cut out of a buffer.
type attr struct {
	Type uint16 // including NLA_F_NESTED / NLA_F_NET_BYTEORDER bits
	Data []byte
	Pad  []byte
}

// splitAttrs walks attributes like nla_for_each_attr; bad framing ends the
// walk and the remainder is returned as rest.
func splitAttrs(b []byte) (attrs []attr, rest []byte) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		if l < 4 || l > len(b) {
			break
		}
		next := nlmsgAlign(l)
		if next > len(b) {
			next = len(b)
		}
		attrs = append(attrs, attr{Type: binary.NativeEndian.Uint16(b[2:]), Data: b[4:l], Pad: b[l:next]})
		b = b[next:]
	}
	return attrs, b
}

func renderExtack(b []byte) []string {
	var out []string
	attrs, rest := splitAttrs(b)
	for _, a := range attrs {
		var s string
		switch a.Type & 0x3fff {
		case nlmsgerrAttrMsg:
			s = fmt.Sprintf("extack msg %q", a.Data)
		case nlmsgerrAttrOffs:
			s = "extack offset " + u32String(a.Data)
		case nlmsgerrAttrCookie:
			s = "extack cookie " + hex.EncodeToString(a.Data)
		case nlmsgerrAttrPolicy:
			s = "extack policy [" + renderNest(a.Data) + "]"
		case nlmsgerrAttrMissType:
			s = "extack miss-type " + u32String(a.Data)
		case nlmsgerrAttrMissNest:
			s = "extack miss-nest " + u32String(a.Data)
		default:
			s = fmt.Sprintf("extack attr %d %s", a.Type, hex.EncodeToString(a.Data))
		}
		if a.Type&^0x3fff != 0 {
			s += fmt.Sprintf(" (type %#x)", a.Type)
		}
		if !allZero(a.Pad) {
			s += " pad=" + hex.EncodeToString(a.Pad)
		}
		out = append(out, "  "+s)
	}
	if len(rest) > 0 {
		out = append(out, "  extack trailing "+hex.EncodeToString(rest))
	}
	return out
}

func renderNest(b []byte) string {
	attrs, rest := splitAttrs(b)
	var parts []string
	for _, a := range attrs {
		parts = append(parts, fmt.Sprintf("%d:%s", a.Type, hex.EncodeToString(a.Data)))
	}
	if len(rest) > 0 {
		parts = append(parts, "rest:"+hex.EncodeToString(rest))
	}
	return strings.Join(parts, " ")
}

func u32String(b []byte) string {
	if len(b) != 4 {
		return "hex:" + hex.EncodeToString(b)
	}
	return fmt.Sprint(binary.NativeEndian.Uint32(b))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// renderRule renders fib_rule_hdr and FRA_* attributes in wire order.
func renderRule(ind string, p []byte) []string {
	if len(p) < ruleHdrLen {
		return []string{ind + "short rule body " + hex.EncodeToString(p)}
	}
	out := []string{fmt.Sprintf("%shdr family=%d dst_len=%d src_len=%d tos=%#x table=%d res1=%d res2=%d action=%d flags=%#x",
		ind, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], binary.NativeEndian.Uint32(p[8:]))}
	attrs, rest := splitAttrs(p[ruleHdrLen:])
	for _, a := range attrs {
		s := ind + fraString(a)
		if !allZero(a.Pad) {
			s += " pad=" + hex.EncodeToString(a.Pad)
		}
		out = append(out, s)
	}
	if len(rest) > 0 {
		out = append(out, ind+"trailing "+hex.EncodeToString(rest))
	}
	return out
}

func fraString(a attr) string {
	t := a.Type & 0x3fff
	name := fmt.Sprintf("attr(%d)", t)
	if int(t) < len(fraNames) {
		name = fraNames[t]
	}
	if a.Type != t {
		name += fmt.Sprintf("[type %#x]", a.Type)
	}
	d := a.Data
	h := hex.EncodeToString(d)
	switch t {
	case fraDst, fraSrc:
		if ip, ok := netip.AddrFromSlice(d); ok {
			return fmt.Sprintf("%s %s", name, ip)
		}
	case fraIifname, fraOifname:
		return fmt.Sprintf("%s %q", name, d)
	case fraGoto, fraPriority, fraFwmark, fraFlow, fraSuppressIfgroup, fraSuppressPrefixlen, fraTable, fraFwmask:
		if len(d) == 4 {
			v := binary.NativeEndian.Uint32(d)
			return fmt.Sprintf("%s %d (%#x)", name, v, v)
		}
	case fraTunID:
		if len(d) == 8 {
			return fmt.Sprintf("%s be64 %d", name, binary.BigEndian.Uint64(d))
		}
	case fraL3mdev, fraProtocol, fraIPProto, fraDSCP, fraDSCPMask:
		if len(d) == 1 {
			return fmt.Sprintf("%s %d", name, d[0])
		}
	case fraUIDRange:
		if len(d) == 8 {
			return fmt.Sprintf("%s %d-%d", name, binary.NativeEndian.Uint32(d), binary.NativeEndian.Uint32(d[4:]))
		}
	case fraSportRange, fraDportRange:
		if len(d) == 4 {
			return fmt.Sprintf("%s %d-%d", name, binary.NativeEndian.Uint16(d), binary.NativeEndian.Uint16(d[2:]))
		}
	case fraSportMask, fraDportMask:
		if len(d) == 2 {
			return fmt.Sprintf("%s %#x", name, binary.NativeEndian.Uint16(d))
		}
	case fraFlowlabel, fraFlowlabelMask:
		if len(d) == 4 {
			return fmt.Sprintf("%s be32 %#x", name, binary.BigEndian.Uint32(d))
		}
	}
	return fmt.Sprintf("%s len=%d hex:%s", name, len(d), h)
}
