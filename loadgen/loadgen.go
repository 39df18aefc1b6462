// Package loadgen runs the seed's parallel rule-load test (seed 004's
// test.sh): N namespaces, `rule add from all table i` for i = 1..R into every
// namespace at once, one family at a time, then verifies every namespace and
// reports wall time, rate, RTNL counters, per-namespace completion
// percentiles and peak RSS.
package loadgen

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nlemu/nlemu/internal/gctune"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/server"
)

// Config is one load test.
type Config struct {
	Netns    int    // namespaces (default 4096)
	Rules    int    // rules per namespace and family (default 1024)
	Families []int  // 4 and/or 6, each loaded and timed separately
	Driver   string // "inproc" or "ip"
	Modes    []rtnl.Mode
	Parallel int    // namespaces loaded at once (0: all for inproc, 32 for ip)
	Server   string // socket of a running server; "" = embedded server
	Prefix   string // namespace names Prefix1..PrefixN
	// NlemuBin is the nlemu binary used by the ip driver for `nlemu exec`.
	NlemuBin string
	// Progress is called after each namespace finishes (may be nil).
	Progress func(done, total int)
	// Start is called when a run begins (may be nil).
	Start func(family int, mode rtnl.Mode, total int)
	// Phase reports the progress of the other phases: "creating
	// namespaces", "verifying IPv4", "deleting namespaces"... (may be nil).
	Phase func(phase string, done, total int)
	// FloorPairs, when set with the ip driver, measures the SEQPACKET
	// round-trip floor first (MeasureFloor with this many pairs, NlemuBin
	// as the floor processes) and gives every run's wall time as a ratio
	// to it.
	FloorPairs int
	// Setup, when set, is called with each embedded server before it has
	// a client (`nlemu load --state` opens a journal there); the function
	// it returns runs after that server is closed.
	Setup func(s *server.Server, mode rtnl.Mode) (func(), error)
}

// Run is the result of one family in one RTNL mode.
type Run struct {
	Family           int     `json:"family"`
	RTNL             string  `json:"rtnl"`
	WallS            float64 `json:"wall_s"`
	RulesPerS        float64 `json:"rules_per_s"`
	RTNLAcquisitions uint64  `json:"rtnl_acquisitions"`
	RTNLWaitS        float64 `json:"rtnl_wait_s"`
	RTNLHoldS        float64 `json:"rtnl_hold_s"`
	NsP50S           float64 `json:"ns_p50_s"`
	NsP90S           float64 `json:"ns_p90_s"`
	NsP99S           float64 `json:"ns_p99_s"`
	NsMaxS           float64 `json:"ns_max_s"`
	Errors           int     `json:"errors"`
	Verified         bool    `json:"verified"`
	// FirstError describes the first failure, if any (not in the JSON
	// contract's required keys, but useful).
	FirstError string `json:"first_error,omitempty"`
	// WallUSPerRule is the wall time per rule, and FloorRatio its ratio to
	// the round-trip floor (Report.FloorUS; ip driver with FloorPairs).
	WallUSPerRule float64 `json:"wall_us_per_rule"`
	FloorRatio    float64 `json:"floor_ratio,omitempty"`
	// CPU per rule (µs) during the load: the clients' (the ip driver's
	// processes, getrusage RUSAGE_CHILDREN) and this process's (RUSAGE_SELF:
	// the embedded server, which with the inproc driver includes the
	// clients; absent with Config.Server).
	ClientUserUS float64 `json:"client_user_us_per_rule,omitempty"`
	ClientSysUS  float64 `json:"client_sys_us_per_rule,omitempty"`
	ServerUserUS float64 `json:"server_user_us_per_rule,omitempty"`
	ServerSysUS  float64 `json:"server_sys_us_per_rule,omitempty"`
	// System calls per rule of one sample namespace loaded alone after the
	// timed load (sampleSyscalls: perf stat; absent without perf or with
	// the inproc driver).
	ClientSyscalls float64 `json:"client_syscalls_per_rule,omitempty"`
	ServerSyscalls float64 `json:"server_syscalls_per_rule,omitempty"`
}

// Report is the whole test: the JSON object `nlemu load --json` prints.
type Report struct {
	Netns  int    `json:"netns"`
	Rules  int    `json:"rules"`
	Driver string `json:"driver"`
	// PeakRSSBytes is the server's peak resident set size (VmHWM). With
	// an embedded server (ServerInProcess) that is this process, clients
	// included; with Config.Server it is the server process's, from STATS
	// (its peak since it started), and ClientPeakRSSBytes is this
	// process's.
	PeakRSSBytes       uint64 `json:"peak_rss_bytes"`
	ServerInProcess    bool   `json:"server_in_process"`
	ClientPeakRSSBytes uint64 `json:"client_peak_rss_bytes,omitempty"`
	Runs               []Run  `json:"runs"`
	// FloorUS is the SEQPACKET round-trip floor measured before the runs
	// (µs per round trip, Config.FloorPairs pairs at once).
	FloorUS float64 `json:"floor_us,omitempty"`
}

