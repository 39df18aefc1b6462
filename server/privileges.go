package server

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

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
