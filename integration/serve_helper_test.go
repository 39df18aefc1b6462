package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

// hangLimit only detects a hang (a deadlocked server never answers); it is
// not a performance bound.
const hangLimit = 2 * time.Minute

// servedProcess is an `nlemu serve` subprocess.
type servedProcess struct {
	cmd    *exec.Cmd
	sock   string
	stderr *strings.Builder
	exited chan error // receives Wait's result once
}

// startServe runs `nlemu serve` on a fresh socket, waits until it answers
// and kills it when the test ends (unless the test stopped it).
func startServe(t *testing.T) *servedProcess {
	t.Helper()
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	p := &servedProcess{sock: filepath.Join(t.TempDir(), "nlemu.sock"), stderr: &strings.Builder{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, "serve", "--socket", p.sock)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.exited <- <-p.exited
	})
	for end := time.Now().Add(hangLimit); ; time.Sleep(5 * time.Millisecond) {
		c, err := server.DialUnix(p.sock, server.Options{})
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(end) {
			t.Fatalf("server never listened: %v\n%s", err, p.stderr.String())
		}
	}
}

// wait returns the server's exit, or fails the test if it does not come.
func (p *servedProcess) wait(t *testing.T, what string) error {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		return err
	case <-time.After(hangLimit):
		t.Fatalf("nlemu serve did not stop after %s\n%s", what, p.stderr.String())
		return nil
	}
}
