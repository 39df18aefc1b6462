package integration

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/integration/kernelns"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
	"github.com/nlemu/nlemu/server"
)

// permChildEnv makes the test binary a permission probe (permChild): it is
// re-executed as another user, which a test cannot become in-process.
const permChildEnv = "NLEMU_PERM_CHILD"

// nobody is the unprivileged uid and gid the probes run as.
const nobody = 65534

// permRequests are what the probe sends, one datagram each: changes
// (refused without privilege) and a dump (open to everyone).
func permRequests() [][]byte {
	if os.Getenv(permChildEnv+"_REQS") == "routeget" {
		// `ip route get 127.0.0.1` and its IPv6 twin, without RTA_UID:
		// inet_rtm_getroute() reports the caller's uid.
		return [][]byte{
			T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, 6, T.Body(T.Hdr{Family: rtnl.AF_INET, DstLen: 32}, T.Addr(rtnl.RTA_DST, "127.0.0.1"))),
			T.Msg(rtnl.RTM_GETROUTE, rtnl.NLM_F_REQUEST, 7, T.Body(T.Hdr{Family: rtnl.AF_INET6, DstLen: 128}, T.Addr(rtnl.RTA_DST, "::1"))),
		}
	}
	up := make([]byte, 16) // ifinfomsg: family 0, index 1, flags/change IFF_UP
	binary.NativeEndian.PutUint32(up[4:], 1)
	binary.NativeEndian.PutUint32(up[8:], unix.IFF_UP)
	binary.NativeEndian.PutUint32(up[12:], unix.IFF_UP)
	return [][]byte{
		T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, 1, T.Body(T.V4(5), T.Pref(100))),
		T.Msg(rtnl.RTM_DELRULE, T.DelFlags, 2, T.Body(T.Hdr{Family: rtnl.AF_INET6}, T.Pref(0))),
		T.Msg(rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 3, up),
		T.Msg(rtnl.RTM_NEWRULE, T.AddFlags, 4, T.Body(T.Hdr{Family: 99}, T.Pref(100))),
		T.Msg(rtnl.RTM_GETRULE, rtnl.NLM_F_REQUEST|rtnl.NLM_F_DUMP, 5, T.Body(T.Hdr{Family: rtnl.AF_INET})),
	}
}

// permSocket is what the probe talks to: a kernel socket or an nlemu one.
type permSocket interface {
	Send([]byte) error
	Recv() ([]byte, error)
}

// kernelSocket is a plain NETLINK_ROUTE socket in the current namespace.
type kernelSocket int

