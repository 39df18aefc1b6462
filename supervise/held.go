package supervise

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// heldSet keeps the supervisor's copy of each socket it injects (the
// connection's own descriptor, which socket() used to close once the
// caller had its copy), for two reasons:
//
//   - The server sees a close() the program makes when the supervisor is
//     about to answer one of that process's calls, not at once. close() is
//     not trapped: without a copy the program's close() drops the
//     connection's last reference, and the server's threads wake to tear
//     it down while the program goes on running. On two CPUs those
//     wake-ups deschedule the program's threads at the moments a Go
//     program hands one goroutine's CPU to another (go tool trace of
//     vishvananda/netlink's TestRuleListFiltered under nlemu: each subtest
//     closes its last request's socket and then wakes its parent through
//     the P's runnext; each time another thread took the parent meanwhile
//     — into another network namespace — the waker's last system call
//     was that close(), 20–140 µs before; docs/PEER-SUITE.md). On the
//     kernel the teardown runs inside close() itself. With the copy held,
//     the server sees it when the process is blocked in its next socket()
//     (closeGone), or within holdMax if it makes none (expire).
//   - A call on a held socket needs no copy of the caller's descriptor:
//     one kcmp(KCMP_FILE) tells that the caller's descriptor is the held
//     socket (find), where pidfd_getfd, fstat and close took three system
//     calls on every trapped call.
//
// A copy is closed only once its process no longer has the socket at the
// number it was injected at (sameFile), and no call is using it (refs).
// Closing the supervisor's copy never ends a socket the program still
// holds, so a copy closed early (the program moved the socket to another
// number with dup2) costs only the look-up's fast path.
type heldSet struct {
	mu     sync.Mutex
	bySlot map[int][]*heldCopy // by the number injected at; guarded by mu
	n      int                 // copies held; guarded by mu
	timer  *time.Timer         // runs expire; guarded by mu
}

// heldCopy is one held socket.
type heldCopy struct {
	fd   int       // the supervisor's descriptor
	slot int       // the number it was injected at
	pid  int       // the process it was injected into
	ino  uint64    // the Unix socket's inode (Supervisor.socks)
	seen time.Time // when the process last had it (guarded by heldSet.mu)
	refs int       // calls using fd (guarded by heldSet.mu)
	gone bool      // to close once refs is 0 (guarded by heldSet.mu)
}

// holdMax is how often the copies of a process that makes no socket() are
// checked: a socket the program closed is seen closed by the server at
// most this late.
const holdMax = 20 * time.Millisecond

// maxHeld bounds the copies held at once; beyond it a new socket's copy
// is closed as before.
const maxHeld = 4096

var selfPid = os.Getpid()

// sameFile reports whether descriptor slot of process (or thread) pid is
// the open file of the supervisor's descriptor fd (kcmp(2) KCMP_FILE: 0
// when equal; an error — the process is gone, the number is free, or no
// access — is "no").
func sameFile(pid, slot, fd int) bool {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(selfPid), 0 /* KCMP_FILE */, uintptr(slot), uintptr(fd), 0)
	return e == 0 && r == 0
}

// hold keeps fd, the supervisor's copy of a socket just injected at slot
// into process pid; false when the set is full (the caller closes fd).
func (h *heldSet) hold(pid, slot, fd int, ino uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= maxHeld {
		return false
	}
	if h.bySlot == nil {
		h.bySlot = map[int][]*heldCopy{}
	}
	h.bySlot[slot] = append(h.bySlot[slot], &heldCopy{fd: fd, slot: slot, pid: pid, ino: ino, seen: time.Now()})
	h.n++
	if h.timer == nil {
		h.timer = time.AfterFunc(holdMax, h.expire)
	} else if h.n == 1 {
		h.timer.Reset(holdMax)
	}
	return true
}

// find returns the held copy that descriptor slot of thread tid is, with a
// reference the caller gives back with unref; nil if none is.
func (h *heldSet) find(tid, slot int) *heldCopy {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.bySlot[slot] {
		if !c.gone && sameFile(tid, slot, c.fd) {
			c.refs++
			return c
		}
	}
	return nil
}

// unref gives back find's reference, closing the copy if it was dropped
// meanwhile.
func (h *heldSet) unref(c *heldCopy) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.refs--
	if c.refs == 0 && c.gone {
		unix.Close(c.fd)
	}
}

// closeGone drops the copies of process pid's sockets that it no longer
// has at their numbers (socket(): the caller is blocked while the server
// tears them down).
func (h *heldSet) closeGone(pid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweep(func(c *heldCopy) bool { return c.pid != pid || sameFile(pid, c.slot, c.fd) })
}

// expire drops the copies not seen for holdMax whose process no longer has
// them, marks the others seen, and arms the timer again while any is held.
func (h *heldSet) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.sweep(func(c *heldCopy) bool {
		if now.Sub(c.seen) < holdMax-time.Millisecond {
			return true
		}
		if sameFile(c.pid, c.slot, c.fd) {
			c.seen = now
			return true
		}
		return false
	})
	if h.n > 0 {
		h.timer.Reset(holdMax)
	}
}

// sweep keeps the copies keep says to and drops the others: closed at
// once, or by the last unref. h.mu is held.
func (h *heldSet) sweep(keep func(*heldCopy) bool) {
	for slot, list := range h.bySlot {
		kept := list[:0]
		for _, c := range list {
			if keep(c) {
				kept = append(kept, c)
				continue
			}
			c.gone = true
			if c.refs == 0 {
				unix.Close(c.fd)
			}
			h.n--
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(h.bySlot, slot)
		} else {
			h.bySlot[slot] = kept
		}
	}
}
