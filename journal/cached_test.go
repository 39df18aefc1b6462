package journal

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestSocketCachedEntryRestores: changes sent over one long-lived socket
// per namespace (the server keeps each namespace's journal entry in the
// socket: DoCached) are recorded as those sent over a socket each, and a
// socket whose namespace was deleted after its entry was cached records
// nothing more (as TestDeletedNamespaceSocketNotJournaled, where the
// entry was never cached).
func TestSocketCachedEntryRestores(t *testing.T) {
	for _, pol := range []Policy{Interval, Group} {
		t.Run(pol.String(), func(t *testing.T) {
			dir := t.TempDir()
			e := openEnv(t, dir, Options{Fsync: pol})
			m := e.srv.Namespaces()
			for _, n := range []string{"a", "b"} {
				if err := m.Add(n); err != nil {
					t.Fatal(err)
				}
			}
			ca, err := e.srv.Dial(serverOptions("a"))
			if err != nil {
				t.Fatal(err)
			}
			defer ca.Close()
			cb, err := e.srv.Dial(serverOptions("b"))
			if err != nil {
				t.Fatal(err)
			}
			defer cb.Close()
			for i := range 20 {
				for _, c := range []struct {
					af  uint8
					pri uint32
				}{{rtnl.AF_INET, 0}, {rtnl.AF_INET6, uint32(1000 + i)}} {
					if errno := sendAck(t, ca, ruleAdd(c.af, c.pri, uint32(100+i))); errno != 0 {
						t.Fatalf("a: errno %d", errno)
					}
					if errno := sendAck(t, cb, ruleAdd(c.af, c.pri, uint32(200+i))); errno != 0 {
						t.Fatalf("b: errno %d", errno)
					}
				}
			}
			if err := m.Del("b"); err != nil {
				t.Fatal(err)
			}
			if errno := sendAck(t, cb, ruleAdd(rtnl.AF_INET, 0, 77)); errno != 0 {
				t.Fatalf("change through b's orphaned socket: errno %d", errno)
			}
			if err := m.Add("b"); err != nil {
				t.Fatal(err)
			}
			want := snapshotOf(e, "a", "b")
			e.close()
			e2 := openEnv(t, dir, Options{Fsync: pol})
			defer e2.close()
			if d := cmp.Diff(want, snapshotOf(e2, "a", "b")); d != "" {
				t.Fatalf("restored state differs:\n%s", d)
			}
		})
	}
}