func (c *Config) defaults() error {
	// 0 means "the default"; a negative count means nothing.
	for _, f := range []struct {
		name string
		v    int
	}{{"Netns", c.Netns}, {"Rules", c.Rules}, {"Parallel", c.Parallel}} {
		if f.v < 0 {
			return fmt.Errorf("%s must not be negative, not %d", f.name, f.v)
		}
	}
	if c.Netns <= 0 {
		c.Netns = 4096
	}
	if c.Rules <= 0 {
		c.Rules = 1024
	}
	if len(c.Families) == 0 {
		c.Families = []int{4, 6}
	}
	for _, f := range c.Families {
		if f != 4 && f != 6 {
			return fmt.Errorf("family must be 4 or 6, not %d", f)
		}
	}
	if c.Driver == "" {
		c.Driver = "inproc"
	}
	if c.Driver != "inproc" && c.Driver != "ip" {
		return fmt.Errorf("driver must be inproc or ip, not %q", c.Driver)
	}
	if len(c.Modes) == 0 {
		c.Modes = []rtnl.Mode{rtnl.ModeFirstIPv4}
	}
	if c.Prefix == "" {
		c.Prefix = "ns-"
	}
	if c.Parallel <= 0 {
		if c.Driver == "ip" {
			c.Parallel = 32
		} else {
			c.Parallel = c.Netns
		}
	}
	if c.Rules > 32765 {
		return errors.New("at most 32765 rules: automatic priorities run out below that")
	}
	return nil
}

// target is where a run's namespaces live: an embedded server or a running
// one reached through its socket.
type target struct {
	srv  *server.Server // embedded; nil with Config.Server
	path string         // Unix socket (ip driver, or --server)
	ln   *server.Listener
	adm  *server.Client // admin connection for --server
	dir  string
	// teardown is Config.Setup's closer (nil without one).
	teardown func()
}

func (t *target) close() {
	if t.adm != nil {
		t.adm.Close()
	}
	if t.srv != nil {
		t.srv.Close()
	}
	if t.teardown != nil {
		t.teardown()
	}
	if t.dir != "" {
		os.RemoveAll(t.dir)
	}
}

func (t *target) stats() (rtnl.LockStats, error) {
	if t.srv != nil {
		return t.srv.RTNLStats(), nil
	}
	st, err := t.adm.ServerStats()
	if err != nil {
		return rtnl.LockStats{}, err
	}
	return rtnl.LockStats{Acquisitions: st.RTNLAcquisitions, Wait: time.Duration(st.RTNLWaitS * 1e9), Hold: time.Duration(st.RTNLHoldS * 1e9)}, nil
}

func (t *target) addNS(name string) error {
	if t.srv != nil {
		return t.srv.Namespaces().Add(name)
	}
	return t.adm.NetnsAdd(name)
}

func (t *target) delNS(name string) error {
	if t.srv != nil {
		return t.srv.Namespaces().Del(name)
	}
	return t.adm.NetnsDel(name)
}

func (t *target) dial(ns string) (*server.Client, error) {
	if t.srv != nil {
		return t.srv.Dial(server.Options{Namespace: ns})
	}
	return server.DialUnix(t.path, server.Options{Namespace: ns})
}

