package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// TestEnvAttachesPlainIPWithNoNlemuProcess: `eval "$(nlemu env -n NS)"`
// then plain `ip` commands reach namespace NS of the server, as through
// nlemu exec, and nothing reaches the kernel: the shell runs inside a
// throwaway kernel namespace whose rules must stay the kernel's defaults.
func TestEnvAttachesPlainIPWithNoNlemuProcess(t *testing.T) {
	ip := ipcFindIP()
	if ip == "" {
		kernelns.Unavailable(t, "iproute2 `ip` is not installed")
	}
	kns := kernelns.NewForTest(t, "nlemu-env")
	bin, err := ipcNlemuBinary()
	if err != nil {
		t.Fatal(err)
	}
	serve := startServe(t)
	if out, err := exec.Command(bin, "netns", "--socket", serve.sock, "add", "env-1").CombinedOutput(); err != nil {
		t.Fatalf("netns add: %v %s", err, out)
	}
	before, _, _ := kns.IP("rule", "show")
	script := `set -e
eval "$("$NLEMU" env --socket "$SOCK" -n env-1)"
test -n "$LD_PRELOAD"
ip rule add from 10.1.0.0/16 table 7 pref 123
ip -6 rule add from 2001:db8::/32 table 8 pref 124
ip rule show
ip -6 rule show
`
	cmd := exec.Command(ip, "netns", "exec", kns.Name(), "sh", "-c", script)
	cmd.Env = append(cmd.Environ(), "NLEMU="+bin, "SOCK="+serve.sock)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shell with nlemu env: %v\n%s", err, out)
	}
	want := "0:\tfrom all lookup local\n123:\tfrom 10.1.0.0/16 lookup 7\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n" +
		"0:\tfrom all lookup local\n124:\tfrom 2001:db8::/32 lookup 8\n32766:\tfrom all lookup main\n"
	if string(out) != want {
		t.Errorf("ip through nlemu env printed\n%s\nwant\n%s", out, want)
	}
	after, _, _ := kns.IP("rule", "show")
	if after != before || strings.Contains(after, "123:") {
		t.Errorf("the kernel namespace's rules changed:\nbefore\n%s\nafter\n%s", before, after)
	}

	// A missing namespace is one line and exit 1, and prints no assignments.
	miss := exec.Command(bin, "env", "--socket", serve.sock, "-n", "nope")
	var stdout, stderr strings.Builder
	miss.Stdout, miss.Stderr = &stdout, &stderr
	miss.Run()
	if code := miss.ProcessState.ExitCode(); code != 1 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("nlemu env -n nope: exit %d, stdout %q, stderr %q; want 1, nothing, one line", code, stdout.String(), stderr.String())
	}
}
