package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/rtnl"
)

// Client is one emulated netlink socket, in-process or over the Unix
// socket; both have the same semantics. Send hands the server one netlink
// datagram; Recv returns the next datagram for this socket (replies, dump
// batches, notifications) or a socket error such as ENOBUFS. A Client may
// be used by one sender and one receiver goroutine at a time.
type Client struct {
	portid uint32

	// in-process
	c *conn

	// over a Unix socket
	uc  *net.UnixConn
	buf []byte

	mu      sync.Mutex
	timeout time.Duration // guarded by mu
	closed  bool
}

// ErrTimeout is returned by Recv when the receive timeout expires.
var ErrTimeout = errors.New("nlemu: receive timed out")

// Dial opens an in-process socket in namespace o.Namespace.
func (s *Server) Dial(o Options) (*Client, error) {
	c, err := s.open(o.Namespace, o.PID, o.bits(), o.Groups)
	if err != nil {
		return nil, err
	}
	return &Client{portid: c.portid, c: c}, nil
}

// PortID returns the socket's port id (what getsockname() reports).
func (cl *Client) PortID() uint32 { return cl.portid }

// SetRecvTimeout bounds how long Recv waits (0 = forever).
func (cl *Client) SetRecvTimeout(d time.Duration) {
	cl.mu.Lock()
	cl.timeout = d
	cl.mu.Unlock()
}

// Send sends one netlink datagram.
func (cl *Client) Send(b []byte) error {
	if cl.c != nil {
		if cl.isClosed() {
			return net.ErrClosed
		}
		cl.c.handle(b)
		return nil
	}
	_, err := cl.uc.Write(b)
	return err
}

func (cl *Client) isClosed() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.closed
}

// inprocRecvLen is the receive buffer an in-process reader is taken to
// have: like `ip`, it reads with 32 KiB, which sizes later dump batches.
const inprocRecvLen = 32768

// Recv returns the next datagram. A socket error (ENOBUFS) is returned as a
// syscall.Errno once, after the datagrams queued before it.
func (cl *Client) Recv() ([]byte, error) {
	cl.mu.Lock()
	to := cl.timeout
	cl.mu.Unlock()
	if cl.c != nil {
		return cl.recvInproc(to)
	}
	return cl.recvUnix(to)
}

func (cl *Client) recvInproc(to time.Duration) ([]byte, error) {
	q := cl.c.q
	var timer *time.Timer
	var expired bool
	if to > 0 {
		timer = time.AfterFunc(to, func() {
			q.mu.Lock()
			expired = true
			q.cond.Broadcast()
			q.mu.Unlock()
		})
		defer timer.Stop()
	}
	q.mu.Lock()
	for q.head >= len(q.items) && q.err == 0 && !q.closed && !expired {
		q.cond.Wait()
	}
	timedOut := expired && q.head >= len(q.items) && q.err == 0 && !q.closed
	var (
		b     []byte
		errno syscall.Errno
		ok    bool
	)
	if !timedOut {
		b, errno, ok = q.popLocked()
	}
	q.mu.Unlock()
	if timedOut {
		return nil, ErrTimeout
	}
	if !ok {
		return nil, net.ErrClosed
	}
	cl.c.afterRead(inprocRecvLen)
	if errno != 0 {
		return nil, errno
	}
	if b == nil {
		return nil, ErrTimeout
	}
	return b, nil
}

// Close closes the socket; its namespace lives on while others hold it.
func (cl *Client) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	cl.mu.Unlock()
	if cl.c != nil {
		cl.c.close()
		return nil
	}
	return cl.uc.Close()
}

// SetSockopt sets a socket option as setsockopt(2) would on a netlink
// socket (level SOL_NETLINK or SOL_SOCKET).
func (cl *Client) SetSockopt(level, name int, value uint32) error {
	var p [12]byte
	ne.PutUint32(p[0:], uint32(level))
	ne.PutUint32(p[4:], uint32(name))
	ne.PutUint32(p[8:], value)
	return cl.Send(rtnl.AppendMessage(nil, rtnl.NLEMU_SETSOCKOPT, 0, 0, 0, p[:]))
}

// Bind sets the legacy multicast group mask, as bind(2) with nl_groups.
func (cl *Client) Bind(groups uint32) error {
	var p [4]byte
	ne.PutUint32(p[:], groups)
	return cl.Send(rtnl.AppendMessage(nil, rtnl.NLEMU_BIND, 0, 0, 0, p[:]))
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
	ne.PutUint32(p[12:], o.Groups)
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
		cl := &Client{portid: ne.Uint32(m.Data[4:]), uc: uc, buf: buf}
		// Tell the server the buffer we read with, as a netlink reader's
		// recvmsg() does, so dump batches are sized like the kernel's.
		if err := cl.SetSockopt(rtnl.SOL_NETLINK, rtnl.NLEMU_RECVLEN, inprocRecvLen); err != nil {
			uc.Close()
			return nil, err
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

func (cl *Client) recvUnix(to time.Duration) ([]byte, error) {
	if to > 0 {
		cl.uc.SetReadDeadline(time.Now().Add(to))
	} else {
		cl.uc.SetReadDeadline(time.Time{})
	}
	n, _, flags, _, err := cl.uc.ReadMsgUnix(cl.buf, nil)
	if err != nil {
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			return nil, ErrTimeout
		}
		return nil, err
	}
	_ = flags
	b := cl.buf[:n]
	if n >= 20 && ne.Uint16(b[4:]) == rtnl.NLEMU_SOCKERR {
		return nil, syscall.Errno(ne.Uint32(b[16:]))
	}
	if n == 0 {
		return nil, net.ErrClosed
	}
	return append([]byte(nil), b...), nil
}
