package server

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// TestTruesizeMatchesKernelMeasurements pins datagramTruesize to what Linux
// 6.18 charged a netlink listener's sk_rmem_alloc (SO_MEMINFO, read after
// each delivery) for the datagrams nlemu produces: rule notifications of
// both families and sizes, ACKs (success, EEXIST with the request, extack
// text) and dump batches (NLMSG_GOODSIZE for a fresh socket, 4096 after a
// 4 KiB read, 32 KiB after a 32 KiB one).
func TestTruesizeMatchesKernelMeasurements(t *testing.T) {
	rule := func(family uint8, n int) []byte {
		b := make([]byte, n)
		ne.PutUint32(b, uint32(n))
		ne.PutUint16(b[4:], rtnl.RTM_NEWRULE)
		b[rtnl.NLMSG_HDRLEN] = family
		return b
	}
	msg := func(typ uint16, n int) []byte {
		b := make([]byte, n)
		ne.PutUint32(b, uint32(n))
		ne.PutUint16(b[4:], typ)
		return b
	}
	dump := func(capacity, n int) []byte {
		b := make([]byte, n, capacity)
		ne.PutUint32(b, 20)
		ne.PutUint16(b[4:], rtnl.RTM_NEWRULE)
		return b
	}
	cases := []struct {
		name   string
		b      []byte
		forced bool
		want   int
	}{
		{"v4 rule 60", rule(rtnl.AF_INET, 60), false, 832},
		{"v4 rule 112", rule(rtnl.AF_INET, 112), false, 832},
		{"v6 rule 60 (trimmed)", rule(rtnl.AF_INET6, 60), false, 832},
		{"v6 rule 80", rule(rtnl.AF_INET6, 80), false, 1280},
		{"v6 rule 136", rule(rtnl.AF_INET6, 136), false, 1280},
		{"ipmr rule 60", rule(rtnl.RTNL_FAMILY_IPMR, 60), false, 832},
		{"ip6mr rule 60", rule(rtnl.RTNL_FAMILY_IP6MR, 60), false, 832},
		{"ack 36", msg(rtnl.NLMSG_ERROR, 36), false, 832},
		{"ack EEXIST 56", msg(rtnl.NLMSG_ERROR, 56), false, 832},
		{"ack extack 88", msg(rtnl.NLMSG_ERROR, 88), false, 832},
		{"dump GOODSIZE", dump(rtnl.NLMSG_GOODSIZE, 664), true, 4352},
		{"dump 4096", dump(4096, 4072), true, 8448},
		{"dump 32448", dump(rtnl.DumpMaxSize, 32400), true, 33024},
		{"control", msg(rtnl.NLEMU_ACK, 20), true, 0},
	}
	for _, c := range cases {
		if got := datagramTruesize(c.b, c.forced); got != c.want {
			t.Errorf("%s: truesize %d, kernel %d", c.name, got, c.want)
		}
	}
}

// TestUnixChargeMatchesSIOCOUTQ: unixCharge is what an AF_UNIX
// SOCK_SEQPACKET datagram adds to its sender's SIOCOUTQ until the peer reads
// it (checked on this kernel: a socketpair nobody reads), which the queue
// relies on to tell which written datagrams the client has read.
func TestUnixChargeMatchesSIOCOUTQ(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20); err != nil {
		t.Fatal(err)
	}
	sizes := []int{20, 36, 60, 80, 200, 256, 300, 1468, 3776, 4000, 8000, 32400, 32448, 32449, 40000, 65000}
	var got, want []int
	prev := 0
	for _, n := range sizes {
		if _, err := unix.Write(fds[0], make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		o, err := unix.IoctlGetInt(fds[0], unix.SIOCOUTQ)
		if err != nil {
			t.Fatal(err)
		}
		got, want = append(got, o-prev), append(want, unixCharge(n))
		prev = o
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("charge by size %v (-kernel +unixCharge):\n%s", sizes, d)
	}
}
