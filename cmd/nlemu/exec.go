package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/privdir"
	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/server"
)

const execUsage = `usage: nlemu exec [--socket PATH] [-n NAME] [--seccomp|--preload] [--] CMD [ARGS...]

Runs CMD with its NETLINK_ROUTE sockets attached to namespace NAME of the
nlemu server (default namespace: "default"). A dynamically linked libc
program (such as iproute2's ip) is redirected by an LD_PRELOAD shim: nlemu
exec replaces itself with CMD (execve), so stdin, stdout, stderr, signals
and the exit status are CMD's own. A statically linked or Go program (or any
CMD with --seccomp) runs under a seccomp supervisor instead: nlemu exec stays
as CMD's parent, answers its NETLINK_ROUTE socket() calls with server
connections, forwards signals and exits with CMD's status (128+n if signal
n killed it); its children and threads are supervised too, and a network
namespace CMD makes maps to an nlemu namespace of its own (docs/EXEC.md).
--preload forces the shim.

The server socket is --socket, else $NLEMU_SOCKET, else the per-user default.

CMD never reaches the host kernel's rtnetlink by accident: nlemu exec fails
(one line, exit 1) before running CMD if no server accepts connections on
the socket, or if CMD is a program the shim cannot attach to (with
--preload: a statically linked or Go executable), a
set-user-ID/set-group-ID or file-capability executable (the dynamic loader
ignores LD_PRELOAD in secure-execution mode), or one for another ELF class
or machine than the shim. If the namespace is missing, CMD's first
NETLINK_ROUTE socket() fails with ENOENT and the shim says so on one line;
if the server goes away later, socket() fails with ECONNREFUSED instead of
opening a kernel socket. Once the shim is built and verified, nlemu exec
adds about one plain exec's cost to CMD's start: it does not start its Go
runtime, only checks the arguments, the shim and CMD's ELF header, and
connects once to the server's socket (no handshake). What CMD starts
in turn (a shell's children) is not checked: each is attached if it is a
dynamically linked libc program, and talks to the host kernel otherwise
(under the seccomp supervisor every descendant is attached).
`

// runExec implements `nlemu exec`. It returns the process exit code.
func runExec(args []string) int {
	fs := flag.NewFlagSet("nlemu exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sock := fs.String("socket", "", "path of the nlemu server socket")
	ns := fs.String("n", "default", "namespace to attach CMD to")
	fs.StringVar(ns, "netns", "default", "same as -n")
	forceSeccomp := fs.Bool("seccomp", false, "run CMD under the seccomp supervisor")
	forcePreload := fs.Bool("preload", false, "attach CMD with the LD_PRELOAD shim")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stdout, execUsage)
			return 0
		}
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n%s", err, execUsage)
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "nlemu exec: no command given\n%s", execUsage)
		return 2
	}
	if *ns == "" {
		fmt.Fprintln(os.Stderr, "nlemu exec: empty namespace name")
		return 2
	}

	path := server.SocketPath(*sock)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := execCheckConnect(path); err != nil {
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 1
	}

	// Become CMD (execve): stdin, stdout, stderr, signals and the exit
	// status are CMD's own, and no extra process stands between CMD and
	// the caller (the seed's loop starts thousands of these).
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		// the shell's conventions: 127 not found, 126 not runnable
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "nlemu exec: %s: command not found\n", argv[0])
			return 127
		}
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 126
	}
	if *forceSeccomp || (!*forcePreload && needsSeccomp(bin)) {
		return runExecSeccomp(bin, argv, path, *ns) // exec_seccomp.go
	}
	lib, err := preload.Path() // only the shim needs it
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 1
	}
	if err := shimAttaches(bin, lib); err != nil {
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 1
	}
	writeFastRecord(lib) // execfast.go: the next run may skip all this
	err = syscall.Exec(bin, argv, execEnv(os.Environ(), lib, path, *ns))
	fmt.Fprintf(os.Stderr, "nlemu exec: %s: %v\n", argv[0], err)
	if errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// execEnv returns env with the shim preloaded (ahead of any LD_PRELOAD the
