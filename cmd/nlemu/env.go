package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nlemu/nlemu/preload"
	"github.com/nlemu/nlemu/server"
)

const envUsage = `usage: nlemu env [--socket PATH] -n NAME

Prints the shell assignments that attach every dynamically linked libc
program started afterwards from the shell (such as iproute2's ip) to
namespace NAME, with no nlemu process in between:

    eval "$(nlemu env -n ns-1)"
    ip -batch rules.txt
    unset LD_PRELOAD NLEMU_SOCKET NLEMU_NETNS      # back to the host

It checks first, as nlemu exec does, that the server answers and NAME
exists (one line, exit 1 otherwise), and builds the shim if needed. Unlike
nlemu exec it cannot check the programs you run later: a statically linked,
Go or set-user-ID program ignores LD_PRELOAD and talks to the host kernel.
Any LD_PRELOAD already set is kept, after the shim.
`

// runEnv implements `nlemu env`.
func runEnv(args []string) int {
	fs := flag.NewFlagSet("nlemu env", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sock := fs.String("socket", "", "path of the nlemu server socket")
	ns := fs.String("n", "default", "namespace to attach programs to")
	fs.StringVar(ns, "netns", "default", "same as -n")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stdout, envUsage)
			return 0
		}
		fmt.Fprintf(os.Stderr, "nlemu env: %v\n%s", err, envUsage)
		return 2
	}
	if fs.NArg() > 0 || *ns == "" {
		fmt.Fprintf(os.Stderr, "nlemu env: takes only --socket and -n NAME\n%s", envUsage)
		return 2
	}
	path := server.SocketPath(*sock)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := execCheckServer(path, *ns); err != nil {
		fmt.Fprintf(os.Stderr, "nlemu env: %v\n", err)
		return 1
	}
	lib, err := preload.Path()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu env: %v\n", err)
		return 1
	}
	writeFastRecord(lib) // execfast.go: later nlemu exec runs skip the Go start
	// The same variables nlemu exec gives CMD.
	for _, kv := range execEnv(os.Environ(), lib, path, *ns) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD", "NLEMU_SOCKET", "NLEMU_NETNS":
			fmt.Printf("export %s=%s\n", k, shellQuote(v))
		}
	}
	return 0
}

// shellQuote quotes s for a POSIX shell: single quotes, with each single
// quote written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
