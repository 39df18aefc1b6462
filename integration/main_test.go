package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the nlemu binary the tests built, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if ipcBuildBin != "" {
		os.RemoveAll(filepath.Dir(ipcBuildBin))
	}
	if seccompBuilt.dir != "" { // seccomp_test.go
		os.RemoveAll(seccompBuilt.dir)
	}
	os.Exit(code)
}
