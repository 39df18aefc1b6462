package client

import (
	"errors"
	"github.com/nlemu/nlemu/internal/sysctl"
	"iter"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// Socket is one emulated NETLINK_ROUTE socket. It implements
// netlink.Socket and every optional interface netlink.Conn looks for
// except SyscallConn (there is no descriptor of a netlink socket to give:
// netlink.Conn.SyscallConn reports "operation not supported"). Errors
// have the forms mdlayher/netlink's kernel socket returns, so code that
// inspects them with errors.Is (unix.EINVAL, os.ErrDeadlineExceeded,
// unix.EBADF, "use of closed file") sees the same.
//
// A Socket may be used by one sending and one receiving goroutine at a
// time, plus any goroutine setting deadlines or closing it, as
// netlink.Conn uses its socket.
type Socket struct {
	cl     *server.Client
	closed atomic.Bool

	mu     sync.Mutex
	rdl    time.Time // read deadline (guarded by mu)
	wdl    time.Time // write deadline (guarded by mu)
	rcvbuf int       // what getsockopt(SO_RCVBUF) reports (guarded by mu)
	sndbuf int       // what getsockopt(SO_SNDBUF) reports (guarded by mu)
	filter *bpfFilter
}

var (
	_ netlink.Socket = (*Socket)(nil)
	_ interface {
		JoinGroup(uint32) error
		LeaveGroup(uint32) error
		SetOption(netlink.ConnOption, bool) error
		SetDeadline(time.Time) error
		SetReadDeadline(time.Time) error
		SetWriteDeadline(time.Time) error
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
		ReadBuffer() (int, error)
		WriteBuffer() (int, error)
		RemoveBPF() error
	} = (*Socket)(nil)
)

// Dial connects to the nlemu server listening at socketPath ("" = the
// default path, as `nlemu serve` resolves it) and opens a socket in the
// named nlemu namespace ("" = "default").
func Dial(socketPath, namespace string) (*Socket, error) {
	cl, err := server.DialUnix(server.SocketPath(socketPath), server.Options{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	return newSocket(cl), nil
}

// DialServer opens a socket in the named namespace of srv, in process.
func DialServer(srv *server.Server, namespace string) (*Socket, error) {
	cl, err := srv.Dial(server.Options{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	return newSocket(cl), nil
}

// NewConn opens a netlink.Conn on sock: netlink.NewConn(sock, sock.PortID()).
func NewConn(sock *Socket) *netlink.Conn { return netlink.NewConn(sock, sock.PortID()) }

func newSocket(cl *server.Client) *Socket {
	// sock_init_data(): the sysctl defaults, not doubled.
	return &Socket{cl: cl, rcvbuf: rmemDefault(), sndbuf: wmemDefault()}
}

// PortID returns the socket's port id, what getsockname() reports after
// the bind netlink.Dial does.
func (s *Socket) PortID() uint32 { return s.cl.PortID() }

// Close closes the socket and ends a Receive waiting on it.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		// socket.Conn.Close: a second close does nothing.
		return nil
	}
	return s.cl.Close()
}

// Send sends one message as its own datagram.
func (s *Socket) Send(m netlink.Message) error {
	b, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	return s.send(b)
}

// SendMessages sends messages in one datagram.
func (s *Socket) SendMessages(msgs []netlink.Message) error {
	var buf []byte
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		buf = append(buf, b...)
	}
	return s.send(buf)
}

func (s *Socket) send(b []byte) error {
	if s.closed.Load() {
		return os.NewSyscallError("sendmsg", unix.EBADF)
	}
	s.mu.Lock()
	wdl := s.wdl
	s.mu.Unlock()
	// The runtime's poller refuses an I/O past its deadline before any
	// system call (internal/poll's prepareWrite).
	if !wdl.IsZero() && !time.Now().Before(wdl) {
		return os.ErrDeadlineExceeded
	}
	if len(b) == 0 {
		// netlink_sendmsg(): "Zero length message leads to an empty
		// skb" — ENODATA (measured; the Unix transport could not carry
		// one anyway).
		return os.NewSyscallError("sendmsg", unix.ENODATA)
	}
	if err := s.cl.Send(b); err != nil {
		return s.ioError("sendmsg", err)
	}
	return nil
}

// Receive receives the messages of one datagram.
func (s *Socket) Receive() ([]netlink.Message, error) {
	var msgs []netlink.Message
	for m, err := range s.ReceiveIter() {
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// ReceiveIter iterates over the messages of one datagram.
func (s *Socket) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		b, err := s.recv()
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		for m, err := range parseMessages(b) {
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// recv returns the next datagram (after the socket filter), with the
// errors a kernel socket's recvmsg gives through mdlayher/socket.
func (s *Socket) recv() ([]byte, error) {
	for {
		if s.closed.Load() {
			return nil, os.NewSyscallError("recvmsg", unix.EBADF)
		}
		s.mu.Lock()
		rdl, f := s.rdl, s.filter
		s.mu.Unlock()
		if !rdl.IsZero() && !time.Now().Before(rdl) {
			return nil, os.ErrDeadlineExceeded
		}
		b, err := s.cl.Recv()
		if err != nil {
			return nil, s.ioError("recvmsg", err)
		}
		if f != nil {
			if b = f.run(b); b == nil {
				continue
			}
		}
		return b, nil
	}
}

// ioError turns the transport's errors into what a kernel socket returns:
// a socket error as *os.SyscallError, a passed deadline as
// os.ErrDeadlineExceeded and a socket closed while waiting as
// ("use of closed file": internal/poll's errors, which mdlayher/socket
// does not wrap).
func (s *Socket) ioError(op string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, server.ErrTimeout):
		return os.ErrDeadlineExceeded
	case errors.As(err, &errno):
		return os.NewSyscallError(op, errno)
	case errors.Is(err, net.ErrClosed) || s.closed.Load():
		return errFileClosing
	}
	return err
}

// parseMessages is mdlayher/netlink's parseMessagesIter over the datagram
// padded to alignment, as its kernel socket reads it: the same messages
// and the same errors for a malformed datagram.
func parseMessages(d []byte) iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		b := make([]byte, (len(d)+3)&^3)
		copy(b, d)
		for len(b) >= rtnl.NLMSG_HDRLEN {
			n := int(ne.Uint32(b))
			if n < rtnl.NLMSG_HDRLEN {
				yield(netlink.Message{}, errors.New("netlink message header length incorrect"))
				return
			}
			an := (n + 3) &^ 3
			if an > len(b) {
				yield(netlink.Message{}, errors.New("not enough data to create a netlink message"))
				return
			}
			var m netlink.Message
			if err := m.UnmarshalBinary(b[:an]); err != nil {
				yield(netlink.Message{}, err)
				return
			}
			if !yield(m, nil) {
				return
			}
			b = b[an:]
		}
	}
}

// JoinGroup is setsockopt(NETLINK_ADD_MEMBERSHIP): the group's
// notifications arrive from when it returns.
func (s *Socket) JoinGroup(group uint32) error {
	return s.sockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, group)
}

