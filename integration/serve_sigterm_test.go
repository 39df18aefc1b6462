package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

// hangLimit only detects a hang (a deadlocked server never answers); it is
// not a performance bound.
const hangLimit = 2 * time.Minute

// TestServeStopsOnSIGTERMAfterConcurrentStatsBesideLoad: two concurrent
// STATS loops used to deadlock the server — every later `nlemu stats` and
// `load --server` hung, and SIGTERM no longer stopped `nlemu serve`
// (Server.Close blocked on a socket lock). Two STATS loops beside a running
// `nlemu load --server` must finish, and SIGTERM must then stop the server
// and remove its socket.
func TestServeStopsOnSIGTERMAfterConcurrentStatsBesideLoad(t *testing.T) {
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "nlemu.sock")
	var serveErr strings.Builder
	serve := exec.Command(bin, "serve", "--socket", sock)
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Kill()
		<-exited
	})
	for end := time.Now().Add(hangLimit); ; time.Sleep(5 * time.Millisecond) {
		c, err := server.DialUnix(sock, server.Options{})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(end) {
			t.Fatalf("server never listened: %v\n%s", err, serveErr.String())
		}
	}

	load := exec.Command(bin, "load", "--server", sock, "--netns", "32", "--rules", "64", "--family", "4,6")
	var loadOut strings.Builder
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	go func() { done <- load.Wait() }()
	const iters = 1000
	for i := 0; i < 2; i++ {
		go func() {
			c, err := server.DialUnix(sock, server.Options{})
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			for j := 0; j < iters; j++ {
				if _, err := c.ServerStats(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	deadline := time.After(hangLimit)
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("stats loop or load: %v\n%s", err, loadOut.String())
			}
		case <-deadline:
			t.Fatalf("stats loops beside a load never finished (deadlock)\n%s", loadOut.String())
		}
	}
	// One more `nlemu stats` from the command line answers.
	if out, err := exec.Command(bin, "stats", "--socket", sock).CombinedOutput(); err != nil {
		t.Fatalf("nlemu stats after the loops: %v\n%s", err, out)
	}

	// A client blocked in a receive must not hold the server up.
	idle, err := server.DialUnix(sock, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("nlemu serve after SIGTERM: %v\n%s", err, serveErr.String())
		}
	case <-time.After(hangLimit):
		t.Fatalf("nlemu serve did not stop on SIGTERM\n%s", serveErr.String())
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after SIGTERM: %v", err)
	}
	idle.SetRecvTimeout(hangLimit)
	if _, err := idle.Recv(); err == nil {
		t.Error("idle client still connected after the server stopped")
	}
}
