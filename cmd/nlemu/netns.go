package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"

	"github.com/nlemu/nlemu/server"
)

// dialAdmin connects to the running server's default namespace for an
// administration request, with a one-line error when none answers.
func dialAdmin(prog, sock string) (*server.Client, bool) {
	path := server.SocketPath(sock)
	c, err := server.DialUnix(path, server.Options{})
	if err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			err = se.Err
		}
		fmt.Fprintf(os.Stderr, "%s: no server at %s: %v\n", prog, path, err)
		return nil, false
	}
	return c, true
}

// runNetns implements `nlemu netns add|del NAME` and `nlemu netns list`.
func runNetns(args []string) int {
	fs := flag.NewFlagSet("nlemu netns", flag.ContinueOnError)
	sock := fs.String("socket", "", "server socket path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		rest = []string{"list"}
	}
	verb := rest[0]
	// Accept --socket after the verb too: nlemu netns add NAME --socket P.
	sub := flag.NewFlagSet("nlemu netns "+verb, flag.ContinueOnError)
	sub.StringVar(sock, "socket", *sock, "server socket path")
	if err := sub.Parse(rest[1:]); err != nil {
		return 2
	}
	names := sub.Args()
	if len(names) > 0 {
		// flag stops at the first non-flag; parse flags after the name.
		if err := sub.Parse(names[1:]); err == nil && len(sub.Args()) == 0 {
			names = names[:1]
		}
	}
	prog := "nlemu netns " + verb
	switch verb {
	case "add", "del", "delete":
		if len(names) != 1 {
			fmt.Fprintf(os.Stderr, "usage: nlemu netns %s NAME\n", verb)
			return 2
		}
		c, ok := dialAdmin(prog, *sock)
		if !ok {
			return 1
		}
		defer c.Close()
		var err error
		if verb == "add" {
			err = c.NetnsAdd(names[0])
		} else {
			err = c.NetnsDel(names[0])
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", prog, oneLine(err))
			return 1
		}
		return 0
	case "list", "ls":
		c, ok := dialAdmin(prog, *sock)
		if !ok {
			return 1
		}
		defer c.Close()
		list, err := c.NetnsList()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", prog, oneLine(err))
			return 1
		}
		// Ephemeral namespaces (made for a kernel namespace a program
		// under nlemu exec created, deleted with its last socket) are
		// marked; a server without them answers EOPNOTSUPP: no marks.
		eph := map[string]bool{}
		if names, err := c.NetnsEphemeral(); err == nil {
			for _, n := range names {
				eph[n] = true
			}
		}
		for _, n := range list {
			if eph[n] {
				fmt.Println(n + " (ephemeral)")
			} else {
				fmt.Println(n)
			}
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "nlemu netns: unknown command %q (want add, del or list)\n", verb)
	return 2
}

func oneLine(err error) string {
	var ae *server.AdminError
	if errors.As(err, &ae) && ae.Msg != "" {
		return ae.Msg
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en.Error()
	}
	return err.Error()
}
