package integration

// The host guard: the nlemu side of every differential case runs inside a
// throwaway kernel network namespace, and the case fails if anything in that
// namespace changed. A program under `nlemu exec` must read and change only
// nlemu's namespace; whatever slips past the shim (an ioctl, a netlink
// protocol or a syscall the shim does not see) lands in the guard and shows
// up in its snapshot, instead of changing the machine the tests run on.

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// hostGuard is one throwaway kernel namespace (named nlemu-guard-*, so CI's
// leak check covers it) and its state when it was created.
type hostGuard struct {
	ns     *kernelns.NS
	before []string
}

// hostGuardViews are the views of a namespace's configuration compared
// before and after: links, addresses, routes and rules of both families.
var hostGuardViews = [][]string{
	{"-d", "link", "show"},
	{"addr", "show"},
	{"route", "show", "table", "all"},
	{"-6", "route", "show", "table", "all"},
	{"rule", "show"},
	{"-6", "rule", "show"},
}

// newHostGuard creates a guard namespace for t, runs each setup command in
// it (`ip -n GUARD ARGS...`, e.g. {"link", "set", "lo", "up"} to make it
// differ from nlemu's) and takes its snapshot. When t ends (before the
// namespace is deleted) it fails t with the difference if the namespace's
// configuration changed.
func newHostGuard(t *testing.T, setup ...[]string) *hostGuard {
	t.Helper()
	return startHostGuard(t, kernelns.NewForTest(t, "nlemu-guard"), setup...)
}

// maybeHostGuard is newHostGuard where kernel namespaces can be created,
// and nil elsewhere (unprivileged runs of tests that need no kernel side),
// unless kernelns.Required says the kernel side must run.
func maybeHostGuard(t *testing.T, setup ...[]string) *hostGuard {
	t.Helper()
	ns, err := kernelns.New("nlemu-guard")
	if errors.Is(err, kernelns.ErrNotPermitted) && !kernelns.Required() {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Errorf("kernelns: %v", err)
		}
	})
	return startHostGuard(t, ns, setup...)
}

func startHostGuard(t *testing.T, ns *kernelns.NS, setup ...[]string) *hostGuard {
	t.Helper()
	g := &hostGuard{ns: ns}
	for _, args := range setup {
		if _, errs, code := g.ns.IP(args...); code != 0 {
			t.Fatalf("ip -n %s %s: exit %d: %s", g.ns.Name(), strings.Join(args, " "), code, errs)
		}
	}
	g.before = g.snapshot(t)
	t.Cleanup(func() { g.check(t) })
	return g
}

// snapshot renders every view, each line prefixed with the view's command.
func (g *hostGuard) snapshot(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, v := range hostGuardViews {
		out, errs, code := g.ns.IP(v...)
		if code != 0 {
			t.Fatalf("ip -n %s %s: exit %d: %s", g.ns.Name(), strings.Join(v, " "), code, errs)
		}
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			lines = append(lines, strings.Join(v, " ")+": "+l)
		}
	}
	return lines
}

// diff is how the guard's configuration changed since it was created
// (-before +after), "" when it did not.
func (g *hostGuard) diff(t *testing.T) string {
	t.Helper()
	return cmp.Diff(g.before, g.snapshot(t))
}

// check fails t if the guard's configuration is not what it was.
func (g *hostGuard) check(t *testing.T) {
	t.Helper()
	if d := g.diff(t); d != "" {
		t.Errorf("the nlemu side changed the kernel namespace it ran in (%s); something escaped to the host (-before +after):\n%s", g.ns.Name(), d)
	}
}

// command runs argv inside the guard (`ip netns exec GUARD argv...`; ip
// execs argv in place, so signals and exit status are argv's own).
func (g *hostGuard) command(ctx context.Context, ip string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, ip, append([]string{"netns", "exec", g.ns.Name()}, argv...)...)
}

// TestHostGuardSeesChanges: the guard's snapshot covers every kind of
// configuration a leaked call could change (a link flag, an address, a
// route, a rule of either family), and nothing else differs between two
// snapshots of an untouched namespace.
func TestHostGuardSeesChanges(t *testing.T) {
	changes := []struct {
		name      string
		do, undo  []string
		wantInLog string
	}{
		// (lo up and down again is not an undo: lo keeps 127.0.0.1 and its qdisc)
		{"link", []string{"link", "set", "lo", "mtu", "1500"}, []string{"link", "set", "lo", "mtu", "65536"}, "1500"},
		{"address", []string{"addr", "add", "192.0.2.1/24", "dev", "lo"}, []string{"addr", "del", "192.0.2.1/24", "dev", "lo"}, "192.0.2.1/24"},
		{"route", []string{"route", "add", "blackhole", "198.51.100.0/24"}, []string{"route", "del", "blackhole", "198.51.100.0/24"}, "198.51.100.0/24"},
		{"route6", []string{"-6", "route", "add", "blackhole", "2001:db8::/32"}, []string{"-6", "route", "del", "blackhole", "2001:db8::/32"}, "2001:db8::/32"},
		{"rule", []string{"rule", "add", "pref", "100", "table", "100"}, []string{"rule", "del", "pref", "100"}, "lookup 100"},
		{"rule6", []string{"-6", "rule", "add", "pref", "100", "table", "100"}, []string{"-6", "rule", "del", "pref", "100"}, "lookup 100"},
	}
	g := newHostGuard(t)
	if d := g.diff(t); d != "" {
		t.Fatalf("two snapshots of an untouched namespace differ:\n%s", d)
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			if _, e, code := g.ns.IP(c.do...); code != 0 {
				t.Fatalf("ip %s: %s", strings.Join(c.do, " "), e)
			}
			d := g.diff(t)
			if _, e, code := g.ns.IP(c.undo...); code != 0 {
				t.Fatalf("ip %s: %s", strings.Join(c.undo, " "), e)
			}
			if !strings.Contains(d, c.wantInLog) {
				t.Errorf("after ip %s the guard's diff does not show %q:\n%s", strings.Join(c.do, " "), c.wantInLog, d)
			}
			if d := g.diff(t); d != "" {
				t.Errorf("after undoing ip %s the guard still differs:\n%s", strings.Join(c.do, " "), d)
			}
		})
	}
}
