// Package sysctl reads the kernel's numeric settings (net.core.rmem_default
// and the like) that nlemu's sockets copy, so that a buffer size reads back
// as it would on a kernel socket of this machine.
package sysctl

import (
	"os"
	"strconv"
	"strings"
)

// Int returns the positive integer in the file at path (a /proc/sys
// entry), or def when it cannot be read or is not a positive integer.
func Int(path string, def int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return def
	}
	return n
}
