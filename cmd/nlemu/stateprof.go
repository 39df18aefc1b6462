package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// loadContentionProfiles starts recording mutex and block profiles when
// NLEMU_LOAD_MUTEXPROFILE is set (for people tuning the journal's cost,
// docs/STATE.md): every contended lock and every blocking wait of the
// embedded server and its clients, from its setup to its teardown, written
// to $NLEMU_LOAD_MUTEXPROFILE.mutex.MODE and .block.MODE. The returned
// function writes them; it does nothing when the variable is not set.
func loadContentionProfiles(mode string) func() {
	base := os.Getenv("NLEMU_LOAD_MUTEXPROFILE")
	if base == "" {
		return func() {}
	}
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	return func() {
		for _, p := range []string{"mutex", "block"} {
			f, err := os.Create(fmt.Sprintf("%s.%s.%s", base, p, mode))
			if err != nil {
				fmt.Fprintf(os.Stderr, "nlemu load: %v\n", err)
				continue
			}
			pprof.Lookup(p).WriteTo(f, 0)
			f.Close()
		}
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	}
}
