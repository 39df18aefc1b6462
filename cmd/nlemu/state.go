package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nlemu/nlemu/journal"
	"github.com/nlemu/nlemu/server"
)

// stateFlags registers --state and --fsync (docs/STATE.md) on fs. The
// function it returns, called after parsing with the new server and before
// the server listens, restores the state and installs the journal; its
// closer flushes and closes the journal after the server has stopped.
func stateFlags(fs *flag.FlagSet) func(s *server.Server) (closer func(), err error) {
	dir := fs.String("state", "", "directory that keeps every acknowledged change across restarts (docs/STATE.md); empty: none")
	policy := fs.String("fsync", "group", "with --state, when a change's ACK is sent: group (after an fdatasync shared with concurrent changes), always (one fdatasync per change), none (once written to the OS)")
	return func(s *server.Server) (func(), error) {
		p, ok := journal.ParsePolicy(*policy)
		if !ok {
			return nil, fmt.Errorf("--fsync must be group, always or none, not %q", *policy)
		}
		if *dir == "" {
			return func() {}, nil
		}
		j, rs, err := openState(s, *dir, p)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "nlemu: state %s (fsync=%s): restored %d namespaces from %d records\n", *dir, p, rs.Namespaces, rs.Records)
		return func() {
			if err := j.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "nlemu: state %s: %v\n", *dir, err)
			}
		}, nil
	}
}

// openState restores dir into s and sends s's changes through its journal.
func openState(s *server.Server, dir string, p journal.Policy) (*journal.Journal, *journal.Restored, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "nlemu: "+format+"\n", args...) }
	j, rs, err := journal.Open(dir, s.Namespaces(), journal.Options{Fsync: p, Logf: logf})
	if err != nil {
		return nil, nil, fmt.Errorf("state %s: %w", dir, err)
	}
	s.SetJournal(j)
	return j, rs, nil
}
