package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/nlemu/nlemu/internal/gctune"
	"github.com/nlemu/nlemu/lookupbench"
)

// runBench implements `nlemu bench lookup`: seed 000's route-lookup
// micro-benchmark (package lookupbench).
func runBench(args []string) int {
	if len(args) == 0 || args[0] != "lookup" {
		fmt.Fprintln(os.Stderr, "usage: nlemu bench lookup [--routes N] [--rules K] [--per-sample L] [--rounds R] [--phase D] [--json]")
		return 2
	}
	fs := flag.NewFlagSet("nlemu bench lookup", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: nlemu bench lookup [--routes N] [--rules K] [--per-sample L] [--rounds R] [--phase D] [--json]

Seed 000's route-lookup micro-benchmark: per family, N random routes in
main and K non-matching custom rules, the fast path, the rule walk,
LookupBatch with and without hints, one core against all.

How a figure is taken: a sample is L consecutive lookups of distinct
flows (1,024 flows into the routes, in turn) between two reads of the
thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), divided by L; 2,000 samples
per case, the cases interleaved in blocks of 50 samples in a random order.
The clock read costs about as much as many lookups (it is measured in the
same run and printed: clock_read_ns); a sample carries clock_read_ns / L
of it, nothing is subtracted. The batch cases time whole 64-flow bursts.

One core against all: workers locked to OS threads and pinned each to its
own CPU, a warm-up, then R rounds of a one-core and an all-cores phase of
about D each (the order alternating), every worker's thread CPU time
over its wall time shown per phase (below 0.95: it did not have its CPU,
the phase is not clean). parallel_scaling is the best all-cores phase over
the best one-core phase (interference only slows a phase down); the
median of the rounds' ratios, over the rounds clean in both phases, is
printed beside it. A reference loop (no memory, a core's integer units)
runs in the same rounds: parallel_scaling_reference is what the hardware
gave a code that shares nothing, the bound of parallel_scaling. It is also
sampled like a case (reference_ns_p50): when the lookups are slow and it
is slow with them, the machine was slow, not the lookup.

`)
		fs.PrintDefaults()
	}
	routes := fs.Int("routes", 40000, "random routes per family in main")
	rules := fs.Int("rules", 10, "non-matching custom rules for the rule-walk case")
	perSample := fs.Int("per-sample", 256, "lookups timed together per sample (1..65536)")
	rounds := fs.Int("rounds", 61, "rounds of the one-core against all-cores case (1..1000)")
	phase := fs.Duration("phase", 5*time.Millisecond, "length of one phase of a round (1ms..1s)")
	asJSON := fs.Bool("json", false, "print one JSON object keyed by family")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "nlemu bench lookup: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *routes < lookupbench.BatchLen {
		fmt.Fprintf(os.Stderr, "nlemu bench lookup: --routes must be at least %d\n", lookupbench.BatchLen)
		return 2
	}
	if *rules < 0 || *rules > 30000 {
		fmt.Fprintln(os.Stderr, "nlemu bench lookup: --rules must be in 0..30000")
		return 2
	}
	if *perSample < 1 || *perSample > 65536 {
		fmt.Fprintln(os.Stderr, "nlemu bench lookup: --per-sample must be in 1..65536")
		return 2
	}
	if *rounds < 1 || *rounds > 1000 {
		fmt.Fprintln(os.Stderr, "nlemu bench lookup: --rounds must be in 1..1000")
		return 2
	}
	if *phase < time.Millisecond || *phase > time.Second {
		fmt.Fprintln(os.Stderr, "nlemu bench lookup: --phase must be in 1ms..1s")
		return 2
	}
	// The collector settings of `nlemu serve`, so that the figures are
	// those of a server's lookups.
	gctune.Apply()
	cfg := lookupbench.Config{Routes: *routes, Rules: *rules, PerSample: *perSample, ParallelRounds: *rounds, ParallelPhase: *phase, Seed: 1}
	var bar *progressbar.ProgressBar
	if term.IsTerminal(int(os.Stderr.Fd())) {
		cfg.Progress = func(fam, done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription(fmt.Sprintf("IPv%d routes", fam)),
					progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100e6))
			}
			bar.Set(done)
			if done == total {
				bar.Finish()
				bar = nil
			}
		}
	}
	fams, err := lookupbench.Run(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu bench lookup: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(lookupbench.JSON(fams))
		fmt.Println(string(b))
		return 0
	}
	lookupbench.Report(os.Stdout, fams)
	return 0
}
