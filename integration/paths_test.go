package integration

// Tests of what nlemu's command line does with paths it does not own and
// with commands the shim cannot reach (issue 7, items 2 and 3): `nlemu
// serve` must not delete what is at its socket path, and `nlemu exec` must
// never let a command talk to the host kernel's rtnetlink in place of the
// server.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlemu/nlemu/preload"
)

// runNlemu runs the nlemu binary with args and env (nil: inherited) and
// returns stdout, stderr and the exit code.
func runNlemu(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(shimNlemu(t), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := shimWatchdog(t, cmd, 60*time.Second)
	err := cmd.Run()
	done()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestServeKeepsRegularFileAtSocketPath: `nlemu serve --socket FILE`
// unlinked FILE (the dial to it failed, so it was taken for a stale
// socket) and served in its place. It must exit 1 with one line and leave
// the file as it was.
func TestServeKeepsRegularFileAtSocketPath(t *testing.T) {
	bin := shimNlemu(t)
	path := filepath.Join(t.TempDir(), "notes.txt")
	const content = "do not delete\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--socket", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := shimWatchdog(t, cmd, 60*time.Second)
	defer done()
	// The first line says either that it serves (the defect: stop it) or
	// why it refuses.
	r := bufio.NewReader(stderr)
	first, _ := r.ReadString('\n')
	if strings.HasPrefix(first, "nlemu: serving on") {
		cmd.Process.Kill()
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 || len(rest) != 0 ||
		first != "nlemu serve: "+path+" exists and is a regular file, not a socket: not replacing it\n" {
		t.Errorf("nlemu serve --socket %s: exit %d (%v), stderr %q%q; want exit 1 and one line refusing the regular file", path, code, err, first, rest)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Errorf("the file at the socket path: %q, %v; want %q", b, err, content)
	}
}

// TestExecRefusesCommandsTheShimCannotAttachTo: when LD_PRELOAD does not
// take effect, the command's netlink sockets are the host kernel's; `nlemu
// exec -- <set-user-ID ip>` printed the host's rules. nlemu exec --preload
// must refuse such commands with one line, exit 1, before running them:
// set-user-ID to another user (ld.so's secure-execution mode ignores
// LD_PRELOAD), statically linked, and Go programs (no libc socket() to
// interpose).
func TestExecRefusesCommandsTheShimCannotAttachTo(t *testing.T) {
	ip := shimIP()
	if ip == "" {
		t.Skip("iproute2 (ip) is not installed")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the shim is compiled C")
	}
	if _, err := preload.Path(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv, sock := startTestServer(t, dir)
	// A namespace whose rules differ from any host's: output without rule
	// 123 came from the host kernel.
	const ns = "paths-exec"
	if err := srv.Namespaces().Add(ns); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runNlemu(t, nil, "exec", "--socket", sock, "-n", ns, "--", ip, "rule", "add", "pref", "123", "table", "123"); code != 0 {
		t.Fatalf("ip rule add: exit %d: %s", code, errs)
	}

	cases := []struct {
		name string
		make func(t *testing.T) []string // the command
		want string                      // in the one line
	}{
		{"SetUIDToAnotherUser", func(t *testing.T) []string {
			if os.Getuid() != 0 {
				t.Skip("making a set-user-ID program of another user needs root")
			}
			suid := filepath.Join(dir, "ip-suid")
			b, err := os.ReadFile(ip)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(suid, b, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(suid, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(suid, 0o755|os.ModeSetuid); err != nil {
				t.Fatal(err)
			}
			return []string{suid, "rule", "show"}
		}, "is set-user-ID (owner uid 65534)"},
		{"StaticallyLinked", func(t *testing.T) []string {
			src := filepath.Join(dir, "static.c")
			prog := filepath.Join(dir, "static")
			os.WriteFile(src, []byte(`#include <stdio.h>
#include <sys/socket.h>
#include <linux/netlink.h>
int main(void) {
	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	printf("%s\n", fd >= 0 ? "a netlink socket of the host kernel" : "no socket");
	return 0;
}
`), 0o644)
			if out, err := exec.Command("gcc", "-static", "-o", prog, src).CombinedOutput(); err != nil {
				t.Skipf("no static libc: %v\n%s", err, out)
			}
			return []string{prog}
		}, "is statically linked"},
		{"GoProgram", func(t *testing.T) []string {
			return []string{shimNlemu(t), "help"}
		}, "nlemu is "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.make(t)
			// --preload: without it static and Go programs run under the
			// seccomp supervisor instead (integration/seccomp_test.go)
			out, errs, code := runNlemu(t, nil, append([]string{"exec", "--preload", "--socket", sock, "-n", ns, "--"}, argv...)...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 ||
				!strings.HasPrefix(errs, "nlemu exec: "+argv[0]+" ") || !strings.Contains(errs, tc.want) ||
				!strings.Contains(errs, "host kernel") {
				t.Errorf("nlemu exec -- %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, no output, one line saying %q",
					strings.Join(argv, " "), code, out, errs, tc.want)
			}
		})
	}
}

// socketsProg opens N NETLINK_ROUTE sockets (argv[1]) and prints, for each,
// whether socket() succeeded and its errno.
const socketsProg = `#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <linux/netlink.h>
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	for (int i = 0; i < n; i++) {
		errno = 0;
		int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
		printf("socket=%s errno=%d\n", fd >= 0 ? "fd" : "-1", fd >= 0 ? 0 : errno);
	}
	return 0;
}
`

// buildSocketsProg compiles socketsProg and builds the shim; it returns both.
func buildSocketsProg(t *testing.T) (prog, lib string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the shim is compiled C")
	}
	lib, err := preload.Path()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sockets.c")
	prog = filepath.Join(dir, "sockets")
	if err := os.WriteFile(src, []byte(socketsProg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling sockets.c: %v\n%s", err, out)
	}
	return prog, lib
}

// runShimmed runs prog args under the shim with NLEMU_SOCKET=sock and
// returns stdout and stderr.
func runShimmed(t *testing.T, lib, sock, prog string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "NLEMU_SOCKET="+sock, "NLEMU_NETNS=default")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := shimWatchdog(t, cmd, 60*time.Second)
	err := cmd.Run()
	done()
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", prog, err, errb.String())
	}
	return out.String(), errb.String()
}

// TestShimSaysOnceWhenServerUnreachable: with the server gone, the shim's
// socket() fails with ECONNREFUSED — never a kernel socket — and says why
// once per process, not once per socket() (it said it every time).
func TestShimSaysOnceWhenServerUnreachable(t *testing.T) {
	prog, lib := buildSocketsProg(t)
	missing := filepath.Join(t.TempDir(), "gone.sock")
	out, errs := runShimmed(t, lib, missing, prog, "3")
	want := strings.Repeat(fmt.Sprintf("socket=-1 errno=%d\n", syscall.ECONNREFUSED), 3)
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if wantErr := "nlemu: cannot reach the nlemu server at " + missing + ": No such file or directory\n"; errs != wantErr {
		t.Errorf("stderr:\n%q\nwant once:\n%q", errs, wantErr)
	}
}

// TestShimHelloErrnoOutOfRange: the shim negated the int error of a HELLO's
// NLMSG_ERROR answer (err = -e), undefined behaviour for INT_MIN, and took
// any value for an errno (socket() then failed with errno INT_MIN or 5000).
// Only -1..-4095 (the kernel's MAX_ERRNO) are errnos; the rest is EPROTO.
func TestShimHelloErrnoOutOfRange(t *testing.T) {
	prog, lib := buildSocketsProg(t)
	cases := []struct {
		name  string
		error int32
		want  syscall.Errno
	}{
		{"ENOENT", -int32(syscall.ENOENT), syscall.ENOENT},
		{"MaxErrno", -4095, 4095},
		{"IntMin", math.MinInt32, syscall.EPROTO},
		{"BelowMaxErrno", -4096, syscall.EPROTO},
		{"Positive", 5000, syscall.EPROTO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "fake.sock")
			fakeHelloServer(t, sock, tc.error)
			out, _ := runShimmed(t, lib, sock, prog, "1")
			if want := fmt.Sprintf("socket=-1 errno=%d\n", tc.want); out != want {
				t.Errorf("HELLO answered with error %d: %q, want %q", tc.error, out, want)
			}
		})
	}
}

// fakeHelloServer answers every HELLO at sock with an NLMSG_ERROR carrying
// error (struct nlmsgerr: the int, then the request's header).
func fakeHelloServer(t *testing.T, sock string, errval int32) {
	t.Helper()
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			n, err := c.Read(buf)
			if err == nil && n >= 16 {
				rep := make([]byte, 16+4+16)
				binary.NativeEndian.PutUint32(rep[0:], uint32(len(rep)))
				binary.NativeEndian.PutUint16(rep[4:], 2) // NLMSG_ERROR
				binary.NativeEndian.PutUint32(rep[16:], uint32(errval))
				copy(rep[20:], buf[:16])
				c.Write(rep)
			}
			c.Close()
		}
	}()
}

