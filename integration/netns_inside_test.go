package integration

// Network namespaces made inside a program under `nlemu exec` (issue 11
// item 2): each kernel namespace a thread is in maps to its own nlemu
// namespace, decided at socket() time — the start namespace to -n, one
// with a /run/netns entry to the nlemu namespace of that name, any other
// to a fresh "netns-INODE" — and the real kernel namespace stays empty.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/client"
	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/server"
)

// nlemuRulePrefs dumps the IPv4 rule priorities of nlemu namespace ns
// over the Go API.
func nlemuRulePrefs(t *testing.T, sock, ns string) []uint32 {
	t.Helper()
	s, err := client.Dial(sock, ns)
	if err != nil {
		t.Fatalf("namespace %q: %v", ns, err)
	}
	c := netlink.NewConn(s, s.PortID())
	defer c.Close()
	b, _ := (&rtnetlink.RuleMessage{Family: unix.AF_INET}).MarshalBinary()
	msgs, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_GETRULE, Flags: netlink.Request | netlink.Dump}, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	var prefs []uint32
	for _, m := range msgs {
		var r rtnetlink.RuleMessage
		if err := r.UnmarshalBinary(m.Data); err != nil {
			t.Fatal(err)
		}
		var p uint32
		if r.Attributes.Priority != nil {
			p = *r.Attributes.Priority
		}
		prefs = append(prefs, p)
	}
	return prefs
}

// kernelRules is `ip rule show` in the kernel namespace of /proc/PID (or a
// named one with -n), run without the shim.
func kernelRules(t *testing.T, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

func buildUnshareRule(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is needed for the dynamic test program: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "unshare_rule")
	if out, err := exec.Command("gcc", "-O2", "-Wall", "-o", bin, "testdata/netnsinside/unshare_rule.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestUnshareInsideProgramGetsItsOwnNamespace: a dynamic program under
// `nlemu exec` (the shim, and the seccomp supervisor with --seccomp) that
// calls unshare(CLONE_NEWNET) and adds a rule: the rule lands in the nlemu
// namespace "netns-INODE" of its new kernel namespace (a second socket
// sees it), the default namespace is untouched, the kernel namespace the
// program made has no such rule, and the guard namespace it started in is
// unchanged. The namespace is ephemeral: listed as such while the
// program's sockets are open, deleted when they close.
func TestUnshareInsideProgramGetsItsOwnNamespace(t *testing.T) {
	if os.Getuid() != 0 {
		kernelns.Unavailable(t, "unshare(CLONE_NEWNET) needs root here")
	}
	bin := buildUnshareRule(t)
	nlemuBin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		flags     []string
		ephemeral bool // what NETNS_EPHEMERAL says of it
	}{
		{"shim", nil, true},
		{"seccomp", []string{"--seccomp"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServe(t)
			g := newHostGuard(t)
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			defer cancel()
			argv := append(append([]string{nlemuBin, "exec"}, tc.flags...), "-n", "default", "--", bin)
			cmd := g.command(ctx, ipcFindIP(), argv...)
			cmd.Env = append(os.Environ(), "NLEMU_SOCKET="+srv.sock)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer stdin.Close()
			var lines []string
			var ino, pid string
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ready" {
					ino, pid = f[1], f[2]
					break
				}
				lines = append(lines, sc.Text())
			}
			if ino == "" {
				t.Fatalf("the program never got ready: %q\n%s", lines, stderr.String())
			}
			want := []string{"add: 0", "rule 0 table 255", "rule 77 table 77", "rule 32766 table 254", "rule 32767 table 253"}
			if !slices.Equal(lines, want) {
				t.Errorf("program output %q, want %q", lines, want)
			}
			name := "netns-" + ino
			if got := nlemuRulePrefs(t, srv.sock, name); !slices.Contains(got, 77) {
				t.Errorf("nlemu namespace %s has rules %v, want pref 77 among them", name, got)
			}
			if got := nlemuRulePrefs(t, srv.sock, "default"); slices.Contains(got, 77) {
				t.Errorf("the default namespace got the rule: %v", got)
			}
			if out := kernelRules(t, "nsenter", "--net=/proc/"+pid+"/ns/net", "ip", "rule", "show"); strings.Contains(out, "77") {
				t.Errorf("the program's kernel namespace got the rule:\n%s", out)
			}
			admin, err := server.DialUnix(srv.sock, server.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			eph, err := admin.NetnsEphemeral()
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(eph, name); got != tc.ephemeral {
				t.Errorf("%s ephemeral = %v, want %v (ephemeral: %q)", name, got, tc.ephemeral, eph)
			}
			// nlemu netns list marks it.
			list, err := exec.Command(nlemuBin, "netns", "list", "--socket", srv.sock).CombinedOutput()
			if err != nil {
				t.Fatalf("nlemu netns list: %v\n%s", err, list)
			}
			if mark := name + " (ephemeral)"; !slices.Contains(strings.Split(strings.TrimSpace(string(list)), "\n"), mark) {
				t.Errorf("nlemu netns list does not show %q:\n%s", mark, list)
			}
			stdin.Close()
			io.Copy(io.Discard, stdout)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("program: %v\n%s", err, stderr.String())
			}
			if !tc.ephemeral {
				return
			}
			waitNetnsGone(t, admin, name)
		})
	}
}

func waitNetnsGone(t *testing.T, admin *server.Client, name string) {
	t.Helper()
	for i := 0; ; i++ {
		list, err := admin.NetnsList()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(list, name) {
			return
		}
		// The server sees the program's hang-ups asynchronously; this
		// bound only catches a namespace that is never deleted.
		if i == 60000 {
			t.Fatalf("ephemeral namespace %s outlived its last socket: %q", name, list)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIPNetnsExecInsideMapsToNamedNamespace: `ip netns exec K ip rule add`
// under `nlemu exec -n default` (shim and seccomp) changes the nlemu
// namespace K — the one named like the /run/netns entry of the kernel
// namespace the inner ip runs in — created when missing and kept, and
// neither the kernel namespace K nor nlemu's default.
func TestIPNetnsExecInsideMapsToNamedNamespace(t *testing.T) {
	nlemuBin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{nil, {"--seccomp"}} {
		t.Run(fmt.Sprint(append([]string{"exec"}, flags...)), func(t *testing.T) {
			k := kernelns.NewForTest(t, "h-go")
			srv := startServe(t)
			g := newHostGuard(t)
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			defer cancel()
			argv := append(append([]string{nlemuBin, "exec"}, flags...), "-n", "default", "--",
				ipcFindIP(), "netns", "exec", k.Name(), ipcFindIP(), "rule", "add", "pref", "5", "table", "5")
			cmd := g.command(ctx, ipcFindIP(), argv...)
			cmd.Env = append(os.Environ(), "NLEMU_SOCKET="+srv.sock)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			if got := nlemuRulePrefs(t, srv.sock, k.Name()); !slices.Contains(got, 5) {
				t.Errorf("nlemu namespace %s has rules %v, want pref 5", k.Name(), got)
			}
			if got := nlemuRulePrefs(t, srv.sock, "default"); slices.Contains(got, 5) {
				t.Errorf("the default namespace got the rule: %v", got)
			}
			if out, _, _ := k.IP("rule", "show"); strings.Contains(out, "5:") && strings.Contains(out, "lookup 5") {
				t.Errorf("the kernel namespace %s got the rule:\n%s", k.Name(), out)
			}
		})
	}
}
