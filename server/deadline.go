package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// recvDeadline is a Client's absolute receive deadline, as SO_RCVTIMEO's
// deadline form SetReadDeadline on a kernel socket: it applies to the next
// Recv and to one already waiting, which then returns ErrTimeout.
type recvDeadline struct {
	at atomic.Int64 // unix nanoseconds; 0 = none

	mu    sync.Mutex
	timer *time.Timer   // wakes an in-process waiter at the deadline (guarded by mu)
	uc    *net.UnixConn // the Unix connection being read, if any (guarded by mu)
	own   time.Time     // that read's own deadline, from the timeout (guarded by mu)
}

// passed reports whether the deadline is set and past.
func (d *recvDeadline) passed() bool {
	at := d.at.Load()
	return at != 0 && time.Now().UnixNano() >= at
}

// armUnix sets the read deadline of uc for one read: the earlier of own
// (from SetRecvTimeout) and the Client's deadline. It records both so that
// SetRecvDeadline can move the read's deadline while it waits.
func (d *recvDeadline) armUnix(uc *net.UnixConn, own time.Time) {
	d.mu.Lock()
	d.uc, d.own = uc, own
	uc.SetReadDeadline(earliest(own, d.at.Load()))
	d.mu.Unlock()
}

func earliest(own time.Time, at int64) time.Time {
	if at == 0 {
		return own
	}
	t := time.Unix(0, at)
	if own.IsZero() || t.Before(own) {
		return t
	}
	return own
}

// SetRecvDeadline sets an absolute deadline for Recv (the zero time: none).
// Unlike SetRecvTimeout it also ends a Recv that is already waiting, which
// returns ErrTimeout once the deadline passes, as a read on a kernel socket
// whose SetReadDeadline moved does.
func (cl *Client) SetRecvDeadline(t time.Time) {
	d := &cl.dl
	var at int64
	if !t.IsZero() {
		at = max(t.UnixNano(), 1)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at.Store(at)
	if d.uc != nil {
		d.uc.SetReadDeadline(earliest(d.own, at))
	}
	if cl.c == nil {
		return
	}
	// In process: wake the waiter now (the deadline may be past) and at
	// the deadline.
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	q := cl.c.q
	wake := func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	}
	wake()
	if at != 0 {
		if wait := time.Until(t); wait > 0 {
			d.timer = time.AfterFunc(wait, wake)
		}
	}
}
