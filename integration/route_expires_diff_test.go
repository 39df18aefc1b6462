package integration

// IPv6 route expiry beside other routes of the same prefix, against a live
// kernel namespace. Not an ipcases batch: the countdowns ("expires 499sec",
// RTA_CACHEINFO's rta_expires in `ip route save`) depend on when each side
// ran, so two kernel namespaces differ by a second now and then; here the
// countdowns are compared with a tolerance and everything else exactly.

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var expiresRE = regexp.MustCompile(`expires (-?\d+)sec`)

// expiresCompare compares two `ip -6 route show` outputs: the same lines
// once each countdown is replaced by "expires N", and each pair of
// countdowns within slack seconds of each other.
func expiresCompare(t *testing.T, what string, k, n ipcResult, slack int) {
	t.Helper()
	if k.Code != n.Code || string(k.Stderr) != string(n.Stderr) {
		t.Errorf("%s: exit %d / %d, stderr %q / %q (kernel / nlemu)", what, k.Code, n.Code, k.Stderr, n.Stderr)
	}
	norm := func(b []byte) ([]string, []int) {
		var secs []int
		s := expiresRE.ReplaceAllStringFunc(string(b), func(m string) string {
			v, _ := strconv.Atoi(expiresRE.FindStringSubmatch(m)[1])
			secs = append(secs, v)
			return "expires N"
		})
		return ipcLines([]byte(s)), secs
	}
	kl, ks := norm(k.Stdout)
	nl, ns := norm(n.Stdout)
	if strings.Join(kl, "\n") != strings.Join(nl, "\n") {
		t.Errorf("%s differs (-kernel +nlemu):\n%s", what, ipcDiff(kl, nl))
		return
	}
	for i := range min(len(ks), len(ns)) {
		if d := ks[i] - ns[i]; d > slack || d < -slack {
			t.Errorf("%s: countdown %d is %ds on the kernel, %ds on nlemu", what, i, ks[i], ns[i])
		}
	}
}

