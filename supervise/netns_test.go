package supervise

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// fakeRunNetns points runNetns at a fresh directory for the test. Its
// entries are regular files standing for namespace files: the map matches
// entries by device and inode only, and a hard link made later is a
// namespace named later (ip netns add). The directory's mtime is set by
// hand after each change (touch), to distinct times in the past: a change
// within one tick of the coarse clock would otherwise leave it as it was.
func fakeRunNetns(t *testing.T) (dir, outside string, touch func()) {
	t.Helper()
	base := t.TempDir()
	dir, outside = filepath.Join(base, "netns"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := runNetns
	runNetns = dir
	t.Cleanup(func() { runNetns = old })
	when := time.Now().Add(-time.Hour)
	touch = func() {
		when = when.Add(time.Second)
		if err := os.Chtimes(dir, when, when); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside, touch
}

func mkfile(t *testing.T, path string) nsID {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := nsOf(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func named(n string) nsTarget { return nsTarget{name: n, opts: rtnl.NLEMU_HELLO_CREATE} }

func ephemeral(id nsID) nsTarget {
	return nsTarget{name: "netns-" + strconv.FormatUint(id.ino, 10), opts: rtnl.NLEMU_HELLO_CREATE | rtnl.NLEMU_HELLO_EPHEMERAL}
}

// TestNsMapCacheFollowsRunNetns: the cached /run/netns scan answers
// socket() calls while the directory is unchanged (one scan for many
// lookups, named and unnamed namespaces alike) and goes stale when it
// changes: a namespace named after the first socket (added), its entry
// renamed, removed, each answered as a fresh scan would.
func TestNsMapCacheFollowsRunNetns(t *testing.T) {
	dir, outside, touch := fakeRunNetns(t)
	a := mkfile(t, filepath.Join(dir, "a"))
	b := mkfile(t, filepath.Join(dir, "b"))
	x := mkfile(t, filepath.Join(outside, "x")) // a namespace not named yet
	touch()
	var m nsMap
	m.init(a.dev)
	type step struct {
		what  string
		do    func()
		id    nsID
		want  nsTarget
		scans int // scans so far
	}
	steps := []step{
		{what: "first", id: a, want: named("a"), scans: 1},
		{what: "cached", id: b, want: named("b"), scans: 1},
		{what: "unnamed, cached", id: x, want: ephemeral(x), scans: 1},
		{what: "unnamed again", id: x, want: ephemeral(x), scans: 1},
		{what: "added", do: func() {
			if err := os.Link(filepath.Join(outside, "x"), filepath.Join(dir, "x")); err != nil {
				t.Fatal(err)
			}
		}, id: x, want: named("x"), scans: 2},
		{what: "added, cached", id: x, want: named("x"), scans: 2},
		{what: "renamed", do: func() {
			if err := os.Rename(filepath.Join(dir, "x"), filepath.Join(dir, "y")); err != nil {
				t.Fatal(err)
			}
		}, id: x, want: named("y"), scans: 3},
		{what: "removed", do: func() {
			if err := os.Remove(filepath.Join(dir, "y")); err != nil {
				t.Fatal(err)
			}
		}, id: x, want: ephemeral(x), scans: 4},
		{what: "others kept", id: a, want: named("a"), scans: 4},
		{what: "all removed", do: func() {
			os.Remove(filepath.Join(dir, "a"))
			os.Remove(filepath.Join(dir, "b"))
		}, id: b, want: ephemeral(b), scans: 5},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
			touch()
		}
		got := m.target(s.id)
		if d := cmp.Diff(s.want, got, cmp.AllowUnexported(nsTarget{})); d != "" {
			t.Errorf("%s: (-want +got):\n%s", s.what, d)
		}
		if m.scans != s.scans {
			t.Errorf("%s: %d scans, want %d", s.what, m.scans, s.scans)
		}
	}
}

// TestNsMapScanNotReusedWhenUnsure: a scan is made anew on every socket()
// while the directory changed within racyWindow (its mtime may not change
// again for a second change in the same clock tick), while an entry is
// not on the namespace device yet (ip netns add's file before its bind
// mount, which changes nothing in the directory), and when the directory
// itself is replaced (another mount on /run/netns).
func TestNsMapScanNotReusedWhenUnsure(t *testing.T) {
	dir, outside, touch := fakeRunNetns(t)
	a := mkfile(t, filepath.Join(dir, "a"))
	touch()

	var m nsMap
	m.init(a.dev)
	m.target(a)
	if err := os.Chtimes(dir, time.Now(), time.Now()); err != nil { // just changed
		t.Fatal(err)
	}
	for i := range 3 {
		if got := m.target(a); got != named("a") {
			t.Errorf("racy: %+v", got)
		}
		if m.scans != 2+i {
			t.Errorf("racy: %d scans after %d lookups, want %d", m.scans, 2+i, 2+i)
		}
	}

	touch()
	var u nsMap
	u.init(a.dev + 1) // every entry is "not a namespace yet"
	for range 3 {
		if got := u.target(a); got != ephemeral(a) {
			t.Errorf("unmounted: %+v", got)
		}
	}
	if u.scans != 3 {
		t.Errorf("unmounted entries: %d scans for 3 lookups", u.scans)
	}

	// the directory replaced by another with the same entries' names and
	// the same mtime: its device and inode differ
	var r nsMap
	r.init(a.dev)
	r.target(a)
	other := filepath.Join(outside, "netns2")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(other, "z")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	unix.Stat(dir, &st)
	mt := time.Unix(st.Mtim.Unix())
	os.Chtimes(other, mt, mt)
	runNetns = other
	if got := r.target(a); got != named("z") {
		t.Errorf("replaced directory: %+v", got)
	}
}

// TestThreadCached: the thread group and the network namespace of a
// calling thread are read once and then taken from the cache while the
// thread its pidfd names lives; an entry whose pidfd is not the one cached
// for the thread (its tid reused after a fresh pidfd) is read anew, and a
// namespace forgotten (forgetNS: the filter traps setns, unshare and
// execve before they run) is read again while the thread group stays.
func TestThreadCached(t *testing.T) {
	s := &Supervisor{pidfds: map[int]int{}, threads: map[int]threadOf{}}
	defer func() {
		for _, f := range s.pidfds {
			unix.Close(f)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	want := uint32(os.Getpid())
	wantNS, err := nsOf("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if g, id, err := s.thread(tid); g != want || id != wantNS || err != nil {
		t.Fatalf("thread(%d) = %d, %v, %v; want %d, %v", tid, g, id, err, want, wantNS)
	}
	pfd := s.pidfds[tid]
	opt := cmp.AllowUnexported(threadOf{}, nsID{})
	if d := cmp.Diff(map[int]threadOf{tid: {pfd, want, wantNS, true}}, s.threads, opt); d != "" {
		t.Errorf("cache (-want +got):\n%s", d)
	}
	fake := nsID{1, 2}
	s.threads[tid] = threadOf{pfd, 12345, fake, true}
	if g, id, _ := s.thread(tid); g != 12345 || id != fake {
		t.Errorf("cached: %d, %v; want the cached 12345, %v", g, id, fake)
	}
	for _, exec := range []bool{false, true} {
		s.threads[tid] = threadOf{pfd, 12345, fake, true}
		s.forgetNS(tid, exec)
		if g, id, _ := s.thread(tid); g != 12345 || id != wantNS {
			t.Errorf("forgotten (exec %v): %d, %v; want the cached 12345 and the namespace read again, %v", exec, g, id, wantNS)
		}
	}
	// execve: the exec'ing thread takes the leader's tid, whose entry is
	// forgotten too
	leader := int(want)
	if leader != tid {
		s.threads[tid] = threadOf{pfd, want, fake, true}
		s.threads[leader] = threadOf{-1, want, fake, true}
		s.forgetNS(tid, true)
		if e := s.threads[leader]; e.nsOK {
			t.Errorf("the leader's namespace kept across execve: %+v", e)
		}
	}
	s.threads[tid] = threadOf{pfd + 1000, 12345, fake, true}
	if g, id, _ := s.thread(tid); g != want || id != wantNS {
		t.Errorf("stale entry: %d, %v; want %d, %v", g, id, want, wantNS)
	}
}
