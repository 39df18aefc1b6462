package supervise

import (
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// maxRecv bounds the buffer the supervisor receives into for one call.
const maxRecv = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, ctlLen+65536); return &b }}

// recv emulates recvmsg/recvfrom on an injected socket as netlink_recvmsg()
// answers them (the shim's nl_recvmsg()): the datagram into the caller's
// buffers, the sender {AF_NETLINK, nl_pid 0, nl_groups = the group's bit},
// NETLINK_PKTINFO, MSG_TRUNC/MSG_PEEK, SOCKERR as the call's error. The
// supervisor receives on its copy of the descriptor and writes the result
// into the caller's memory.
func (s *Supervisor) recv(c *call, sk *sock, cfd int) {
	nr := int(c.n.Data.Nr)
	// from: no msghdr (recvfrom, read, readv); read and readv are
	// recvfrom with no flags and no sender (sock_read_iter())
	from := nr != unix.SYS_RECVMSG
	var (
		iov        []remoteIov
		flags      int
		mh         msghdr
		err        error
		addr, lenp uint64
	)
	switch nr {
	case unix.SYS_RECVFROM:
		iov = []remoteIov{{c.arg(1), c.arg(2)}}
		flags = int(int32(c.arg(3)))
		addr, lenp = c.arg(4), c.arg(5)
	case unix.SYS_READ:
		iov = []remoteIov{{c.arg(1), c.arg(2)}}
	case unix.SYS_READV:
		// iovec_from_user(): more than UIO_MAXIOV is EINVAL here (a
		// msghdr's is EMSGSIZE)
		if cnt := int32(c.arg(2)); cnt < 0 || cnt > 1024 {
			c.fail(unix.EINVAL)
			return
		}
		if iov, err = readIovs(c.tid, c.arg(1), uint64(int32(c.arg(2)))); err != nil {
			c.fail(errnoOf(err))
			return
		}
	default:
		if mh, err = readMsghdr(c.tid, c.arg(1)); err != nil {
			c.fail(unix.EFAULT)
			return
		}
		if iov, err = readIovs(c.tid, mh.Iov, mh.Iovlen); err != nil {
			c.fail(errnoOf(err))
			return
		}
		flags = int(int32(c.arg(2)))
	}
	if flags&unix.MSG_OOB != 0 {
		c.fail(unix.EOPNOTSUPP)
		return
	}
	var capacity uint64
	for _, v := range iov {
		capacity += v.len
	}
	if capacity > maxRecv {
		capacity = maxRecv
	}
	s.tellRecvlen(sk, cfd, capacity)

	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if need := ctlLen + int(capacity); len(*bp) < need {
		*bp = make([]byte, need)
	}
	buf := (*bp)[:ctlLen+int(capacity)]

	var (
		data  []byte
		dlen  int
		group uint32
	)
loop:
	for {
		d, n, e := s.recvOne(c, sk, cfd, buf, flags)
		if e != 0 {
			c.fail(e)
			return
		}
		if c.done {
			return
		}
		if n == 0 && d == nil {
			// the server hung up: end of stream, as a read of a closed peer
			s.finishRecv(c, from, addr, lenp, mh, iov, nil, 0, 0, sk, flags)
			return
		}
		k, g, pd, pl, e := classify(d, n)
		switch k {
		case kindError:
			c.fail(e)
			return
		case kindAck:
			continue // recorded by recvOne
		}
		group, data, dlen = g, pd, pl
		break loop
	}
	if len(data) > int(capacity) {
		data = data[:capacity]
	}
	s.finishRecv(c, from, addr, lenp, mh, iov, data, dlen, group, sk, flags)
}

// What a datagram from the server is, for a receive.
const (
	kindData  = iota // a reply, dump batch or unframed notification
	kindAck          // an nlemu ACK: consumed, receive again
	kindError        // a SOCKERR: the receive's error
)

