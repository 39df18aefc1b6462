package main

import (
	"os"
	"strings"
	"testing"
)

// capture runs fn with os.Stdout and os.Stderr redirected to files and
// returns what it wrote to each (the subcommands print to the process's
// streams, as the CLI does).
func capture(t *testing.T, fn func()) (stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(dir + "/stdout")
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(dir + "/stderr")
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
	fn()
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(dir + "/stdout")
	e, _ := os.ReadFile(dir + "/stderr")
	return string(o), string(e)
}

// TestLoadRejectsZeroNetns: `nlemu load --netns 0` (and negative counts)
// used to run the full default load (4,096 namespaces) because
// loadgen.Config.defaults treats <= 0 as "unset". A count the user typed
// that means nothing must be refused with one line and exit 2, like the
// CLI's other flag errors (--family, --rtnl). The other flags are kept
// tiny so that, on a build that does not reject, the test still ends fast
// (and fails on the exit code).
func TestLoadRejectsZeroNetns(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the one-line message
	}{
		{[]string{"--netns", "0", "--rules", "1", "--family", "4"}, "--netns"},
		{[]string{"--netns", "-3", "--rules", "1", "--family", "4"}, "--netns"},
		{[]string{"--netns", "1", "--rules", "0", "--family", "4"}, "--rules"},
		{[]string{"--netns", "1", "--rules", "-1", "--family", "4"}, "--rules"},
		{[]string{"--netns", "1", "--rules", "1", "--family", "4", "--parallel", "-2"}, "--parallel"},
		// Beyond 32765 the automatic priorities run out; loadgen refused
		// it, but with exit 1 like a failed load rather than 2.
		{[]string{"--netns", "1", "--rules", "32766", "--family", "4"}, "--rules"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var code int
			stdout, stderr := capture(t, func() { code = runLoad(tc.args) })
			if code != 2 {
				t.Fatalf("exit %d, want 2; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing (no load may run)", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "nlemu load: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q, want one line `nlemu load: ...` naming %s", stderr, tc.want)
			}
		})
	}
}
