package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nlemu/nlemu/internal/privdir"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// runServe implements `nlemu serve`.
func runServe(args []string) int {
	fs := flag.NewFlagSet("nlemu serve", flag.ContinueOnError)
	sock := fs.String("socket", "", "Unix socket path (default $NLEMU_SOCKET, else a per-user path)")
	mode := fs.String("rtnl", "first-ipv4", "when rule changes take RTNL: first-ipv4 (the seed's design) or always")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	m, ok := rtnl.ParseMode(*mode)
	if !ok {
		fmt.Fprintf(os.Stderr, "nlemu serve: --rtnl must be first-ipv4 or always, not %q\n", *mode)
		return 2
	}
	path := server.SocketPath(*sock)
	s := server.New(server.Config{RTNL: m})
	l, err := s.ListenUnix(path)
	if err != nil {
		// One line: what is at the path (or its directory) and why it is
		// left alone; ListenUnix replaces only a dead server's socket.
		hint := ""
		var pe *privdir.Error
		if errors.As(err, &pe) {
			hint = " (fix or remove it, or choose a socket with --socket)"
		}
		fmt.Fprintf(os.Stderr, "nlemu serve: %v%s\n", err, hint)
		return 1
	}
	fmt.Fprintf(os.Stderr, "nlemu: serving on %s (rtnl=%s)\n", l.Path(), m)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	s.Close() // closes the listener, which removes the socket file
	return 0
}
