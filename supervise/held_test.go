package supervise

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// heldPair is a SOCK_SEQPACKET pair standing in for an injected socket:
// prog is the program's descriptor, copy the supervisor's (a dup), peer
// the server's end.
func heldPair(t *testing.T) (prog, copy, peer int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := unix.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	return fds[0], c, fds[1]
}

// newHeld is an empty heldSet whose timer stops with the test.
func newHeld(t *testing.T) *heldSet {
	h := &heldSet{}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.timer != nil {
			h.timer.Stop()
		}
	})
	return h
}

// peerClosed reports whether the peer sees the other end closed (POLLHUP).
func peerClosed(t *testing.T, peer int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}
	if _, err := unix.Poll(p, 0); err != nil {
		t.Fatal(err)
	}
	return p[0].Revents&unix.POLLHUP != 0
}

// TestHeldCopyClosedAtNextSocket: the server sees the program's close() of
// a held socket only when the supervisor drops its copy — at the process's
// next socket() (closeGone) — and a socket the program still has is kept.
func TestHeldCopyClosedAtNextSocket(t *testing.T) {
	h := newHeld(t)
	prog, cp, peer := heldPair(t)
	prog2, cp2, peer2 := heldPair(t)
	defer unix.Close(prog2)
	if !h.hold(selfPid, prog, cp, 1) || !h.hold(selfPid, prog2, cp2, 2) {
		t.Fatal("hold refused")
	}
	if c := h.find(unix.Gettid(), prog); c == nil || c.fd != cp {
		t.Fatalf("find(%d) = %+v, want the copy %d", prog, c, cp)
	} else {
		h.unref(c)
	}
	unix.Close(prog)
	if h.find(unix.Gettid(), prog) != nil {
		t.Error("find found a socket the program closed")
	}
	if peerClosed(t, peer) {
		t.Fatal("the peer saw the close while the copy was held")
	}
	h.closeGone(selfPid)
	if !peerClosed(t, peer) {
		t.Error("the peer did not see the close once the copy was dropped")
	}
	if peerClosed(t, peer2) {
		t.Error("closeGone dropped the copy of a socket the program still has")
	}
	if c := h.find(unix.Gettid(), prog2); c == nil || c.fd != cp2 {
		t.Errorf("find(%d) = %+v after closeGone, want the copy %d", prog2, c, cp2)
	} else {
		h.unref(c)
	}
}

// TestHeldCopyInUseClosedByLastUnref: a copy dropped while a call uses it
// (a receive waiting on it) is closed when that call lets it go, never
// under it.
func TestHeldCopyInUseClosedByLastUnref(t *testing.T) {
	h := newHeld(t)
	prog, cp, peer := heldPair(t)
	h.hold(selfPid, prog, cp, 1)
	c := h.find(unix.Gettid(), prog)
	if c == nil {
		t.Fatal("find: nil")
	}
	unix.Close(prog)
	h.closeGone(selfPid)
	if peerClosed(t, peer) {
		t.Fatal("the copy was closed while a call used it")
	}
	h.unref(c)
	if !peerClosed(t, peer) {
		t.Error("the copy was not closed by the last unref")
	}
}

// TestHeldCopyExpires: a process that makes no other socket() has the
// copies of the sockets it closed dropped within holdMax (expire), and
// those it still has kept.
func TestHeldCopyExpires(t *testing.T) {
	h := newHeld(t)
	prog, cp, peer := heldPair(t)
	prog2, cp2, peer2 := heldPair(t)
	defer unix.Close(prog2)
	h.hold(selfPid, prog, cp, 1)
	h.hold(selfPid, prog2, cp2, 2)
	unix.Close(prog)
	for end := time.Now().Add(10 * time.Second); !peerClosed(t, peer); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the copy of a closed socket was not dropped")
		}
	}
	h.expire() // once more, past holdMax for the kept one too
	time.Sleep(holdMax)
	h.expire()
	if peerClosed(t, peer2) {
		t.Error("expire dropped the copy of a socket the program still has")
	}
	h.mu.Lock()
	n := h.n
	h.mu.Unlock()
	if n != 1 {
		t.Errorf("%d copies held, want 1", n)
	}
}
