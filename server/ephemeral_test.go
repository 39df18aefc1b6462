package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

func TestHelloCreateBitsAreTheProtocols(t *testing.T) {
	if optCreate != rtnl.NLEMU_HELLO_CREATE || optEphemeral != rtnl.NLEMU_HELLO_EPHEMERAL {
		t.Fatalf("optCreate %#x optEphemeral %#x, docs/PROTOCOL.md says %#x %#x", optCreate, optEphemeral, rtnl.NLEMU_HELLO_CREATE, rtnl.NLEMU_HELLO_EPHEMERAL)
	}
}

func hasNamespace(s *Server, name string) bool {
	_, ok := s.nsm.Get(name)
	return ok
}

// waitGone waits until the server has seen a Unix client's close (the
// server reads the hang-up asynchronously); it fails only on a hang.
func waitGone(t *testing.T, s *Server, name string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); hasNamespace(s, name); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("namespace %q still exists after its last socket closed", name)
		}
	}
}

// TestEphemeralNamespaceGoesWithLastSocket: a HELLO asking for a missing
// namespace as ephemeral creates it; it is listed (NETNS_LIST and
// NETNS_EPHEMERAL), every socket in it counts, whatever its HELLO asked,
// and it is deleted when the last one closes, over the Unix socket and in
// process alike.
func TestEphemeralNamespaceGoesWithLastSocket(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := s.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	admin, err := DialUnix(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	if _, err := DialUnix(path, Options{Namespace: "e1"}); !errors.Is(err, ErrNoNamespace) {
		t.Fatalf("plain HELLO for a missing namespace: %v, want ErrNoNamespace", err)
	}
	a, err := DialUnix(path, Options{Namespace: "e1", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := DialUnix(path, Options{Namespace: "e1"}) // joins it, counts too
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Dial(Options{Namespace: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := admin.NetnsList()
	if err != nil {
		t.Fatal(err)
	}
	eph, err := admin.NetnsEphemeral()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"default", "e1"}, list); d != "" {
		t.Errorf("NETNS_LIST (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"e1"}, eph); d != "" {
		t.Errorf("NETNS_EPHEMERAL (-want +got):\n%s", d)
	}
	a.Close()
	in.Close()
	if !hasNamespace(s, "e1") {
		t.Fatal("deleted while a socket is open in it")
	}
	b.Close()
	waitGone(t, s, "e1")
	if eph, _ := admin.NetnsEphemeral(); len(eph) != 0 {
		t.Errorf("NETNS_EPHEMERAL after the last close: %q", eph)
	}
}

// TestCreateHelloMakesALastingNamespace: Create without Ephemeral makes a
// namespace that outlives its sockets, as NETNS_ADD's does.
func TestCreateHelloMakesALastingNamespace(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	c, err := s.Dial(Options{Namespace: "kept", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !hasNamespace(s, "kept") {
		t.Fatal("a Create namespace went with its socket")
	}
	if got := s.Ephemeral(); len(got) != 0 {
		t.Errorf("Ephemeral() = %q", got)
	}
	// An existing lasting namespace joined with Ephemeral stays lasting.
	c, err = s.Dial(Options{Namespace: "kept", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !hasNamespace(s, "kept") {
		t.Fatal("an existing namespace became ephemeral")
	}
}

// TestEphemeralConnectRacesLastClose: sockets opening an ephemeral
// namespace while others close their last one never fail (each either
// keeps the namespace or makes a new one: attach and detach share one
// lock), and once all are closed it is gone.
func TestEphemeralConnectRacesLastClose(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c, err := s.Dial(Options{Namespace: "race", Ephemeral: true})
				if err != nil {
					errs <- fmt.Errorf("goroutine %d open %d: %w", g, i, err)
					return
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if hasNamespace(s, "race") {
		t.Error("the namespace outlived every socket")
	}
}

// TestEphemeralDeletedThenReaddedOutlivesOldSockets: NETNS_DEL deletes an
// ephemeral namespace like any other; a lasting namespace added under the
// same name is not deleted when the old namespace's sockets close.
func TestEphemeralDeletedThenReaddedOutlivesOldSockets(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	old, err := s.Dial(Options{Namespace: "n", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.nsm.Del("n"); err != nil {
		t.Fatal(err)
	}
	if err := s.nsm.Add("n"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	if !hasNamespace(s, "n") {
		t.Fatal("the old namespace's last socket deleted the new namespace")
	}
}

// TestHelloCreateErrors: the refusals of a HELLO that could not create its
// namespace.
func TestHelloCreateErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		mayNo bool
		want  syscall.Errno
	}{
		{"missing, may not create", fmt.Errorf("%w: %q", ErrNoNamespace, "x"), true, syscall.EPERM},
		{"missing, plain HELLO", fmt.Errorf("%w: %q", ErrNoNamespace, "x"), false, syscall.ENOENT},
		{"bad name", fmt.Errorf("%w: %q", nsmgr.ErrInvalid, "a/b"), false, syscall.EINVAL},
		{"--max-netns", fmt.Errorf("nlemu: too many namespaces: %w", syscall.ENOSPC), false, syscall.ENOSPC},
	} {
		errno := syscall.ESHUTDOWN
		if errors.Is(tc.err, ErrNoNamespace) {
			errno = syscall.ENOENT
		}
		got, _ := helloCreateError(tc.err, errno, "", tc.mayNo)
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEphemeralBadNameRefused: an ephemeral HELLO with a name nlemu
// refuses gets EINVAL, not "shutting down".
func TestEphemeralBadNameRefused(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := s.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = DialUnix(path, Options{Namespace: "a/b", Ephemeral: true})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("got %v, want EINVAL", err)
	}
}
