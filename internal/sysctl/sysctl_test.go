package sysctl

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInt(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		content string
		want    int
	}{{"4096\n", 4096}, {"0\n", 7}, {"-1", 7}, {"x", 7}} {
		p := filepath.Join(dir, "v")
		os.WriteFile(p, []byte(c.content), 0o644)
		if got := Int(p, 7); got != c.want {
			t.Errorf("Int(%q) = %d, want %d", c.content, got, c.want)
		}
	}
	if got := Int(filepath.Join(dir, "missing"), 7); got != 7 {
		t.Errorf("missing file: %d, want 7", got)
	}
}