// caller had) and the server and namespace set for it.
func execEnv(env []string, lib, sock, ns string) []string {
	out := make([]string, 0, len(env)+3)
	preloads := lib
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD":
			for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' }) {
				if p != lib {
					preloads += ":" + p
				}
			}
		case "NLEMU_SOCKET", "NLEMU_NETNS":
		default:
			out = append(out, kv)
		}
	}
	return append(out, "LD_PRELOAD="+preloads, "NLEMU_SOCKET="+sock, "NLEMU_NETNS="+ns)
}

// execCheckServer makes sure a server answers at path and that namespace ns
// exists there, with one HELLO. Its errors are one line for the user.
func execCheckServer(path, ns string) error {
	c, err := server.DialUnix(path, server.Options{Namespace: ns})
	if err == nil {
		return c.Close()
	}
	if errors.Is(err, server.ErrNoNamespace) {
		return fmt.Errorf("namespace %q does not exist", ns)
	}
	var pe *privdir.Error
	if errors.As(err, &pe) {
		return err // the default socket directory is not private: say so as is
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		var se *os.SyscallError
		if errors.As(err, &se) {
			return fmt.Errorf("no server at %s: %v", path, se.Err)
		}
		return fmt.Errorf("no server at %s: %v", path, op.Err)
	}
	return fmt.Errorf("the server at %s did not complete the handshake: %v", path, err)
}

// shimAttaches refuses, before execve, a command the LD_PRELOAD shim would
// not attach to and that would therefore talk to the host kernel's
// rtnetlink instead of the server. It only reads ELF headers and file
// modes. Non-ELF files (#! scripts) pass: their interpreter is checked by
// nobody, as are the programs it starts (see execUsage).
func shimAttaches(bin, lib string) error {
	f, err := os.Open(bin)
	if err != nil {
		return nil // execve reports it
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil // execve decides
	}
	const cannot = "the LD_PRELOAD shim cannot attach to it, and it would talk to the host kernel"
	interp := false
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			interp = true
		}
	}
	if !interp {
		return fmt.Errorf("%s is statically linked: %s", bin, cannot)
	}
	if ef.Section(".go.buildinfo") != nil {
		return fmt.Errorf("%s is a Go program, which makes system calls without libc: %s", bin, cannot)
	}
	if lf, err := elf.Open(lib); err == nil {
		defer lf.Close()
		if lf.Class != ef.Class || lf.Machine != ef.Machine {
			return fmt.Errorf("%s is a %v %v program and the shim is %v %v: the dynamic loader would ignore the shim, and %s would talk to the host kernel",
				bin, ef.Class, ef.Machine, lf.Class, lf.Machine, bin)
		}
	}
	// Secure-execution mode (AT_SECURE, as the kernel's
	// bprm->secureexec): ld.so then ignores an LD_PRELOAD path with a
	// slash. Set-ID bits and file capabilities do nothing on a nosuid mount.
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err == nil && sfs.Flags&unix.ST_NOSUID != 0 {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if fi.Mode()&os.ModeSetuid != 0 && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is set-user-ID (owner uid %d): the dynamic loader ignores LD_PRELOAD for it, and it would talk to the host kernel", bin, st.Uid)
	}
	if fi.Mode()&os.ModeSetgid != 0 && int(st.Gid) != os.Getgid() {
		return fmt.Errorf("%s is set-group-ID (group %d): the dynamic loader ignores LD_PRELOAD for it, and it would talk to the host kernel", bin, st.Gid)
	}
	if os.Geteuid() != 0 {
		if n, err := unix.Fgetxattr(int(f.Fd()), "security.capability", nil); err == nil && n > 0 {
			return fmt.Errorf("%s has file capabilities: the dynamic loader ignores LD_PRELOAD for it, and it would talk to the host kernel", bin)
		}
	}
	return nil
}
