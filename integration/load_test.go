package integration

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/nlemu/nlemu/loadgen"
	"github.com/nlemu/nlemu/rtnl"
)

// TestLoadSmallScale runs the seed's load test at 64 namespaces x 128 rules
// with both drivers and both RTNL modes, and checks that every namespace
// verified and that RTNL was taken exactly as the seed's design says: once
// per namespace for IPv4 and never for IPv6 in first-ipv4 mode, for every
// rule in always mode. No timing is asserted.
func TestLoadSmallScale(t *testing.T) {
	const nns, rules = 64, 128
	for _, driver := range []string{"inproc", "ip"} {
		t.Run(driver, func(t *testing.T) {
			cfg := loadgen.Config{
				Netns: nns, Rules: rules, Families: []int{4, 6}, Driver: driver,
				Modes: []rtnl.Mode{rtnl.ModeAlways, rtnl.ModeFirstIPv4}, Prefix: "it-",
			}
			if driver == "ip" {
				if ipcFindIP() == "" {
					t.Skip("iproute2's ip is not installed")
				}
				if _, err := exec.LookPath("cc"); err != nil {
					if _, err := exec.LookPath("gcc"); err != nil {
						t.Skip("no C compiler for the LD_PRELOAD shim")
					}
				}
				bin, err := ipcNlemuBinary()
				if err != nil {
					t.Fatal(err)
				}
				cfg.NlemuBin = bin
				cfg.Parallel = 8
			}
			rep, err := loadgen.Execute(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 4 {
				t.Fatalf("%d runs, want 4 (2 modes x 2 families)", len(rep.Runs))
			}
			for _, r := range rep.Runs {
				name := fmt.Sprintf("IPv%d rtnl=%s", r.Family, r.RTNL)
				if !r.Verified || r.Errors != 0 {
					t.Errorf("%s: verified=%v errors=%d %s", name, r.Verified, r.Errors, r.FirstError)
				}
				want := uint64(nns * rules)
				if r.RTNL == "first-ipv4" {
					want = map[int]uint64{4: nns, 6: 0}[r.Family]
				}
				if r.RTNLAcquisitions != want {
					t.Errorf("%s: %d RTNL acquisitions, want %d", name, r.RTNLAcquisitions, want)
				}
			}
			if rep.PeakRSSBytes == 0 {
				t.Error("peak RSS not reported")
			}
		})
	}
}
