//go:build !race

package server

// raceEnabled scales the loop tests down under the race detector.
const raceEnabled = false
