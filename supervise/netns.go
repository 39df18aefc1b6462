package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

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
//
// The /run/netns scan is cached (libraries such as vishvananda/netlink
// open a socket per request, each of which would otherwise stat every
// entry): the cache is the whole scan, positive and negative answers
// alike, and is used while the directory's stamp (device, inode, mtime,
// ctime) is the one it was made with, so what a socket attaches to is
// always what a fresh scan would give: an entry added, removed or renamed
// changes the stamp. Two changes within one tick of the file system's
// coarse clock can leave the mtime unchanged, so a scan made while the
// directory's stamp is younger than racyWindow is not reused (git's
// "racy" rule), and neither is one that saw an entry that is not yet a
// namespace (ip netns add creates the file, then bind-mounts over it,
// which does not touch the directory).
type nsMap struct {
	mu sync.Mutex
	// scan is the last /run/netns scan, valid while the directory's
	// stamp is stamp; guarded by mu.
	scan    map[nsID]string
	stamp   dirStamp
	scanned bool // guarded by mu: scan and stamp hold a usable scan
	scans   int  // guarded by mu: how many scans ran (the tests read it)
	// nsfsDev is the device of namespace files (nsfs): an entry of
	// another device is not a namespace yet. Zero: any device.
	nsfsDev    uint64
	racyWindow time.Duration
	anchors    map[nsID][2]int // guarded by mu: anchor's descriptors
}

// nsTarget is a namespace name and the HELLO option bits that create it.
type nsTarget struct {
	name string
	opts uint32
}

// dirStamp is what changes when a directory's entries do.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime unix.Timespec
}

// racyWindow: a scan of a directory changed less than this long before is
// not reused (several jiffies of the coarse clock tmpfs stamps with).
const racyWindow = 100 * time.Millisecond

func (m *nsMap) init(nsfsDev uint64) {
	m.nsfsDev = nsfsDev
	m.racyWindow = racyWindow
}

func stampOf(path string) (dirStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return dirStamp{}, err
	}
	return dirStamp{st.Dev, st.Ino, st.Mtim, st.Ctim}, nil
}

// name returns the nlemu namespace for thread tid, decided from the
// thread's own namespace (the notification's pid is the thread's id, and
// unshare/setns change one thread).
func (m *nsMap) name(tid int, start nsID, startName string) (nsTarget, error) {
	id, err := nsOf(nsPath(tid))
	if err != nil {
		return nsTarget{}, fmt.Errorf("the network namespace of thread %d: %w", tid, err)
	}
	return m.targetFor(id, start, startName), nil
}

// targetFor maps the kernel namespace id (of a calling thread,
// Supervisor.thread) to its nlemu namespace: the start one to startName,
// another by target.
func (m *nsMap) targetFor(id, start nsID, startName string) nsTarget {
	if id == start {
		return nsTarget{name: startName}
	}
	return m.target(id)
}

// target maps a namespace other than the start one: its /run/netns name,
// or netns-INODE.
func (m *nsMap) target(id nsID) nsTarget {
	if name, ok := m.lookup(id); ok {
		return nsTarget{name: name, opts: rtnl.NLEMU_HELLO_CREATE}
	}
	return nsTarget{name: "netns-" + strconv.FormatUint(id.ino, 10), opts: rtnl.NLEMU_HELLO_CREATE | rtnl.NLEMU_HELLO_EPHEMERAL}
}

// lookup finds id's /run/netns name, from the cached scan while the
// directory is unchanged, else from a new scan.
func (m *nsMap) lookup(id nsID) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stamp, err := stampOf(runNetns)
	if err != nil {
		m.scanned = false
		return "", false // no /run/netns: no names
	}
	if m.scanned && stamp == m.stamp {
		name, ok := m.scan[id]
		return name, ok
	}
	m.scans++
	ents, err := os.ReadDir(runNetns)
	if err != nil {
		m.scanned = false
		return "", false
	}
	scan := make(map[nsID]string, len(ents))
	complete := true
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Stat(filepath.Join(runNetns, e.Name()), &st) != nil {
			complete = false
			continue
		}
		if m.nsfsDev != 0 && st.Dev != m.nsfsDev {
			complete = false // created, not yet mounted (ip netns add)
			continue
		}
		nid := nsID{st.Dev, st.Ino}
		if _, dup := scan[nid]; !dup { // the first name of ReadDir's sorted order, as before
			scan[nid] = e.Name()
		}
	}
	// mtime alone: a change sets ctime with it; utimes(2) sets an old
	// mtime and a new ctime, which the stamp still compares
	changed := time.Unix(stamp.mtime.Unix()).After(time.Now().Add(-m.racyWindow))
	m.scan, m.stamp, m.scanned = scan, stamp, complete && !changed
	name, ok := scan[id]
	return name, ok
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
//
// id is the namespace thread tid is in (nameID), still blocked in the
// socket() the anchor follows: the descriptor opened for a new anchor is
// checked to be of it.
func (m *nsMap) anchor(tid int, id nsID, t nsTarget, socket string) {
	if t.opts&rtnl.NLEMU_HELLO_EPHEMERAL == 0 {
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
	nsfd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(nsfd, &st) != nil || (nsID{st.Dev, st.Ino}) != id {
		unix.Close(nsfd)
		return
	}
	conn, _, err := dial(socket, t.name, 0, t.opts)
	if err != nil {
		unix.Close(nsfd)
		return
	}
	m.anchors[id] = [2]int{nsfd, conn}
}
