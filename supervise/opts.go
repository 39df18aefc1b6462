package supervise

import (
	"github.com/nlemu/nlemu/internal/sysctl"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// setsockopt is the shim's nl_setsockopt() (netlink_setsockopt()): flags
// and memberships at SOL_NETLINK go to the server (memberships and
// NETLINK_LISTEN_ALL_NSID acked, so their errno is the server's), SO_RCVBUF
// sizes the server's queue; other SOL_SOCKET options apply to the Unix
// socket in the kernel.
func (s *Supervisor) setsockopt(c *call, sk *sock, cfd int) {
	level, name := int(int32(c.arg(1))), int(int32(c.arg(2)))
	optval, optlen := c.arg(3), int(int32(c.arg(4)))
	readVal := func() (uint32, bool) {
		if optlen < 4 {
			return 0, true // a short optlen reads as 0 (netlink_setsockopt())
		}
		v, err := readU32(c.tid, optval)
		if err != nil {
			c.fail(unix.EFAULT)
			return 0, false
		}
		return v, true
	}
	if level == unix.SOL_SOCKET {
		if name != unix.SO_RCVBUF && name != unix.SO_RCVBUFFORCE {
			return // the Unix socket's own (SO_SNDBUF bounds our sends as netlink's does)
		}
		if optlen < 4 {
			c.fail(unix.EINVAL)
			return
		}
		v, ok := readVal()
		if !ok {
			return
		}
		if err := sendCtl(cfd, rtnl.NLEMU_SETSOCKOPT, 0, 0, unix.SOL_SOCKET, unix.SO_RCVBUF, v); err != nil {
			c.fail(errnoOf(err))
			return
		}
		sk.mu.Lock()
		sk.rcvbuf = bufSize(int(int32(v)), name == unix.SO_RCVBUFFORCE)
		sk.mu.Unlock()
		c.ret(0)
		return
	}
	if level != rtnl.SOL_NETLINK {
		c.fail(unix.ENOPROTOOPT)
		return
	}
	v, ok := readVal()
	if !ok {
		return
	}
	if bit := flagOpt(name); bit != 0 {
		on := uint32(0)
		if v != 0 {
			on = 1
		}
		if name == unix.NETLINK_LISTEN_ALL_NSID {
			if c.inline {
				c.again = true // acked: a goroutine of its own, as bind's
				return
			}
			if e := sk.ctlCall(cfd, rtnl.NLEMU_SETSOCKOPT, rtnl.SOL_NETLINK, uint32(name), on); e != 0 {
				c.fail(e)
				return
			}
		} else if err := sendCtl(cfd, rtnl.NLEMU_SETSOCKOPT, 0, 0, rtnl.SOL_NETLINK, uint32(name), on); err != nil {
			c.fail(errnoOf(err))
			return
		}
		sk.mu.Lock()
		if on != 0 {
			sk.opts |= bit
		} else {
			sk.opts &^= bit
		}
		sk.mu.Unlock()
		c.ret(0)
		return
	}
	if name == unix.NETLINK_ADD_MEMBERSHIP || name == unix.NETLINK_DROP_MEMBERSHIP {
		if c.inline {
			c.again = true // the server's ack may wait behind queued data
			return
		}
		if e := sk.ctlCall(cfd, rtnl.NLEMU_SETSOCKOPT, rtnl.SOL_NETLINK, uint32(name), v); e != 0 {
			c.fail(e)
			return
		}
		if v != 0 && v-1 < nlMaxGroups {
			sk.mu.Lock()
			if name == unix.NETLINK_ADD_MEMBERSHIP {
				sk.groups[(v-1)/32] |= 1 << ((v - 1) % 32)
			} else {
				sk.groups[(v-1)/32] &^= 1 << ((v - 1) % 32)
			}
			sk.mu.Unlock()
		}
		c.ret(0)
		return
	}
	c.fail(unix.ENOPROTOOPT)
}

// bufSize is sock_setsockopt(SO_RCVBUF): capped by rmem_max unless forced,
// doubled, at least SOCK_MIN_RCVBUF.
func bufSize(v int, force bool) int {
	if !force {
		if m := sysctl.Int("/proc/sys/net/core/rmem_max", 212992); uint(v) > uint(m) {
			v = m
		}
	}
	v = max(v, 0)
	v = min(v, 1<<30-1)
	return max(2*v, 2304)
}

// getsockopt is the shim's nl_getsockopt() (netlink_getsockopt()).
func (s *Supervisor) getsockopt(c *call, sk *sock, cfd int) {
	level, name := int(int32(c.arg(1))), int(int32(c.arg(2)))
	optval, lenp := c.arg(3), c.arg(4)
	sk.mu.Lock()
	opts, groups, rcvbuf := sk.opts, sk.groups, sk.rcvbuf
	sk.mu.Unlock()
	putInt := func(v int) {
		l, err := readU32(c.tid, lenp)
		if err != nil {
			c.fail(unix.EFAULT)
			return
		}
		if int32(l) < 4 {
			c.fail(unix.EINVAL)
			return
		}
		if writeU32(c.tid, optval, uint32(v)) != nil || writeU32(c.tid, lenp, 4) != nil {
			c.fail(unix.EFAULT)
			return
		}
		c.ret(0)
	}
	if level == unix.SOL_SOCKET {
		switch name {
		case unix.SO_RCVBUF:
			putInt(rcvbuf)
		case unix.SO_TYPE:
			putInt(sk.typ)
		case unix.SO_DOMAIN:
			putInt(unix.AF_NETLINK)
		case unix.SO_PROTOCOL:
			putInt(unix.NETLINK_ROUTE)
		}
		return // others: the Unix socket's own (SO_SNDBUF, SO_RCVTIMEO, ...)
	}
	if level != rtnl.SOL_NETLINK {
		c.fail(unix.ENOPROTOOPT)
		return
	}
	if bit := flagOpt(name); bit != 0 {
		v := 0
		if opts&bit != 0 {
			v = 1
		}
		putInt(v)
		return
	}
	if name == unix.NETLINK_LIST_MEMBERSHIPS {
		// as many u32 words as fit, and the length the whole bitmap needs
		l, err := readU32(c.tid, lenp)
		if err != nil {
			c.fail(unix.EFAULT)
			return
		}
		need := uint32(unsafe.Sizeof(groups))
		for pos := uint32(0); pos < need && pos+4 <= l; pos += 4 {
			if writeU32(c.tid, optval+uint64(pos), groups[pos/4]) != nil {
				c.fail(unix.EFAULT)
				return
			}
		}
		if writeU32(c.tid, lenp, need) != nil {
			c.fail(unix.EFAULT)
			return
		}
		c.ret(0)
		return
	}
	c.fail(unix.ENOPROTOOPT)
}
