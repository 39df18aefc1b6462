package server_test

import (
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// loadParallel loads `rule add from all table i` (i = 1..rules, automatic
// priority, NLM_F_EXCL as ip sends it) into each of nns namespaces, one
// goroutine per namespace, and returns the RTNL acquisitions it caused.
func loadParallel(t *testing.T, mode rtnl.Mode, fam uint8, nns, rules int) uint64 {
	t.Helper()
	srv := server.New(server.Config{RTNL: mode})
	defer srv.Close()
	for i := 1; i <= nns; i++ {
		if err := srv.Namespaces().Add(fmt.Sprintf("ns-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := srv.RTNLStats().Acquisitions
	var g errgroup.Group
	for i := 1; i <= nns; i++ {
		name := fmt.Sprintf("ns-%d", i)
		g.Go(func() error {
			c, err := srv.Dial(server.Options{Namespace: name})
			if err != nil {
				return err
			}
			defer c.Close()
			for r := 1; r <= rules; r++ {
				h := T.Hdr{Family: fam, Action: rtnl.FR_ACT_TO_TBL}
				if err := c.Send(T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, uint32(r), T.Body(h, T.Table(uint32(r))))); err != nil {
					return err
				}
				b, err := c.Recv()
				if err != nil {
					return err
				}
				if a := T.ParseAck(rtnl.SplitDatagram(b)[0]); a.Errno != 0 {
					return fmt.Errorf("%s rule %d: %v", name, r, a)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// Every namespace holds exactly its rules plus the defaults.
	def := map[uint8]int{rtnl.AF_INET: 3, rtnl.AF_INET6: 2}[fam]
	for i := 1; i <= nns; i++ {
		ns, _ := srv.Namespaces().Get(fmt.Sprintf("ns-%d", i))
		if n := ns.Rules(fam).Len(); n != rules+def {
			t.Fatalf("ns-%d has %d rules, want %d", i, n, rules+def)
		}
		if fam == rtnl.AF_INET && ns.IPv4Tables().Merged() {
			t.Fatalf("ns-%d: local and main still merged after custom rules", i)
		}
	}
	return srv.RTNLStats().Acquisitions - before
}

// TestSeedLockDesignRTNLCounts proves the seed's design: in first-ipv4
// mode only the first IPv4 rule of each namespace takes RTNL (it unmerges
// local/main), IPv6 never does; in always mode every rule does.
func TestSeedLockDesignRTNLCounts(t *testing.T) {
	const nns, rules = 64, 1024
	cases := []struct {
		mode rtnl.Mode
		fam  uint8
		want uint64
	}{
		{rtnl.ModeFirstIPv4, rtnl.AF_INET, nns},
		{rtnl.ModeFirstIPv4, rtnl.AF_INET6, 0},
		{rtnl.ModeAlways, rtnl.AF_INET, nns * rules},
		{rtnl.ModeAlways, rtnl.AF_INET6, nns * rules},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/family%d", c.mode, c.fam), func(t *testing.T) {
			if got := loadParallel(t, c.mode, c.fam, nns, rules); got != c.want {
				t.Errorf("RTNL acquisitions = %d, want %d", got, c.want)
			}
		})
	}
}

// TestFirstIPv4DeleteTakesRTNLOnce: a DELRULE that is a namespace's first
// IPv4 change must unmerge too (kernel 6.18), so it takes RTNL; later ones
// do not.
func TestFirstIPv4DeleteTakesRTNLOnce(t *testing.T) {
	srv := server.New(server.Config{})
	defer srv.Close()
	s := newSess(t, srv, optsExtAck)
	run(t, s, []step{del(delHdr(rtnl.AF_INET, T.Pref(32767)))})
	if n := srv.RTNLStats().Acquisitions; n != 1 {
		t.Errorf("after first delete: %d acquisitions, want 1", n)
	}
	run(t, s, []step{del(delHdr(rtnl.AF_INET, T.Pref(32766))), add(v4(5, T.Pref(5)))})
	if n := srv.RTNLStats().Acquisitions; n != 1 {
		t.Errorf("after more changes: %d acquisitions, want 1", n)
	}
}
