package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/internal/cpuaffinity"
	"github.com/nlemu/nlemu/rtnl"
	T "github.com/nlemu/nlemu/rtnl/rtnltest"
)

// withSpin sets the busy reader's spin window for the test, spinning
// whatever else runs on the machine (spinAlways), and puts both back after.
func withSpin(t *testing.T, d time.Duration) {
	t.Helper()
	oldSpin, oldAlways := busySpin.Load(), spinAlways.Load()
	busySpin.Store(d)
	spinAlways.Store(true)
	t.Cleanup(func() {
		busySpin.Store(oldSpin)
		spinAlways.Store(oldAlways)
	})
}

// spinClient is a raw connection whose HELLO carries opts (helloOptSpin:
// the client says it spins for its replies, as the shim does).
type spinClient struct {
	t  *testing.T
	uc *net.UnixConn
}

func dialSpin(t *testing.T, sock string, opts uint32) *spinClient {
	t.Helper()
	uc := rawConn(t, sock)
	t.Cleanup(func() { uc.Close() })
	uc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := uc.Write(helloMsg("default", opts)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := uc.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if m := rtnl.SplitDatagram(buf[:n]); len(m) != 1 || uint16(m[0].Header.Type) != rtnl.NLEMU_HELLO {
		t.Fatalf("HELLO answered with % x", buf[:n])
	}
	return &spinClient{t: t, uc: uc}
}

// roundTrip sends request i (ruleRequest) and returns its ACK, rendered.
func (c *spinClient) roundTrip(i, pref uint32) string {
	c.t.Helper()
	if _, err := c.uc.Write(ruleRequest(i, pref)); err != nil {
		c.t.Fatal(err)
	}
	buf := make([]byte, 65536)
	n, err := c.uc.Read(buf)
	if err != nil {
		c.t.Fatal(err)
	}
	m := rtnl.SplitDatagram(buf[:n])
	if len(m) != 1 || m[0].Header.Type != rtnl.NLMSG_ERROR {
		c.t.Fatalf("request %d answered with % x", i, buf[:n])
	}
	a := T.ParseAck(m[0])
	return fmt.Sprintf("ack seq=%d errno=%d", m[0].Header.Sequence, a.Errno)
}

// spins is the number of waits a busy reader spun (hit or miss).
func spins() uint64 { return busySpinHits.Load() + busySpinMisses.Load() }

// TestBusySpinOnlyForClientThatSpins: a busy reader polls for the next
// request only for a client whose HELLO says it spins for its replies
// (helloOptSpin): a client blocked in its receive is woken by the reply
// wherever there is room, and a reader spinning there takes the room. Both
// are served in busy mode and every answer is the request's.
func TestBusySpinOnlyForClientThatSpins(t *testing.T) {
	withSpin(t, 10*time.Millisecond)
	for _, tc := range []struct {
		name      string
		opts      uint32
		wantSpins bool
	}{
		{"blocking client", 0, false},
		{"spinning client", helloOptSpin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, sock := listenTest(t)
			waitIdle(t)
			c := dialSpin(t, sock, tc.opts)
			busy0, spins0 := busyReads.Load(), spins()
			const n = 100
			for i := range uint32(n) {
				if got, want := c.roundTrip(i, 100), fmt.Sprintf("ack seq=%d errno=0", i); got != want {
					t.Fatalf("request %d: %s, want %s", i, got, want)
				}
			}
			// Most requests must be read in busy mode, where the spin
			// lives; not all: on a loaded machine a gap over the busy
			// reader's 20 ms idle timeout sends the connection back to
			// its loop for a while (seen: 96 of 100).
			if b := busyReads.Load() - busy0; b < n/2 {
				t.Fatalf("%d of %d requests read in busy mode", b, n)
			}
			if got := spins() - spins0; (got > 0) != tc.wantSpins {
				t.Errorf("%d requests: the reader spun %d times, want spins: %v", n, got, tc.wantSpins)
			}
		})
	}
}

