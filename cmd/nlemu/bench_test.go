package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchLookupRejectsBadArguments: a missing or unknown benchmark, an
// extra argument, too few routes for one 64-flow burst and a negative rule
// count are refused with one line and exit 2.
func TestBenchLookupRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"route"},
		{"lookup", "extra"},
		{"lookup", "--routes", "10"},
		{"lookup", "--rules", "-1"},
		{"lookup", "--samples", "3"},
		{"lookup", "--per-sample", "0"},
		{"lookup", "--rounds", "0"},
		{"lookup", "--phase", "10us"},
	} {
		var code int
		_, stderr := capture(t, func() { code = runBench(args) })
		if code != 2 {
			t.Errorf("nlemu bench %v: exit %d, want 2", args, code)
		}
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); stderr == "" || (n != 0 && !strings.Contains(stderr, "Usage")) {
			t.Errorf("nlemu bench %v: stderr %q", args, stderr)
		}
	}
}

// TestBenchLookupJSON runs `nlemu bench lookup --routes 200 --rules 2
// --rounds 3 --json` and checks that stdout is one JSON object keyed by family with
// the named keys as plain numbers.
func TestBenchLookupJSON(t *testing.T) {
	var code int
	stdout, stderr := capture(t, func() {
		code = runBench([]string{"lookup", "--routes", "200", "--rules", "2", "--rounds", "3", "--json"})
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]map[string]float64
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not one object of numbers: %v\n%s", err, stdout)
	}
	for _, fam := range []string{"4", "6"} {
		for _, k := range []string{"fast_path_ns_p50", "rule_walk_ns_p50", "hint_same_dst_speedup", "hint_distinct_ratio", "parallel_scaling",
			"parallel_rounds", "parallel_scaling_reference"} {
			if v, ok := got[fam][k]; !ok || v <= 0 {
				t.Errorf("%s.%s = %v, %v", fam, k, v, ok)
			}
		}
	}
	if got["4"]["parallel_rounds"] != 3 {
		t.Errorf("--rounds 3: parallel_rounds %v", got["4"]["parallel_rounds"])
	}
	if len(got) != 2 {
		t.Errorf("%d families", len(got))
	}
}
