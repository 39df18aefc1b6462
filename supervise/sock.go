package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

var ne = binary.NativeEndian

// ctlLen is the length of a control message with a u32 payload (ACK,
// SOCKERR, GROUP frame).
const ctlLen = rtnl.NLMSG_HDRLEN + 4

// Netlink option bits a socket records (what getsockopt reports).
const (
	optExtAck = 1 << iota
	optCapAck
	optStrict
	optNoENOBUFS
	optPktinfo
	optBroadcastError
	optListenAllNSID
)

// nlMaxGroups is rtnetlink's ngroups (RTNLGRP_MAX).
const nlMaxGroups = 39

// sock is what the supervisor knows of one injected netlink socket, keyed
// by the inode of its Unix socket: the state the shim keeps per descriptor
// (preload/nlemu_preload.c, struct nlsock). Every process and descriptor
// that holds the same open file shares it, as they share a kernel netlink
// socket, so fork and dup need no bookkeeping.
type sock struct {
	portid uint32
	typ    int
	born   uint64 // the supervisor's socket count when it was made (sweepSocks)

	mu      sync.Mutex
	opts    uint32    // guarded by mu
	groups  [2]uint32 // guarded by mu
	rcvbuf  int       // guarded by mu
	recvlen uint64    // guarded by mu
	ctlSeq  uint32    // guarded by mu
	// stash keeps, in order, the datagrams a control call read before its
	// ack; receives return them first.
	stash [][]byte                 // guarded by mu
	acks  map[uint32]syscall.Errno // guarded by mu
}

func newSock(portid uint32, typ int, rcvbuf int) *sock {
	s := &sock{portid: portid, typ: typ, rcvbuf: rcvbuf, acks: map[uint32]syscall.Errno{}}
	return s
}

// errNoServer is what socket() fails with when the server cannot be
// reached: ECONNREFUSED, as the shim's socket(), never a kernel socket.
var errNoServer = syscall.ECONNREFUSED

// connectServer opens a SOCK_SEQPACKET connection to the server at path.
func connectServer(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("no server at %s: %w", path, err)
	}
	return fd, nil
}

// dial opens one server connection with the HELLO done (docs/PROTOCOL.md):
// a SOCK_SEQPACKET Unix socket attached to namespace ns, with pid as the
// port id hint and the HELLO option bits opts, and notifications framed
// with their group.
func dial(path, ns string, pid, opts uint32) (int, uint32, error) {
	return dialOn(-1, path, ns, pid, opts, nil)
}

// dialOn is dial on the connection fd made ahead (sparePool), or on a new
// one when fd is -1 or the server has closed it: a spare that fails before
// the server's answer is read is replaced by a fresh connection once.
// meanwhile (if not nil) runs once, after the HELLO is sent and before its
// answer is awaited: the caller's own work overlaps the server's.
func dialOn(fd int, path, ns string, pid, opts uint32, meanwhile func()) (int, uint32, error) {
	once := func() {
		if meanwhile != nil {
			meanwhile()
			meanwhile = nil
		}
	}
	if fd >= 0 {
		cfd, portid, err, sent := hello(fd, path, ns, pid, opts, once)
		if err == nil || sent {
			return cfd, portid, err
		}
	}
	fd, err := connectServer(path)
	if err != nil {
		once()
		return -1, 0, err
	}
	cfd, portid, err, _ := hello(fd, path, ns, pid, opts, once)
	return cfd, portid, err
}

// hello runs the HELLO on the connected fd, closing it on failure; answered
// says the server's answer was read (a failure then is the server's word,
// not a dead connection). meanwhile runs once the HELLO is sent.
func hello(fd int, path, ns string, pid, opts uint32, meanwhile func()) (int, uint32, error, bool) {
	fail := func(err error, answered bool) (int, uint32, error, bool) {
		unix.Close(fd)
		return -1, 0, err, answered
	}
	p := make([]byte, 16, 16+len(ns)+1)
	ne.PutUint32(p[0:], 1)
	ne.PutUint32(p[4:], pid)
	ne.PutUint32(p[8:], opts)
	p = append(append(p, ns...), 0)
	if err := unix.Sendmsg(fd, rtnl.AppendMessage(nil, rtnl.NLEMU_HELLO, 0, 0, 0, p), nil, nil, unix.MSG_NOSIGNAL); err != nil {
		return fail(err, false)
	}
	// Notifications framed with their group, asked for at once: the
	// server reads it after the HELLO (the acceptor answers it before the
	// connection reaches a loop, server/accept.go), and a refusal drains
	// it before closing. A failure here is the HELLO's to report.
	sendCtl(fd, rtnl.NLEMU_SETSOCKOPT, 0, 0, rtnl.SOL_NETLINK, rtnl.NLEMU_GROUPFRAMES, 1)
	meanwhile()
	if err := waitReadable(fd, 10*time.Second); err != nil {
		return fail(fmt.Errorf("no HELLO from the server at %s: %w", path, err), false)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return fail(err, false)
	}
	if n <= 0 {
		return fail(errors.New("the server closed the connection"), false)
	}
	msgs := rtnl.SplitDatagram(buf[:n])
	if len(msgs) != 1 {
		return fail(errors.New("bad HELLO reply"), true)
	}
	m := msgs[0]
	switch uint16(m.Header.Type) {
	case rtnl.NLEMU_HELLO:
		if len(m.Data) < 8 {
			return fail(errors.New("bad HELLO reply"), true)
		}
		return fd, ne.Uint32(m.Data[4:]), nil, true
	case rtnl.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if e := -int32(ne.Uint32(m.Data)); e > 0 && e < 4096 {
				msg := fmt.Sprintf("the nlemu server at %s refused namespace %q: %v", path, ns, syscall.Errno(e))
				if syscall.Errno(e) == syscall.ENOENT { // the shim's words
					msg = fmt.Sprintf("namespace %q does not exist on the nlemu server at %s", ns, path)
				}
				return fail(&helloRefused{msg, syscall.Errno(e)}, true)
			}
		}
	}
	return fail(errors.New("bad HELLO reply"), true)
}

