package preload

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/internal/cpuaffinity"
)

// The shim's spin then block (nlemu_preload.c, "spin then block"), tested
// with a C client under the shim against a small fake server in this
// process that answers HELLO and then each request after a delay.

// spinClientSrc does round trips of NLMSG_NOOP requests with NLM_F_ACK and
// prints the socket's spin statistics (getsockopt NLEMU_SPINSTATS):
//
//	spinclient MODE N
//
// MODE blocking: a blocking socket, send then recv; nonblock: a
// SOCK_NONBLOCK socket, send, poll, recv; fcntl: a blocking socket made
// O_NONBLOCK with fcntl, send, a recv that must fail with EAGAIN (the reply
// is delayed), poll, recv. SPINCLIENT_CPU=C pins the client to CPU C after
// the shim's constructor ran; the last line ends with the client's CPUs
// at its end ("cpus 0 1").
const spinClientSrc = `
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>
int main(int argc, char **argv)
{
	const char *mode = argv[1];
	int n = atoi(argv[2]);
	const char *pin = getenv("SPINCLIENT_CPU"); /* after the shim's constructor */
	if (pin && *pin) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(atoi(pin), &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0) { perror("sched_setaffinity"); return 1; }
	}
	int type = SOCK_RAW;
	if (!strcmp(mode, "nonblock"))
		type |= SOCK_NONBLOCK;
	int fd = socket(AF_NETLINK, type, NETLINK_ROUTE);
	if (fd < 0) { perror("socket"); return 1; }
	if (!strcmp(mode, "fcntl") && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) { perror("fcntl"); return 1; }
	char buf[4096];
	for (int i = 1; i <= n; i++) {
		struct nlmsghdr h = {.nlmsg_len = 16, .nlmsg_type = NLMSG_NOOP,
				     .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = i};
		if (send(fd, &h, sizeof(h), 0) != sizeof(h)) { perror("send"); return 1; }
		if (!strcmp(mode, "fcntl")) {
			if (recv(fd, buf, sizeof(buf), 0) >= 0 || errno != EAGAIN) { printf("recv did not fail with EAGAIN\n"); return 1; }
		}
		if (strcmp(mode, "blocking")) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, 30000) != 1) { printf("poll: no reply\n"); return 1; }
		}
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < (ssize_t)sizeof(struct nlmsghdr)) { perror("recv"); return 1; }
		struct nlmsghdr *rh = (struct nlmsghdr *)buf;
		printf("reply %u type %u\n", rh->nlmsg_seq, rh->nlmsg_type);
	}
	uint32_t st[3] = {0};
	socklen_t l = sizeof(st);
	if (getsockopt(fd, SOL_NETLINK, 0xFE02, st, &l) < 0) { perror("getsockopt"); return 1; }
	printf("hits %u misses %u skips %u cpus", st[0], st[1], st[2]);
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				printf(" %d", c);
	printf("\n");
	return 0;
}
`

