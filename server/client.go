package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/rtnl"
)

// Client is one emulated netlink socket, in-process or over the Unix
// socket; both have the same semantics. Send hands the server one netlink
// datagram; Recv returns the next datagram for this socket (replies, dump
// batches, notifications) or a socket error such as ENOBUFS. SetSockopt,
// Bind, JoinGroup and LeaveGroup return once the server has applied them,
// with the errno setsockopt(2)/bind(2) would return: a membership is in
// effect when they return. A Client may be used by one sender and one
// receiver goroutine at a time.
type Client struct {
	portid uint32

	// in-process
	c *conn

	// over a Unix socket
	uc  *net.UnixConn
	buf []byte // guarded by reading

	mu   sync.Mutex
	cond sync.Cond // L = &mu; signalled when reading or stash/acks change
	// timeout (a time.Duration) and closed are atomic: every Send and
	// Recv reads them, and a lock each was a tenth of an in-process route
	// get's time.
	timeout atomic.Int64
	closed  atomic.Bool
	// Over a Unix socket one goroutine at a time reads the socket
	// (reading): Recv, or a control call waiting for its ack. A control
	// call keeps what it reads before its ack in stash, in order, for
	// Recv; Recv hands acks it reads to the control call by sequence.
	reading bool                     // guarded by mu
	stash   [][]byte                 // guarded by mu
	acks    map[uint32]syscall.Errno // guarded by mu
	ctlSeq  uint32                   // guarded by mu

	// A deadline set with SetRecvDeadline (deadline.go), which also ends
	// a Recv already waiting.
	dl recvDeadline
}

// ackTimeout bounds how long a control call waits for the server's ack.
const ackTimeout = 10 * time.Second

func newClient(portid uint32) *Client {
	cl := &Client{portid: portid, acks: map[uint32]syscall.Errno{}}
	cl.cond.L = &cl.mu
	return cl
}

// ErrTimeout is returned by Recv when the receive timeout expires.
var ErrTimeout = errors.New("nlemu: receive timed out")

