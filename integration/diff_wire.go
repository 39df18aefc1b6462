// Package integration holds nlemu's end-to-end tests. The files named diff_*
// are the differential layer: they build raw rtnetlink requests, replay them
// on two endpoints (a live kernel namespace and nlemu), collect every reply
// and render it readably for cmp.Diff.
package integration

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Netlink and rtnetlink constants used by the differential tests (values from
// <linux/netlink.h>, <linux/rtnetlink.h>, <linux/fib_rules.h>).
const (
	nlmsgNoop    = 0x1
	nlmsgError   = 0x2
	nlmsgDone    = 0x3
	nlmsgOverrun = 0x4

	rtmNewRule = 32
	rtmDelRule = 33
	rtmGetRule = 34

	nlmFRequest  = 0x1
	nlmFMulti    = 0x2
	nlmFAck      = 0x4
	nlmFEcho     = 0x8
	nlmFDumpIntr = 0x10
	nlmFDumpFilt = 0x20
	nlmFRoot     = 0x100
	nlmFMatch    = 0x200
	nlmFDump     = nlmFRoot | nlmFMatch
	nlmFReplace  = 0x100
	nlmFExcl     = 0x200
	nlmFCreate   = 0x400
	nlmFAppend   = 0x800
	nlmFCapped   = 0x100 // on NLMSG_ERROR
	nlmFAckTLVs  = 0x200 // on NLMSG_ERROR / NLMSG_DONE

	nlmsgerrAttrMsg      = 1
	nlmsgerrAttrOffs     = 2
	nlmsgerrAttrCookie   = 3
	nlmsgerrAttrPolicy   = 4
	nlmsgerrAttrMissType = 5
	nlmsgerrAttrMissNest = 6

	afUnspec = 0
	afInet   = 2
	afInet6  = 10
	afIPMR   = 128 // RTNL_FAMILY_IPMR
	afIP6MR  = 129 // RTNL_FAMILY_IP6MR

	frActUnspec      = 0
	frActToTbl       = 1
	frActGoto        = 2
	frActNop         = 3
	frActBlackhole   = 6
	frActUnreachable = 7
	frActProhibit    = 8

	fibRulePermanent = 0x1
	fibRuleInvert    = 0x2
	fibRuleFindSaddr = 0x10000

	rtnlgrpIPv4Rule = 8
	rtnlgrpIPv6Rule = 19

	solNetlink         = 270
	netlinkAddMember   = 1
	netlinkDropMember  = 2
	netlinkCapAck      = 10
	netlinkExtAck      = 11
	netlinkGetStrictCk = 12

	nlmsgHdrLen  = 16
	ruleHdrLen   = 12
	rtTableMain  = 254
	rtTableLocal = 255
)

// FRA_* attribute types.
const (
	fraDst = iota + 1
	fraSrc
	fraIifname
	fraGoto
	fraUnused2
	fraPriority
	fraUnused3
	fraUnused4
	fraUnused5
	fraFwmark
	fraFlow
	fraTunID
	fraSuppressIfgroup
	fraSuppressPrefixlen
	fraTable
	fraFwmask
	fraOifname
	fraPad
	fraL3mdev
	fraUIDRange
	fraProtocol
	fraIPProto
	fraSportRange
	fraDportRange
	fraDSCP
	fraFlowlabel
	fraFlowlabelMask
	fraSportMask
	fraDportMask
	fraDSCPMask
)

// nlmsgAlign rounds n up to the netlink alignment (4).
func nlmsgAlign(n int) int { return (n + 3) &^ 3 }

// RuleHdr is struct fib_rule_hdr (12 bytes, flags in host order).
type RuleHdr struct {
	Family, DstLen, SrcLen, TOS, Table, Res1, Res2, Action uint8
	Flags                                                  uint32
}

// Bytes encodes h.
func (h RuleHdr) Bytes() []byte {
	b := []byte{h.Family, h.DstLen, h.SrcLen, h.TOS, h.Table, h.Res1, h.Res2, h.Action, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(b[8:], h.Flags)
	return b
}

// Msg frames body as one netlink message: a 16-byte nlmsghdr whose nlmsg_len
// is 16+len(body), followed by body and zero padding to 4 bytes. pid is the
// nlmsg_pid the sender writes (0 for normal requests).
func Msg(typ, flags uint16, seq, pid uint32, body []byte) []byte {
	b := make([]byte, nlmsgAlign(nlmsgHdrLen+len(body)))
	binary.NativeEndian.PutUint32(b[0:], uint32(nlmsgHdrLen+len(body)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	binary.NativeEndian.PutUint32(b[12:], pid)
	copy(b[nlmsgHdrLen:], body)
	return b
}

// RuleReq builds a fib_rule_hdr followed by attributes. Well-formed
// attributes are encoded with netlink.AttributeEncoder (host byte order,
// aligned, zero padded); Raw appends bytes verbatim for malformed input.
// Methods return the builder so requests read like `ip rule` lines.
type RuleReq struct {
	Hdr  RuleHdr
	ae   *netlink.AttributeEncoder
	tail []byte // bytes after the encoded attributes
}

// Rule starts a request for family with action FR_ACT_TO_TBL.
func Rule(family uint8) *RuleReq {
	return &RuleReq{Hdr: RuleHdr{Family: family, Action: frActToTbl}, ae: netlink.NewAttributeEncoder()}
}

// flush moves the encoder's attributes into tail so that later Raw bytes keep
// their position.
func (r *RuleReq) flush() {
	b, err := r.ae.Encode()
	if err != nil {
		panic(fmt.Sprintf("diff: encoding attributes: %v", err))
	}
	r.tail = append(r.tail, b...)
	r.ae = netlink.NewAttributeEncoder()
}

// Body returns fib_rule_hdr + attributes.
func (r *RuleReq) Body() []byte {
	r.flush()
	return append(r.Hdr.Bytes(), r.tail...)
}

// Header setters.
func (r *RuleReq) Act(a uint8) *RuleReq         { r.Hdr.Action = a; return r }
func (r *RuleReq) HTable(t uint8) *RuleReq      { r.Hdr.Table = t; return r }
func (r *RuleReq) TOS(t uint8) *RuleReq         { r.Hdr.TOS = t; return r }
func (r *RuleReq) Flags(f uint32) *RuleReq      { r.Hdr.Flags = f; return r }
func (r *RuleReq) Lens(dst, src uint8) *RuleReq { r.Hdr.DstLen, r.Hdr.SrcLen = dst, src; return r }
func (r *RuleReq) Res(r1, r2 uint8) *RuleReq    { r.Hdr.Res1, r.Hdr.Res2 = r1, r2; return r }

// Typed attribute setters (host byte order unless noted).
func (r *RuleReq) U8(t uint16, v uint8) *RuleReq   { r.ae.Uint8(t, v); return r }
func (r *RuleReq) U16(t uint16, v uint16) *RuleReq { r.ae.Uint16(t, v); return r }
func (r *RuleReq) U32(t uint16, v uint32) *RuleReq { r.ae.Uint32(t, v); return r }

// BE32 encodes v in network byte order (FRA_FLOWLABEL, FRA_FLOWLABEL_MASK).
func (r *RuleReq) BE32(t uint16, v uint32) *RuleReq {
	r.ae.Bytes(t, binary.BigEndian.AppendUint32(nil, v))
	return r
}

// BE64 encodes v in network byte order (FRA_TUN_ID).
func (r *RuleReq) BE64(t uint16, v uint64) *RuleReq {
	r.ae.Bytes(t, binary.BigEndian.AppendUint64(nil, v))
	return r
}

// Str encodes s with a trailing NUL.
func (r *RuleReq) Str(t uint16, s string) *RuleReq { r.ae.String(t, s); return r }

// Bytes encodes b as the attribute payload (any length: too short, too long).
func (r *RuleReq) Bytes(t uint16, b []byte) *RuleReq { r.ae.Bytes(t, b); return r }

// Raw appends b verbatim after the attributes encoded so far.
func (r *RuleReq) Raw(b []byte) *RuleReq {
	r.flush()
	r.tail = append(r.tail, b...)
	return r
}

// Convenience selectors.
func (r *RuleReq) Pref(p uint32) *RuleReq  { return r.U32(fraPriority, p) }
func (r *RuleReq) Table(t uint32) *RuleReq { return r.U32(fraTable, t) }
func (r *RuleReq) Goto(p uint32) *RuleReq  { return r.U32(fraGoto, p) }
func (r *RuleReq) Iif(n string) *RuleReq   { return r.Str(fraIifname, n) }
func (r *RuleReq) Oif(n string) *RuleReq   { return r.Str(fraOifname, n) }
func (r *RuleReq) Mark(m uint32) *RuleReq  { return r.U32(fraFwmark, m) }
func (r *RuleReq) Mask(m uint32) *RuleReq  { return r.U32(fraFwmask, m) }

// Src sets src_len and FRA_SRC from raw address bytes (as given, not masked).
func (r *RuleReq) Src(addr []byte, plen uint8) *RuleReq {
	r.Hdr.SrcLen = plen
	return r.Bytes(fraSrc, addr)
}

// Dst sets dst_len and FRA_DST.
func (r *RuleReq) Dst(addr []byte, plen uint8) *RuleReq {
	r.Hdr.DstLen = plen
	return r.Bytes(fraDst, addr)
}

// PortRange encodes a fib_rule_port_range.
func (r *RuleReq) PortRange(t uint16, start, end uint16) *RuleReq {
	b := binary.NativeEndian.AppendUint16(nil, start)
	return r.Bytes(t, binary.NativeEndian.AppendUint16(b, end))
}

// UIDRange encodes a fib_rule_uid_range.
func (r *RuleReq) UIDRange(start, end uint32) *RuleReq {
	b := binary.NativeEndian.AppendUint32(nil, start)
	return r.Bytes(fraUIDRange, binary.NativeEndian.AppendUint32(b, end))
}

// Request frames the rule as a message of type typ.
func (r *RuleReq) Request(typ, flags uint16, seq uint32) []byte {
	return Msg(typ, flags, seq, 0, r.Body())
}

// rawMsg is one netlink message cut out of a datagram.
type rawMsg struct {
	Type, Flags uint16
	Seq, Pid    uint32
	Payload     []byte // nlmsg_len-16 bytes
	Raw         []byte // header + payload + padding as received
}

// splitMsgs cuts a datagram into messages the way the kernel walks one
// (NLMSG_OK/NLMSG_NEXT). Bytes that do not form a valid message are returned
// as rest.
func splitMsgs(b []byte) (msgs []rawMsg, rest []byte) {
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < nlmsgHdrLen || l > len(b) {
			break
		}
		next := nlmsgAlign(l)
		if next > len(b) {
			next = len(b)
		}
		msgs = append(msgs, rawMsg{
			Type:    binary.NativeEndian.Uint16(b[4:]),
			Flags:   binary.NativeEndian.Uint16(b[6:]),
			Seq:     binary.NativeEndian.Uint32(b[8:]),
			Pid:     binary.NativeEndian.Uint32(b[12:]),
			Payload: b[nlmsgHdrLen:l],
			Raw:     b[:next],
		})
		b = b[next:]
	}
	return msgs, b
}

// normalizePids returns a copy of datagram d in which the nlmsg_pid of every
// top-level message equal to one of pids is replaced by 0, and for each
// message whether its pid was replaced. Port ids are the only volatile field
// in rtnetlink replies: nothing else is touched (the nlmsghdr echoed inside
// NLMSG_ERROR carries what the sender wrote). The marks let the renderer tell
// "the port id" from a literal 0, so a reply that wrongly carries pid 0 still
// shows up as a difference.
func normalizePids(d []byte, pids ...uint32) (out []byte, marks []bool) {
	out = append([]byte(nil), d...)
	b := out
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < nlmsgHdrLen || l > len(b) {
			break
		}
		pid := binary.NativeEndian.Uint32(b[12:])
		hit := false
		for _, p := range pids {
			if pid == p {
				binary.NativeEndian.PutUint32(b[12:], 0)
				hit = true
				break
			}
		}
		marks = append(marks, hit)
		next := nlmsgAlign(l)
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return out, marks
}

// isDumpRequest reports whether rtnetlink treats m as a dump request: a GET
// kind message ((type-16)&3 == 2) with either NLM_F_ROOT or NLM_F_MATCH set
// (rtnetlink_rcv_msg tests `nlmsg_flags & NLM_F_DUMP`).
func isDumpRequest(typ, flags uint16) bool {
	return typ >= 16 && (typ-16)&3 == 2 && flags&nlmFDump != 0
}

// expectedTerminators counts the replies the kernel must send for datagram d:
// one NLMSG_ERROR per message with NLM_F_ACK, one NLMSG_DONE (or ERROR) per
// dump request. Failures of messages without NLM_F_ACK also produce an
// NLMSG_ERROR, which the collector picks up while it waits for quiet.
func expectedTerminators(d []byte) int {
	msgs, _ := splitMsgs(d)
	n := 0
	for _, m := range msgs {
		switch {
		// rtnetlink_rcv_msg silently accepts a message with an empty body
		// (shorter than struct rtgenmsg), dump or not: only NLM_F_ACK
		// gets an answer.
		case m.Flags&nlmFRequest != 0 && isDumpRequest(m.Type, m.Flags) && len(m.Payload) > 0:
			n++
		case m.Flags&nlmFAck != 0:
			n++
		}
	}
	return n
}
