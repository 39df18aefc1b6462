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
