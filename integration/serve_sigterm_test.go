package integration

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/server"
)

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
	serve := startServe(t)
	sock := serve.sock
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
	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.wait(t, "SIGTERM"); err != nil {
		t.Fatalf("nlemu serve after SIGTERM: %v\n%s", err, serve.stderr.String())
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after SIGTERM: %v", err)
	}
	idle.SetRecvTimeout(hangLimit)
	if _, err := idle.Recv(); err == nil {
		t.Error("idle client still connected after the server stopped")
	}
}
