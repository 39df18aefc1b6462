package main

import (
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

	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/server"
)

const execUsage = `usage: nlemu exec [--socket PATH] [-n NAME] [--] CMD [ARGS...]

Runs CMD with its NETLINK_ROUTE sockets attached to namespace NAME of the
nlemu server (default namespace: "default"). CMD must be a dynamically linked
libc program (such as iproute2's ip); the redirection is an LD_PRELOAD shim.
nlemu exec replaces itself with CMD (execve), so stdin, stdout, stderr,
signals and the exit status are CMD's own.

The server socket is --socket, else $NLEMU_SOCKET, else the per-user default.
`

// runExec implements `nlemu exec`. It returns the process exit code.
func runExec(args []string) int {
	fs := flag.NewFlagSet("nlemu exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sock := fs.String("socket", "", "path of the nlemu server socket")
	ns := fs.String("n", "default", "namespace to attach CMD to")
	fs.StringVar(ns, "netns", "default", "same as -n")
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
	if err := execCheckServer(path, *ns); err != nil {
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 1
	}
	lib, err := preload.Path()
	if err != nil {
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