// TestIPv6ExpiresSharedPrefixMatchesKernel: an expiring route sits in metric
// order beside a permanent one of the prefix (another device, metric 1024);
// a duplicate refused with EEXIST by prepend or append still hands its
// expiry, or its absence, to a stored route that expires
// (fib6_add_rt2node(); nsmgr.TestQuirkIPv6DuplicateAddRefreshesExpiry);
// replace takes the new route's expiry or its absence. (An ECMP sibling
// appended with an expiry is left out: nlemu keeps one expiry per set, the
// kernel one per sibling; docs/ROUTES.md.)
// Then, unless -short: an expired route is still listed ("expires -Nsec")
// until the collector's first run, gc_interval (30 s) after the first
// expiring route was added, which deletes the expired routes, newest first,
// each announced (nsmgr.TestQuirkIPv6ExpiredRouteListedUntilGC).
func TestIPv6ExpiresSharedPrefixMatchesKernel(t *testing.T) {
	env := newIPCEnv(t)
	k, n := env.pair(t)
	setup := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "v0", "address", "02:00:00:00:00:01", "type", "veth", "peer", "name", "v1", "address", "02:00:00:00:00:02"},
		{"link", "set", "v0", "addrgenmode", "none"},
		{"link", "set", "v1", "addrgenmode", "none"},
		{"link", "set", "v0", "up"},
		{"link", "set", "v1", "up"},
	}
	for _, s := range []*ipcSide{k, n} {
		for _, c := range setup {
			if r := s.run(nil, c...); r.Code != 0 {
				t.Fatalf("%s: ip %v: %s", s.label(), c, r.Stderr)
			}
		}
	}
	ipcSettle(t, k)
	// Monitors first, so that they see the collector's deletions.
	mons := map[*ipcSide]*monitorRun{}
	if !testing.Short() {
		for _, s := range []*ipcSide{k, n} {
			mons[s] = startMonitor(t, s)
		}
	}
	steps := [][]string{
		{"-6", "route", "add", "2001:db8::/64", "dev", "v1"},
		{"-6", "route", "add", "2001:db8::/64", "dev", "v0", "metric", "1", "expires", "3"},
		{"-6", "route", "add", "2001:db8:1::/64", "dev", "v0", "metric", "1"},
		{"-6", "route", "prepend", "2001:db8:1::/64", "dev", "v0", "metric", "1", "expires", "400"},
		{"-6", "route", "add", "2001:db8:2::/64", "dev", "v0", "metric", "1", "expires", "500"},
		{"-6", "route", "prepend", "2001:db8:2::/64", "dev", "v0", "metric", "1", "expires", "3"},
		{"-6", "route", "add", "2001:db8:3::/64", "dev", "v0", "metric", "1", "expires", "500"},
		{"-6", "route", "prepend", "2001:db8:3::/64", "dev", "v0", "metric", "1"},
		{"-6", "route", "add", "2001:db8:4::/64", "dev", "v0", "metric", "1"},
		{"-6", "route", "replace", "2001:db8:4::/64", "dev", "v0", "metric", "1", "expires", "3"},
		{"-6", "route", "add", "2001:db8:5::/64", "dev", "v0", "metric", "1", "expires", "500"},
		{"-6", "route", "replace", "2001:db8:5::/64", "dev", "v0", "metric", "1"},
		{"-6", "route", "add", "2001:db8:7::/64", "dev", "v0", "metric", "1", "expires", "500"},
		{"-6", "route", "append", "2001:db8:7::/64", "dev", "v0", "metric", "1"},
		{"-6", "route", "add", "2001:db8:8::/64", "dev", "v0", "metric", "1", "expires", "500"},
		{"-6", "route", "add", "2001:db8:8::/64", "dev", "v0", "metric", "1", "expires", "400"},
	}
	start := time.Now()
	for _, c := range steps {
		kr, nr := k.run(nil, c...), n.run(nil, c...)
		if kr.Code != nr.Code || string(kr.Stderr) != string(nr.Stderr) {
			t.Errorf("ip %v: exit %d %q on the kernel, %d %q on nlemu", c, kr.Code, kr.Stderr, nr.Code, nr.Stderr)
		}
	}
	show := []string{"-6", "route", "show"}
	expiresCompare(t, "ip -6 route show", k.run(nil, show...), n.run(nil, show...), 2)
	if testing.Short() {
		return
	}
	// Expired, not yet collected: listed with a negative countdown.
	time.Sleep(time.Until(start.Add(8 * time.Second)))
	expiresCompare(t, "ip -6 route show, expired, before the collector", k.run(nil, show...), n.run(nil, show...), 2)
	// Past the first run (30 s after the first expiring route) by 6 s.
	time.Sleep(time.Until(start.Add(36 * time.Second)))
	expiresCompare(t, "ip -6 route show after the collector", k.run(nil, show...), n.run(nil, show...), 2)
	km, nm := mons[k].stop(), mons[n].stop()
	expiresCompare(t, "ip monitor route", km, nm, 2)
}

// monitorRun is `ip monitor route` running beside a test.
type monitorRun struct {
	cancel context.CancelFunc
	done   chan ipcResult
}

func startMonitor(t *testing.T, s *ipcSide) *monitorRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := s.command(ctx, "monitor", "route")
	m := &monitorRun{cancel: cancel, done: make(chan ipcResult, 1)}
	go func() { m.done <- ipcWait(ctx, cmd) }()
	t.Cleanup(func() { m.stop() })
	time.Sleep(300 * time.Millisecond) // let it subscribe
	return m
}

// stop ends the monitor and returns what it printed (exit status and
// stderr cleared: both were killed).
func (m *monitorRun) stop() ipcResult {
	if m.cancel == nil {
		return ipcResult{}
	}
	time.Sleep(300 * time.Millisecond) // let it print what it read
	m.cancel()
	m.cancel = nil
	r := <-m.done
	r.Code, r.Stderr, r.Problem = 0, nil, ""
	return r
}
