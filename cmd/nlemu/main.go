// Command nlemu is the netlink routing control-plane emulator: `nlemu serve`
// runs a server, `nlemu netns` manages its namespaces, `nlemu exec` runs an
// unmodified program (such as iproute2's ip) against one of them, `nlemu
// load` runs the seed's parallel rule-load test and `nlemu stats` prints a
// running server's counters.
package main

import (
	"fmt"
	"os"

	"github.com/nlemu/nlemu/internal/gctune"
)

const usage = `usage: nlemu COMMAND [ARGS...]

commands:
  serve [--socket PATH] [--rtnl first-ipv4|always]   run a server in the foreground
  netns add|del NAME | list [--socket PATH]          manage the server's namespaces
  exec [--socket PATH] -n NAME -- CMD [ARGS...]      run CMD against namespace NAME
  env [--socket PATH] -n NAME                         shell assignments: eval "$(nlemu env -n NAME)"
  load [--netns N] [--rules R] [--family 4,6] ...     the seed's parallel rule-load test
  stats [--socket PATH] [--json]                      the server's counters
  bench lookup [--routes N] [--rules K] [--json]      the seeds' route-lookup micro-benchmark

The server socket is --socket, else $NLEMU_SOCKET, else a per-user default.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var code int
	switch cmd {
	case "serve":
		// The collector settings `nlemu load`'s embedded server uses, so
		// that figures measured against either are comparable.
		gctune.Apply()
		code = runServe(args)
	case "netns":
		code = runNetns(args)
	case "exec":
		code = runExec(args)
	case "env":
		code = runEnv(args)
	case "load":
		code = runLoad(args)
	case "stats":
		code = runStats(args)
	case "bench":
		code = runBench(args)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "nlemu: unknown command %q\n%s", cmd, usage)
		code = 2
	}
	os.Exit(code)
}
