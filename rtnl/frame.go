package rtnl

import (
	"encoding/binary"

	"github.com/mdlayher/netlink"
)

var ne = binary.NativeEndian

// Message is one netlink message taken from a datagram.
type Message struct {
	Header netlink.Header
	// Data is the payload after the 16-byte header (nlmsg_len - 16 bytes).
	Data []byte
	// Raw is the whole message as received (nlmsg_len bytes), echoed back in
	// NLMSG_ERROR when the socket did not ask for capped acks.
	Raw []byte
}

// RewriteFlags changes the message's nlmsg_flags, in its header and in a
// copy of its bytes (which may be the sender's), as a handler that edits
// the request's header in place does (ip6_route_multipath_add()): what an
// ACK echoes is the header so changed.
func (m *Message) RewriteFlags(f uint16) {
	raw := append([]byte(nil), m.Raw...)
	ne.PutUint16(raw[6:], f)
	m.Raw = raw
	m.Header.Flags = netlink.HeaderFlags(f)
}

func align4(n int) int { return (n + 3) &^ 3 }

// SplitDatagram returns the messages of one datagram with the kernel's
// netlink_rcv_skb() semantics: parsing stops silently at the first message
// whose nlmsg_len is shorter than a header or longer than what is left, and
// each message is followed by alignment padding that may be cut short at the
// end of the datagram. (mdlayher/netlink's parser rejects such datagrams
// outright; the kernel processes the valid prefix, so we must too.)
func SplitDatagram(b []byte) []Message { return AppendMessages(nil, b) }

// AppendMessages is SplitDatagram appending to msgs (to reuse a buffer).
func AppendMessages(msgs []Message, b []byte) []Message {
	for len(b) >= NLMSG_HDRLEN {
		n := int(ne.Uint32(b))
		if n < NLMSG_HDRLEN || n > len(b) {
			break
		}
		msgs = append(msgs, Message{
			Header: netlink.Header{
				Length:   uint32(n),
				Type:     netlink.HeaderType(ne.Uint16(b[4:])),
				Flags:    netlink.HeaderFlags(ne.Uint16(b[6:])),
				Sequence: ne.Uint32(b[8:]),
				PID:      ne.Uint32(b[12:]),
			},
			Data: b[NLMSG_HDRLEN:n:n],
			Raw:  b[:n:n],
		})
		adv := align4(n)
		if adv > len(b) {
			adv = len(b)
		}
		b = b[adv:]
	}
	return msgs
}

// AppendHeader appends a netlink header for a message of total length n
// (header included) to dst.
func AppendHeader(dst []byte, n int, typ, flags uint16, seq, pid uint32) []byte {
	dst, b := extend(dst, NLMSG_HDRLEN)
	putHeader(b, n, typ, flags, seq, pid)
	return dst
}

// putHeader writes an nlmsghdr into b.
func putHeader(b []byte, n int, typ, flags uint16, seq, pid uint32) {
	ne.PutUint32(b, uint32(n))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[12:], pid)
}

// AppendMessage appends one complete message (header + payload parts,
// padded to 4 bytes) to dst.
func AppendMessage(dst []byte, typ, flags uint16, seq, pid uint32, parts ...[]byte) []byte {
	n := NLMSG_HDRLEN
	for _, p := range parts {
		n += len(p)
	}
	if dst == nil {
		dst = make([]byte, 0, align4(n))
	}
	dst = AppendHeader(dst, n, typ, flags, seq, pid)
	for _, p := range parts {
		dst = append(dst, p...)
	}
	for i := n; i < align4(n); i++ {
		dst = append(dst, 0)
	}
	return dst
}

// AckOptions are the socket options that shape an NLMSG_ERROR reply.
type AckOptions struct {
	ExtAck bool // NETLINK_EXT_ACK
	CapAck bool // NETLINK_CAP_ACK
}

// AppendAck appends the NLMSG_ERROR message the kernel's netlink_ack() sends
// for req: err == nil, or an err with Errno 0 carrying only a warning text,
// is a success ACK (always capped: header only);
// an error echoes the whole request unless the socket set NETLINK_CAP_ACK;
// extended-ack TLVs follow only when the socket set NETLINK_EXT_ACK.
func AppendAck(dst []byte, req *Message, portid uint32, err *Error, o AckOptions) []byte {
	var flags uint16
	echo := req.Raw[:NLMSG_HDRLEN]
	code := int32(0)
	failed := err != nil && err.Errno != 0
	if failed {
		code = -int32(err.Errno)
		if !o.CapAck {
			echo = req.Raw
		}
	}
	if !failed || o.CapAck {
		flags |= NLM_F_CAPPED
	}
	var tlvs []byte
	if o.ExtAck && err != nil {
		tlvs = encodeExtAck(err)
		if len(tlvs) > 0 {
			flags |= NLM_F_ACK_TLVS
		}
	}
	var c [4]byte
	ne.PutUint32(c[:], uint32(code))
	// nlmsg_append() pads the echoed request to 4 bytes and nlmsg_len
	// covers the pad, TLVs or not (measured: a 17-byte request comes back
	// in a 40-byte NLMSG_ERROR).
	echo = padded(echo)
	return AppendMessage(dst, NLMSG_ERROR, flags, req.Header.Sequence, portid, c[:], echo, tlvs)
}