// Dial opens an in-process socket in namespace o.Namespace.
func (s *Server) Dial(o Options) (*Client, error) {
	c, err := s.open(o.Namespace, o.PID, o.bits(), 0)
	if err != nil {
		return nil, err
	}
	c.priv.src = selfPrivileges
	c.groupNotes.track.Store(true)
	cl := newClient(c.portid)
	cl.c = c
	if o.Groups != 0 {
		if err := cl.Bind(o.Groups); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return cl, nil
}

// PortID returns the socket's port id (what getsockname() reports).
func (cl *Client) PortID() uint32 { return cl.portid }

// SetRecvTimeout bounds how long Recv waits (0 = forever).
func (cl *Client) SetRecvTimeout(d time.Duration) {
	cl.timeout.Store(int64(d))
}

// Send sends one netlink datagram. An empty one fails with ENODATA, as
// netlink_sendmsg() refuses it ("Zero length message leads to an empty
// skb"; over the Unix socket it would read as the end of the stream).
func (cl *Client) Send(b []byte) error {
	if len(b) == 0 {
		return syscall.ENODATA
	}
	if cl.c != nil {
		if cl.isClosed() {
			return net.ErrClosed
		}
		if len(b) > cl.c.srv.maxMsg() {
			// netlink_sendmsg(): EMSGSIZE at send (--max-msg, limits.go).
			return syscall.EMSGSIZE
		}
		cl.c.handle(b)
		cl.c.tidy()
		return nil
	}
	_, err := cl.uc.Write(b)
	return err
}

func (cl *Client) isClosed() bool { return cl.closed.Load() }

// inprocRecvLen is the receive buffer an in-process reader is taken to
// have: like `ip`, it reads with 32 KiB, which sizes later dump batches.
const inprocRecvLen = 32768

// Recv returns the next datagram. A socket error (ENOBUFS) is returned as a
// syscall.Errno once, after the datagrams queued before it.
func (cl *Client) Recv() ([]byte, error) {
	b, _, err := cl.RecvFrom()
	return b, err
}

// RecvFrom is Recv that also returns the multicast group the datagram was
// sent to: the group of a notification (the kernel reports it as the
// sender's nl_groups bit and in NETLINK_PKTINFO), 0 for a reply.
func (cl *Client) RecvFrom() ([]byte, uint32, error) {
	to := time.Duration(cl.timeout.Load())
	if cl.c != nil {
		b, _, err := cl.recvInproc(to, nil)
		if err != nil {
			return nil, 0, err
		}
		return b, cl.c.takeGroup(b), nil
	}
	return cl.recvUnix(to)
}

// RecvInto is Recv into the caller's buffer, as recvmsg(2) reads: it
// copies the next datagram into p and returns the datagram's length. A
// datagram longer than p is cut to len(p), its full length still returned
// (recvmsg(2) with MSG_TRUNC); the rest is lost. As netlink_recvmsg() does,
// len(p) is the receive buffer that sizes later dump batches (at most
// 32 KiB minus overhead, at least a page). In-process, the server encodes
// its next replies into the buffers read this way, so a loop of route gets
// and RecvInto allocates nothing; Recv hands the buffer itself over.
func (cl *Client) RecvInto(p []byte) (int, error) {
	to := time.Duration(cl.timeout.Load())
	if cl.c != nil {
		_, n, err := cl.recvInproc(to, p)
		return n, err
	}
	b, _, err := cl.recvUnix(to)
	if err != nil {
		return 0, err
	}
	copy(p, b)
	return len(b), nil
}

// recvTimer ends an in-process wait after a receive timeout.
type recvTimer struct {
	t       *time.Timer
	expired bool // guarded by the queue's mu
}

// armRecvTimer starts the timer of a Recv with a timeout; apart, so that a
// Recv without one allocates nothing (the closure's variables).
func armRecvTimer(q *queue, to time.Duration) *recvTimer {
	rt := &recvTimer{}
	rt.t = time.AfterFunc(to, func() {
		q.mu.Lock()
		rt.expired = true
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	return rt
}

// recvInproc waits for the next datagram of the in-process queue. With p
// nil it returns the datagram itself; otherwise it copies it into p, under
// the queue's lock, returns its length, and recycles a lent reply buffer
// (queue.free) for the conn's next reply.
func (cl *Client) recvInproc(to time.Duration, p []byte) ([]byte, int, error) {
	q := cl.c.q
	var rt *recvTimer
	if to > 0 {
		rt = armRecvTimer(q, to)
		defer rt.t.Stop()
	}
	expired := func() bool { return (rt != nil && rt.expired) || cl.dl.passed() }
	q.mu.Lock()
	for q.head >= len(q.items) && q.err == 0 && !q.closed && !expired() {
		q.cond.Wait()
	}
	timedOut := expired() && q.head >= len(q.items) && q.err == 0 && !q.closed
	var (
		it    item
		errno syscall.Errno
		ok    bool
		n     int
	)
	if !timedOut {
		it, errno, ok = q.popLocked()
		if p != nil && it.b != nil {
			n = len(it.b)
			copy(p, it.b)
			if it.lent {
				q.recycleLocked(it.b)
			}
		}
	}
	q.mu.Unlock()
	if timedOut {
		return nil, 0, ErrTimeout
	}
	if !ok {
		return nil, 0, net.ErrClosed
	}
	bufLen := inprocRecvLen
	if p != nil {
		bufLen = len(p)
	}
	cl.c.afterRead(bufLen)
	if errno != 0 {
		return nil, 0, errno
	}
	if it.b == nil {
		return nil, 0, ErrTimeout
	}
	if p != nil {
		// A notification's group is forgotten (it is keyed by the
		// datagram's address, which a lent buffer's reuse would repeat).
		cl.c.takeGroup(it.b)
		return nil, n, nil
	}
	return it.b, n, nil
}

// Close closes the socket; its namespace lives on while others hold it.
func (cl *Client) Close() error {
	if !cl.closed.CompareAndSwap(false, true) {
		return nil
	}
	if cl.c != nil {
		cl.c.close()
		return nil
	}
	return cl.uc.Close()
}

// SetSockopt sets a socket option as setsockopt(2) would on a netlink
// socket (level SOL_NETLINK or SOL_SOCKET) and returns once the server has
// applied it, with the kernel's errno as a syscall.Errno: EINVAL for
// NETLINK_ADD_MEMBERSHIP/DROP_MEMBERSHIP of group 0 or beyond
// RTNLGRP_MAX, ENOPROTOOPT for an unknown SOL_NETLINK option, EPERM for
// NETLINK_LISTEN_ALL_NSID or a privileged group without the capability.
func (cl *Client) SetSockopt(level, name int, value uint32) error {
	if cl.c != nil {
		return errnoErr(cl.c.sockopt(level, name, value))
	}
	var p [12]byte
	ne.PutUint32(p[0:], uint32(level))
	ne.PutUint32(p[4:], uint32(name))
	ne.PutUint32(p[8:], value)
	return cl.ctlUnix(rtnl.NLEMU_SETSOCKOPT, p[:])
}

// Bind sets the legacy multicast group mask, as bind(2) with nl_groups,
// and returns once it is in effect.
func (cl *Client) Bind(groups uint32) error {
	if cl.c != nil {
		return errnoErr(cl.c.bindGroups(groups))
	}
	var p [4]byte
	ne.PutUint32(p[:], groups)
	return cl.ctlUnix(rtnl.NLEMU_BIND, p[:])
}

// JoinGroup is setsockopt(NETLINK_ADD_MEMBERSHIP, group): notifications
// of group are delivered from when it returns.
func (cl *Client) JoinGroup(group uint32) error {
	return cl.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, group)
}

// LeaveGroup is setsockopt(NETLINK_DROP_MEMBERSHIP, group).
func (cl *Client) LeaveGroup(group uint32) error {
	return cl.SetSockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_DROP_MEMBERSHIP, group)
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// ctlUnix sends a SETSOCKOPT or BIND control message with NLM_F_ACK and
// waits for the server's answer (docs/PROTOCOL.md). Datagrams that arrive
// before it are kept, in order, for Recv.
func (cl *Client) ctlUnix(typ uint16, p []byte) error {
	cl.mu.Lock()
	cl.ctlSeq++
	seq := cl.ctlSeq
	cl.mu.Unlock()
	if _, err := cl.uc.Write(rtnl.AppendMessage(nil, typ, rtnl.NLM_F_ACK, seq, 0, p)); err != nil {
		return err
	}
	deadline := time.Now().Add(ackTimeout)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for {
		if e, ok := cl.acks[seq]; ok {
			delete(cl.acks, seq)
			return errnoErr(e)
		}
		if cl.reading {
			// Recv is reading: it hands the ack over.
			cl.cond.Wait()
			continue
		}
		cl.reading = true
		cl.mu.Unlock()
		d, err := cl.readUnix(deadline)
		cl.mu.Lock()
		cl.reading = false
		cl.cond.Broadcast()
		if err != nil {
			return err
		}
		if s, e, ok := controlAck(d); ok {
			cl.acks[s] = e
		} else {
			cl.stash = append(cl.stash, d)
		}
	}
}

// controlAck recognizes the server's answer to a SETSOCKOPT or BIND, an
// NLEMU_ACK alone in its datagram, and returns its sequence number and
// errno.
func controlAck(d []byte) (uint32, syscall.Errno, bool) {
	if len(d) != rtnl.NLMSG_HDRLEN+4 || ne.Uint16(d[4:]) != rtnl.NLEMU_ACK || ne.Uint32(d) != uint32(len(d)) {
		return 0, 0, false
	}
	return ne.Uint32(d[8:]), syscall.Errno(-int32(ne.Uint32(d[16:]))), true
}

// DialUnix connects to the server at path and opens a socket in namespace
// o.Namespace (docs/PROTOCOL.md).
func DialUnix(path string, o Options) (*Client, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	name := o.Namespace
	if name == "" {
		name = "default"
	}
	pid := o.PID
	if pid == 0 {
		pid = uint32(os.Getpid())
	}
	p := make([]byte, 16, 16+len(name)+1)
	ne.PutUint32(p[0:], 1)
	ne.PutUint32(p[4:], pid)
	ne.PutUint32(p[8:], o.bits())
	ne.PutUint32(p[12:], 0) // groups: bound after GROUPFRAMES, below
	p = append(append(p, name...), 0)
	if _, err := uc.Write(rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, p)); err != nil {
		uc.Close()
		return nil, err
	}
	buf := make([]byte, 65536)
	uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := uc.Read(buf)
	uc.SetReadDeadline(time.Time{})
	if err != nil {
		uc.Close()
		return nil, err
	}
	msgs := rtnl.SplitDatagram(buf[:n])
	if len(msgs) != 1 {
		uc.Close()
		return nil, errors.New("nlemu: bad hello reply")
	}
	m := msgs[0]
	switch uint16(m.Header.Type) {
	case rtnl.NLEMU_HELLO:
		if len(m.Data) < 8 {
			uc.Close()
			return nil, errors.New("nlemu: bad hello reply")
		}
		cl := newClient(ne.Uint32(m.Data[4:]))
		cl.uc, cl.buf = uc, buf
		// Tell the server the buffer we read with, as a netlink reader's
		// recvmsg() does, so dump batches are sized like the kernel's, and
		// ask for notifications framed with their group. The groups are
		// bound only then, so that every notification carries its group.
		// Neither needs an ack: the server applies them before any later
		// datagram, and no group is bound before them.
		for _, opt := range [][2]uint32{{rtnl.NLEMU_RECVLEN, inprocRecvLen}, {rtnl.NLEMU_GROUPFRAMES, 1}} {
			var p [12]byte
			ne.PutUint32(p[0:], rtnl.SOL_NETLINK)
			ne.PutUint32(p[4:], opt[0])
			ne.PutUint32(p[8:], opt[1])
			if _, err := uc.Write(rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, 0, 0, 0, p[:])); err != nil {
				uc.Close()
				return nil, err
			}
		}
		if o.Groups != 0 {
			if err := cl.Bind(o.Groups); err != nil {
				uc.Close()
				return nil, err
			}
		}
		return cl, nil
	case rtnl.NLMSG_ERROR:
		uc.Close()
		return nil, helloError(m.Data)
	}
	uc.Close()
	return nil, errors.New("nlemu: bad hello reply")
}