func newTarget(c *Config, mode rtnl.Mode) (*target, error) {
	if c.Server != "" {
		adm, err := server.DialUnix(c.Server, server.Options{})
		if err != nil {
			return nil, fmt.Errorf("no server at %s: %w", c.Server, err)
		}
		st, err := adm.ServerStats()
		if err != nil {
			adm.Close()
			return nil, err
		}
		if st.RTNLMode != mode.String() {
			adm.Close()
			return nil, fmt.Errorf("the server at %s runs --rtnl=%s; restart it with --rtnl=%s or drop --rtnl", c.Server, st.RTNLMode, mode)
		}
		return &target{path: c.Server, adm: adm}, nil
	}
	t := &target{srv: server.New(server.Config{RTNL: mode})}
	if c.Setup != nil {
		var err error
		if t.teardown, err = c.Setup(t.srv, mode); err != nil {
			return nil, err
		}
	}
	if c.Driver == "ip" {
		dir, err := os.MkdirTemp("", "nlemu-load-")
		if err != nil {
			t.close()
			return nil, err
		}
		t.dir = dir
		t.path = filepath.Join(dir, "nlemu.sock")
		if t.ln, err = t.srv.ListenUnix(t.path); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// Execute runs the test.
func Execute(c Config) (*Report, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	if c.Server == "" {
		// Everything lives in this process: the embedded server gets the
		// collector settings `nlemu serve` runs with (gctune).
		defer gctune.Apply()()
		if c.Driver == "inproc" {
			warmHeap(512 << 20)
		}
	}
	rep := &Report{Netns: c.Netns, Rules: c.Rules, Driver: c.Driver}
	if c.Driver == "ip" && c.FloorPairs > 0 {
		c.phase("measuring the round-trip floor", 0, 1)
		f, err := MeasureFloor(c.bin(), c.FloorPairs, max(2000, 400000/c.FloorPairs))
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		c.phase("measuring the round-trip floor", 1, 1)
		rep.FloorUS = f
	}
	var batch string
	if c.Driver == "ip" {
		f, err := os.CreateTemp("", "nlemu-rules-*.txt")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		var sb strings.Builder
		for i := 1; i <= c.Rules; i++ {
			fmt.Fprintf(&sb, "rule add from all table %d\n", i)
		}
		f.WriteString(sb.String())
		f.Close()
		batch = f.Name()
	}
	for _, mode := range c.Modes {
		t, err := newTarget(&c, mode)
		if err != nil {
			return nil, err
		}
		names := make([]string, c.Netns)
		for i := range names {
			names[i] = c.Prefix + strconv.Itoa(i+1)
			if err := t.addNS(names[i]); err != nil {
				t.close()
				return nil, fmt.Errorf("netns add %s: %w", names[i], err)
			}
			c.phase("creating namespaces", i+1, len(names))
		}
		for _, fam := range c.Families {
			if c.Start != nil {
				c.Start(fam, mode, c.Netns)
			}
			run, err := c.load(t, names, fam, mode, batch)
			if err != nil {
				t.close()
				return nil, err
			}
			if rep.FloorUS > 0 {
				run.FloorRatio = run.WallUSPerRule / rep.FloorUS
			}
			rep.Runs = append(rep.Runs, *run)
		}
		if c.Server != "" {
			// The server's own peak, from STATS: this process is only
			// the client.
			st, err := t.adm.ServerStats()
			if err != nil {
				t.close()
				return nil, err
			}
			rep.PeakRSSBytes = max(rep.PeakRSSBytes, st.PeakRSSBytes)
		}
		// With --server the namespaces stay there for inspection.
		if c.Server == "" {
			for i, n := range names {
				if err := t.delNS(n); err != nil {
					t.close()
					return nil, err
				}
				c.phase("deleting namespaces", i+1, len(names))
			}
		}
		t.close()
		runtime.GC()
	}
	if c.Server == "" {
		rep.PeakRSSBytes = peakRSS()
		rep.ServerInProcess = true
	} else {
		rep.ClientPeakRSSBytes = peakRSS()
	}
	return rep, nil
}

func (c *Config) load(t *target, names []string, fam int, mode rtnl.Mode, batch string) (*Run, error) {
	before, err := t.stats()
	if err != nil {
		return nil, err
	}
	per := make([]time.Duration, len(names))
	var errCount atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errCount.Add(1) == 1 {
			firstErr.Store(err.Error())
		}
	}
	var done atomic.Int64
	reqs := requests(fam, c.Rules)
	var g errgroup.Group
	g.SetLimit(c.Parallel)
	stopProfile := startProfile(fam, mode)
	cpu0 := cpuNow()
	start := time.Now()
	for i, name := range names {
		g.Go(func() error {
			var err error
			if c.Driver == "ip" {
				err = c.loadIP(t, name, fam, batch)
			} else {
				err = loadInproc(t, name, reqs)
			}
			if err != nil {
				fail(fmt.Errorf("%s: %w", name, err))
			}
			per[i] = time.Since(start)
			if c.Progress != nil {
				c.Progress(int(done.Add(1)), len(names))
			}
			return nil
		})
	}
	g.Wait()
	wall := time.Since(start)
	cpu1 := cpuNow()
	stopProfile()
	after, err := t.stats()
	if err != nil {
		return nil, err
	}
	verified, verr := verify(t, names, fam, c.Rules, func(done int) {
		c.phase(fmt.Sprintf("verifying IPv%d", fam), done, len(names))
	})
	if verr != nil {
		fail(verr)
	}
	var sampleC, sampleS float64
	if c.Driver == "ip" && havePerf() {
		c.phase(fmt.Sprintf("counting system calls (IPv%d sample)", fam), 0, 1)
		if sampleC, sampleS, err = c.sampleSyscalls(t, fam, batch); err != nil {
			fail(err)
		}
		c.phase(fmt.Sprintf("counting system calls (IPv%d sample)", fam), 1, 1)
	}
	rules := len(names) * c.Rules
	sort.Slice(per, func(a, b int) bool { return per[a] < per[b] })
	pct := func(p float64) float64 {
		return per[min(len(per)-1, int(p*float64(len(per))))].Seconds()
	}
	r := &Run{
		Family: fam, RTNL: mode.String(), WallS: wall.Seconds(),
		RulesPerS:        float64(len(names)*c.Rules) / wall.Seconds(),
		RTNLAcquisitions: after.Acquisitions - before.Acquisitions,
		RTNLWaitS:        (after.Wait - before.Wait).Seconds(),
		RTNLHoldS:        (after.Hold - before.Hold).Seconds(),
		NsP50S:           pct(0.50), NsP90S: pct(0.90), NsP99S: pct(0.99), NsMaxS: per[len(per)-1].Seconds(),
		Errors: int(errCount.Load()), Verified: verified && errCount.Load() == 0,
		WallUSPerRule:  perRule(wall, rules),
		ClientUserUS:   perRule(cpu1.kidsU-cpu0.kidsU, rules),
		ClientSysUS:    perRule(cpu1.kidsS-cpu0.kidsS, rules),
		ClientSyscalls: sampleC, ServerSyscalls: sampleS,
	}
	if t.srv != nil {
		r.ServerUserUS = perRule(cpu1.selfU-cpu0.selfU, rules)
		r.ServerSysUS = perRule(cpu1.selfS-cpu0.selfS, rules)
	}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstError = s
	}
	return r, nil
}

