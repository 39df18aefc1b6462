package supervise

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	retAllow  = 0x7fff0000 // SECCOMP_RET_ALLOW
	retNotify = 0x7fc00000 // SECCOMP_RET_USER_NOTIF
)

// runFilter runs the assembled filter on one seccomp_data in x/net/bpf's
// VM. The VM loads words big-endian (network order); the kernel loads
// seccomp_data in host order, so each 32-bit field is stored big-endian at
// its host-order offset and the VM reads the value the kernel would.
func runFilter(t *testing.T, vm *bpf.VM, nr int, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	b := make([]byte, 64)
	put := func(off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
	put(0, uint32(nr))
	put(4, arch)
	for i, a := range args {
		put(16+8*i, uint32(a))       // low word first (little-endian seccomp_data)
		put(16+8*i+4, uint32(a>>32)) // then the high word
	}
	r, err := vm.Run(b)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(r)
}

// wantTrapped is the filter's meaning, written out (filter.go: what the
// supervisor emulates, and continues anything else it is sent).
func wantTrapped(r Range, nr int, args [6]uint64) bool { return emulated(r, nr, args) }

// TestFilterMatchesReference: the BPF program go-seccomp-bpf assembles
// traps every call wantTrapped says, for every system call the
// supervisor knows of and the data calls it must never see, at the range's
// edges and at random; and nothing else, but for the inputs
// go-seccomp-bpf's unreloaded accumulator sends (libraryQuirk), which the
// supervisor continues (emulated, handle).
func TestFilterMatchesReference(t *testing.T) {
	r, vm := filterVM(t)
	const auditArchX8664 = 0xc000003e
	nrs := []int{unix.SYS_SOCKET, unix.SYS_RECVMSG, unix.SYS_RECVFROM, unix.SYS_BIND, unix.SYS_CONNECT,
		unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKOPT, unix.SYS_DUP,
		unix.SYS_FCNTL, unix.SYS_SENDMSG, unix.SYS_SENDTO, unix.SYS_WRITE, unix.SYS_READ, unix.SYS_CLOSE,
		unix.SYS_DUP2, unix.SYS_DUP3, unix.SYS_READV, unix.SYS_RECVMMSG, unix.SYS_EXECVE, unix.SYS_PREADV,
		unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_EXECVEAT, unix.SYS_CLONE, unix.SYS_CLOSE}
	fds := []uint64{0, 3, uint64(r.Base - 1), uint64(r.Base), uint64(r.Base + 1), uint64(r.Base + r.Len - 1),
		uint64(r.Base + r.Len), 1 << 32, 1<<32 | uint64(r.Base), unix.CLONE_NEWNET, unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
		unix.CLONE_NEWNET | unix.CLONE_NEWUSER, 1<<32 | unix.CLONE_NEWUSER}
	rnd := rand.New(rand.NewPCG(1, 2))
	var mismatches []string
	check := func(nr int, args [6]uint64) {
		got := runFilter(t, vm, nr, auditArchX8664, args) == retNotify
		if want := wantTrapped(r, nr, args); got != want && (!got || !libraryQuirk(r, nr, args)) {
			mismatches = append(mismatches, fmt.Sprintf("%s%x", syscallName(nr), args))
		}
	}
	for _, nr := range nrs {
		for _, fd := range fds {
			for _, a1 := range []uint64{0, unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_SETFL, unix.SOCK_RAW,
				unix.SOL_SOCKET, unix.SOL_NETLINK, unix.SOL_SOCKET | 1<<32, unix.CLONE_NEWNET, unix.CLONE_NEWNET | unix.CLONE_NEWUSER} {
				for _, a2 := range []uint64{0, unix.NETLINK_GENERIC, 1 << 32, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE,
					unix.SO_SNDBUF, unix.SO_TYPE, unix.SO_DOMAIN, unix.SO_PROTOCOL, unix.SO_RCVTIMEO, unix.SO_RCVBUF | 1<<32} {
					check(nr, [6]uint64{fd, a1, a2})
					check(nr, [6]uint64{unix.AF_NETLINK, a1, a2})
					check(nr, [6]uint64{unix.AF_INET, a1, a2})
				}
			}
		}
		for range 200 {
			var args [6]uint64
			for i := range args {
				args[i] = rnd.Uint64() >> (rnd.IntN(64))
			}
			check(nr, args)
		}
	}
	if len(mismatches) > 0 {
		t.Errorf("filter and reference disagree for %d inputs, first for %s", len(mismatches), mismatches[0])
	}
	// another architecture (the 32-bit ABI) is not trapped by number
	if got := runFilter(t, vm, unix.SYS_SOCKET, 0x40000003, [6]uint64{unix.AF_NETLINK}); got == retNotify {
		t.Errorf("i386 socket() trapped as x86_64's")
	}
	// sends and writes are allowed outright
	for _, nr := range []int{unix.SYS_SENDMSG, unix.SYS_SENDTO, unix.SYS_WRITE} {
		if got := runFilter(t, vm, nr, auditArchX8664, [6]uint64{uint64(r.Base)}); got != retAllow {
			t.Errorf("%d on a netlink descriptor: %#x, want allow", nr, got)
		}
	}
}

// libraryQuirk reports whether a call the filter should not trap may be
// trapped anyway: go-seccomp-bpf (v1.6.0) does not load the system call
// number again after a call's last argument condition fails
// (SyscallWithConditions.Assemble jumps to the next call's number check
// with an argument word in the accumulator), so the call is checked
// against the conditions of the call whose number equals one of its own
// argument words. Only such a trap is allowed beyond wantTrapped, and
// never a call not trapped that should be.
func libraryQuirk(r Range, nr int, args [6]uint64) bool {
	for _, a := range args {
		for _, w := range []uint64{a & 0xffffffff, a >> 32} {
			if int(w) != nr && emulated(r, int(w), args) {
				return true
			}
		}
	}
	return false
}

// TestFilterQuirkContinued: a getsockname on a descriptor outside the
// range whose first argument's high word is unshare's number and low word
// has CLONE_NEWNET's bit is trapped (libraryQuirk; found by
// TestFilterMatchesReference's random inputs), and emulated, which handle
// asks first, says to continue it.
func TestFilterQuirkContinued(t *testing.T) {
	r, vm := filterVM(t)
	args := [6]uint64{uint64(unix.SYS_UNSHARE)<<32 | unix.CLONE_NEWNET}
	if got := runFilter(t, vm, unix.SYS_GETSOCKNAME, 0xc000003e, args); got != retNotify {
		t.Logf("the quirk's input is not trapped (%#x): go-seccomp-bpf may have been fixed", got)
	}
	if emulated(r, unix.SYS_GETSOCKNAME, args) {
		t.Errorf("emulated(getsockname out of range) = true, want it continued")
	}
	if !libraryQuirk(r, unix.SYS_GETSOCKNAME, args) {
		t.Errorf("libraryQuirk does not cover the input")
	}
}

// TestFilterHasNoLongJumps: the assembled program is shorter than 256
// instructions, so that every conditional jump reaches its target directly.
// go-seccomp-bpf (v1.6.0) makes a longer program's far jumps reach by
// inserting instructions after jumps it has already resolved, whose skips
// it does not recompute: with setsockopt's level conditions and the
// namespace calls added (314 instructions), one random getsockname input
// of TestFilterMatchesReference was trapped out of range.
func TestFilterHasNoLongJumps(t *testing.T) {
	for _, soft := range []uint64{1024, 4096, 1 << 20, 64} {
		insns, err := Assemble(RangeFor(soft))
		if err != nil {
			t.Fatal(err)
		}
		if len(insns) > 255 {
			t.Errorf("soft limit %d: %d instructions, want at most 255", soft, len(insns))
		}
	}
}

// TestRangeFor: the range sits just below the soft limit (replace_fd()
// refuses a number at or above it), within small limits too.
func TestRangeFor(t *testing.T) {
	for _, tc := range []struct {
		soft uint64
		want Range
	}{
		{1024, Range{960, 64}},
		{4096, Range{4032, 64}},
		{100, Range{50, 50}},
		{1 << 40, Range{1<<20 - 64, 64}},
	} {
		if d := cmp.Diff(tc.want, RangeFor(tc.soft)); d != "" {
			t.Errorf("RangeFor(%d) (-want +got):\n%s", tc.soft, d)
		}
	}
}

// TestDupLeavesRange: which dup2/dup3 calls the supervisor warns of (the
// kernel answers them all): only a copy that exists and is outside the
// range; ksys_dup3()'s failures copy nothing.
func TestDupLeavesRange(t *testing.T) {
	r := Range{960, 64}
	for _, tc := range []struct {
		name      string
		nr, newfd int
		flags     uint64
		want      bool
	}{
		{"dup2 outside", unix.SYS_DUP2, 5, 0, true},
		{"dup2 inside", unix.SYS_DUP2, 1000, 0, false},
		{"dup2 onto itself copies nothing", unix.SYS_DUP2, 961, 0, false},
		{"dup3 outside, cloexec", unix.SYS_DUP3, 5, unix.O_CLOEXEC, true},
		{"dup3 bad flags is EINVAL", unix.SYS_DUP3, 5, 1, false},
		{"dup3 onto itself is EINVAL", unix.SYS_DUP3, 961, 0, false},
		{"negative newfd is EBADF", unix.SYS_DUP2, -1, 0, false},
		{"just past the range", unix.SYS_DUP3, 1024, 0, true},
	} {
		if got := dupLeavesRange(r, tc.nr, 961, tc.newfd, tc.flags); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// filterVM is the filter of a 1,024-descriptor range, assembled and loaded
// into a classic BPF VM, with its range.
func filterVM(t *testing.T) (Range, *bpf.VM) {
	t.Helper()
	r := RangeFor(1024)
	insns, err := Assemble(r)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	return r, vm
}