// classify decodes a datagram read from the server (d: what was read, n:
// its full length, at least len(d)) as netlink_recvmsg() would present it:
// a SOCKERR is the call's errno (ENOBUFS if it carries none), an ACK is
// dropped, a GROUP frame is stripped and its group reported, anything else
// is the data as it is. For data, payload is the part of d to copy and
// dlen the datagram's full length (MSG_TRUNC).
func classify(d []byte, n int) (kind int, group uint32, payload []byte, dlen int, errno syscall.Errno) {
	switch ctlType(d) {
	case rtnl.NLEMU_SOCKERR:
		e := syscall.Errno(ne.Uint32(d[16:]))
		if int32(e) <= 0 || e > 4095 {
			e = unix.ENOBUFS
		}
		return kindError, 0, nil, 0, e
	case rtnl.NLEMU_ACK:
		return kindAck, 0, nil, 0, 0
	}
	if n > ctlLen && len(d) >= ctlLen && ne.Uint32(d) == ctlLen && ne.Uint16(d[4:]) == rtnl.NLEMU_GROUP {
		return kindData, ne.Uint32(d[16:]), d[ctlLen:], n - ctlLen, 0
	}
	return kindData, 0, d, n, 0
}

// finishRecv writes the datagram and what netlink_recvmsg() reports with
// it into the caller — in one process_vm_writev: the data into the
// caller's iovecs, the sender address, and for recvmsg msg_namelen,
// msg_controllen and msg_flags — and answers the call.
func (s *Supervisor) finishRecv(c *call, from bool, addr, lenp uint64, mh msghdr, iov []remoteIov, data []byte, dlen int, group uint32, sk *sock, flags int) {
	sk.mu.Lock()
	opts := sk.opts
	sk.mu.Unlock()
	var w memWrites
	w.scatter(iov, data)
	sa := sockaddrNL(0, groupMask(group))
	if from {
		if addr != 0 && lenp != 0 {
			l, err := readU32(c.tid, lenp)
			if err != nil || int32(l) < 0 {
				c.fail(unix.EINVAL)
				return
			}
			w.add(addr, sa[:min(int(l), len(sa))])
			w.add(lenp, u32bytes(uint32(len(sa))))
		}
	} else {
		base := c.arg(1)
		namelen := uint32(0)
		if mh.Name != 0 {
			w.add(mh.Name, sa[:min(int(mh.Namelen), len(sa))])
			namelen = uint32(len(sa))
		}
		mflags := int32(0)
		if dlen > len(data) {
			mflags |= unix.MSG_TRUNC
		}
		controllen := uint64(0)
		if opts&optPktinfo != 0 {
			// netlink_cmsg_recv_pktinfo(): struct nl_pktinfo {u32 group}
			const cmsgLen = unix.SizeofCmsghdr + 4
			if mh.Control != 0 && mh.Controllen >= cmsgLen {
				cm := make([]byte, cmsgLen)
				ne.PutUint64(cm[0:], cmsgLen)
				ne.PutUint32(cm[8:], rtnl.SOL_NETLINK)
				ne.PutUint32(cm[12:], unix.NETLINK_PKTINFO)
				ne.PutUint32(cm[16:], group)
				w.add(mh.Control, cm)
				controllen = min(uint64(unix.CmsgSpace(4)), mh.Controllen)
			} else {
				mflags |= unix.MSG_CTRUNC
			}
		}
		w.add(base+8, u32bytes(namelen))
		tail := make([]byte, 12) // msg_controllen (u64 at 40), msg_flags (i32 at 48)
		ne.PutUint64(tail[0:], controllen)
		ne.PutUint32(tail[8:], uint32(mflags))
		w.add(base+40, tail)
	}
	if !c.valid() {
		return
	}
	if err := w.do(c.tid); err != nil {
		c.fail(unix.EFAULT)
		return
	}
	if flags&unix.MSG_TRUNC != 0 {
		c.ret(int64(dlen))
		return
	}
	c.ret(int64(len(data)))
}

