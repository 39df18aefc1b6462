package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/nlemu/nlemu/loadgen"
	"github.com/nlemu/nlemu/rtnl"
)

// runLoad implements `nlemu load`: the seed's parallel rule-load test.
func runLoad(args []string) int {
	if len(args) > 0 && args[0] == loadgen.FloorChildArg {
		// A process of the round-trip floor (loadgen.MeasureFloor).
		if err := loadgen.FloorChild(args[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "nlemu load: %v\n", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("nlemu load", flag.ContinueOnError)
	netns := fs.Int("netns", 4096, "namespaces")
	rules := fs.Int("rules", 1024, "rules per namespace and family")
	family := fs.String("family", "4,6", "families, each loaded and timed separately: 4, 6 or 4,6")
	driver := fs.String("driver", "inproc", "inproc (in-process client) or ip (real `ip -batch` through nlemu exec)")
	mode := fs.String("rtnl", "first-ipv4", "first-ipv4, always, or both (back to back, with their ratio)")
	parallel := fs.Int("parallel", 0, "namespaces loaded at once (default: all for inproc, 32 for ip)")
	srv := fs.String("server", "", "socket of a running server (namespaces are left there); default: an embedded server")
	prefix := fs.String("prefix", "ns-", "namespace name prefix")
	asJSON := fs.Bool("json", false, "print one JSON object")
	floorPairs := fs.Int("floor-pairs", 16, "ip driver: process pairs of the SEQPACKET round-trip floor measured first (0: skip)")
	state := loadStateFlags(fs) // --state and --fsync (state.go)
	loopSched := loopSchedFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	loopSched()
	// loadgen treats 0 as "the default"; on the command line a count the
	// user typed must mean what it says, so refuse the meaningless ones
	// instead of silently running the full 4,096 x 1,024 load.
	// At most 32765 rules: automatic priorities count down from 32765
	// (fib_default_rule_pref()) and reach 0 after that.
	for _, f := range []struct {
		name     string
		v        int
		min, max int
		what     string
	}{
		{"netns", *netns, 1, math.MaxInt, "at least 1"},
		{"rules", *rules, 1, 32765, "from 1 to 32765"},
		{"parallel", *parallel, 0, math.MaxInt, "at least 1 (or 0 for the default)"},
		{"floor-pairs", *floorPairs, 0, 4096, "from 0 to 4096"},
	} {
		if f.v < f.min || f.v > f.max {
			fmt.Fprintf(os.Stderr, "nlemu load: --%s must be %s, not %d\n", f.name, f.what, f.v)
			return 2
		}
	}
	cfg := loadgen.Config{Netns: *netns, Rules: *rules, Driver: *driver, Parallel: *parallel, Server: *srv, Prefix: *prefix}
	if err := state(&cfg); err != nil {
		fmt.Fprintf(os.Stderr, "nlemu load: %v\n", err)
		return 2
	}
	for _, f := range strings.Split(*family, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || (n != 4 && n != 6) {
			fmt.Fprintf(os.Stderr, "nlemu load: --family takes 4, 6 or 4,6, not %q\n", *family)
			return 2
		}
		cfg.Families = append(cfg.Families, n)
	}
	switch *mode {
	case "both":
		cfg.Modes = []rtnl.Mode{rtnl.ModeAlways, rtnl.ModeFirstIPv4}
	default:
		m, ok := rtnl.ParseMode(*mode)
		if !ok {
			fmt.Fprintf(os.Stderr, "nlemu load: --rtnl takes first-ipv4, always or both, not %q\n", *mode)
			return 2
		}
		cfg.Modes = []rtnl.Mode{m}
	}
	if *driver == "ip" {
		if exe, err := os.Executable(); err == nil {
			cfg.NlemuBin = exe
			cfg.FloorPairs = *floorPairs
		}
	}
	var bar *progressbar.ProgressBar
	if !*asJSON && term.IsTerminal(int(os.Stderr.Fd())) {
		// One progress line for every phase: the screen is never blank
		// for long (creating or deleting 4,096 namespaces takes seconds).
		var desc string
		newBar := func(d string, total int) {
			if bar != nil {
				bar.Finish()
			}
			desc = d
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(d),
				progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100e6))
		}
		cfg.Start = func(fam int, m rtnl.Mode, total int) {
			newBar(fmt.Sprintf("loading IPv%d rtnl=%s", fam, m), total)
		}
		cfg.Progress = func(done, total int) { bar.Set(done) }
		cfg.Phase = func(phase string, done, total int) {
			if bar == nil || desc != phase {
				newBar(phase, total)
			}
			bar.Set(done)
		}
	}
	rep, err := loadgen.Execute(cfg)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu load: %v\n", err)
		return 1
	}
	ok := true
	for _, r := range rep.Runs {
		ok = ok && r.Verified && r.Errors == 0
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Println(string(b))
	} else {
		printReport(rep)
	}
	if !ok {
		return 1
	}
	return 0
}