// buildSpinClient compiles spinClientSrc and returns it and the shim.
func buildSpinClient(t *testing.T) (client, lib string) {
	t.Helper()
	needCC(t)
	isolate(t)
	lib, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	cc, _ := compiler()
	dir := t.TempDir()
	src := filepath.Join(dir, "spinclient.c")
	if err := os.WriteFile(src, []byte(spinClientSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	client = filepath.Join(dir, "spinclient")
	if out, err := exec.Command(cc[0], append(cc[1:], "-O2", "-o", client, src)...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return client, lib
}

// fakeServer answers one connection's HELLO (port id 1), every SETSOCKOPT
// sent with NLM_F_ACK with an ACK, and every other datagram, after delay,
// with an NLMSG_ERROR of 0 for its sequence number. It records the HELLO's
// options.
type fakeServer struct {
	path  string
	delay time.Duration
	opts  atomic.Uint32
	done  chan error
	// poll is the HELLO answer's third word (server/loop.go, pollWord).
	poll uint32
	// cpus is the client's affinity at its end (runSpinClient).
	cpus []string
}

func startFakeServer(t *testing.T, delay time.Duration) *fakeServer {
	t.Helper()
	return startPollServer(t, delay, 0)
}

// startPollServer is startFakeServer answering HELLO with poll word poll.
func startPollServer(t *testing.T, delay time.Duration, poll uint32) *fakeServer {
	t.Helper()
	f := &fakeServer{path: filepath.Join(t.TempDir(), "s.sock"), delay: delay, done: make(chan error, 1), poll: poll}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: f.path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { f.done <- f.serve(l) }()
	return f
}

var ne = binary.NativeEndian

func nlmsg(typ, flags uint16, seq uint32, payload []byte) []byte {
	b := make([]byte, 16, 16+len(payload))
	ne.PutUint32(b, uint32(16+len(payload)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	return append(b, payload...)
}

func (f *fakeServer) serve(l *net.UnixListener) error {
	c, err := l.AcceptUnix()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 65536)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if n < 16+16 || ne.Uint16(buf[4:]) != 0xFE00 {
		return fmt.Errorf("first datagram is not a HELLO: % x", buf[:n])
	}
	f.opts.Store(ne.Uint32(buf[16+8:]))
	var p [12]byte
	ne.PutUint32(p[0:], 1)
	ne.PutUint32(p[4:], 1)
	ne.PutUint32(p[8:], f.poll) // the poll word (server/loop.go, pollWord)
	if _, err := c.Write(nlmsg(0xFE00, 0, 0, p[:])); err != nil {
		return err
	}
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return nil // the client is done
		}
		typ, flags, seq := ne.Uint16(buf[4:]), ne.Uint16(buf[6:]), ne.Uint32(buf[8:])
		switch {
		case typ == 0xFE01: // SETSOCKOPT
			if flags&unix.NLM_F_ACK != 0 {
				if _, err := c.Write(nlmsg(0xFE05, 0, seq, make([]byte, 4))); err != nil {
					return err
				}
			}
		case typ >= 0xFE00:
		default:
			time.Sleep(f.delay)
			ack := append(make([]byte, 4), buf[:16]...) // error 0, the request's header
			if _, err := c.Write(nlmsg(unix.NLMSG_ERROR, 0, seq, ack)); err != nil {
				return err
			}
		}
	}
}

// spinStats is the client's last line.
type spinStats struct{ Hits, Misses, Skips int }

// runSpinClient runs the client under the shim against f with env, on CPU
// one only when one >= 0 (a child inherits the forking thread's
// affinity), and checks that every reply is its request's.
func runSpinClient(t *testing.T, f *fakeServer, client, lib, mode string, n int, one int, env ...string) spinStats {
	t.Helper()
	cmd := exec.Command(client, mode, fmt.Sprint(n))
	cmd.Env = append(os.Environ(), append([]string{"LD_PRELOAD=" + lib, "NLEMU_SOCKET=" + f.path, "NLEMU_NETNS=default"}, env...)...)
	out, err := cpuaffinity.CombinedOutput(cmd, one)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", client, mode, err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var want, got []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("reply %d type %d", i, unix.NLMSG_ERROR))
	}
	got = lines[:len(lines)-1]
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
	var s spinStats
	if _, c, ok := strings.Cut(lines[len(lines)-1], " cpus"); ok {
		f.cpus = strings.Fields(c)
	}
	if _, err := fmt.Sscanf(lines[len(lines)-1], "hits %d misses %d skips %d", &s.Hits, &s.Misses, &s.Skips); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("fake server: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fake server still serving after the client exited")
	}
	return s
}

// cpusAllowed is this process's CPU count and its first CPU.
func cpusAllowed(t *testing.T) (int, int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for i := range 1024 {
		if set.IsSet(i) {
			return set.Count(), i
		}
	}
	t.Fatal("no CPU in the affinity mask")
	return 0, 0
}

