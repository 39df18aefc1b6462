package supervise

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Range is the block of descriptor numbers netlink sockets are injected at
// ([Base, Base+Len)). The filter traps the calls whose netlink semantics a
// Unix socket lacks only for descriptors in this range, so every other
// descriptor's receives, binds and options run in the kernel untouched.
type Range struct {
	Base, Len int
}

// Contains reports whether fd is in r.
func (r Range) Contains(fd int) bool { return fd >= r.Base && fd < r.Base+r.Len }

// rangeLen is how many netlink sockets a process can hold at a time.
const rangeLen = 64

// RangeFor picks the range for a process whose RLIMIT_NOFILE soft limit is
// soft: the top rangeLen numbers below it (a descriptor at or above the soft
// limit cannot be installed: replace_fd() checks it), where a program's
// lowest-first allocation reaches last. Go programs raise their soft limit
// to the hard one at start; the range stays valid below it.
func RangeFor(soft uint64) Range {
	const max = 1 << 20
	if soft > max {
		soft = max
	}
	if soft < 2*rangeLen {
		return Range{Base: int(soft / 2), Len: int(soft - soft/2)}
	}
	return Range{Base: int(soft) - rangeLen, Len: rangeLen}
}

// Syscalls trapped for descriptors in the range (see docs/EXEC.md).
var rangeCalls = []string{
	"recvmsg", "recvfrom", // the sender address (sockaddr_nl, nl_pid 0) and the group
	"bind", "connect", "getsockname", "getpeername",
	"getsockopt", // SOL_NETLINK, SO_RCVBUF and the socket's names (SO_TYPE, ...)
	"dup",        // a duplicate must stay in the range to stay emulated
	"dup3",       // (and dup2) only to warn when the copy leaves the range
	// read and readv return the datagram without a sender; trapped so a
	// GROUP frame, an ACK or a SOCKERR from the server is presented as
	// netlink_recvmsg() would (recv)
	"read", "readv",
}

// setSocketOpts are the setsockopt(SOL_SOCKET) options trapped: the
// receive buffer, which sizes the server's queue. Every other SOL_SOCKET
// option (SO_SNDTIMEO, SO_RCVTIMEO, SO_SNDBUF, ...) runs on the Unix
// socket in the kernel without a notification (the supervisor continued
// it before, after a notification and a goroutine hand-off: 20-36 µs at
// load 6-10, hack/exec-overhead.sh, against 1 µs now);
// every other level is trapped (netlink's ENOPROTOOPT, where the Unix
// socket's answer would be EOPNOTSUPP). getsockopt is trapped at every
// level (SO_TYPE, SO_DOMAIN and SO_PROTOCOL name the socket; it is rare):
// the program must stay below 256 instructions (TestFilterHasNoLongJumps).
var setSocketOpts = []uint64{unix.SO_RCVBUF, unix.SO_RCVBUFFORCE}

// Calls trapped whatever their arguments, only so that the supervisor
// forgets a thread's cached network namespace before they run
// (Supervisor.forgetNS; threadOf): setns(2), execve(2)/execveat(2); and
// unshare(2) with CLONE_NEWNET. Each is continued at once.
var nsCalls = []string{"setns", "execve", "execveat"}

