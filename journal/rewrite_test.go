package journal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestCompactionBoundsRuleChurn: rules added and deleted again and again
// in live namespaces (and the default one) while the server runs: every
// compaction rewrites those rule-only histories as the requests that
// rebuild the rules, so the snapshot stays as small as the live rules
// whatever the churn, and a restart replays a bounded number of records
// and restores exactly the live state (dump bytes), the namespace with a
// veth (whose history is kept) included.
func TestCompactionBoundsRuleChurn(t *testing.T) {
	for _, p := range []Policy{Interval, Group} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			opt := Options{Fsync: p, RotateBytes: 4096}
			e := openEnv(t, dir, opt)
			m := e.srv.Namespaces()
			for _, n := range []string{"x", "y"} {
				if err := m.Add(n); err != nil {
					t.Fatal(err)
				}
			}
			e.mustDo("y", vethAdd("va", "vb"))
			for _, ns := range []string{"default", "x", "y"} {
				e.mustDo(ns, ruleAdd(rtnl.AF_INET, 0, 100))
				e.mustDo(ns, ruleAdd(rtnl.AF_INET6, 300, 101))
			}
			e.mustDo("x", ruleDel(rtnl.AF_INET, 32767)) // a starting rule gone
			var maxSnap int64
			for round := range 4 {
				before := e.j.Stats().Compactions
				for i := range 60 {
					for _, ns := range []string{"default", "x"} {
						e.mustDo(ns, ruleAdd(rtnl.AF_INET, 1000, uint32(10+i)))
						e.mustDo(ns, ruleAdd(rtnl.AF_INET, 0, uint32(20+i))) // automatic priority
						e.mustDo(ns, ruleDel(rtnl.AF_INET, 1000))
						e.mustDo(ns, ruleDelTable(rtnl.AF_INET, uint32(20+i)))
					}
				}
				// One more rule in x each round: the live state changes.
				e.mustDo("x", ruleAdd(rtnl.AF_INET6, uint32(2000+round), 7))
				waitFor(func() bool { return e.j.Stats().Compactions > before })
				fi, err := os.Stat(filepath.Join(dir, snapName))
				if err != nil {
					t.Fatal(err)
				}
				maxSnap = max(maxSnap, fi.Size())
			}
			st := e.j.Stats()
			if st.Rewrites == 0 {
				t.Fatalf("no history rewritten: %+v", st)
			}
			// The live rules: a few per namespace, each record under 100
			// bytes; the churn wrote about 100 KiB.
			if maxSnap > 16<<10 || uint64(maxSnap) > st.Bytes/10 {
				t.Fatalf("snapshot grew to %d bytes for %d bytes of records", maxSnap, st.Bytes)
			}
			want := snapshotOf(e, "default", "x", "y")
			e.close()
			e2 := openEnv(t, dir, opt)
			if diff := cmp.Diff(want, snapshotOf(e2, "default", "x", "y")); diff != "" {
				t.Fatalf("state after restart (-before +after):\n%s", diff)
			}
			if e2.rs.Failed != 0 || !e2.rs.Snapshot {
				t.Fatalf("restore: %+v %s", *e2.rs, e2.logs())
			}
			if uint64(e2.rs.Records) > st.Records/4 {
				t.Fatalf("restart replayed %d of %d records", e2.rs.Records, st.Records)
			}
			// The rebuilt state goes on being kept.
			e2.mustDo("x", ruleAdd(rtnl.AF_INET, 0, 555))
			want = snapshotOf(e2, "default", "x", "y")
			e2.close()
			e3 := openEnv(t, dir, opt)
			if diff := cmp.Diff(want, snapshotOf(e3, "default", "x", "y")); diff != "" {
				t.Fatalf("state after the second restart (-before +after):\n%s", diff)
			}
		})
	}
}

// TestRewriteRefusesWhatItCannotRebuild: a history with anything but
// rules (here a veth) is kept as it is.
func TestRewriteRefusesWhatItCannotRebuild(t *testing.T) {
	var body []record
	for i := range 2 * minRewrite {
		body = append(body, record{Kind: kindRequest, NSID: 0, Payload: ruleAdd(rtnl.AF_INET, uint32(100+i), 5)})
	}
	body = append(body, record{Kind: kindRequest, NSID: 0, Payload: vethAdd("a", "b")})
	got, n := rewriteRuleHistories(body)
	if n != 0 || len(got) != len(body) {
		t.Fatalf("rewrote %d histories, %d records of %d", n, len(got), len(body))
	}
	// Rules only, added and deleted again: rebuilt as the deletion of
	// the default namespace's starting rules and their addition, one
	// record each.
	var churn []record
	for range minRewrite {
		churn = append(churn, record{Kind: kindRequest, Payload: ruleAdd(rtnl.AF_INET, 100, 5)},
			record{Kind: kindRequest, Payload: ruleDel(rtnl.AF_INET, 100)})
	}
	got, n = rewriteRuleHistories(churn)
	fresh, _ := shadow(0, "")
	start, _ := dumpRules(fresh)
	if k := len(rtnl.SplitDatagram(start)); n != 1 || len(got) != 2*k {
		t.Fatalf("rule churn: %d histories rewritten, into %d records, want 1 into %d", n, len(got), 2*k)
	}
	// Longer than the history: kept.
	short := body[:minRewrite]
	if got, n = rewriteRuleHistories(short); n != 0 || len(got) != len(short) {
		t.Fatalf("%d adds: rewritten into %d records", len(short), len(got))
	}
}

// ruleDelTable is `ip rule del table T`.
func ruleDelTable(fam uint8, table uint32) []byte {
	hdr := []byte{fam, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	return rtnl.AppendMessage(nil, rtnl.RTM_DELRULE, reqFlags, 1, 0, hdr, attr(rtnl.FRA_TABLE, u32(table)))
}
