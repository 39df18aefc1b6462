package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nlemu/nlemu/server"
)

// TestServeLimitFlags: `nlemu serve`'s limit flags reach server.Limits,
// their defaults are the server's, and bad values are refused with the
// flag's name.
func TestServeLimitFlags(t *testing.T) {
	parse := func(args ...string) (server.Limits, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		get := limitFlags(fs)
		if err := fs.Parse(args); err != nil {
			return server.Limits{}, err
		}
		return get()
	}
	got, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	want := server.Limits{MaxNetns: server.DefaultMaxNetns, MaxRules: server.DefaultMaxRules, MaxRoutes: server.DefaultMaxRoutes,
		MaxLinks: server.DefaultMaxLinks, MaxMsg: server.DefaultMaxMsg}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(server.Limits{})); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	got, err = parse("--max-netns", "10", "--max-rules", "-1", "--max-routes", "7", "--max-links", "3", "--max-msg", "4096",
		"--rmem-default", "8192", "--rmem-max", "16384", "--max-conns", "5", "--max-conns-per-uid", "2")
	if err != nil {
		t.Fatal(err)
	}
	want = server.Limits{MaxNetns: 10, MaxRules: -1, MaxRoutes: 7, MaxLinks: 3, MaxMsg: 4096, RmemDefault: 8192, RmemMax: 16384, MaxConns: 5, MaxConnsPerUID: 2}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(server.Limits{})); d != "" {
		t.Errorf("set (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-routes", "-2"}, "--max-routes"},
		{[]string{"--max-conns-per-uid", "-5"}, "--max-conns-per-uid"},
		{[]string{"--max-msg", "2000000"}, "--max-msg"},
		{[]string{"--max-msg", "8"}, "--max-msg"},
		{[]string{"--rmem-max", "-1"}, "--rmem-max"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