// helloError decodes the NLMSG_ERROR answering a HELLO.
func helloError(d []byte) error {
	if len(d) < 4 {
		return errors.New("nlemu: bad hello reply")
	}
	errno := syscall.Errno(-int32(ne.Uint32(d)))
	if errno == syscall.ENOENT {
		return ErrNoNamespace
	}
	return errno
}

func (cl *Client) recvUnix(to time.Duration) ([]byte, uint32, error) {
	var deadline time.Time
	if to > 0 {
		deadline = time.Now().Add(to)
	}
	cl.mu.Lock()
	for {
		if len(cl.stash) > 0 {
			d := cl.stash[0]
			cl.stash[0] = nil
			cl.stash = cl.stash[1:]
			cl.mu.Unlock()
			return decodeUnix(d)
		}
		if !cl.reading {
			break
		}
		// A control call is reading; it stashes what is not its ack.
		cl.cond.Wait()
	}
	cl.reading = true
	cl.mu.Unlock()
	for {
		d, err := cl.readUnix(deadline)
		cl.mu.Lock()
		if err == nil {
			if s, e, ok := controlAck(d); ok {
				// A control call on the sending goroutine waits for it.
				cl.acks[s] = e
				cl.cond.Broadcast()
				cl.mu.Unlock()
				continue
			}
		}
		cl.reading = false
		cl.cond.Broadcast()
		cl.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		return decodeUnix(d)
	}
}

