package integration

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// enobufsSock is the part of a netlink socket the ENOBUFS scenario uses,
// on the kernel (kernelns.Socket) or on nlemu (server.Client).
type enobufsSock struct {
	send       func([]byte) error
	recv       func() ([]byte, error)
	setTimeout func(time.Duration)
	sockopt    func(level, name int, v uint32) error
	isTimeout  func(error) bool
	close      func() error
}

func kernelEnobufsSock(t *testing.T, ns *kernelns.NS) enobufsSock {
	t.Helper()
	s, err := ns.Dial(kernelns.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return enobufsSock{
		send: s.Send, recv: s.Recv, sockopt: s.SetSockopt, close: s.Close,
		setTimeout: func(d time.Duration) { s.SetRecvTimeout(d) },
		isTimeout:  func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) },
	}
}

func nlemuEnobufsSock(t *testing.T, path string) enobufsSock {
	t.Helper()
	c, err := server.DialUnix(path, server.Options{Namespace: "enobufs"})
	if err != nil {
		t.Fatal(err)
	}
	return enobufsSock{
		send: c.Send, recv: c.Recv, sockopt: c.SetSockopt, close: c.Close,
		setTimeout: c.SetRecvTimeout,
		isTimeout:  func(err error) bool { return errors.Is(err, server.ErrTimeout) },
	}
}

type enobufsCount struct {
	Notifications, ENOBUFS int
}

// enobufsScenario: a listener of the family's rule group with SO_RCVBUF
// rcvbuf (0: rmem_default) never reads while another socket adds n rules,
// each acknowledged; then the listener reads everything it got.
func enobufsScenario(t *testing.T, dial func() enobufsSock, family uint8, rcvbuf int, src bool, n int) enobufsCount {
	t.Helper()
	mon, req := dial(), dial()
	defer mon.close()
	defer req.close()
	if rcvbuf > 0 {
		if err := mon.sockopt(syscall.SOL_SOCKET, syscall.SO_RCVBUF, uint32(rcvbuf)); err != nil {
			t.Fatal(err)
		}
	}
	group := uint32(rtnl.RTNLGRP_IPV4_RULE)
	if family == rtnl.AF_INET6 {
		group = rtnl.RTNLGRP_IPV6_RULE
	}
	if err := mon.sockopt(rtnl.SOL_NETLINK, rtnl.NETLINK_ADD_MEMBERSHIP, group); err != nil {
		t.Fatal(err)
	}
	req.setTimeout(5 * time.Second)
	for i := 0; i < n; i++ {
		h := T.Hdr{Family: family, Table: 100, Action: rtnl.FR_ACT_TO_TBL}
		attrs := []T.Attr{T.Pref(uint32(1000 + i))}
		switch {
		case src && family == rtnl.AF_INET:
			h.SrcLen = 32
			attrs = append(attrs, T.BE32(rtnl.FRA_SRC, 0x0a000000+uint32(i)))
		case src:
			h.SrcLen = 128
			attrs = append(attrs, T.Addr(rtnl.FRA_SRC, "2001:db8::"+strconv.FormatUint(uint64(i), 16)))
		}
		if err := req.send(T.Msg(rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_CREATE|rtnl.NLM_F_ACK, uint32(i+1), T.Body(h, attrs...))); err != nil {
			t.Fatal(err)
		}
		b, err := req.recv()
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if a := T.ParseAck(rtnl.SplitDatagram(b)[0]); a.Errno != 0 {
			t.Fatalf("add %d: %v", i, a)
		}
	}
	var r enobufsCount
	mon.setTimeout(300 * time.Millisecond)
	for {
		b, err := mon.recv()
		switch {
		case err != nil && mon.isTimeout(err):
			return r
		case errors.Is(err, syscall.ENOBUFS):
			r.ENOBUFS++
		case err != nil:
			t.Fatal(err)
		default:
			for _, m := range rtnl.SplitDatagram(b) {
				if m.Header.Type == rtnl.RTM_NEWRULE {
					r.Notifications++
				}
			}
		}
	}
}

