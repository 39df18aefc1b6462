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
		fmt.Fprintf(w, "  (e) fast path: 1 core %.0f lookups/s, %d cores %.0f lookups/s\n", f.OneCore, f.Cores, f.AllCores)
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
