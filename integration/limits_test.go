package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// limitChildEnv makes the test binary a child that connects twice to the
// server at the variable's socket and prints what each connection got.
const limitChildEnv = "NLEMU_LIMIT_CHILD"

func init() {
	if sock := os.Getenv(limitChildEnv); sock != "" {
		var out []string
		for i := 0; i < 2; i++ {
			c, err := server.DialUnix(sock, server.Options{})
			switch {
			case err == nil:
				out = append(out, "ok")
				defer c.Close()
			case errors.Is(err, syscall.EAGAIN):
				out = append(out, "EAGAIN")
			default:
				out = append(out, err.Error())
			}
		}
		fmt.Println(strings.Join(out, " "))
		os.Exit(0)
	}
}

// TestMaxConnsPerUIDCountsEachPeerUID: --max-conns-per-uid counts each
// peer uid's connections (SO_PEERCRED) apart: with a limit of one, root's
// second connection is refused with EAGAIN while root holds one, and uid
// 65534 still gets one connection, and EAGAIN for its second.
func TestMaxConnsPerUIDCountsEachPeerUID(t *testing.T) {
	if os.Getuid() != 0 {
		kernelns.Unavailable(t, "becoming uid %d needs root", nobody)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		kernelns.Unavailable(t, "setpriv (util-linux) is not installed: %v", err)
	}
	dir, bin := publicCopy(t)
	srv := server.New(server.Config{Limits: server.Limits{MaxConns: 10, MaxConnsPerUID: 1}})
	defer srv.Close()
	sock := filepath.Join(dir, "nlemu.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	held, err := server.DialUnix(sock, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := server.DialUnix(sock, server.Options{}); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("root's second connection: %v, want EAGAIN", err)
	}
	if got := runProbe(t, []string{limitChildEnv + "=" + sock}, asNobody("", bin)); got != "ok EAGAIN\n" {
		t.Errorf("uid %d's two connections while root is at its limit: %q, want \"ok EAGAIN\"", nobody, got)
	}
}
