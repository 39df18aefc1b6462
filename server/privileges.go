package server

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Capability bits (include/uapi/linux/capability.h).
const (
	capNetBroadcast = 11
	capNetAdmin     = 12
)

// selfPrivileges are the privileges of this process, for in-process
// sockets (read once).
var selfPrivileges = sync.OnceValue(func() privileges { return procPrivileges("self") })

// lazyPrivileges defers reading a socket's privileges to the first call
// that needs them (few sockets ever ask).
type lazyPrivileges struct {
	once sync.Once
	src  func() privileges
	p    privileges
}

func (l *lazyPrivileges) get() privileges {
	l.once.Do(func() {
		if l.src != nil {
			l.p = l.src()
		}
	})
	return l.p
}

// peerPrivileges are the privileges of the process at the other end of a
// Unix connection (SO_PEERCRED), as the kernel's ns_capable() checks would
// see them for a namespace this server owns: the peer's effective
// capabilities count only if it shares the server's user namespace (a
// "root" of `unshare -r` has them in its own user namespace only, and the
// kernel refuses it too). Without SO_PEERCRED the socket is unprivileged.
// The credentials are taken at once, /proc is read on first use.
func peerPrivileges(uc *net.UnixConn) func() privileges {
	none := func() privileges { return privileges{} }
	raw, err := uc.SyscallConn()
	if err != nil {
		return none
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil || cred.Pid <= 0 {
		return none
	}
	pid := strconv.Itoa(int(cred.Pid))
	return func() privileges { return procPrivileges(pid) }
}

// procPrivileges reads CapEff of /proc/<pid>/status.
func procPrivileges(pid string) privileges {
	if pid != "self" {
		mine, err1 := os.Readlink("/proc/self/ns/user")
		theirs, err2 := os.Readlink("/proc/" + pid + "/ns/user")
		if err1 != nil || err2 != nil || mine != theirs {
			return privileges{}
		}
	}
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return privileges{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return privileges{}
			}
			return privileges{
				netAdmin:     caps&(1<<capNetAdmin) != 0,
				netBroadcast: caps&(1<<capNetBroadcast) != 0,
			}
		}
	}
	return privileges{}
}

// mayChange reports whether the process at the other end of uc may change
// state: uid 0, the server's own uid, or a member (primary or
// supplementary group) of one of Config.AllowGroups. The credentials are
// those of connect() time (SO_PEERCRED, SO_PEERGROUPS), translated into
// the server's user namespace, so a "root" of `unshare -r` is its real
// uid. A peer whose credentials cannot be read may not.
// peerUID is the uid of uc's peer at connect time (SO_PEERCRED).
func peerUID(uc *net.UnixConn) (uint32, bool) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return 0, false
	}
	return cred.Uid, true
}

func (s *Server) mayChange(uc *net.UnixConn) bool {
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		cred   *unix.Ucred
		groups []uint32
	)
	raw.Control(func(fd uintptr) {
		if cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && len(s.cfg.AllowGroups) > 0 {
			groups = peerGroups(int(fd))
		}
	})
	if err != nil || cred == nil {
		return false
	}
	if cred.Uid == 0 || cred.Uid == uint32(os.Getuid()) {
		return true
	}
	for _, g := range s.cfg.AllowGroups {
		if cred.Gid == g || slices.Contains(groups, g) {
			return true
		}
	}
	return false
}

// peerGroups returns the supplementary groups of a Unix socket's peer
// (SO_PEERGROUPS, Linux 4.13), or nil.
func peerGroups(fd int) []uint32 {
	buf := make([]byte, 4*64)
	for {
		n, err := getsockoptBytes(fd, unix.SOL_SOCKET, unix.SO_PEERGROUPS, buf)
		if err == unix.ERANGE && n > len(buf) {
			buf = make([]byte, n)
			continue
		}
		if err != nil {
			return nil
		}
		gs := make([]uint32, n/4)
		for i := range gs {
			gs[i] = ne.Uint32(buf[4*i:])
		}
		return gs
	}
}

// getsockoptBytes is getsockopt(2) into buf, returning the length the
// kernel reports (on ERANGE, the length it needs).
func getsockoptBytes(fd, level, name int, buf []byte) (int, error) {
	n := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}
