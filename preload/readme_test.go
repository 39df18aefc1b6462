package preload

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeListsEveryEntryPoint: the README's table of interposed entry
// points names every symbol the shim exports (an EXPORT definition in
// nlemu_preload.c) and no other, so a new interposition cannot go
// undocumented (issue 8 item 0: "every interposed entry point is listed in
// the README").
func TestReadmeListsEveryEntryPoint(t *testing.T) {
	var exported []string
	def := regexp.MustCompile(`(?m)^EXPORT [^(]*?\**(\w+)\(`)
	for _, m := range def.FindAllStringSubmatch(string(source), -1) {
		exported = append(exported, m[1])
	}
	if len(exported) == 0 {
		t.Fatal("no EXPORT definitions found in nlemu_preload.c")
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const title = "## What the shim interposes"
	_, section, ok := strings.Cut(string(readme), title+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", title)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	// The first column of the table: `sym`, `sym`, ...
	var listed []string
	cell := regexp.MustCompile("`(\\w+)`")
	for _, line := range strings.Split(section, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 3 || strings.TrimSpace(cols[1]) == "symbol" {
			continue
		}
		for _, m := range cell.FindAllStringSubmatch(cols[1], -1) {
			listed = append(listed, m[1])
		}
	}
	set := func(names []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	if d := cmp.Diff(set(exported), set(listed)); d != "" {
		t.Errorf("README's %q table vs the shim's EXPORT definitions (-shim +README):\n%s", title, d)
	}
}