// helloRefused is the server's NLMSG_ERROR answering a HELLO: socket()
// fails with its errno, as the shim's (ENOENT for a missing namespace,
// EPERM where creating one is not allowed).
type helloRefused struct {
	msg   string
	errno syscall.Errno
}

func (e *helloRefused) Error() string { return e.msg }

// sendCtl sends one control message with u32 payload words.
func sendCtl(fd int, typ, flags uint16, seq uint32, words ...uint32) error {
	p := make([]byte, 4*len(words))
	for i, w := range words {
		ne.PutUint32(p[4*i:], w)
	}
	return unix.Sendmsg(fd, rtnl.AppendMessage(nil, typ, flags, seq, 0, p), nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
}

// waitReadable polls fd for input for at most d.
func waitReadable(fd int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return syscall.ETIMEDOUT
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(left/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// ctlType returns the type of a control message of exactly ctlLen bytes
// (ACK, SOCKERR), else 0.
func ctlType(d []byte) uint16 {
	if len(d) != ctlLen || ne.Uint32(d) != ctlLen {
		return 0
	}
	return ne.Uint16(d[4:])
}

// ctlCall sends a SETSOCKOPT or BIND with NLM_F_ACK on fd (a copy of the
// socket) and waits for the server's ack, stashing what arrives before it,
// as the shim's ctl_call(): the option is in effect when it returns, with
// the errno setsockopt(2)/bind(2) would give.
func (s *sock) ctlCall(fd int, typ uint16, words ...uint32) syscall.Errno {
	s.mu.Lock()
	s.ctlSeq++
	if s.ctlSeq == 0 {
		s.ctlSeq++
	}
	seq := s.ctlSeq
	s.mu.Unlock()
	if err := sendCtl(fd, typ, rtnl.NLM_F_ACK, seq, words...); err != nil {
		return errnoOf(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	head := make([]byte, ctlLen)
	var result syscall.Errno
	for {
		s.mu.Lock()
		if e, ok := s.acks[seq]; ok {
			delete(s.acks, seq)
			s.mu.Unlock()
			result = e
			break
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return syscall.ETIMEDOUT
		}
		if err := waitReadable(fd, 50*time.Millisecond); err != nil {
			if err == syscall.ETIMEDOUT {
				continue
			}
			return errnoOf(err)
		}
		n, _, err := unix.Recvfrom(fd, head, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			return errnoOf(err)
		}
		if n == 0 {
			return syscall.ECONNRESET
		}
		d := make([]byte, n)
		m, _, err := unix.Recvfrom(fd, d, unix.MSG_DONTWAIT)
		if err != nil {
			continue // another thread took it
		}
		d = d[:m]
		if ctlType(d) == rtnl.NLEMU_ACK {
			aseq, e := ne.Uint32(d[8:]), syscall.Errno(-int32(ne.Uint32(d[16:])))
			if aseq == seq {
				result = e
				break
			}
			s.mu.Lock()
			if aseq != 0 {
				s.acks[aseq] = e
			}
			s.mu.Unlock()
			continue
		}
		s.mu.Lock()
		s.stash = append(s.stash, d)
		s.mu.Unlock()
	}
	s.mu.Lock()
	stashed := len(s.stash) > 0
	s.mu.Unlock()
	if stashed {
		// The socket may look empty to poll() while the supervisor holds
		// datagrams: a no-op option acked with sequence 0 makes it
		// readable; receives drop that ack.
		sendCtl(fd, rtnl.NLEMU_SETSOCKOPT, rtnl.NLM_F_ACK, 0, rtnl.SOL_NETLINK, rtnl.NLEMU_RECVLEN, 0)
	}
	return result
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

// groupMask is netlink_group_mask(): the sender's nl_groups for a datagram
// of group g.
func groupMask(g uint32) uint32 {
	if g == 0 || g > 32 {
		return 0
	}
	return 1 << (g - 1)
}

// flagOpt maps a SOL_NETLINK flag option to its bit.
func flagOpt(name int) uint32 {
	switch name {
	case unix.NETLINK_PKTINFO:
		return optPktinfo
	case unix.NETLINK_BROADCAST_ERROR:
		return optBroadcastError
	case unix.NETLINK_NO_ENOBUFS:
		return optNoENOBUFS
	case unix.NETLINK_LISTEN_ALL_NSID:
		return optListenAllNSID
	case unix.NETLINK_CAP_ACK:
		return optCapAck
	case unix.NETLINK_EXT_ACK:
		return optExtAck
	case unix.NETLINK_GET_STRICT_CHK:
		return optStrict
	}
	return 0
}
