package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

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

// msgSizeProbe sends NLMSG_DONE messages (not requests: nothing answers)
// of the sizes around sk_sndbuf - 32, at the default SO_SNDBUF and after
// SO_SNDBUF 32768 (doubled to 65536), and prints what each send returned.
const msgSizeProbe = `
import socket, struct, errno
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
def probe(sizes):
    for n in sizes:
        b = struct.pack("=IHHII", n, 3, 0, 1, 0) + bytes(n - 16)
        try:
            s.send(b); print(n, "ok")
        except OSError as e:
            print(n, errno.errorcode[e.errno])
d = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
print("sndbuf", d)
probe((d - 32, d - 31))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32768)
d = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
print("sndbuf", d)
probe((d - 32, d - 31))
`

// TestSendEMSGSIZELikeKernel: a netlink send longer than sk_sndbuf - 32
// fails with EMSGSIZE at sendmsg() (netlink_sendmsg(); measured: 212960
// bytes go, 212961 fail at the default 212992, 65504 and 65505 after
// SO_SNDBUF 32768). Under `nlemu exec` the same sends give the same
// answers: the shim's AF_UNIX SEQPACKET socket applies the same bound
// (unix_dgram_sendmsg()) with the SO_SNDBUF the program set, before
// --max-msg is ever reached.
func TestSendEMSGSIZELikeKernel(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		kernelns.Unavailable(t, "%s is not installed: %v", py, err)
	}
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	kns := kernelns.NewForTest(t, "nlemu-msgsize")
	kernel, err := exec.Command("ip", "netns", "exec", kns.Name(), py, "-c", msgSizeProbe).CombinedOutput()
	if err != nil {
		t.Fatalf("kernel: %v\n%s", err, kernel)
	}
	_, sock := startTestServer(t, t.TempDir())
	g := newHostGuard(t)
	nlemu, err := g.command(context.Background(), ipcFindIP(), bin, "exec", "--socket", sock, "-n", "default", "--", py, "-c", msgSizeProbe).CombinedOutput()
	if err != nil {
		t.Fatalf("nlemu: %v\n%s", err, nlemu)
	}
	if d := cmp.Diff(string(kernel), string(nlemu)); d != "" {
		t.Errorf("sends around sk_sndbuf - 32 (-kernel +nlemu):\n%s", d)
	}
	if !strings.Contains(string(kernel), "EMSGSIZE") {
		t.Errorf("the probe saw no EMSGSIZE from the kernel:\n%s", kernel)
	}
}