// TestShimSpinReplyAfterWindowStillReceived: a reply that comes long
// after the spin window is received by the blocking receive that follows
// the spin, in order; the misses back off (the second wait does not spin,
// the third does: 2^level-1 skipped after each miss).
func TestShimSpinReplyAfterWindowStillReceived(t *testing.T) {
	client, lib := buildSpinClient(t)
	if n, _ := cpusAllowed(t); n < 2 {
		t.Skipf("%d CPU: the shim never spins there (TestShimSpinOff)", n)
	}
	f := startFakeServer(t, 300*time.Millisecond)
	got := runSpinClient(t, f, client, lib, "blocking", 3, -1, "NLEMU_SPIN_US=20", "NLEMU_SPIN_ALWAYS=1")
	if want := (spinStats{Hits: 0, Misses: 2, Skips: 1}); got != want {
		t.Errorf("3 replies each 300 ms late, a 20 us window: %+v, want %+v", got, want)
	}
}

// TestShimSpinFindsPromptReply: with a window far longer than the
// server's answer takes, the waits end in the spin (hits), the reply
// read with no blocking receive.
func TestShimSpinFindsPromptReply(t *testing.T) {
	client, lib := buildSpinClient(t)
	if n, _ := cpusAllowed(t); n < 2 {
		t.Skipf("%d CPU: the shim never spins there (TestShimSpinOff)", n)
	}
	f := startFakeServer(t, 0)
	const n = 200
	got := runSpinClient(t, f, client, lib, "blocking", n, -1, "NLEMU_SPIN_US=10000", "NLEMU_SPIN_ALWAYS=1")
	t.Logf("%d prompt replies, a 10 ms window: %+v", n, got)
	if got.Hits < n/2 || got.Hits+got.Misses+got.Skips != n {
		t.Errorf("%d prompt replies, a 10 ms window: %+v, want at least %d hits and %d waits in all", n, got, n/2, n)
	}
	if f.opts.Load()&(1<<6) == 0 {
		t.Errorf("HELLO options %#x: no SPIN bit (1<<6) from a spinning shim", f.opts.Load())
	}
}

// TestShimSpinNeverOnNonBlockingSocket: a receive on a socket that is
// O_NONBLOCK, from socket() or fcntl(), never spins: it returns EAGAIN at
// once, as the kernel's, and the program waits in poll(), which never
// spins either.
func TestShimSpinNeverOnNonBlockingSocket(t *testing.T) {
	client, lib := buildSpinClient(t)
	for _, mode := range []string{"nonblock", "fcntl"} {
		t.Run(mode, func(t *testing.T) {
			f := startFakeServer(t, 20*time.Millisecond)
			got := runSpinClient(t, f, client, lib, mode, 5, -1, "NLEMU_SPIN_US=10000", "NLEMU_SPIN_ALWAYS=1")
			if want := (spinStats{}); got != want {
				t.Errorf("%s: %+v, want no spin and no skip", mode, got)
			}
		})
	}
}

// TestShimSpinOff: NLEMU_SPIN_US=0, or a process with one
// CPU to run on, never spins and does not tell the server it spins (HELLO
// option bit 6).
func TestShimSpinOff(t *testing.T) {
	client, lib := buildSpinClient(t)
	ncpu, first := cpusAllowed(t)
	for _, tc := range []struct {
		name     string
		cpu      int
		env      string
		wantSpin bool
	}{
		{"NLEMU_SPIN_US=0", -1, "NLEMU_SPIN_US=0", false},
		{"one CPU", first, "NLEMU_SPIN_US=10000", false},
		{"default (50)", -1, "NLEMU_SPIN_US=", ncpu > 1},
		{"NLEMU_SPIN_US=50", -1, "NLEMU_SPIN_US=50", ncpu > 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFakeServer(t, 0)
			got := runSpinClient(t, f, client, lib, "blocking", 20, tc.cpu, tc.env, "NLEMU_SPIN_ALWAYS=1")
			if spun := got.Hits+got.Misses > 0; spun != tc.wantSpin {
				t.Errorf("%+v: spun %v, want %v", got, spun, tc.wantSpin)
			}
			if bit := f.opts.Load()&(1<<6) != 0; bit != tc.wantSpin {
				t.Errorf("HELLO options %#x: SPIN bit %v, want %v", f.opts.Load(), bit, tc.wantSpin)
			}
		})
	}
}