// Policy is the filter: socket(AF_NETLINK, *, NETLINK_ROUTE), the calls of
// rangeCalls on descriptors in r, setsockopt on them at a level other than
// SOL_SOCKET or with an option of setSocketOpts,
// fcntl(F_DUPFD/F_DUPFD_CLOEXEC) on them, and the namespace changes
// (nsCalls, unshare(CLONE_NEWNET)) go to the supervisor; everything else
// is allowed. Sends (sendmsg, sendto, write) are never trapped:
// unix_seqpacket_sendmsg() ignores the destination address, so they run
// at socket speed.
func Policy(r Range) seccomp.Policy {
	inRange := []seccomp.Condition{
		{Argument: 0, Operation: seccomp.GreaterOrEqual, Value: uint64(r.Base)},
		{Argument: 0, Operation: seccomp.LessThan, Value: uint64(r.Base + r.Len)},
	}
	nc := []seccomp.NameWithConditions{{
		Name: "socket",
		Conditions: []seccomp.Condition{
			{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_NETLINK},
			{Argument: 2, Operation: seccomp.Equal, Value: unix.NETLINK_ROUTE},
		},
	}}
	for _, name := range append(append([]string(nil), rangeCalls...), dup2Calls...) {
		nc = append(nc, seccomp.NameWithConditions{Name: name, Conditions: inRange})
	}
	other := append(append([]seccomp.Condition(nil), inRange...),
		seccomp.Condition{Argument: 1, Operation: seccomp.NotEqual, Value: unix.SOL_SOCKET})
	nc = append(nc, seccomp.NameWithConditions{Name: "setsockopt", Conditions: other})
	for _, opt := range setSocketOpts {
		c := append(append([]seccomp.Condition(nil), inRange...),
			seccomp.Condition{Argument: 1, Operation: seccomp.Equal, Value: unix.SOL_SOCKET},
			seccomp.Condition{Argument: 2, Operation: seccomp.Equal, Value: opt})
		nc = append(nc, seccomp.NameWithConditions{Name: "setsockopt", Conditions: c})
	}
	nc = append(nc, seccomp.NameWithConditions{Name: "unshare", Conditions: []seccomp.Condition{
		{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_NEWNET},
	}})
	for _, cmd := range []uint64{unix.F_DUPFD, unix.F_DUPFD_CLOEXEC} {
		c := append(append([]seccomp.Condition(nil), inRange...),
			seccomp.Condition{Argument: 1, Operation: seccomp.Equal, Value: cmd})
		nc = append(nc, seccomp.NameWithConditions{Name: "fcntl", Conditions: c})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
			Names:              nsCalls,
			NamesWithCondtions: nc,
			Action:             seccomp.ActionUserNotify,
		}},
	}
}

// Assemble compiles the policy for r to classic BPF.
func Assemble(r Range) ([]bpf.Instruction, error) {
	p := Policy(r)
	return p.Assemble()
}

// Install sets no_new_privs and installs the filter for r on the calling
// thread only, returning the notification listener. The caller must hold
// the thread (runtime.LockOSThread) until it execve's: the filter is on
// this thread alone (no TSYNC), and execve keeps it.
// go-seccomp-bpf's LoadFilter cannot ask for a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER returns it as seccomp(2)'s result),
// so only its assembler is used.
func Install(r Range) (int, error) {
	insns, err := Assemble(r)
	if err != nil {
		return -1, err
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return -1, err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("no_new_privs: %w", err)
	}
	// WAIT_KILLABLE_RECV (5.19): once the supervisor has read a
	// notification, only a fatal signal interrupts the call, so a receive
	// the supervisor has taken a datagram for is never abandoned.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	for {
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
		runtime.KeepAlive(filter)
		if e == 0 {
			return int(fd), nil
		}
		if e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
			continue
		}
		return -1, fmt.Errorf("seccomp: %w", e)
	}
}

// emulated is the filter's meaning, written out: whether the supervisor
// emulates system call nr with args (of this architecture). handle
// continues anything else it is sent at once: go-seccomp-bpf's program
// can trap a call beyond its policy (TestFilterMatchesReference,
// libraryQuirk), never one fewer.
func emulated(r Range, nr int, args [6]uint64) bool {
	inRange := args[0] >= uint64(r.Base) && args[0] < uint64(r.Base+r.Len)
	switch nr {
	case unix.SYS_SOCKET:
		return args[0] == unix.AF_NETLINK && args[2] == unix.NETLINK_ROUTE
	case unix.SYS_RECVMSG, unix.SYS_RECVFROM, unix.SYS_BIND, unix.SYS_CONNECT, unix.SYS_GETSOCKNAME,
		unix.SYS_GETPEERNAME, unix.SYS_GETSOCKOPT, unix.SYS_DUP, unix.SYS_DUP3, unix.SYS_READ, unix.SYS_READV:
		return inRange
	case sysDup2:
		return inRange
	case unix.SYS_SETSOCKOPT:
		if args[1] != unix.SOL_SOCKET {
			return inRange
		}
		for _, o := range setSocketOpts {
			if args[2] == o {
				return inRange
			}
		}
		return false
	case unix.SYS_SETNS, unix.SYS_EXECVE, unix.SYS_EXECVEAT:
		return true
	case unix.SYS_UNSHARE:
		return args[0]&unix.CLONE_NEWNET != 0
	case unix.SYS_FCNTL:
		return inRange && (args[1] == unix.F_DUPFD || args[1] == unix.F_DUPFD_CLOEXEC)
	}
	return false
}
