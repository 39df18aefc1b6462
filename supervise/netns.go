package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/rtnl"
)

// nsID identifies a kernel network namespace: the device and inode of its
// nsfs file (/proc/TID/ns/net, or a /run/netns bind mount of it).
type nsID struct{ dev, ino uint64 }

func nsOf(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{st.Dev, st.Ino}, nil
}

// runNetns is where ip netns keeps its named namespaces.
var runNetns = "/run/netns"

// nsMap maps the kernel network namespace a socket() caller is in to the
// nlemu namespace its socket attaches to (issue 11 item 2): the start
// namespace to the one named by -n; a namespace with a /run/netns entry
// (matched by device and inode) to the nlemu namespace of that name,
// created by the HELLO if missing (NLEMU_HELLO_CREATE), as ip netns add
// names one; any other to an ephemeral "netns-INODE" (NLEMU_HELLO_CREATE|
// NLEMU_HELLO_EPHEMERAL: the server deletes it when its last socket
// closes, as a kernel namespace goes with its last reference).
type nsMap struct {
	mu      sync.Mutex
	known   map[nsID]nsTarget // guarded by mu: the /run/netns scan's result
	anchors map[nsID][2]int   // guarded by mu: anchor's descriptors
}

// nsTarget is a namespace name and the HELLO option bits that create it.
type nsTarget struct {
	name string
	opts uint32
}

func (m *nsMap) init() {
	m.known = map[nsID]nsTarget{}
}

// name returns the nlemu namespace for thread tid, decided from the
// thread's own namespace (the notification's pid is the thread's id, and
// unshare/setns change one thread).
func (m *nsMap) name(tid int, start nsID, startName string) (nsTarget, error) {
	id, err := nsOf("/proc/" + strconv.Itoa(tid) + "/ns/net")
	if err != nil {
		return nsTarget{}, fmt.Errorf("the network namespace of thread %d: %w", tid, err)
	}
	if id == start {
		return nsTarget{name: startName}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.known[id]; ok {
		return n, nil
	}
	if ents, err := os.ReadDir(runNetns); err == nil {
		for _, e := range ents {
			if nid, err := nsOf(filepath.Join(runNetns, e.Name())); err == nil && nid == id {
				t := nsTarget{name: e.Name(), opts: rtnl.NLEMU_HELLO_CREATE}
				m.known[id] = t
				return t, nil
			}
		}
	}
	// Not cached: a later ip netns add may name it, and an inode is reused
	// once the namespace is gone.
	return nsTarget{name: "netns-" + strconv.FormatUint(id.ino, 10), opts: rtnl.NLEMU_HELLO_CREATE | rtnl.NLEMU_HELLO_EPHEMERAL}, nil
}

// anchor keeps an ephemeral namespace of the program, and the kernel
// namespace it stands for, alive until the supervisor exits (added by the
// Go API part, h-go): the server deletes an ephemeral namespace when its
// last socket closes, and libraries such as vishvananda/netlink open a
// socket per request, so without an anchor a link set up by one request
// is gone by the next (vishvananda/netlink's own tests failed with
// "Device for nexthop is not up"). The anchor is a quiet server
// connection to the namespace and a descriptor of the kernel namespace,
// which keeps its inode from being reused for a later namespace while the
// name netns-INODE is taken. Both close with the supervisor.
func (m *nsMap) anchor(tid int, t nsTarget, socket string) {
	if t.opts&rtnl.NLEMU_HELLO_EPHEMERAL == 0 {
		return
	}
	path := "/proc/" + strconv.Itoa(tid) + "/ns/net"
	id, err := nsOf(path)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.anchors == nil {
		m.anchors = map[nsID][2]int{}
	}
	if _, ok := m.anchors[id]; ok {
		return
	}
	nsfd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	conn, _, err := dial(socket, t.name, 0, t.opts)
	if err != nil {
		unix.Close(nsfd)
		return
	}
	m.anchors[id] = [2]int{nsfd, conn}
}