// recvOne returns the next datagram for the socket (the stash first) and
// its full length; nil, 0 at end of stream. It blocks, when the call would,
// until a datagram arrives, SO_RCVTIMEO passes (EAGAIN) or the caller is
// gone (then c.done is set and nothing is answered).
func (s *Supervisor) recvOne(c *call, sk *sock, cfd int, buf []byte, flags int) ([]byte, int, syscall.Errno) {
	peek := flags&unix.MSG_PEEK != 0
	sk.mu.Lock()
	if len(sk.stash) > 0 {
		d := sk.stash[0]
		if !peek || ctlType(d) == rtnl.NLEMU_SOCKERR {
			sk.stash[0] = nil
			sk.stash = sk.stash[1:]
			if len(sk.stash) == 0 {
				dropWakeAck(cfd)
			}
		}
		sk.mu.Unlock()
		return d, len(d), 0
	}
	sk.mu.Unlock()
	var deadline time.Time
	for {
		n, _, err := unix.Recvfrom(cfd, buf, flags&unix.MSG_PEEK|unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if flags&unix.MSG_DONTWAIT != 0 || nonblocking(cfd) {
				// A request the server has not read yet is owed its
				// reply: netlink queues the reply before the request's
				// send returns (netlink_unicast() runs rtnetlink_rcv() in
				// the sender's context), so the kernel's nonblocking
				// receive right after finds it, and a Go program's
				// goroutine does not park in the netpoller (and resume on
				// another thread, in another namespace) for it.
				// The worker waits at most briefWaitTime for it; the
				// rest of the wait (owedWait) is on a goroutine of its
				// own, which carries on even if the server has read the
				// request meanwhile (c.owed): the other threads' calls
				// are not held up longer.
				if !c.spun && (c.owed || requestQueued(cfd)) {
					c.spun = true
					if !c.owed {
						s.owedWaits.Add(1)
					}
					limit := owedWaitTime
					if c.inline {
						limit = briefWaitTime
					}
					if owedWait(cfd, limit) {
						continue
					}
					if c.inline {
						c.again, c.done, c.owed = true, true, true
						s.waits.Add(1)
						return nil, 0, 0
					}
				}
				return nil, 0, unix.EAGAIN
			}
			if c.inline && !c.spun && !c.slot {
				// the reply is usually on its way: wait for it briefly on
				// the worker before handing the call to a goroutine
				c.spun = true
				s.inlineWaitCount.Add(1)
				if briefWait(cfd) {
					continue
				}
			}
			if c.inline && !s.takeWaitSlot(c) {
				c.again, c.done = true, true // wait on a goroutine of its own
				s.waits.Add(1)
				return nil, 0, 0
			}
			if deadline.IsZero() {
				deadline = rcvTimeo(cfd)
			}
			if !s.waitData(c, cfd, deadline) {
				if c.done {
					return nil, 0, 0
				}
				return nil, 0, unix.EAGAIN
			}
			continue
		}
		if err != nil {
			return nil, 0, errnoOf(err)
		}
		if n == 0 {
			return nil, 0, 0
		}
		d := buf[:min(n, len(buf))]
		if t := ctlType(d); t == rtnl.NLEMU_ACK || t == rtnl.NLEMU_SOCKERR {
			if peek {
				var h [ctlLen]byte
				unix.Recvfrom(cfd, h[:], unix.MSG_DONTWAIT)
			}
			if t == rtnl.NLEMU_ACK {
				if seq := ne.Uint32(d[8:]); seq != 0 {
					sk.mu.Lock()
					sk.acks[seq] = syscall.Errno(-int32(ne.Uint32(d[16:])))
					sk.mu.Unlock()
				}
			}
		}
		return d, n, 0
	}
}

// waitData waits for the copy to become readable: false at the deadline
// (zero: none) or when the caller no longer waits (c.done set).
func (s *Supervisor) waitData(c *call, cfd int, deadline time.Time) bool {
	for {
		wait := waitTimeout
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false
			}
			wait = min(wait, left)
		}
		pfd := []unix.PollFd{{Fd: int32(cfd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(wait/time.Millisecond)+1)
		if err == nil && n > 0 {
			return true
		}
		if !c.valid() {
			c.done = true
			return false
		}
	}
}

