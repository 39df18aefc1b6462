package rtnl

import (
	"errors"
	"syscall"
	"testing"
)

// TestErrorUnwrapsToErrno: errors.Is sees the errno through an *Error, and a
// warning-only *Error (Errno 0) is no errno at all.
func TestErrorUnwrapsToErrno(t *testing.T) {
	var err error = Errorf(syscall.EEXIST, "File exists")
	if !errors.Is(err, syscall.EEXIST) {
		t.Error("errors.Is(EEXIST) = false")
	}
	if errors.Is(err, syscall.ENOENT) {
		t.Error("errors.Is(ENOENT) = true for EEXIST")
	}
	var warn error = &Error{Msg: "bytes leftover after parsing attributes"}
	if errors.Unwrap(warn) != nil {
		t.Errorf("warning unwraps to %v, want nil", errors.Unwrap(warn))
	}
}

// TestMultipathAddAckEchoesRewrittenFlags: ip6_route_multipath_add() edits
// the request header (EXCL and REPLACE off, CREATE on) and the ACK echoes
// it so edited (measured: 0x605 acknowledged as 0x405; the nlemu side is
// pinned by TestDiffRoutes "route add 2001:db8:3::/48 multipath").
// RewriteFlags makes that edit on a copy: the sender's bytes stay as sent.
func TestMultipathAddAckEchoesRewrittenFlags(t *testing.T) {
	sent := AppendMessage(nil, RTM_NEWROUTE, 0x605, 9, 0, make([]byte, 12))
	orig := append([]byte(nil), sent...)
	m := SplitDatagram(sent)[0]
	m.RewriteFlags(uint16(m.Header.Flags)&^(NLM_F_EXCL|NLM_F_REPLACE) | NLM_F_CREATE)
	ack := AppendAck(nil, &m, 1, nil, AckOptions{})
	echoed := SplitDatagram(ack)[0].Data[4:]
	if got := uint16(echoed[6]) | uint16(echoed[7])<<8; got != 0x405 {
		t.Errorf("ACK echoes flags %#x, want 0x405", got)
	}
	if string(sent) != string(orig) {
		t.Error("RewriteFlags changed the sender's bytes")
	}
}
