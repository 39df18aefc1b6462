package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/nlemu/nlemu/internal/gctune"
	"github.com/nlemu/nlemu/lookupbench"
)

// runBench implements `nlemu bench lookup`: seed 000's route-lookup
// micro-benchmark (package lookupbench).
func runBench(args []string) int {
	if len(args) == 0 || args[0] != "lookup" {
		fmt.Fprintln(os.Stderr, "usage: nlemu bench lookup [--routes N] [--rules K] [--json]")
		return 2
	}
	fs := flag.NewFlagSet("nlemu bench lookup", flag.ContinueOnError)
	routes := fs.Int("routes", 40000, "random routes per family in main")
	rules := fs.Int("rules", 10, "non-matching custom rules for the rule-walk case")
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
	// The collector settings of `nlemu serve`, so that the figures are
	// those of a server's lookups.
	gctune.Apply()
	cfg := lookupbench.Config{Routes: *routes, Rules: *rules, Seed: 1}
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