// dropWakeAck consumes the sequence-0 ack that ctlCall sent to make the
// socket readable, if it is next, so the socket is readable exactly when
// there is more.
func dropWakeAck(cfd int) {
	var h [ctlLen]byte
	n, _, err := unix.Recvfrom(cfd, h[:], unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
	if err == nil && n == ctlLen && ctlType(h[:]) == rtnl.NLEMU_ACK && ne.Uint32(h[8:]) == 0 {
		unix.Recvfrom(cfd, h[:], unix.MSG_DONTWAIT)
	}
}

func nonblocking(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_NONBLOCK != 0
}

// rcvTimeo is SO_RCVTIMEO of the socket (set by the caller on the Unix
// socket itself: SOL_SOCKET options other than the buffer sizes continue
// to the kernel) as a deadline, or zero.
func rcvTimeo(fd int) time.Time {
	tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	if err != nil || (tv.Sec == 0 && tv.Usec == 0) {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond)
}

// tellRecvlen lets the server size dump datagrams for the caller's buffer,
// the first time and whenever a larger one shows up (nlk->max_recvmsg_len;
// the shim's tell_recvlen()).
func (s *Supervisor) tellRecvlen(sk *sock, cfd int, capacity uint64) {
	sk.mu.Lock()
	larger := capacity > sk.recvlen
	if larger {
		sk.recvlen = capacity
	}
	sk.mu.Unlock()
	if larger {
		sendCtl(cfd, rtnl.NLEMU_SETSOCKOPT, 0, 0, rtnl.SOL_NETLINK, rtnl.NLEMU_RECVLEN, uint32(min(capacity, 1<<32-1)))
	}
}

// takeWaitSlot lets an inline receive with nothing queued wait on its
// worker's thread (no hand-off when the reply comes), as long as another
// worker is left reading notifications: at most Workers-1 wait at a time,
// so a call that would unblock the waiters is always read. The slot is
// given back when the call is answered (handle).
func (s *Supervisor) takeWaitSlot(c *call) bool {
	if c.slot {
		return true
	}
	for {
		n := s.inlineWaits.Load()
		if n >= int32(Workers)-1 {
			return false
		}
		if s.inlineWaits.CompareAndSwap(n, n+1) {
			c.slot = true
			s.inlineWaitCount.Add(1)
			return true
		}
	}
}

// briefWaitTime bounds how long the worker waits inline for a reply
// before the receive moves to a goroutine: the server's answer to a
// request just sent usually comes within it, and the call then needs no
// hand-off; the other threads' calls wait at most this long behind it.
// Measured side by side, it made the route-get round trip cheaper on the
// development machine (docs/EXEC.md).
const briefWaitTime = 200 * time.Microsecond

// briefWait waits up to briefWaitTime for cfd to become readable.
func briefWait(cfd int) bool {
	pfd := []unix.PollFd{{Fd: int32(cfd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(briefWaitTime))
	n, err := unix.Ppoll(pfd, &ts, nil)
	return err == nil && n > 0
}

// requestQueued reports whether the program has sent the server something
// it has not read yet: the Unix socket's unread output (SIOCOUTQ,
// unix_outq_len(): the bytes of its datagrams still in the peer's queue).
func requestQueued(fd int) bool {
	n, err := unix.IoctlGetInt(fd, unix.TIOCOUTQ)
	return err == nil && n > 0
}

// owedWaitTime bounds how long a nonblocking receive waits for the reply
// to a request still queued to the server (owedWait), and owedGrace how
// long once the server has read it: a request that gets no reply (no
// NLM_F_ACK, no error) costs the receive at most that. The server answers
// in tens of µs on a quiet machine; at load 12 on two cores a grace of
// 200 µs let replies arrive after the EAGAIN (go tool trace of
// hack/peer-suite.sh's run: a TestRuleListFiltered goroutine parked).
const (
	owedWaitTime = 10 * time.Millisecond
	owedGrace    = time.Millisecond
)

// owedWait waits until fd is readable while a request is queued to the
// server, and owedGrace after the server has read it, at most limit in
// all. While the request is queued it looks every owedCheck (nothing
// signals the server's read); once it is read, one wait covers the
// grace: each wait that times out is a wake-up of the supervisor's
// thread for nothing.
func owedWait(fd int, limit time.Duration) bool {
	end := time.Now().Add(limit)
	read := false
	for {
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		if !read {
			left = min(left, owedCheck)
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ts := unix.NsecToTimespec(int64(left))
		if n, err := unix.Ppoll(pfd, &ts, nil); err == nil && n > 0 {
			return true
		}
		if !read && !requestQueued(fd) {
			read = true
			if g := time.Now().Add(owedGrace); g.Before(end) {
				end = g
			}
		}
	}
}

// owedCheck is how often owedWait looks whether the server has read the
// request.
const owedCheck = 50 * time.Microsecond
