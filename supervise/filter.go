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
	"setsockopt", "getsockopt", // SOL_NETLINK, and SO_RCVBUF that sizes the server's queue
	"dup",  // a duplicate must stay in the range to stay emulated
	"dup3", // (and dup2) only to warn when the copy leaves the range
	// read and readv return the datagram without a sender; trapped so a
	// GROUP frame, an ACK or a SOCKERR from the server is presented as
	// netlink_recvmsg() would (recv)
	"read", "readv",
}

// Policy is the filter: socket(AF_NETLINK, *, NETLINK_ROUTE), the calls of
// rangeCalls on descriptors in r and fcntl(F_DUPFD/F_DUPFD_CLOEXEC) on them
// go to the supervisor; everything else is allowed. Sends (sendmsg,
// sendto, write) are never trapped: unix_seqpacket_sendmsg() ignores the
// destination address, so they run at socket speed.
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
	for _, cmd := range []uint64{unix.F_DUPFD, unix.F_DUPFD_CLOEXEC} {
		c := append(append([]seccomp.Condition(nil), inRange...),
			seccomp.Condition{Argument: 1, Operation: seccomp.Equal, Value: cmd})
		nc = append(nc, seccomp.NameWithConditions{Name: "fcntl", Conditions: c})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
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