// TestCLIRefusesForeignDefaultSocketDir: with no --socket, $NLEMU_SOCKET or
// $XDG_RUNTIME_DIR, every subcommand uses $TMPDIR/nlemu-<uid>; when another
// user could write there (here: mode 0777) a socket in it may be theirs.
// serve, exec, netns and stats connected to (or served in) it; each must
// exit 1 with one line naming the directory.
func TestCLIRefusesForeignDefaultSocketDir(t *testing.T) {
	ip := shimIP()
	if ip == "" {
		t.Skip("iproute2 (ip) is not installed")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the shim is compiled C")
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, fmt.Sprintf("nlemu-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// "Their" server, listening at the default path: a live nlemu server's
	// socket renamed in.
	_, sock := startTestServer(t, t.TempDir())
	if err := os.Rename(sock, filepath.Join(dir, "nlemu.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TMPDIR" && k != "XDG_RUNTIME_DIR" && k != "NLEMU_SOCKET" {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+tmp)
	refusal := "refusing " + dir + ": its mode 0777 lets other users write to it"
	for _, args := range [][]string{
		{"exec", "--", ip, "rule", "show"},
		{"stats"},
		{"netns", "list"},
		{"serve"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, errs, code := runNlemu(t, env, args...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, refusal) {
				t.Errorf("nlemu %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 and one line saying %q",
					strings.Join(args, " "), code, out, errs, refusal)
			}
		})
	}
}
