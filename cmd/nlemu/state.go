package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nlemu/nlemu/journal"
	"github.com/nlemu/nlemu/loadgen"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// fsyncUsage is --fsync's help: each policy's promise (docs/STATE.md).
const fsyncUsage = `with --state, when a change's ACK is sent and what it survives:
interval: once the record is in the OS (the page cache); survives a crash or SIGKILL of the server; an fdatasync every --fsync-interval covers every record stored before it starts, so a crash of the machine loses at most the changes acknowledged in the last interval and during the fdatasync then running;
group: after an fdatasync shared with concurrent changes; survives a crash of the machine;
always: after the change's own fdatasync; survives a crash of the machine;
none: once the record is in the OS, never synced but at a file rotation and a clean stop; survives a crash of the server, not of the machine`

// policyFlags registers --fsync and --fsync-interval on fs; the function it
// returns parses them.
func policyFlags(fs *flag.FlagSet) func() (journal.Policy, time.Duration, error) {
	policy := fs.String("fsync", "interval", fsyncUsage)
	every := fs.Duration("fsync-interval", journal.DefaultInterval, "with --fsync interval, the period of the background fdatasync: a crash of the machine loses at most the changes acknowledged within it")
	return func() (journal.Policy, time.Duration, error) {
		p, ok := journal.ParsePolicy(*policy)
		if !ok {
			return 0, 0, fmt.Errorf("--fsync must be interval, group, always or none, not %q", *policy)
		}
		if *every <= 0 {
			return 0, 0, fmt.Errorf("--fsync-interval must be positive, not %v", *every)
		}
		return p, *every, nil
	}
}

// stateFlags registers --state, --fsync and --fsync-interval
// (docs/STATE.md) on fs. The
// function it returns, called after parsing with the new server and before
// the server listens, restores the state and installs the journal; its
// closer flushes and closes the journal after the server has stopped.
func stateFlags(fs *flag.FlagSet) func(s *server.Server) (closer func(), err error) {
	dir := fs.String("state", "", "directory that keeps every acknowledged change across restarts (docs/STATE.md); empty: none")
	policy := policyFlags(fs)
	return func(s *server.Server) (func(), error) {
		p, every, err := policy()
		if err != nil {
			return nil, err
		}
		if *dir == "" {
			return func() {}, nil
		}
		j, rs, err := openState(s, *dir, p, every)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "nlemu: state %s (fsync=%s%s): restored %d namespaces from %d records\n", *dir, p, intervalNote(p, every), rs.Namespaces, rs.Records)
		return func() {
			if err := j.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "nlemu: state %s: %v\n", *dir, err)
			}
		}, nil
	}
}

// openState restores dir into s and sends s's changes through its journal.
func openState(s *server.Server, dir string, p journal.Policy, every time.Duration) (*journal.Journal, *journal.Restored, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "nlemu: "+format+"\n", args...) }
	j, rs, err := journal.Open(dir, s.Namespaces(), journal.Options{Fsync: p, Interval: every, Logf: logf})
	if err != nil {
		return nil, nil, fmt.Errorf("state %s: %w", dir, err)
	}
	s.SetJournal(j)
	return j, rs, nil
}

// intervalNote is the interval's mention after the policy's name.
func intervalNote(p journal.Policy, every time.Duration) string {
	if p != journal.Interval {
		return ""
	}
	return ", every " + every.String()
}

// loadStateFlags registers --state, --fsync and --fsync-interval on `nlemu load`: each
// embedded server (one per --rtnl mode) keeps its state in DIR/rtnl-MODE,
// which must not exist yet, so the load pays what `nlemu serve --state`
// pays for every change. The journal's counters are printed at the end.
func loadStateFlags(fs *flag.FlagSet) func(cfg *loadgen.Config) error {
	dir := fs.String("state", "", "keep each embedded server's state in DIR/rtnl-MODE (a fresh directory), to measure what nlemu serve --state costs")
	policy := policyFlags(fs)
	return func(cfg *loadgen.Config) error {
		p, every, err := policy()
		if err != nil {
			return err
		}
		if *dir == "" {
			if os.Getenv("NLEMU_LOAD_MUTEXPROFILE") != "" && cfg.Server == "" {
				cfg.Setup = func(s *server.Server, m rtnl.Mode) (func(), error) {
					return loadContentionProfiles(m.String()), nil
				}
			}
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
			prof := loadContentionProfiles(m.String())
			j, _, err := openState(s, d, p, every)
			if err != nil {
				prof()
				return nil, err
			}
			return func() {
				prof()
				st := j.Stats()
				if err := j.Close(); err != nil {
					fmt.Fprintf(os.Stderr, "nlemu load: state %s: %v\n", d, err)
				}
				writes := fmt.Sprintf("%d writes (%.1f per write)", st.Batches, float64(st.Records)/float64(max(st.Batches, 1)))
				if st.Batches == 0 {
					writes = "stored in the file's mapping" // journal.Journal.storeMapped
				}
				fmt.Fprintf(os.Stderr, "state %s (fsync=%s%s): %d records %s, %.1f MiB, %d compactions, %d fdatasyncs, %.2fs in fdatasync (summed: they overlap)\n",
					d, p, intervalNote(p, every), st.Records, writes, float64(st.Bytes)/(1<<20), st.Compactions,
					st.Syncs, st.SyncTime.Seconds())
			}, nil
		}
		return nil
	}
}