// LeaveGroup is setsockopt(NETLINK_DROP_MEMBERSHIP).
func (s *Socket) LeaveGroup(group uint32) error {
	return s.sockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_DROP_MEMBERSHIP, group)
}

// SetOption sets a SOL_NETLINK boolean option, with the kernel's errors
// (EPERM for ListenAllNSID without CAP_NET_BROADCAST). PacketInfo is
// accepted; mdlayher/netlink reads no control messages on either socket.
func (s *Socket) SetOption(option netlink.ConnOption, enable bool) error {
	o, ok := linuxOption(option)
	if !ok {
		return os.NewSyscallError("setsockopt", unix.ENOPROTOOPT)
	}
	var v uint32
	if enable {
		v = 1
	}
	return s.sockopt(rtnl.SOL_NETLINK, o, v)
}

func (s *Socket) sockopt(level, name int, v uint32) error {
	if s.closed.Load() {
		return os.NewSyscallError("setsockopt", unix.EBADF)
	}
	if err := s.cl.SetSockopt(level, name, v); err != nil {
		return s.ioError("setsockopt", err)
	}
	return nil
}

// linuxOption is mdlayher/netlink's mapping of a ConnOption.
func linuxOption(o netlink.ConnOption) (int, bool) {
	switch o {
	case netlink.PacketInfo:
		return unix.NETLINK_PKTINFO, true
	case netlink.BroadcastError:
		return unix.NETLINK_BROADCAST_ERROR, true
	case netlink.NoENOBUFS:
		return unix.NETLINK_NO_ENOBUFS, true
	case netlink.ListenAllNSID:
		return unix.NETLINK_LISTEN_ALL_NSID, true
	case netlink.CapAcknowledge:
		return unix.NETLINK_CAP_ACK, true
	case netlink.ExtendedAcknowledge:
		return unix.NETLINK_EXT_ACK, true
	case netlink.GetStrictCheck:
		return unix.NETLINK_GET_STRICT_CHK, true
	}
	return 0, false
}

// errFileClosing is internal/poll's ErrFileClosing ("use of closed
// file"), what a kernel socket's os.File returns for a deadline set after
// Close and for a read that Close ended. The package is internal; the
// value is taken from a closed pipe's raw read.
var errFileClosing = func() error {
	r, w, err := os.Pipe()
	if err != nil {
		return os.ErrClosed
	}
	w.Close()
	rc, err := r.SyscallConn()
	r.Close()
	if err != nil {
		return os.ErrClosed
	}
	if err := rc.Read(func(uintptr) bool { return true }); err != nil {
		return err
	}
	return os.ErrClosed
}()