func (s kernelSocket) Send(b []byte) error {
	return unix.Sendto(int(s), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func (s kernelSocket) Recv() ([]byte, error) {
	buf := make([]byte, 65536)
	n, _, err := unix.Recvfrom(int(s), buf, 0)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// permChild runs the probe: each request's first answer in hex with the
// port id zeroed (it differs between any two sockets), one line each; for
// the dump, the number of rules.
func permChild(target string) {
	var s permSocket
	if target == "kernel" {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		}
		if err != nil {
			fmt.Println("socket:", err)
			os.Exit(1)
		}
		s = kernelSocket(fd)
	} else {
		c, err := server.DialUnix(target, server.Options{Namespace: os.Getenv(permChildEnv + "_NS")})
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		s = c
	}
	for _, req := range permRequests() {
		if err := s.Send(req); err != nil {
			fmt.Println("send:", err)
			os.Exit(1)
		}
		b, err := s.Recv()
		if err != nil {
			fmt.Println("recv:", err)
			os.Exit(1)
		}
		if req[4] == rtnl.RTM_GETRULE { // a dump: count its rules
			rules := 0
			for done := false; !done; {
				for _, m := range rtnl.SplitDatagram(b) {
					if m.Header.Type == rtnl.NLMSG_DONE {
						done = true
					} else {
						rules++
					}
				}
				if !done {
					if b, err = s.Recv(); err != nil {
						fmt.Println("recv:", err)
						os.Exit(1)
					}
				}
			}
			fmt.Printf("dump: %d rules\n", rules)
			continue
		}
		if len(b) >= 16 {
			clear(b[12:16])
		}
		fmt.Println(hex.EncodeToString(b))
	}
	os.Exit(0)
}

// publicCopy copies the test binary where another user can run it (the
// build directory is private).
func publicCopy(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nlemu-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin = filepath.Join(dir, "probe")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// asNobody prefixes a command with setpriv to run it as uid/gid 65534 with
// the given supplementary groups.
func asNobody(groups string, args ...string) []string {
	g := "--clear-groups"
	if groups != "" {
		g = "--groups=" + groups
	}
	return append([]string{"setpriv", fmt.Sprintf("--reuid=%d", nobody), fmt.Sprintf("--regid=%d", nobody), g, "--"}, args...)
}

func runProbe(t *testing.T, env []string, argv []string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// TestUnprivilegedChangesGetEPERMLikeKernel: any local user could add and
// delete rules in another user's namespaces, and add or delete namespaces
// (the socket is 0666 and nothing checked the caller). A peer that is not
// uid 0, the server's uid or a member of --allow-group now gets the
// kernel's answer to an unprivileged `ip rule add` — EPERM, the same bytes,
// before the family is looked at — for every change, while dumps stay open.
func TestUnprivilegedChangesGetEPERMLikeKernel(t *testing.T) {
	if os.Getuid() != 0 {
		kernelns.Unavailable(t, "becoming uid %d needs root", nobody)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		kernelns.Unavailable(t, "setpriv (util-linux) is not installed: %v", err)
	}
	dir, bin := publicCopy(t)
	kns := kernelns.NewForTest(t, "nlemu-perm")

	srv := server.New(server.Config{AllowGroups: []uint32{4242}})
	defer srv.Close()
	sock := filepath.Join(dir, "nlemu.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"perm-a", "perm-b"} {
		if err := srv.Namespaces().Add(ns); err != nil {
			t.Fatal(err)
		}
	}

	kernel := runProbe(t, []string{permChildEnv + "=kernel"},
		append([]string{"ip", "netns", "exec", kns.Name()}, asNobody("", bin)...))
	nlemu := runProbe(t, []string{permChildEnv + "=" + sock, permChildEnv + "_NS=perm-a"}, asNobody("", bin))
	if diff := cmp.Diff(kernel, nlemu); diff != "" {
		t.Errorf("unprivileged peer: answers differ (-kernel +nlemu):\n%s", diff)
	}
	if !strings.Contains(kernel, "ffffffff") { // -EPERM, as a check of the probe itself
		t.Errorf("the kernel did not refuse the unprivileged changes:\n%s", kernel)
	}
	if ns, _ := srv.Namespaces().Get("perm-a"); ns.Rules(rtnl.AF_INET).Len() != 3 || ns.Rules(rtnl.AF_INET6).Len() != 2 {
		t.Errorf("perm-a has %d IPv4 and %d IPv6 rules after refused changes, want the defaults (3, 2)",
			ns.Rules(rtnl.AF_INET).Len(), ns.Rules(rtnl.AF_INET6).Len())
	}

	// A member of an allowed group may change state; the same requests
	// then succeed (the family-99 one fails as it does for root).
	allowed := runProbe(t, []string{permChildEnv + "=" + sock, permChildEnv + "_NS=perm-b"}, asNobody("4242", bin))
	root := runProbe(t, []string{permChildEnv + "=kernel"}, []string{"ip", "netns", "exec", kns.Name(), bin})
	if diff := cmp.Diff(root, allowed); diff != "" {
		t.Errorf("allowed group member: answers differ from root's on the kernel (-kernel +nlemu):\n%s", diff)
	}

	// Namespace changes follow the same rule; listing is open.
	nlemuBin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "nlemu")
	if out, err := exec.Command("cp", nlemuBin, pub).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for _, c := range []struct {
		groups, sub string
		code        int
	}{
		{"", "add", 1}, {"", "del", 1}, {"", "list", 0}, {"4242", "add", 0}, {"4242", "del", 0},
	} {
		args := []string{pub, "netns", "--socket", sock, c.sub}
		if c.sub != "list" {
			args = append(args, "perm-c")
		}
		cmd := exec.Command("setpriv", asNobody(c.groups, args...)[1:]...)
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != c.code {
			t.Errorf("groups %q: nlemu netns %s: exit %d, want %d\n%s", c.groups, c.sub, got, c.code, out)
		}
		if c.code == 1 && (strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "needs uid 0")) {
			t.Errorf("groups %q: nlemu netns %s: want one line saying who may, got %q", c.groups, c.sub, out)
		}
	}
}

// TestRouteGetReportsCallersUID: a route get without RTA_UID looks up, and
// reports, the requester's uid (inet_rtm_getroute(): current_uid()); nlemu
// said uid 0 for everyone. The probe runs as uid 65534 against a kernel
// namespace and against nlemu, both with lo up, and the replies must be the
// same bytes (uid 65534 in the IPv4 reply's RTA_UID).
func TestRouteGetReportsCallersUID(t *testing.T) {
	if os.Getuid() != 0 {
		kernelns.Unavailable(t, "becoming uid %d needs root", nobody)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		kernelns.Unavailable(t, "setpriv (util-linux) is not installed: %v", err)
	}
	dir, bin := publicCopy(t)
	kns := kernelns.NewForTest(t, "nlemu-uid")
	if out, err := exec.Command("ip", "-n", kns.Name(), "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("kernel lo up: %v %s", err, out)
	}
	srv := server.New(server.Config{})
	defer srv.Close()
	sock := filepath.Join(dir, "nlemu.sock")
	if _, err := srv.ListenUnix(sock); err != nil {
		t.Fatal(err)
	}
	if err := srv.Namespaces().Add("uid-a"); err != nil {
		t.Fatal(err)
	}
	c, err := srv.Dial(server.Options{Namespace: "uid-a"})
	if err != nil {
		t.Fatal(err)
	}
	up := make([]byte, 16)
	binary.NativeEndian.PutUint32(up[4:], 1)
	binary.NativeEndian.PutUint32(up[8:], unix.IFF_UP)
	binary.NativeEndian.PutUint32(up[12:], unix.IFF_UP)
	if err := c.Send(T.Msg(rtnl.RTM_NEWLINK, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK, 1, up)); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Recv(); err != nil || T.ParseAck(rtnl.SplitDatagram(b)[0]).Errno != 0 {
		t.Fatalf("nlemu lo up: %v %x", err, b)
	}
	c.Close()

	env := permChildEnv + "_REQS=routeget"
	kernel := runProbe(t, []string{permChildEnv + "=kernel", env},
		append([]string{"ip", "netns", "exec", kns.Name()}, asNobody("", bin)...))
	nlemu := runProbe(t, []string{permChildEnv + "=" + sock, permChildEnv + "_NS=uid-a", env}, asNobody("", bin))
	if diff := cmp.Diff(kernel, nlemu); diff != "" {
		t.Errorf("route get as uid %d: replies differ (-kernel +nlemu):\n%s", nobody, diff)
	}
	// RTA_UID (8, 0, 0x19, 0) carrying 65534 (fe ff 00 00), as a check of
	// the probe itself: in the IPv4 reply only (rt6_fill_node() has no
	// RTA_UID).
	if want := "08001900feff0000"; strings.Count(kernel, want) != 1 {
		t.Errorf("the kernel's replies do not carry uid %d:\n%s", nobody, kernel)
	}
}

func init() {
	if target := os.Getenv(permChildEnv); target != "" {
		permChild(target)
	}
}