// TestShimSpinsForPollingServerOffItsCPU: told in the HELLO answer that
// the server polls on CPU p (1<<31 | p), the shim spins for its replies
// whatever the running count says (no NLEMU_SPIN_ALWAYS here), but only
// when it runs on another CPU than p: a client on the poller's CPU would
// hold the CPU the poller needs. A server that does not poll (word 0)
// leaves the choice to the running count, as before. NLEMU_POLL_AVOID=0
// keeps the client where it is pinned.
func TestShimSpinsForPollingServerOffItsCPU(t *testing.T) {
	client, lib := buildSpinClient(t)
	n, first := cpusAllowed(t)
	if n < 2 {
		t.Skipf("%d CPU: the shim never spins there (TestShimSpinOff)", n)
	}
	const waits = 50
	for _, tc := range []struct {
		name     string
		poll     uint32
		wantSpin bool
	}{
		{"polls on another CPU", 1<<31 | uint32(first+1), true},
		{"polls on the client's CPU", 1<<31 | uint32(first), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startPollServer(t, 0, tc.poll)
			// Pinned by the client itself, after the shim's constructor
			// saw two CPUs (pinned before, the shim would not spin at all).
			got := runSpinClient(t, f, client, lib, "blocking", waits, -1, "NLEMU_SPIN_US=10000", "NLEMU_SPIN_ALWAYS=", "NLEMU_POLL_AVOID=0", fmt.Sprintf("SPINCLIENT_CPU=%d", first))
			if spun := got.Hits+got.Misses > 0; spun != tc.wantSpin {
				t.Errorf("%+v: spun %v, want %v", got, spun, tc.wantSpin)
			}
			if tc.wantSpin && got.Skips != 0 && got.Misses == 0 {
				t.Errorf("%+v: skipped waits without a miss (the running count was asked)", got)
			}
		})
	}
}

// TestShimLeavesPollerCPU: told that the server polls on CPU p, a client
// whose affinity includes p leaves it (sched_setaffinity to the others)
// and then spins on every wait; with NLEMU_POLL_AVOID=0 it stays.
func TestShimLeavesPollerCPU(t *testing.T) {
	client, lib := buildSpinClient(t)
	n, first := cpusAllowed(t)
	if n < 2 {
		t.Skipf("%d CPU: nothing to leave for", n)
	}
	f := startPollServer(t, 0, 1<<31|uint32(first))
	const waits = 20
	got := runSpinClient(t, f, client, lib, "blocking", waits, -1, "NLEMU_SPIN_US=10000", "NLEMU_SPIN_ALWAYS=")
	if got.Hits+got.Misses == 0 || got.Skips != 0 && got.Misses == 0 {
		t.Errorf("%+v: want a spin on every wait off the poller's CPU", got)
	}
	if want := n - 1; len(f.cpus) != want || slices.Contains(f.cpus, fmt.Sprint(first)) {
		t.Errorf("client's CPUs at its end %v: want %d, without the poller's %d", f.cpus, want, first)
	}
	f = startPollServer(t, 0, 1<<31|uint32(first))
	runSpinClient(t, f, client, lib, "blocking", waits, -1, "NLEMU_SPIN_US=10000", "NLEMU_POLL_AVOID=0")
	if len(f.cpus) != n {
		t.Errorf("NLEMU_POLL_AVOID=0: client's CPUs at its end %v, want all %d", f.cpus, n)
	}
}
