package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"strconv"
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
	sockMode := fs.String("socket-mode", "0666", "mode of the socket file (octal); every change is checked against the caller anyway")
	var allow []uint32
	fs.Func("allow-group", "a group (name or gid) whose members may change state, besides uid 0 and the server's uid; repeatable", func(v string) error {
		gid, err := lookupGroup(v)
		if err == nil {
			allow = append(allow, gid)
		}
		return err
	})
	limits := limitFlags(fs) // --max-* and --rmem-* (limits.go)
	state := stateFlags(fs)  // --state and --fsync (state.go)
	loopSched := loopSchedFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	loopSched()
	lim, err := limits()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu serve: %v\n", err)
		return 2
	}
	sm, err := strconv.ParseUint(*sockMode, 8, 32)
	if err != nil || sm == 0 || sm > 0o777 {
		fmt.Fprintf(os.Stderr, "nlemu serve: --socket-mode must be an octal mode from 1 to 0777, not %q\n", *sockMode)
		return 2
	}
	m, ok := rtnl.ParseMode(*mode)
	if !ok {
		fmt.Fprintf(os.Stderr, "nlemu serve: --rtnl must be first-ipv4 or always, not %q\n", *mode)
		return 2
	}
	path := server.SocketPath(*sock)
	s := server.New(server.Config{RTNL: m, AllowGroups: allow, SocketMode: os.FileMode(sm), Limits: lim})
	closeState, err := state(s) // restored before the socket is served
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu serve: %v\n", err)
		return 1
	}
	defer closeState() // after s.Close: every queued record is written
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

// lookupGroup resolves --allow-group: a group name, else a numeric gid.
func lookupGroup(v string) (uint32, error) {
	if g, err := user.LookupGroup(v); err == nil {
		v = g.Gid
	}
	gid, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("no group %q", v)
	}
	return uint32(gid), nil
}