// TestBusySpinFindsPromptRequests: with a window far longer than the
// client takes between a reply and its next request, most waits end in the
// spin (a hit: the request read with no wake-up) and the back-off stays
// low.
func TestBusySpinFindsPromptRequests(t *testing.T) {
	withSpin(t, 100*time.Millisecond)
	_, sock := listenTest(t)
	waitIdle(t)
	c := dialSpin(t, sock, helloOptSpin)
	hits0, misses0 := busySpinHits.Load(), busySpinMisses.Load()
	const n = 200
	for i := range uint32(n) {
		if got, want := c.roundTrip(i, 100), fmt.Sprintf("ack seq=%d errno=0", i); got != want {
			t.Fatalf("request %d: %s, want %s", i, got, want)
		}
	}
	hits, misses := busySpinHits.Load()-hits0, busySpinMisses.Load()-misses0
	t.Logf("%d requests: %d spins found the request, %d did not", n, hits, misses)
	if hits < n/2 {
		t.Errorf("%d requests: %d spins found the request (%d missed), want at least %d", n, hits, misses, n/2)
	}
}

// TestBusySpinBlocksWhenIdle: a reader whose client goes quiet spins once,
// misses, and blocks (the miss counted), then leaves busy mode on its idle
// timeout like a reader that never spun (no thread kept); a request sent
// long after the window is still read and answered, in order.
func TestBusySpinBlocksWhenIdle(t *testing.T) {
	// A window far longer than the test's client takes between requests,
	// even on a loaded machine (CI runs packages in parallel): the waits
	// in the loop below hit, so the last one spins (no back-off skip) and
	// misses, and that miss comes long after misses0 is read (with 5 ms a
	// test goroutine descheduled for longer read it after the miss and
	// waited for another forever).
	withSpin(t, 200*time.Millisecond)
	_, sock := listenTest(t)
	waitIdle(t)
	c := dialSpin(t, sock, helloOptSpin)
	for i := range uint32(20) {
		c.roundTrip(i, 100)
	}
	misses0 := busySpinMisses.Load()
	if busyThreads.Load() == 0 {
		t.Fatal("the connection is not in busy mode after 20 requests")
	}
	// The reader spins after the last answer, finds nothing and blocks.
	waitFor(t, "the reader's spin to miss", func() bool { return busySpinMisses.Load() > misses0 })
	// Then the idle timeout gives the thread back.
	waitIdle(t)
	if got := busySpinMisses.Load() - misses0; got != 1 {
		t.Errorf("an idle connection: %d misses, want 1 (one spin, then the blocking receive)", got)
	}
	if got, want := c.roundTrip(20, 100), "ack seq=20 errno=0"; got != want {
		t.Fatalf("after idling: %s, want %s", got, want)
	}
}

// TestBusySpinKeepsOffClientCPU: while a busy reader spins its thread may
// run on every CPU but its client's (awayPin), so that a client woken by
// the reply is not placed behind the spinner (wake_affine()); the thread's
// own affinity is given back when it leaves busy mode.
//
// In a child process: which CPU the client runs on is stubbed (clientCPU)
// and the idle timeout lengthened before any connection is served.
func TestBusySpinKeepsOffClientCPU(t *testing.T) {
	cpus := loopCPUs()
	if len(cpus) < 2 {
		t.Skipf("%d CPU: nothing to keep off (a spin needs two)", len(cpus))
	}
	if !inLoopSchedChild(t, "TestBusySpinKeepsOffClientCPU", "NLEMU_LOOP_SPIN_US=5000", "NLEMU_SPIN_ALWAYS=1") {
		return
	}
	cpu := cpus[0]
	clientCPU = func(int32) int { return cpu }
	busyIdle = 2 * time.Second // the thread stays busy while it is looked at
	_, sock := listenTest(t)
	waitIdle(t)
	// Threads on exactly the CPUs but the client's before: a pinned loop
	// may be one of them.
	want := cpuList(cpus[1:])
	kept := func() int {
		n := 0
		for _, s := range threadSched(t) {
			if strings.HasSuffix(s, " cpus "+want) {
				n++
			}
		}
		return n
	}
	before := kept()
	c := dialSpin(t, sock, helloOptSpin)
	pinned0, misses0 := awayPinned.Load(), busySpinMisses.Load()
	for i := range uint32(20) {
		c.roundTrip(i, 100)
	}
	waitFor(t, "the reader's spin to miss", func() bool { return busySpinMisses.Load() > misses0 })
	if awayPinned.Load() == pinned0 {
		t.Fatal("the spinning reader was never moved off its client's CPU")
	}
	if got := kept(); got != before+1 {
		t.Errorf("while the reader spins: %d threads on CPUs %s (all but the client's %d), want %d: %v", got, want, cpu, before+1, threadSched(t))
	}
	waitIdle(t)
	if got := kept(); got != before {
		t.Errorf("after busy mode: %d threads on CPUs %s, want %d (the reader's affinity given back): %v", got, want, before, threadSched(t))
	}
}

