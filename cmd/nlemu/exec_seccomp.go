package main

import (
	"debug/elf"
	"fmt"
	"os"

	"github.com/nlemu/nlemu/supervise"
)

// The supervised child mode (supervise.ChildArg) runs before anything
// else: it installs the seccomp filter and execve's CMD.
func init() {
	if len(os.Args) > 1 && os.Args[1] == supervise.ChildArg {
		supervise.ChildMain(os.Args[2:])
	}
}

// needsSeccomp reports whether bin is a program the LD_PRELOAD shim cannot
// attach to for want of libc: a statically linked or Go ELF executable.
// Those run under the seccomp supervisor (docs/EXEC.md) unless --preload.
func needsSeccomp(bin string) bool {
	f, err := elf.Open(bin)
	if err != nil {
		return false
	}
	defer f.Close()
	interp := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp = true
		}
	}
	return !interp || f.Section(".go.buildinfo") != nil
}

// runExecSeccomp runs bin under the seccomp supervisor and returns its
// exit status. NLEMU_EXEC_STATS names a file that receives the
// supervisor's notification counts (JSON) when CMD has exited.
func runExecSeccomp(bin string, argv []string, sock, ns string) int {
	code, err := supervise.Run(bin, argv, supervise.RunConfig{
		Socket: sock, Namespace: ns, Stats: os.Getenv("NLEMU_EXEC_STATS"), Stderr: os.Stderr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu exec: %v\n", err)
		return 1
	}
	return code
}
