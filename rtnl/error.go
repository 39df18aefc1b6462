package rtnl

import (
	"fmt"
	"syscall"
)

// Error is the one error type handlers return: the errno the kernel would
// answer with and, where the kernel gives them, the extended-ack text, the
// offending attribute's offset, a missing attribute type and a policy
// description. The server encodes it into NLMSG_ERROR or NLMSG_DONE.
type Error struct {
	Errno syscall.Errno
	// Msg is the NLMSGERR_ATTR_MSG text, without trailing NUL ("" = none).
	Msg string
	// Offset is the byte offset of the bad attribute from the start of the
	// request's nlmsghdr (NLMSGERR_ATTR_OFFS); 0 = none.
	Offset uint32
	// MissType is NLMSGERR_ATTR_MISS_TYPE; 0 = none.
	MissType uint16
	// Policy is the encoded content of the NLMSGERR_ATTR_POLICY nest; nil = none.
	Policy []byte
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("%v: %s", e.Errno, e.Msg)
	}
	return e.Errno.Error()
}

// Unwrap returns the errno, so errors.Is(err, unix.EEXIST) holds for an
// *Error carrying EEXIST; a success-with-warning (Errno 0) wraps nothing.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// Errorf returns an *Error with errno and extack text msg.
func Errorf(errno syscall.Errno, msg string) *Error { return &Error{Errno: errno, Msg: msg} }

// Errno returns a bare *Error carrying only errno (no extack), as the kernel
// answers EEXIST, ENOENT or EPERM.
func Errno(errno syscall.Errno) *Error { return &Error{Errno: errno} }

// AttrError returns an error that points at the attribute at offset off, as
// NL_SET_ERR_MSG_ATTR does.
func AttrError(errno syscall.Errno, msg string, off uint32) *Error {
	return &Error{Errno: errno, Msg: msg, Offset: off}
}
