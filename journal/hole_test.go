package journal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nlemu/nlemu/rtnl"
)

// holeFixture journals rule 10 in namespace a, 20 in b, then 11 in a (the
// record a test turns into a hole) and 21 in b, and returns the directory,
// where the third request's record lies in journal 1, and the states of a
// without rule 11 and of b with both rules.
func holeFixture(t *testing.T) (dir string, off, end int, wantA, wantB string) {
	t.Helper()
	dir = t.TempDir()
	e := openEnv(t, dir, Options{Fsync: Interval})
	for _, ns := range []string{"a", "b"} {
		if err := e.srv.Namespaces().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 10))
	e.mustDo("b", ruleAdd(rtnl.AF_INET, 0, 20))
	wantA = e.state("a")
	off = recordsEnd(t, dir)
	e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 11))
	end = recordsEnd(t, dir)
	e.mustDo("b", ruleAdd(rtnl.AF_INET, 0, 21))
	wantB = e.state("b")
	e.close()
	return dir, off, end, wantA, wantB
}

// TestHoleBetweenStoredRecordsIsSkipped: the mapped path stores records in
// parallel (storeSeg), so a SIGKILL can leave one half stored — its CRC
// still zero, as a store writes it last — with whole, acknowledged records
// of other namespaces after it. Restore skips the hole, replays what
// follows and reports it; the journal goes on after it. A slot claimed and
// not stored at all (all zeros) is a hole too.
func TestHoleBetweenStoredRecordsIsSkipped(t *testing.T) {
	dir, off, end, wantA, wantB := holeFixture(t)
	for name, edit := range map[string]func([]byte){
		"half stored": func(b []byte) {
			clear(b[off+4 : off+8])     // the CRC, stored last
			clear(b[(off+end)/2 : end]) // the payload's end
		},
		"not stored": func(b []byte) { clear(b[off:end]) },
	} {
		t.Run(name, func(t *testing.T) {
			d := copyState(t, dir, func(b []byte) []byte { edit(b); return b })
			e := openEnv(t, d, Options{Fsync: Interval})
			if got := e.state("a"); got != wantA {
				t.Fatal("namespace a: the hole's change was replayed")
			}
			if got := e.state("b"); got != wantB {
				t.Fatal("namespace b: the record after the hole was lost")
			}
			if e.rs.Holes != 1 || e.rs.TornBytes != 0 || !strings.Contains(e.logs(), "skipped 1 record(s)") {
				t.Fatalf("restore %+v, log %q", *e.rs, e.logs())
			}
			// The journal goes on after the records, and the next restore
			// skips the same hole.
			e.mustDo("a", ruleAdd(rtnl.AF_INET, 0, 12))
			after := e.state("a")
			e.close()
			e2 := openEnv(t, d, Options{Fsync: Interval})
			if e2.state("a") != after || e2.state("b") != wantB || e2.rs.Holes != 1 {
				t.Fatalf("second restore: %+v %s", *e2.rs, e2.logs())
			}
		})
	}
}

// TestScanJournalCorruptIsNotAHole: a bad record whose CRC is there was
// stored whole and went bad: it is corruption, and scanJournal stops there
// as scanRecords does (restore then reports the records it drops,
// TestCorruptRecordBeforeGoodOnesIsReported), instead of skipping it.
func TestScanJournalCorruptIsNotAHole(t *testing.T) {
	var b []byte
	b = appendRecord(b, record{Seq: 1, Kind: kindJournal, Payload: le.AppendUint64(nil, 1)})
	good := len(b)
	b = appendRecord(b, record{Seq: 2, Kind: kindNetnsDel, NSID: 1})
	b = appendRecord(b, record{Seq: 3, Kind: kindNetnsDel, NSID: 2})
	b[good+hdrLen-1] ^= 1 // the second record's NSID: its CRC no longer matches
	s := scanJournal(b)
	if s.good != good || !s.tail || s.holes != 0 || s.later != 1 {
		t.Fatalf("scan: good %d tail %v holes %d later %d", s.good, s.tail, s.holes, s.later)
	}
	clear(b[good+4 : good+8]) // now a hole: CRC zero
	s = scanJournal(b)
	if s.tail || s.holes != 1 || len(s.recs) != 2 || s.recs[1].Seq != 3 || s.good != len(b) {
		t.Fatalf("hole: good %d of %d tail %v holes %d recs %d", s.good, len(b), s.tail, s.holes, len(s.recs))
	}
}

// FuzzScanJournal: any bytes scan without a panic; the records found are
// valid, in increasing sequence order, and the good prefix ends in one.
func FuzzScanJournal(f *testing.F) {
	var seed []byte
	seed = appendRecord(seed, record{Seq: 1, Kind: kindJournal, Payload: le.AppendUint64(nil, 1)})
	hole := len(seed)
	seed = appendRecord(seed, record{Seq: 2, Kind: kindNetnsAdd, NSID: 1, Payload: append(make([]byte, 32), 'x')})
	seed = appendRecord(seed, record{Seq: 3, Kind: kindRequest, NSID: 2, Payload: make([]byte, 20)})
	f.Add(seed)
	holed := bytes.Clone(seed)
	clear(holed[hole+4 : hole+8])
	f.Add(holed)
	f.Add(seed[:len(seed)-3])
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := scanJournal(b)
		if s.good > len(b) || s.tail && allZero(b[s.good:]) {
			t.Fatalf("good %d of %d, tail %v", s.good, len(b), s.tail)
		}
		for i, r := range s.recs {
			if i > 0 && r.Seq <= s.recs[i-1].Seq {
				t.Fatalf("record %d: seq %d after %d", i, r.Seq, s.recs[i-1].Seq)
			}
		}
		if k := len(s.recs); k > 0 {
			last := appendRecord(nil, s.recs[k-1])
			if !bytes.HasSuffix(b[:s.good], last) {
				t.Fatal("the good prefix does not end in the last record")
			}
		}
	})
}

// TestParallelStoresRestore: many namespaces change at once on the mapped
// path with small files (rotations and compactions while stores run in
// parallel, under -race in CI); after Close every namespace restores to
// its live state and no hole or torn byte is found.
func TestParallelStoresRestore(t *testing.T) {
	dir := t.TempDir()
	opt := Options{Fsync: Interval, RotateBytes: 8 << 10}
	e := openEnv(t, dir, opt)
	const nns, rules = 8, 60
	names := make([]string, nns)
	for i := range names {
		names[i] = fmt.Sprint("p", i)
		if err := e.srv.Namespaces().Add(names[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rules {
				if errno := e.do(n, ruleAdd(rtnl.AF_INET, 0, uint32(100+r))); errno != 0 {
					t.Errorf("%s rule %d: errno %d", n, r, errno)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := map[string]string{}
	for _, n := range names {
		want[n] = e.state(n)
	}
	st := e.j.Stats()
	e.close()
	if st.Records < nns*rules || st.Batches != 0 {
		t.Fatalf("stats %+v", st)
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "journal-*")); len(ms) == 0 {
		t.Fatal("no journal")
	} else if _, err := os.Stat(filepath.Join(dir, journalName(1))); err == nil {
		t.Fatal("no rotation and compaction happened")
	}
	e2 := openEnv(t, dir, opt)
	for _, n := range names {
		if e2.state(n) != want[n] {
			t.Fatalf("%s restored differently", n)
		}
	}
	if e2.rs.Holes != 0 || e2.rs.TornBytes != 0 || e2.rs.Failed != 0 {
		t.Fatalf("restore %+v %s", *e2.rs, e2.logs())
	}
}
