package server_test

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/rtnl"
)

// TestSpecA11NewRuleValidationMatrix replays the kernel probe t_new.py
// (RULES-SPEC.md Appendix A11) request by request — the same bytes — and
// requires the kernel's errno, extack text, offset, missing type and policy
// nest for every one, then the kernel's AF_UNSPEC dump, verbatim.
func TestSpecA11NewRuleValidationMatrix(t *testing.T) {
	s := newSess(t, nil, optsExtAck)
	f, err := os.Open("testdata/a11_requests.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		name, want := fields[0], fields[4]
		typ, _ := strconv.Atoi(fields[1])
		flags, _ := strconv.Atoi(fields[2])
		body, err := hex.DecodeString(fields[3])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.request(uint16(typ), uint16(flags), body)
		if got.String() != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		n++
	}
	if n != 80 {
		t.Fatalf("replayed %d requests, want 80", n)
	}
	rules, done, _ := s.dump(allRules())
	if done.Errno != 0 {
		t.Fatalf("dump: %v", done)
	}
	wantDump, err := os.ReadFile("testdata/a11_dump.txt")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(strings.Split(strings.TrimSpace(string(wantDump)), "\n"), rules); d != "" {
		t.Errorf("dump after A11 (-kernel +nlemu):\n%s", d)
	}
	_ = rtnl.AF_INET
}