// padded returns b padded with zeros to a multiple of 4 bytes (the echoed
// request in NLMSG_ERROR is followed by TLVs at an aligned offset).
func padded(b []byte) []byte {
	if len(b)%4 == 0 {
		return b
	}
	p := make([]byte, align4(len(b)))
	copy(p, b)
	return p
}

// encodeExtAck encodes the TLVs of netlink_ack_tlv_fill(): MSG, OFFS,
// POLICY, MISS_TYPE, in that order.
func encodeExtAck(e *Error) []byte {
	ae := netlink.NewAttributeEncoder()
	if e.Msg != "" {
		ae.String(NLMSGERR_ATTR_MSG, e.Msg)
	}
	if e.Errno == 0 {
		// netlink_ack_tlv_fill(): only the message on success.
		b, _ := ae.Encode()
		return b
	}
	if e.Offset != 0 {
		ae.Uint32(NLMSGERR_ATTR_OFFS, e.Offset)
	}
	if e.Policy != nil {
		ae.Bytes(NLMSGERR_ATTR_POLICY|nlaFNested, e.Policy)
	}
	if e.MissType != 0 {
		ae.Uint32(NLMSGERR_ATTR_MISS_TYPE, uint32(e.MissType))
	}
	b, _ := ae.Encode()
	return b
}

const nlaFNested = 0x8000

// AppendDone appends the NLMSG_DONE that ends a dump (netlink_dump_done()):
// NLM_F_MULTI, a 4-byte errno, and the extack message when the dump failed
// and the socket set NETLINK_EXT_ACK.
func AppendDone(dst []byte, seq, portid uint32, err *Error, extAck bool) []byte {
	return AppendDoneFlags(dst, seq, portid, err, extAck, 0)
}

// AppendDoneFlags is AppendDone with the dump's answer flags
// (cb->answer_flags: NLM_F_DUMP_FILTERED when the dumpit applied a
// filter) added to NLM_F_MULTI.
func AppendDoneFlags(dst []byte, seq, portid uint32, err *Error, extAck bool, answer uint16) []byte {
	var c [4]byte
	flags := NLM_F_MULTI | answer
	var tlv []byte
	if err != nil {
		ne.PutUint32(c[:], uint32(-int32(err.Errno)))
		if extAck && (err.Msg != "" || err.Offset != 0) {
			// netlink_dump_done(): the text, then the offending
			// attribute's offset (NL_SET_ERR_MSG_ATTR in a dumpit).
			flags |= NLM_F_ACK_TLVS
			ae := netlink.NewAttributeEncoder()
			if err.Msg != "" {
				ae.String(NLMSGERR_ATTR_MSG, err.Msg)
			}
			if err.Offset != 0 {
				ae.Uint32(NLMSGERR_ATTR_OFFS, err.Offset)
			}
			if err.Policy != nil {
				// netlink_ack_tlv_fill() as for acks: a policy
				// violation in a dump request describes the policy.
				ae.Bytes(NLMSGERR_ATTR_POLICY|nlaFNested, err.Policy)
			}
			tlv, _ = ae.Encode()
		}
	}
	return AppendMessage(dst, NLMSG_DONE, flags, seq, portid, c[:], tlv)
}

// DoneSize is the size of an NLMSG_DONE without TLVs.
const DoneSize = NLMSG_HDRLEN + 4

// Dump datagram sizes, as netlink_dump() allocates them: NLMSG_GOODSIZE
// until the reader has shown a larger receive buffer, never more than
// SKB_WITH_OVERHEAD(32768).
const (
	NLMSG_GOODSIZE = 4096 - 320
	DumpMaxSize    = 32768 - 320
)

// DumpSize returns the datagram size for a dump batch given the largest
// receive buffer the reader has used so far.
func DumpSize(maxRecvLen int) int {
	if maxRecvLen > DumpMaxSize {
		maxRecvLen = DumpMaxSize
	}
	if maxRecvLen > NLMSG_GOODSIZE {
		return maxRecvLen
	}
	return NLMSG_GOODSIZE
}
