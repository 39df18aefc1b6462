package main

import (
	"flag"
	"fmt"

	"github.com/nlemu/nlemu/server"
)

// limitFlags registers `nlemu serve`'s limit flags on fs (README "Security,
// limits and durability"); the returned function gives their values once
// fs is parsed, or an error naming a bad one. 0 takes the default, -1 is no
// limit.
func limitFlags(fs *flag.FlagSet) func() (server.Limits, error) {
	var l server.Limits
	fs.IntVar(&l.MaxNetns, "max-netns", server.DefaultMaxNetns, "most namespaces, default included (past it: ENOSPC); -1 for none")
	fs.IntVar(&l.MaxRules, "max-rules", server.DefaultMaxRules, "most rules per namespace and family, default rules included (ENOSPC); -1 for none")
	fs.IntVar(&l.MaxRoutes, "max-routes", server.DefaultMaxRoutes, "most routes per namespace, both families (ENOSPC); -1 for none")
	fs.IntVar(&l.MaxLinks, "max-links", server.DefaultMaxLinks, "most devices per namespace, lo included (ENOSPC); -1 for none")
	fs.IntVar(&l.MaxMsg, "max-msg", server.DefaultMaxMsg, "largest request datagram in bytes, at most 1048576 (past it: EMSGSIZE)")
	fs.IntVar(&l.RmemDefault, "rmem-default", 0, "a socket's receive buffer in bytes (0: net.core.rmem_default)")
	fs.IntVar(&l.RmemMax, "rmem-max", 0, "most SO_RCVBUF may ask for, before doubling (0: net.core.rmem_max)")
	fs.IntVar(&l.MaxConns, "max-conns", 0, "most Unix connections at once (0: a third of RLIMIT_NOFILE; past it: EAGAIN); -1 for none")
	fs.IntVar(&l.MaxConnsPerUID, "max-conns-per-uid", 0, "most Unix connections of one peer uid (0: half of --max-conns, for peers other than uid 0 and the server's; EAGAIN); -1 for none")
	return func() (server.Limits, error) {
		for _, f := range []struct {
			name string
			v    int
		}{{"max-netns", l.MaxNetns}, {"max-rules", l.MaxRules}, {"max-routes", l.MaxRoutes}, {"max-links", l.MaxLinks},
			{"max-conns", l.MaxConns}, {"max-conns-per-uid", l.MaxConnsPerUID}} {
			if f.v < -1 {
				return l, fmt.Errorf("--%s must be a count, 0 (default) or -1 (no limit), not %d", f.name, f.v)
			}
		}
		if l.MaxMsg < 16 || l.MaxMsg > server.DefaultMaxMsg {
			return l, fmt.Errorf("--max-msg must be from 16 to %d bytes, not %d", server.DefaultMaxMsg, l.MaxMsg)
		}
		if l.RmemDefault < 0 || l.RmemMax < 0 {
			return l, fmt.Errorf("--rmem-default and --rmem-max must be sizes in bytes (0: the sysctl)")
		}
		return l, nil
	}
}