// readUnix reads one datagram (a copy), by deadline if it is set. Only the
// goroutine that set cl.reading calls it.
func (cl *Client) readUnix(deadline time.Time) ([]byte, error) {
	cl.dl.armUnix(cl.uc, deadline)
	n, _, _, _, err := cl.uc.ReadMsgUnix(cl.buf, nil)
	if err != nil {
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			return nil, ErrTimeout
		}
		return nil, err
	}
	if n == 0 {
		return nil, net.ErrClosed
	}
	return append([]byte(nil), cl.buf[:n]...), nil
}

// decodeUnix turns a datagram from the server into what Recv returns: a
// SOCKERR becomes its errno, and a notification framed with NLEMU_GROUP
// loses the frame, which gives its group.
func decodeUnix(b []byte) ([]byte, uint32, error) {
	if len(b) >= 20 && ne.Uint16(b[4:]) == rtnl.NLEMU_SOCKERR {
		return nil, 0, syscall.Errno(ne.Uint32(b[16:]))
	}
	if len(b) >= rtnl.NLEMU_GROUP_LEN && ne.Uint16(b[4:]) == rtnl.NLEMU_GROUP && ne.Uint32(b) == rtnl.NLEMU_GROUP_LEN {
		return b[rtnl.NLEMU_GROUP_LEN:], ne.Uint32(b[16:]), nil
	}
	return b, 0, nil
}