func printReport(rep *loadgen.Report) {
	fmt.Printf("%d namespaces x %d rules, driver %s\n", rep.Netns, rep.Rules, rep.Driver)
	if rep.FloorUS > 0 {
		fmt.Printf("SEQPACKET round-trip floor %.2f us (measured first)\n", rep.FloorUS)
	}
	fmt.Println()
	fmt.Printf("%-6s %-11s %8s %12s %10s %10s %10s %9s %9s %9s %9s %6s %8s\n",
		"family", "rtnl", "wall_s", "rules/s", "rtnl_acq", "rtnl_wait", "rtnl_hold", "ns_p50", "ns_p90", "ns_p99", "ns_max", "errors", "verified")
	for _, r := range rep.Runs {
		fmt.Printf("IPv%-3d %-11s %8.3f %12.0f %10d %9.3fs %9.3fs %8.3fs %8.3fs %8.3fs %8.3fs %6d %8v\n",
			r.Family, r.RTNL, r.WallS, r.RulesPerS, r.RTNLAcquisitions, r.RTNLWaitS, r.RTNLHoldS,
			r.NsP50S, r.NsP90S, r.NsP99S, r.NsMaxS, r.Errors, r.Verified)
		if r.FirstError != "" {
			fmt.Printf("       first error: %s\n", r.FirstError)
		}
	}
	// Costs per rule.
	fmt.Printf("\nper rule: %-6s %-11s %9s %7s | %-26s | %-26s\n", "family", "rtnl", "wall_us", "x_floor", "clients usr/sys_us syscalls", "server usr/sys_us syscalls")
	dash := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, r := range rep.Runs {
		fmt.Printf("          IPv%-3d %-11s %9.2f %7s | %8s %8s %8s | %8s %8s %8s\n", r.Family, r.RTNL, r.WallUSPerRule, dash(r.FloorRatio),
			dash(r.ClientUserUS), dash(r.ClientSysUS), dash(r.ClientSyscalls), dash(r.ServerUserUS), dash(r.ServerSysUS), dash(r.ServerSyscalls))
	}
	if rep.Driver == "ip" {
		fmt.Println("(clients: the nlemu exec and ip processes; server: this process; system calls from one sample namespace loaded alone afterwards, perf stat)")
	}
	// Before/after ratio per family when both modes ran.
	for _, f := range []int{4, 6} {
		var always, first *loadgen.Run
		for i := range rep.Runs {
			r := &rep.Runs[i]
			if r.Family != f {
				continue
			}
			if r.RTNL == "always" {
				always = r
			} else {
				first = r
			}
		}
		if always != nil && first != nil {
			fmt.Printf("\nIPv%d: rtnl=always %.3fs -> rtnl=first-ipv4 %.3fs: %.2fx faster", f, always.WallS, first.WallS, always.WallS/first.WallS)
		}
	}
	if rep.ServerInProcess {
		fmt.Printf("\npeak RSS %.1f MiB (server and clients in this process)\n", float64(rep.PeakRSSBytes)/(1<<20))
	} else {
		fmt.Printf("\nserver peak RSS %.1f MiB (since it started; from stats), client peak RSS %.1f MiB\n",
			float64(rep.PeakRSSBytes)/(1<<20), float64(rep.ClientPeakRSSBytes)/(1<<20))
	}
}