// requests encodes `rule add from all table i` exactly as `ip` does
// (RTM_NEWRULE, NLM_F_REQUEST|ACK|EXCL|CREATE, fib_rule_hdr with the
// table byte and FR_ACT_TO_TBL, FRA_TABLE only for ids above 255).
func requests(fam, n int) [][]byte {
	af := uint8(rtnl.AF_INET)
	if fam == 6 {
		af = rtnl.AF_INET6
	}
	out := make([][]byte, n)
	for i := 1; i <= n; i++ {
		hdr := []byte{af, 0, 0, 0, 0, 0, 0, rtnl.FR_ACT_TO_TBL, 0, 0, 0, 0}
		var attrs []byte
		if i < 256 {
			hdr[4] = uint8(i)
		} else {
			hdr[4] = rtnl.RT_TABLE_UNSPEC
			attrs = []byte{8, 0, rtnl.FRA_TABLE, 0, 0, 0, 0, 0}
			rtnlNE.PutUint32(attrs[4:], uint32(i))
		}
		out[i-1] = rtnl.AppendMessage(nil, rtnl.RTM_NEWRULE,
			rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_EXCL|rtnl.NLM_F_CREATE, uint32(i), 0, hdr, attrs)
	}
	return out
}

// loadInproc sends the requests one at a time and waits for each ACK, as
// `ip -batch` does.
func loadInproc(t *target, name string, reqs [][]byte) error {
	c, err := t.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, r := range reqs {
		if err := c.Send(r); err != nil {
			return err
		}
		b, err := c.Recv()
		if err != nil {
			return err
		}
		if len(b) < 20 || rtnlNE.Uint16(b[4:]) != rtnl.NLMSG_ERROR {
			return errors.New("unexpected reply")
		}
		if e := int32(rtnlNE.Uint32(b[16:])); e != 0 {
			return fmt.Errorf("rule add: errno %d", -e)
		}
	}
	return nil
}

// loadIP runs `nlemu exec -n NAME -- ip -F -batch FILE`, one process per
// namespace, like the seed's `nsenter ... ip -batch` loop.
func (c *Config) loadIP(t *target, name string, fam int, batch string) error {
	cmd := exec.Command(c.bin(), "exec", "--socket", t.path, "-n", name, "--", "ip", "-"+strconv.Itoa(fam), "-batch", batch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

var peakOnce sync.Mutex

// peakRSS returns this process's peak resident set size (VmHWM).
func peakRSS() uint64 {
	peakOnce.Lock()
	defer peakOnce.Unlock()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// startProfile writes a CPU profile of the load phase to
// $NLEMU_LOAD_CPUPROFILE.<family>.<mode> when that variable is set (for
// people tuning nlemu; the verification is not included).
func startProfile(fam int, mode rtnl.Mode) func() {
	base := os.Getenv("NLEMU_LOAD_CPUPROFILE")
	if base == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d.%s", base, fam, mode))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// warmHeap grows the heap to about n bytes and lets it go again, before
// anything is timed: a fresh process would otherwise pay a page fault for
// every page the first timed family touches, which a long-running server
// (or the kernel's warm slab caches) does not. The pages stay mapped for
// reuse; the heap limit above still bounds the total.
func warmHeap(n int) {
	const block = 1 << 20
	blocks := make([][]byte, 0, n/block)
	for i := 0; i < n/block; i++ {
		b := make([]byte, block)
		for j := 0; j < block; j += 4096 {
			b[j] = 1
		}
		blocks = append(blocks, b)
	}
	runtime.KeepAlive(blocks)
}
