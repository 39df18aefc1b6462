package server

import (
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

// peerCred is what the server reads of a connection's peer once, at
// accept: its credentials at connect() time (SO_PEERCRED), translated into
// the server's user namespace, so a "root" of `unshare -r` is its real uid.
// ok is false when they could not be read (such a peer may not change
// state and has no privileges).
type peerCred struct {
	unix.Ucred
	ok bool
}

// readPeerCred reads the credentials of the peer of connection fd.
func readPeerCred(fd int) peerCred {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred == nil {
		return peerCred{}
	}
	return peerCred{Ucred: *cred, ok: true}
}

// peerPrivileges are the privileges of the process at the other end of a
// Unix connection (credentials p), as the kernel's ns_capable() checks
// would see them for a namespace this server owns: the peer's effective
// capabilities count only if it shares the server's user namespace (a
// "root" of `unshare -r` has them in its own user namespace only, and the
// kernel refuses it too). Without SO_PEERCRED the socket is unprivileged.
// The credentials are taken at accept, /proc is read on first use.
func peerPrivileges(p peerCred) func() privileges {
	if !p.ok || p.Pid <= 0 {
		return func() privileges { return privileges{} }
	}
	pid := strconv.Itoa(int(p.Pid))
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

// mayChange reports whether the process at the other end of connection fd
// (credentials p) may change state: uid 0, the server's own uid, or a
// member (primary or supplementary group) of one of Config.AllowGroups.
// The credentials are those of connect() time (SO_PEERCRED,
// SO_PEERGROUPS), translated into the server's user namespace, so a "root"
// of `unshare -r` is its real uid. A peer whose credentials cannot be read
// may not.
func (s *Server) mayChange(fd int, p peerCred) bool {
	if !p.ok {
		return false
	}
	if privilegedUID(p.Uid) {
		return true
	}
	if len(s.cfg.AllowGroups) == 0 {
		return false
	}
	groups := peerGroups(fd)
	for _, g := range s.cfg.AllowGroups {
		if p.Gid == g || slices.Contains(groups, g) {
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
