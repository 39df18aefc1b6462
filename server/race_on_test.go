//go:build race

package server

// idleConns is the idle-connection count of
// TestUnixIdleConnectionsCostNoThread: the race detector allows 8,128
// goroutines alive at once, and each connection has three on the server
// side.
const idleConns = 500
