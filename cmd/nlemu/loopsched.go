package main

import (
	"flag"

	"github.com/nlemu/nlemu/server"
)

// loopSchedFlag adds --loop-sched to fs (`nlemu serve`, `nlemu load`); the
// function it returns applies the value parsed (server.SetLoopSched), or
// leaves the environment's or the default mode when the flag was not
// given.
func loopSchedFlag(fs *flag.FlagSet) func() {
	var m server.LoopSched
	fs.Func("loop-sched", "how the event-loop threads run: auto (fifo when the process may take it), poll (one SCHED_FIFO loop polling on the last CPU while requests come; clients spin for their replies), fifo (SCHED_FIFO 1, one loop pinned per CPU), nice (pinned, nice -10), pin or off (default $NLEMU_LOOP_SCHED, else "+string(server.DefaultLoopSched())+"; docs/PROTOCOL.md)", func(v string) error {
		var err error
		m, err = server.ParseLoopSched(v)
		return err
	})
	return func() {
		if m != "" {
			server.SetLoopSched(m)
		}
	}
}
