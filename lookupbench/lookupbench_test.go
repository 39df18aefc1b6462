package lookupbench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunJSONShape runs every case on a tiny table and checks the --json
// object: one member per family with exactly the documented keys, every
// time positive and the percentiles ordered. No time is compared with a
// bound.
func TestRunJSONShape(t *testing.T) {
	fams, err := Run(Config{Routes: 300, Rules: 3, Samples: 20, PerSample: 64, Cores: 2, Seed: 1,
		ParallelRounds: 3, ParallelPhase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(JSON(fams))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]float64
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range []string{"fast_path", "rule_walk", "batch_same_dst_hints", "batch_same_dst_no_hints", "batch_distinct_hints", "batch_distinct_no_hints"} {
		for _, p := range []string{"min", "p50", "p90", "p95", "max"} {
			want = append(want, c+"_ns_"+p)
		}
	}
	want = append(want, "routes", "rules", "cores", "hint_same_dst_speedup", "hint_distinct_ratio", "parallel_scaling",
		"rule_walk_ratio", "one_core_lookups_per_s", "all_cores_lookups_per_s", "clock_read_ns", "lookups_per_sample",
		"parallel_rounds", "parallel_rounds_clean", "parallel_one_core_clean", "parallel_all_cores_clean", "parallel_scaling_median",
		"parallel_cpu_share_min", "parallel_pinned", "parallel_steal_ms",
		"parallel_scaling_reference", "parallel_scaling_reference_median", "reference_ns_p50", "reference_ns_p90",
		"sample_migrations", "sample_involuntary_switches", "sample_page_faults")
	slices.Sort(want)
	if diff := cmp.Diff([]string{"4", "6"}, keys(got)); diff != "" {
		t.Fatalf("families (-want +got):\n%s", diff)
	}
	for fam, m := range got {
		if diff := cmp.Diff(want, keys(m)); diff != "" {
			t.Errorf("IPv%s keys (-want +got):\n%s", fam, diff)
		}
		if m["routes"] != 300 || m["rules"] != 3 || m["cores"] != 2 {
			t.Errorf("IPv%s: routes %v rules %v cores %v", fam, m["routes"], m["rules"], m["cores"])
		}
		for k, v := range m {
			// A busy or restricted machine may have no clean round, no
			// pinning and no steal: those may be 0, never negative.
			if mayBeZero[k] && v == 0 {
				continue
			}
			if v <= 0 {
				t.Errorf("IPv%s %s = %v, want > 0", fam, k, v)
			}
		}
		if m["fast_path_ns_min"] > m["fast_path_ns_p50"] || m["fast_path_ns_p50"] > m["fast_path_ns_p95"] || m["fast_path_ns_p95"] > m["fast_path_ns_max"] {
			t.Errorf("IPv%s percentiles out of order: %v", fam, m)
		}
	}
}

// mayBeZero are the --json keys that are 0 on some machines or runs.
var mayBeZero = map[string]bool{"parallel_rounds_clean": true, "parallel_one_core_clean": true, "parallel_all_cores_clean": true, "parallel_pinned": true, "parallel_steal_ms": true,
	"sample_migrations": true, "sample_involuntary_switches": true, "sample_page_faults": true}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestHistogramLayout renders fixed samples: the statistics line, the
// header with the median mark, 16 rows from the minimum to the 95th
// percentile whose counts add up to the samples, ▒ for a row's share and
// ░ up to the cumulative share.
func TestHistogramLayout(t *testing.T) {
	var s []float64
	for i := 0; i < 100; i++ {
		s = append(s, float64(10+i%20))
	}
	st := statsOf(s)
	var b strings.Builder
	Histogram(&b, &st)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 2+HistRows {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	if want := "    min=10.0 max=29.0 count=100 average=19.5 95th=29.0 90th=28.0 50th=20.0 (ns per lookup)"; lines[0] != want {
		t.Errorf("stats line\n got %q\nwant %q", lines[0], want)
	}
	if !strings.Contains(lines[1], "value │") || !strings.HasSuffix(lines[1], "│ count") || strings.Count(lines[1], "┊") != 1 {
		t.Errorf("header %q", lines[1])
	}
	total := 0
	for i, l := range lines[2:] {
		parts := strings.Split(l, "│")
		if len(parts) != 3 {
			t.Fatalf("row %d %q", i, l)
		}
		bar := []rune(strings.TrimSuffix(parts[1], " "))
		if len(bar) != HistWidth {
			t.Errorf("row %d bar width %d", i, len(bar))
		}
		var c int
		if _, err := fmtSscan(parts[2], &c); err != nil {
			t.Fatalf("row %d count %q", i, parts[2])
		}
		total += c
	}
	if total != 100 {
		t.Errorf("counts add up to %d", total)
	}
	// The first row holds 10.0–11.2: 10 samples, 10 % of 50 columns.
	if want := "     10.0 │" + strings.Repeat("▒", 5) + strings.Repeat(" ", 45) + " │ 10"; lines[2] != want {
		t.Errorf("first row\n got %q\nwant %q", lines[2], want)
	}
	// The last row ends at 100 %: the bar field is full.
	last := strings.TrimSuffix(strings.Split(lines[len(lines)-1], "│")[1], " ")
	if strings.ContainsRune(last, ' ') {
		t.Errorf("last row not full: %q", last)
	}
}

func fmtSscan(s string, c *int) (int, error) { return fmt.Sscan(s, c) }
