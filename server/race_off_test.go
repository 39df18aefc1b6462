//go:build !race

package server

// idleConns is the idle-connection count of
// TestUnixIdleConnectionsCostNoThread.
const idleConns = 5000