// TestENOBUFSAfterKernelCount: a listener that never reads during a batch of
// 3,000 rule adds gets as many notifications as the kernel queues for it
// (256 for the default 212992-byte buffer: 832 bytes of truesize each) and
// then one ENOBUFS, for IPv4 and IPv6 rules, the default and set receive
// buffers, over the Unix socket transport (Go client) and through the shim
// (shim_prog's `enobufs` listener, SO_RCVBUF 1). Before nlemu charged the
// kernel's truesize and counted what sits unread in the Unix socket, it
// delivered all 3,000 without ENOBUFS.
func TestENOBUFSAfterKernelCount(t *testing.T) {
	const n = 3000
	cases := []struct {
		name   string
		family uint8
		rcvbuf int
		src    bool
	}{
		{"v4/default", rtnl.AF_INET, 0, false},
		{"v4/rcvbuf=4096", rtnl.AF_INET, 4096, false},
		{"v4/rcvbuf=1MiB", rtnl.AF_INET, 1 << 20, false}, // capped by rmem_max on both
		{"v6/default", rtnl.AF_INET6, 0, false},
		{"v6/src/default", rtnl.AF_INET6, 0, true}, // 80-byte messages: 1280 each
		{"v6/src/rcvbuf=32768", rtnl.AF_INET6, 32768, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kns := kernelns.NewForTest(t, "nlemu-enobufs") // nlemu-*: CI checks none is left
			kernel := enobufsScenario(t, func() enobufsSock { return kernelEnobufsSock(t, kns) }, tc.family, tc.rcvbuf, tc.src, n)

			srv := server.New(server.Config{})
			defer srv.Close()
			if err := srv.Namespaces().Add("enobufs"); err != nil {
				t.Fatal(err)
			}
			l, err := srv.ListenUnix(filepath.Join(t.TempDir(), "s.sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			nlemu := enobufsScenario(t, func() enobufsSock { return nlemuEnobufsSock(t, l.Path()) }, tc.family, tc.rcvbuf, tc.src, n)
			t.Logf("kernel %+v", kernel)
			if kernel.ENOBUFS == 0 && tc.rcvbuf < 1<<20 {
				t.Fatalf("the kernel never overran: %+v", kernel)
			}
			if d := cmp.Diff(kernel, nlemu); d != "" {
				t.Errorf("(-kernel +nlemu):\n%s", d)
			}
		})
	}

	// The requester itself never reads its ACKs: netlink_ack() unicasts
	// each without waiting (netlink_attachskb() with timeo 0), so the
	// receive buffer fills with ACKs of 832 bytes of truesize and the rest
	// are dropped with one ENOBUFS. Over the Unix socket the server must
	// keep reading requests all the while.
	t.Run("acks", func(t *testing.T) {
		kns := kernelns.NewForTest(t, "nlemu-enobufs")
		kernel := enobufsAcks(t, kernelEnobufsSock(t, kns), kernelEnobufsSock(t, kns), n)
		srv := server.New(server.Config{})
		defer srv.Close()
		if err := srv.Namespaces().Add("enobufs"); err != nil {
			t.Fatal(err)
		}
		l, err := srv.ListenUnix(filepath.Join(t.TempDir(), "s.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		nlemu := enobufsAcks(t, nlemuEnobufsSock(t, l.Path()), nlemuEnobufsSock(t, l.Path()), n)
		t.Logf("kernel %+v", kernel)
		if d := cmp.Diff(kernel, nlemu); d != "" {
			t.Errorf("ACKs (-kernel +nlemu):\n%s", d)
		}
	})

	t.Run("shim", func(t *testing.T) {
		kns := kernelns.NewForTest(t, "nlemu-enobufs") // nlemu-*: CI checks none is left
		f := newShimFixture(t)
		const rules = 1500
		kernel := shimEnobufs(t, f, "", func() {
			s := kernelEnobufsSock(t, kns)
			defer s.close()
			s.setTimeout(5 * time.Second)
			for i := 0; i < rules; i++ {
				s.send(shimNewRule(uint32(i+1), uint32(1+i), uint32(1+i)))
				if _, err := s.recv(); err != nil {
					t.Fatal(err)
				}
			}
		}, kns.Name())
		ns := f.ns(t)
		nlemu := shimEnobufs(t, f, ns, func() { f.shimAddRules(t, ns, 1, rules) }, "")
		if kernel.ENOBUFS != 1 {
			t.Fatalf("kernel: %+v", kernel)
		}
		if d := cmp.Diff(kernel, nlemu); d != "" {
			t.Errorf("shim_prog enobufs (-kernel +nlemu):\n%s", d)
		}
	})
}

// shimEnobufs runs shim_prog's enobufs listener under the shim in nlemu
// namespace ns, or natively in kernel namespace kns, and calls add while
// the listener does not read.
func shimEnobufs(t *testing.T, f *shimFixture, ns string, add func(), kns string) enobufsCount {
	t.Helper()
	var cmd *exec.Cmd
	if kns != "" {
		cmd = exec.Command("ip", "netns", "exec", kns, f.prog, "enobufs")
	} else {
		cmd = exec.Command(f.prog, "enobufs")
		cmd.Env = f.env(ns)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := shimWatchdog(t, cmd, 60*time.Second)
	defer done()
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("shim_prog enobufs: %q %v\n%s", line, err, stderr.String())
	}
	add()
	io.WriteString(stdin, "go\n")
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shim_prog enobufs: %v\n%s\n%s", err, rest, stderr.String())
	}
	kv := shimKV(string(rest))
	e, _ := strconv.Atoi(kv["enobufs"])
	notes, _ := strconv.Atoi(kv["notifications"])
	return enobufsCount{Notifications: notes, ENOBUFS: e}
}

// enobufsAcks sends n acknowledged rule adds on s without reading, waits
// until all are in effect (a rule dump on other shows them: the kernel
// handles each inside sendmsg(), nlemu's server after it has read the
// request from the Unix socket), then counts the ACKs (as Notifications)
// and ENOBUFS that s gets.
func enobufsAcks(t *testing.T, s, other enobufsSock, n int) enobufsCount {
	t.Helper()
	defer s.close()
	defer other.close()
	for i := 0; i < n; i++ {
		h := T.Hdr{Family: rtnl.AF_INET, Table: 100, Action: rtnl.FR_ACT_TO_TBL}
		if err := s.send(T.Msg(rtnl.RTM_NEWRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_CREATE|rtnl.NLM_F_ACK, uint32(i+1), T.Body(h, T.Pref(uint32(1000+i))))); err != nil {
			t.Fatal(err)
		}
	}
	other.setTimeout(5 * time.Second)
	for try := 0; enobufsRuleCount(t, other) != n+3; try++ {
		if try == 1000 {
			t.Fatalf("the %d rules never all appeared", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var r enobufsCount
	s.setTimeout(300 * time.Millisecond)
	for {
		b, err := s.recv()
		switch {
		case err != nil && s.isTimeout(err):
			return r
		case errors.Is(err, syscall.ENOBUFS):
			r.ENOBUFS++
		case err != nil:
			t.Fatal(err)
		default:
			for _, m := range rtnl.SplitDatagram(b) {
				if m.Header.Type == rtnl.NLMSG_ERROR {
					r.Notifications++
				}
			}
		}
	}
}

// enobufsRuleCount dumps the IPv4 rules on s and counts them.
func enobufsRuleCount(t *testing.T, s enobufsSock) int {
	t.Helper()
	if err := s.send(T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 1, T.Body(T.Hdr{Family: rtnl.AF_INET}))); err != nil {
		t.Fatal(err)
	}
	rules := 0
	for {
		b, err := s.recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch m.Header.Type {
			case rtnl.RTM_NEWRULE:
				rules++
			case rtnl.NLMSG_DONE:
				return rules
			}
		}
	}
}
