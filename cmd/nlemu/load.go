package main

import (
	"fmt"
	"os"
)

// runLoad implements `nlemu load` (issue: the seed's load test).
func runLoad(args []string) int {
	fmt.Fprintln(os.Stderr, "nlemu load: not built yet")
	return 1
}
