package supervise

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestSweepForgetsClosedSockets: the socket table keeps a socket some
// process holds at a number in the range, and one made while the sweep ran;
// it forgets one nobody holds (closed: close() is not trapped).
func TestSweepForgetsClosedSockets(t *testing.T) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	r := Range{Base: 900, Len: 64}
	held := r.Base + 7
	if err := unix.Dup3(p[0], held, unix.O_CLOEXEC); err != nil {
		t.Skipf("cannot place a descriptor at %d: %v", held, err)
	}
	defer unix.Close(held)
	var st unix.Stat_t
	if err := unix.Fstat(held, &st); err != nil {
		t.Fatal(err)
	}
	var closed unix.Stat_t
	unix.Fstat(p[1], &closed) // held by this process, but outside the range
	s := &Supervisor{cfg: Config{Range: r}, socks: map[uint64]*sock{}}
	s.socks[st.Ino] = &sock{born: 1}
	s.socks[closed.Ino] = &sock{born: 2}
	s.socks[1<<40] = &sock{born: 3}
	s.made = 3
	s.socks[1<<41] = &sock{born: 4} // made after the sweep began
	s.sweepSocks()
	var got []uint64
	for ino := range s.socks {
		got = append(got, ino)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	want := []uint64{st.Ino, 1 << 41}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sockets kept (-want +got):\n%s", d)
	}
}