// deadlineError is the error of a deadline set on a closed socket.
func deadlineError(string) error { return errFileClosing }

// SetDeadline sets both deadlines.
func (s *Socket) SetDeadline(t time.Time) error {
	if s.closed.Load() {
		return deadlineError("SetDeadline")
	}
	s.setWriteDeadline(t)
	s.setReadDeadline(t)
	return nil
}

// SetReadDeadline sets the read deadline; it also ends a Receive already
// waiting, which fails with os.ErrDeadlineExceeded.
func (s *Socket) SetReadDeadline(t time.Time) error {
	if s.closed.Load() {
		return deadlineError("SetReadDeadline")
	}
	s.setReadDeadline(t)
	return nil
}

// SetWriteDeadline sets the write deadline. Sends never wait for the
// server for long, so it matters once it has passed: Send then fails
// with os.ErrDeadlineExceeded, as on a kernel socket.
func (s *Socket) SetWriteDeadline(t time.Time) error {
	if s.closed.Load() {
		return deadlineError("SetWriteDeadline")
	}
	s.setWriteDeadline(t)
	return nil
}

func (s *Socket) setReadDeadline(t time.Time) {
	s.mu.Lock()
	s.rdl = t
	s.mu.Unlock()
	s.cl.SetRecvDeadline(t)
}

func (s *Socket) setWriteDeadline(t time.Time) {
	s.mu.Lock()
	s.wdl = t
	s.mu.Unlock()
}

// SetReadBuffer sets the receive buffer, which bounds the socket's queue
// of notifications as sk_rcvbuf does (ENOBUFS when it overflows).
// mdlayher/socket tries SO_RCVBUFFORCE first (CAP_NET_ADMIN: not capped
// by net.core.rmem_max), then SO_RCVBUF; either is doubled
// (sock_setsockopt()). The server's queue applies the SO_RCVBUF cap.
func (s *Socket) SetReadBuffer(bytes int) error {
	if s.closed.Load() {
		return os.NewSyscallError("setsockopt", unix.EBADF)
	}
	v := clampBuf(bytes, rmemMax(), 2304)
	if err := s.sockopt(rtnl.SOL_SOCKET, rtnl.SO_RCVBUF, uint32(max(bytes, 0))); err != nil {
		return err
	}
	s.mu.Lock()
	s.rcvbuf = v
	s.mu.Unlock()
	return nil
}

// SetWriteBuffer sets what WriteBuffer reports (SO_SNDBUFFORCE or
// SO_SNDBUF, doubled, at least SOCK_MIN_SNDBUF); sends go to the server
// whatever its size.
func (s *Socket) SetWriteBuffer(bytes int) error {
	if s.closed.Load() {
		return os.NewSyscallError("setsockopt", unix.EBADF)
	}
	v := clampBuf(bytes, wmemMax(), 4608)
	s.mu.Lock()
	s.sndbuf = v
	s.mu.Unlock()
	return nil
}

// clampBuf is sk_setsockopt()'s SO_RCVBUF/SO_SNDBUF arithmetic: with
// CAP_NET_ADMIN (the FORCE variant mdlayher/socket tries first) the value
// is not capped by the sysctl; either way it is doubled and at least the
// minimum.
func clampBuf(n, sysMax, minimum int) int {
	if n < 0 {
		n = 0
	}
	if !netAdmin() {
		n = min(n, sysMax)
	}
	return max(2*n, minimum)
}

// ReadBuffer is getsockopt(SO_RCVBUF).
func (s *Socket) ReadBuffer() (int, error) {
	if s.closed.Load() {
		return 0, os.NewSyscallError("getsockopt", unix.EBADF)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rcvbuf, nil
}

// WriteBuffer is getsockopt(SO_SNDBUF).
func (s *Socket) WriteBuffer() (int, error) {
	if s.closed.Load() {
		return 0, os.NewSyscallError("getsockopt", unix.EBADF)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sndbuf, nil
}

var (
	rmemDefault = sync.OnceValue(func() int { return sysctl.Int("/proc/sys/net/core/rmem_default", 212992) })
	rmemMax     = sync.OnceValue(func() int { return sysctl.Int("/proc/sys/net/core/rmem_max", 212992) })
	wmemDefault = sync.OnceValue(func() int { return sysctl.Int("/proc/sys/net/core/wmem_default", 212992) })
	wmemMax     = sync.OnceValue(func() int { return sysctl.Int("/proc/sys/net/core/wmem_max", 212992) })
	// netAdmin: this process has CAP_NET_ADMIN (what SO_RCVBUFFORCE asks).
	netAdmin = sync.OnceValue(func() bool {
		b, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
				caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return err == nil && caps&(1<<unix.CAP_NET_ADMIN) != 0
			}
		}
		return false
	})
)