// cpuList is the kernel's Cpus_allowed_list rendering of cpus (sorted):
// ranges "a-b" joined by commas.
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// TestSpinStateBackoffMatchesReference: the adaptive back-off against an
// obvious model kept as a list of what each wait does: after a miss at
// level L (L raised by one, at most spinMaxLevel) the next 2^L-1 waits do
// not spin; a hit lowers L by one.
func TestSpinStateBackoffMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results string // per wait that spins: h (hit) or m (miss)
	}{
		{"all hits", "hhhhhhhh"},
		{"all misses", "mmmmmmmmmmmmmm"},
		{"alternating", "mhmhmhmhmh"},
		{"misses then hits", "mmmmmhhhhhhh"},
		{"hits then misses", "hhhmmmmmmmmmmmmm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s spinState
			var got []string
			level, skip := 0, 0
			var want []string
			for _, r := range tc.results {
				// the model
				for skip > 0 {
					want = append(want, "skip")
					skip--
				}
				want = append(want, "spin")
				if r == 'h' {
					level = max(level-1, 0)
				} else {
					level = min(level+1, spinMaxLevel)
					skip = 1<<level - 1
				}
				// the implementation
				for !s.want() {
					got = append(got, "skip")
				}
				got = append(got, "spin")
				if r == 'h' {
					s.hit()
				} else {
					s.miss()
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("waits (-model +spinState):\n%s", d)
			}
		})
	}
}

// TestLoadavgRunning: the running count out of /proc/loadavg lines, and
// -1 for anything else; the live file counts at least this test.
func TestLoadavgRunning(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{
		{"0.50 0.40 0.30 3/312 4567\n", 3},
		{"12.01 8.00 4.10 17/1203 99999", 17},
		{"0.00 0.00 0.00 0/0 1", 0},
		{"0.50 0.40 0.30 3 4567", -1},
		{"0.50 0.40 0.30", -1},
		{"0.50 0.40 0.30 x/312 4567", -1},
		{"", -1},
	} {
		if got := loadavgRunning([]byte(tc.line)); got != tc.want {
			t.Errorf("loadavgRunning(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
	if n := runningTasks(); n < 1 {
		t.Errorf("runningTasks() = %d, want at least 1 (the caller)", n)
	}
}

// TestBusySpinOffOnOneCPU: a server started with one CPU to run on never
// spins (the spin would only delay the client it waits for), whatever
// NLEMU_LOOP_SPIN_US asks; NLEMU_LOOP_SPIN_US=0 turns it off anywhere, and
// unset it is defaultBusySpin (50 µs).
func TestBusySpinOffOnOneCPU(t *testing.T) {
	if v := os.Getenv("NLEMU_TEST_SPIN_CHILD"); v != "" {
		fmt.Printf("busySpin=%d\n", busySpin.Load().Microseconds())
		return
	}
	cpus := loopCPUs()
	if len(cpus) == 0 {
		t.Fatal("no CPU in the affinity mask")
	}
	for _, tc := range []struct {
		name string
		one  bool
		env  string
		want string
	}{
		{"one CPU", true, "NLEMU_LOOP_SPIN_US=70", "busySpin=0"},
		{"all CPUs, 70", false, "NLEMU_LOOP_SPIN_US=70", map[bool]string{true: "busySpin=70", false: "busySpin=0"}[len(cpus) > 1]},
		{"all CPUs, off", false, "NLEMU_LOOP_SPIN_US=0", "busySpin=0"},
		{"all CPUs, default", false, "NLEMU_LOOP_SPIN_US=", map[bool]string{true: "busySpin=50", false: "busySpin=0"}[len(cpus) > 1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBusySpinOffOnOneCPU$", "-test.count=1")
			cmd.Env = append(os.Environ(), "NLEMU_TEST_SPIN_CHILD=1", tc.env)
			cpu := -1 // every CPU
			if tc.one {
				cpu = cpus[0]
			}
			out, err := cpuaffinity.CombinedOutput(cmd, cpu)
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(out, tc.want+"\n") {
				t.Errorf("child with %s: %q, want %s", tc.env, out, tc.want)
			}
		})
	}
}
