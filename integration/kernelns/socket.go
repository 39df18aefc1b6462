package kernelns

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Netlink socket option names (SOL_NETLINK level), as in <linux/netlink.h>.
const (
	SolNetlink     = unix.SOL_NETLINK             // 270
	AddMembership  = unix.NETLINK_ADD_MEMBERSHIP  // 1
	DropMembership = unix.NETLINK_DROP_MEMBERSHIP // 2
	NoENOBUFS      = unix.NETLINK_NO_ENOBUFS      // 5
	CapAck         = unix.NETLINK_CAP_ACK         // 10
	ExtAck         = unix.NETLINK_EXT_ACK         // 11
	GetStrictChk   = unix.NETLINK_GET_STRICT_CHK  // 12
)

const (
	recvBufferSize     = 1 << 20
	defaultRecvTimeout = 10 * time.Second
)

// Options are applied by Dial right after the socket is bound, in the order
// ExtAck, CapAck, StrictCheck (each only when true; the kernel default of
// every option is off). Groups is the legacy nl_groups bind mask (bit g-1 for
// group g).
type Options struct {
	ExtAck      bool
	CapAck      bool
	StrictCheck bool
	Groups      uint32
}

// Socket is a raw AF_NETLINK/SOCK_RAW/NETLINK_ROUTE socket living in a kernel
// network namespace. Send and Recv move one datagram each. Recv waits at most
// the receive timeout (10 s unless changed with SetRecvTimeout), so a test
// never hangs; a timeout is reported as an error wrapping
// os.ErrDeadlineExceeded.
//
// A Socket may be used by one receiving goroutine and one sending goroutine
// at a time.
type Socket struct {
	mu      sync.Mutex // guards fd against Close
	fd      int        // -1 once closed
	portID  uint32
	buf     []byte        // receive buffer, owned by the receiving goroutine
	timeout time.Duration // Recv's wait; read by the receiving goroutine
}

// Dial opens a NETLINK_ROUTE socket inside the namespace, binds it (the
// kernel picks the port id), and applies opts.
func (n *NS) Dial(opts Options) (*Socket, error) {
	fd := -1
	err := n.inNS(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("socket(AF_NETLINK, NETLINK_ROUTE): %w", err)
		}
		return nil
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("kernelns: dial in %s: %w", n.name, err)
	}
	s := &Socket{fd: fd, buf: make([]byte, recvBufferSize)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: opts.Groups}); err != nil {
		s.Close()
		return nil, fmt.Errorf("kernelns: bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("kernelns: getsockname: %w", err)
	}
	nl, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		s.Close()
		return nil, fmt.Errorf("kernelns: getsockname: unexpected address %T", sa)
	}
	s.portID = nl.Pid
	for _, o := range []struct {
		on   bool
		name int
	}{{opts.ExtAck, ExtAck}, {opts.CapAck, CapAck}, {opts.StrictCheck, GetStrictChk}} {
		if !o.on {
			continue
		}
		if err := s.SetSockopt(SolNetlink, o.name, 1); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.SetRecvTimeout(defaultRecvTimeout); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// errClosed is returned by every method after Close.
var errClosed = errors.New("kernelns: socket closed")

func (s *Socket) getFD() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return -1, errClosed
	}
	return s.fd, nil
}

// PortID returns the port id the kernel assigned at bind time.
func (s *Socket) PortID() uint32 { return s.portID }

// Send sends one datagram to the kernel (nl_pid 0).
func (s *Socket) Send(b []byte) error {
	fd, err := s.getFD()
	if err != nil {
		return err
	}
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("kernelns: sendto: %w", err)
	}
	return nil
}

// Recv returns the next datagram (a fresh copy). A socket error such as
// ENOBUFS is returned once, as recvmsg(2) reports it. A datagram larger than
// 1 MiB is reported as an error (it cannot happen with rtnetlink).
func (s *Socket) Recv() ([]byte, error) {
	fd, err := s.getFD()
	if err != nil {
		return nil, err
	}
	// Wait with ppoll (high-resolution timeout; SO_RCVTIMEO would round up
	// to jiffies), then read without blocking.
	deadline := time.Now().Add(s.timeout)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Ppoll(fds, &ts, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kernelns: ppoll: %w", err)
		}
		if n == 0 {
			return nil, fmt.Errorf("kernelns: recv: %w", os.ErrDeadlineExceeded)
		}
		n, _, flags, _, err := unix.Recvmsg(fd, s.buf, nil, unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kernelns: recv: %w", err)
		}
		if flags&unix.MSG_TRUNC != 0 || n > len(s.buf) {
			return nil, fmt.Errorf("kernelns: recv: datagram of %d bytes truncated", n)
		}
		return append([]byte(nil), s.buf[:n]...), nil
	}
}

// SetRecvTimeout bounds every later Recv: it fails with an error wrapping
// os.ErrDeadlineExceeded when no datagram arrives within d (d <= 0: poll
// once). Call it from the receiving goroutine.
func (s *Socket) SetRecvTimeout(d time.Duration) error {
	if _, err := s.getFD(); err != nil {
		return err
	}
	s.timeout = d
	return nil
}

// SetSockopt sets an integer socket option, e.g.
// SetSockopt(SolNetlink, AddMembership, 19).
func (s *Socket) SetSockopt(level, name int, v uint32) error {
	fd, err := s.getFD()
	if err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fd, level, name, int(v)); err != nil {
		return fmt.Errorf("kernelns: setsockopt(%d, %d, %d): %w", level, name, v, err)
	}
	return nil
}

// Bind replaces the legacy group mask (groups 1–32) like a second bind(2)
// with the socket's own port id; memberships above 32 are kept.
func (s *Socket) Bind(groups uint32) error {
	fd, err := s.getFD()
	if err != nil {
		return err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: s.portID, Groups: groups}); err != nil {
		return fmt.Errorf("kernelns: bind(groups %#x): %w", groups, err)
	}
	return nil
}

// Close closes the socket. It is idempotent.
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}
