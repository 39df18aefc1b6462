package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// vforkMonitor is a Python netlink listener that runs `ip` through
// subprocess between its receives: CPython's subprocess forks with vfork
// and closes every inherited descriptor (close_fds) in the child before
// execve.
const vforkMonitor = `
import socket, subprocess
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.bind((0, 0x10))  # RTMGRP_IPV4_IFADDR
subprocess.run(["ip", "addr", "add", "10.7.0.1/24", "dev", "lo"], check=True)
d, a = s.recvfrom(65536)
print("recvfrom", len(d), a, d[4:6].hex())
subprocess.run(["ip", "addr", "del", "10.7.0.1/24", "dev", "lo"], check=True)
d = s.recv(65536)
print("recv", len(d), d[4:6].hex())
`

// TestVforkChildClosingDescriptorsKeepsParentsSockets: a vfork child shares
// its parent's memory and runs no atfork handler, and the shim's close() in
// it forgot the parent's netlink socket — so a Python listener that had run
// a subprocess received nlemu's raw frames (an NLEMU_GROUP header) and the
// server's Unix address from recvfrom. Its receives must print what they
// print on the kernel.
func TestVforkChildClosingDescriptorsKeepsParentsSockets(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		kernelns.Unavailable(t, "python3 is not installed: %v", err)
	}
	env := newIPCEnv(t)
	k, n := env.pair(t)
	script := filepath.Join(t.TempDir(), "monitor.py")
	if err := os.WriteFile(script, []byte(vforkMonitor), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*ipcSide{k, n} {
		if r := s.run(nil, "link", "set", "lo", "up"); r.Code != 0 {
			t.Fatalf("%s: lo up: %s", s.label(), r.Stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ipcTimeout)
	defer cancel()
	kr := ipcWait(ctx, exec.CommandContext(ctx, env.ip, "netns", "exec", k.ns, py, script))
	nr := ipcWait(ctx, n.guard.command(ctx, env.ip, env.nlemu, "exec", "--socket", env.sock, "-n", n.ns, "--", py, script))
	if kr.Code != 0 || kr.Problem != "" {
		t.Fatalf("kernel side failed (%d %s): %s", kr.Code, kr.Problem, kr.Stderr)
	}
	// RTM_NEWADDR (0x14) then RTM_DELADDR (0x15), from the kernel (0, groups).
	want := "recvfrom 76 (0, 16) 1400\nrecv 76 1500\n"
	if string(kr.Stdout) != want {
		t.Fatalf("the probe itself: kernel printed %q, want %q", kr.Stdout, want)
	}
	if string(nr.Stdout) != string(kr.Stdout) || nr.Code != 0 {
		t.Errorf("nlemu printed %q (exit %d, %s), kernel %q", nr.Stdout, nr.Code, nr.Stderr, kr.Stdout)
	}
}
