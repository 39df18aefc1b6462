package lookupbench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// HistWidth is the width of a histogram's bar field.
const HistWidth = 50

// HistRows is the number of histogram rows.
const HistRows = 16

// Histogram writes sorted per-lookup times in seed 000's layout: the
// statistics line, then HistRows rows from the minimum to the 95th
// percentile (larger values count in the last row), each `value │ bars │
// count`, where ▒ is the row's share of the samples and ▒ plus ░ the
// cumulative share; ┊ in the header marks the median's column.
func Histogram(w io.Writer, st *Stats) {
	s := st.Samples
	fmt.Fprintf(w, "    min=%.1f max=%.1f count=%d average=%.1f 95th=%.1f 90th=%.1f 50th=%.1f (ns per lookup)\n",
		st.Min, st.Max, len(s), st.Mean, st.P95, st.P90, st.P50)
	if len(s) == 0 {
		return
	}
	lo, hi := st.Min, st.P95
	step := (hi - lo) / (HistRows - 1)
	rows := HistRows
	if step <= 0 {
		rows, step = 1, 1
	}
	counts := make([]int, rows)
	for _, v := range s {
		i := int((v - lo) / step)
		counts[min(max(i, 0), rows-1)]++
	}
	digits := len(fmt.Sprintf("%.0f", hi)) + 2
	prec := 0
	if step < 10 {
		prec = 1
	}
	header := []rune(strings.Repeat(" ", HistWidth))
	header[HistWidth/2] = '┊'
	fmt.Fprintf(w, "    %*s │%s │ count\n", digits+prec, "value", string(header))
	cum := 0
	n := float64(len(s))
	for i, c := range counts {
		cum += c
		total := int(math.Round(float64(cum) / n * HistWidth))
		own := min(int(math.Round(float64(c)/n*HistWidth)), total)
		bar := strings.Repeat("▒", own) + strings.Repeat("░", total-own) + strings.Repeat(" ", HistWidth-total)
		fmt.Fprintf(w, "    %*.*f │%s │ %d\n", digits+prec, prec, lo+float64(i)*step, bar, c)
	}
}

// Report writes every family's cases with their histograms and ratios.
func Report(w io.Writer, fams []*Family) {
	for _, f := range fams {
		fmt.Fprintf(w, "IPv%d: %d random routes in main, %d custom rules for the rule walk\n", f.Family, f.Routes, f.Rules)
		fmt.Fprintf(w, "  samples of %d lookups between two clock reads (one read: %.0f ns, %.1f ns per lookup of it)\n",
			f.PerSample, f.ClockRead, f.ClockRead/float64(max(f.PerSample, 1)))
		for _, c := range f.cases() {
			fmt.Fprintf(w, "  %s\n", c.title)
			Histogram(w, c.s)
		}
		fmt.Fprintf(w, "  reference work (no memory, all integer units; a slow machine slows it too): p50 %.3f ns p90 %.3f ns per step\n",
			f.Reference.P50, f.Reference.P90)
		fmt.Fprintf(w, "  the sampling thread meanwhile: %d migrations to another CPU, %d preemptions, %d page faults\n", f.Sched.Migrations, f.Sched.Involuntary, f.Sched.Faults)
		ScalingReport(w, f.Cores, &f.Scaling)
		fmt.Fprintf(w, "  the reference work in the same rounds: best 1 core %.0f steps/s, %d cores %.0f steps/s: parallel_scaling_reference %.3f (clean phases %d and %d of %d; median %.3f): what the hardware gave a code that shares nothing, in the same minutes\n",
			f.RefScaling.BestOne, f.Cores, f.RefScaling.BestAll, f.RefScaling.Best, f.RefScaling.CleanOne, f.RefScaling.CleanAll, len(f.RefScaling.Rounds), f.RefScaling.Median)
		fmt.Fprintf(w, "  rule walk / fast path (p50) %.2f, hint_same_dst_speedup %.2f, hint_distinct_ratio %.2f, parallel_scaling %.2f\n\n",
			ratio(f.RuleWalk.P50, f.FastPath.P50), f.HintSameDstSpeedup(), f.HintDistinctRatio(), f.ParallelScaling())
	}
}

// JSON returns the object `nlemu bench lookup --json` prints: one member
// per family ("4", "6").
func JSON(fams []*Family) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, f := range fams {
		out[fmt.Sprint(f.Family)] = f.JSON()
	}
	return out
}

// ScalingReport writes the scaling case: every round with its rates, the
// CPU share of each worker and whether it counts, then the statistic.
func ScalingReport(w io.Writer, cores int, s *Scaling) {
	pin := "pinned to CPUs"
	if !s.Pinned {
		pin = "NOT pinned to distinct CPUs (CPU -1: affinity refused)"
	}
	var cpus []string
	if len(s.Rounds) > 0 {
		for _, wk := range s.Rounds[0].All.Workers {
			cpus = append(cpus, fmt.Sprint(wk.CPU))
		}
	}
	fmt.Fprintf(w, "  (e) fast path, 1 core against %d, workers %s %s, %d rounds after a warm-up\n",
		cores, pin, strings.Join(cpus, ","), len(s.Rounds))
	fmt.Fprintf(w, "    round order    1 core M/s (cpu: share)   %d cores M/s (shares)      ratio  steal ms\n", cores)
	for i := range s.Rounds {
		r := &s.Rounds[i]
		order := "all,1"
		if r.OneFirst {
			order = "1,all"
		}
		one := fmt.Sprintf("%.2f (cpu%d: %.3f)", r.One.Rate()/1e6, r.One.Workers[0].CPU, r.One.Workers[0].Share())
		var sh []string
		for _, wk := range r.All.Workers {
			sh = append(sh, fmt.Sprintf("%.3f", wk.Share()))
		}
		all := fmt.Sprintf("%.2f (%s)", r.All.Rate()/1e6, strings.Join(sh, " "))
		mark := ""
		if !r.One.Clean(CleanShare) {
			mark += "  1 core not clean"
		}
		if !r.All.Clean(CleanShare) {
			mark += fmt.Sprintf("  %d cores not clean", cores)
		}
		fmt.Fprintf(w, "    %5d %-6s %-26s %-26s %6.3f %6.0f%s\n", i+1, order, one, all, r.Ratio(), r.One.StealMS+r.All.StealMS, mark)
	}
	med := fmt.Sprintf("over the %d rounds clean in both phases", s.CleanRounds)
	if s.CleanRounds == 0 {
		med = "over every round: NONE was clean in both phases"
	}
	fmt.Fprintf(w, "    best phases: 1 core %.0f lookups/s, %d cores %.0f lookups/s: parallel_scaling %.3f (clean phases: %d and %d of %d); median of round ratios %.3f (%s)\n",
		s.BestOne, cores, s.BestAll, s.Best, s.CleanOne, s.CleanAll, len(s.Rounds), s.Median, med)
	switch {
	case s.Best > float64(cores)*1.02:
		fmt.Fprintf(w, "    above %d: every one-core phase was slowed by something the guest's clocks do not see (the host): not the code's scaling\n", cores)
	case s.CleanOne == 0 || s.CleanAll == 0:
		fmt.Fprintf(w, "    no clean phase of a kind (clean: every worker >= %.2f of its wall time on its CPU): the machine was busy, a lower bound\n", CleanShare)
	}
}
