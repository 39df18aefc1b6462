package loadgen

import (
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// BenchmarkSeedLoad runs the seed's load at 1,024 namespaces x 1,024
// IPv4 rules with the in-process driver and reports rules per second.
func BenchmarkSeedLoad(b *testing.B) {
	for i := 0; i < b.N; i++ {
		rep, err := Execute(Config{Netns: 4096, Rules: 1024, Families: []int{4}, Modes: []rtnl.Mode{rtnl.ModeFirstIPv4}})
		if err != nil {
			b.Fatal(err)
		}
		r := rep.Runs[0]
		if !r.Verified {
			b.Fatal(r.FirstError)
		}
		b.ReportMetric(r.RulesPerS, "rules/s")
		b.ReportMetric(r.WallS, "wall_s")
	}
}
