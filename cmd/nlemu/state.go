package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nlemu/nlemu/journal"
	"github.com/nlemu/nlemu/loadgen"
	"github.com/nlemu/nlemu/rtnl"
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

// loadStateFlags registers --state and --fsync on `nlemu load`: each
// embedded server (one per --rtnl mode) keeps its state in DIR/rtnl-MODE,
// which must not exist yet, so the load pays what `nlemu serve --state`
// pays for every change. The journal's counters are printed at the end.
func loadStateFlags(fs *flag.FlagSet) func(cfg *loadgen.Config) error {
	dir := fs.String("state", "", "keep each embedded server's state in DIR/rtnl-MODE (a fresh directory), to measure what nlemu serve --state costs")
	policy := fs.String("fsync", "group", "with --state: group, always or none (as nlemu serve)")
	return func(cfg *loadgen.Config) error {
		p, ok := journal.ParsePolicy(*policy)
		if !ok {
			return fmt.Errorf("--fsync must be group, always or none, not %q", *policy)
		}
		if *dir == "" {
			return nil
		}
		if cfg.Server != "" {
			return fmt.Errorf("--state applies to the embedded server; give it to the server at %s instead", cfg.Server)
		}
		cfg.Setup = func(s *server.Server, m rtnl.Mode) (func(), error) {
			d := filepath.Join(*dir, "rtnl-"+m.String())
			if _, err := os.Stat(d); err == nil {
				return nil, fmt.Errorf("%s already holds state: remove it, or choose another --state", d)
			}
			j, _, err := openState(s, d, p)
			if err != nil {
				return nil, err
			}
			return func() {
				st := j.Stats()
				if err := j.Close(); err != nil {
					fmt.Fprintf(os.Stderr, "nlemu load: state %s: %v\n", d, err)
				}
				fmt.Fprintf(os.Stderr, "state %s (fsync=%s): %d records in %d writes (%.1f per write), %.1f MiB, %d compactions, %.2fs in fdatasync (summed: they overlap)\n",
					d, p, st.Records, st.Batches, float64(st.Records)/float64(max(st.Batches, 1)), float64(st.Bytes)/(1<<20), st.Compactions,
					st.SyncTime.Seconds())
			}, nil
		}
		return nil
	}
}
