package rtnl

import (
	"strings"
	"syscall"
)

// Ack is a decoded NLMSG_ERROR (netlink_ack()) or NLMSG_DONE
// (netlink_dump_done()) as a client reads it.
type Ack struct {
	// Type is NLMSG_ERROR or NLMSG_DONE; Flags the message's flags
	// (NLM_F_CAPPED, NLM_F_ACK_TLVS, NLM_F_MULTI, NLM_F_DUMP_FILTERED).
	Type, Flags uint16
	// Err is the error and its extended-ack TLVs: Errno 0 is a success,
	// whose Msg may still carry a warning. Policy is the content of the
	// NLMSGERR_ATTR_POLICY nest.
	Err Error
	// Echo is the echoed request of an NLMSG_ERROR: its header alone when
	// capped, else as much of it as the message holds.
	Echo []byte
	// EchoLen is the echoed part's length as the kernel counts it: 16
	// when capped, else the echoed header's nlmsg_len.
	EchoLen int
	// Cookie and MissNest are NLMSGERR_ATTR_COOKIE and
	// NLMSGERR_ATTR_MISS_NEST.
	Cookie   []byte
	MissNest uint32
}

// ParseAck decodes an NLMSG_ERROR or NLMSG_DONE message. ok is false for
// other types and for a body too short to hold the error code. It is the one
// ACK decoder (rtnltest, the server's clients and the integration tests read
// acks through it).
func ParseAck(m *Message) (a Ack, ok bool) {
	typ := uint16(m.Header.Type)
	d := m.Data
	if (typ != NLMSG_ERROR && typ != NLMSG_DONE) || len(d) < 4 {
		return a, false
	}
	a.Type, a.Flags = typ, uint16(m.Header.Flags)
	a.Err.Errno = syscall.Errno(-int32(ne.Uint32(d)))
	tlv := 4
	if typ == NLMSG_ERROR {
		if len(d) < 4+NLMSG_HDRLEN {
			a.Echo = d[4:]
			a.EchoLen = len(a.Echo)
			return a, true
		}
		echo := NLMSG_HDRLEN
		if a.Flags&NLM_F_CAPPED == 0 {
			echo = int(ne.Uint32(d[4:]))
		}
		a.EchoLen = echo
		a.Echo = d[4:min(len(d), 4+max(echo, 0))]
		tlv = 4 + align4(echo)
	}
	if a.Flags&NLM_F_ACK_TLVS == 0 || tlv > len(d) || tlv < 4 {
		return a, true
	}
	for at := range Attrs(d[tlv:]) {
		v := at.Data
		switch at.Type {
		case NLMSGERR_ATTR_MSG:
			a.Err.Msg = strings.TrimRight(string(v), "\x00")
		case NLMSGERR_ATTR_OFFS:
			if len(v) >= 4 {
				a.Err.Offset = ne.Uint32(v)
			}
		case NLMSGERR_ATTR_COOKIE:
			a.Cookie = v
		case NLMSGERR_ATTR_POLICY:
			a.Err.Policy = v
		case NLMSGERR_ATTR_MISS_TYPE:
			if len(v) >= 4 {
				a.Err.MissType = uint16(ne.Uint32(v))
			}
		case NLMSGERR_ATTR_MISS_NEST:
			if len(v) >= 4 {
				a.MissNest = ne.Uint32(v)
			}
		}
	}
	return a, true
}

// Error returns the ack's error, nil for a success (a warning alone is not
// an error).
func (a *Ack) Error() *Error {
	if a.Err.Errno == 0 {
		return nil
	}
	e := a.Err
	return &e
}
