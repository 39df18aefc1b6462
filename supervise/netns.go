package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nlemu/nlemu/server"
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
// (matched by device and inode) to the nlemu namespace of that name;
// any other to "netns-INODE". Both are created on the server when missing.
type nsMap struct {
	socket string
	mu     sync.Mutex
	known  map[nsID]string // guarded by mu; created on the server
}

func (m *nsMap) init(socket string) {
	m.socket = socket
	m.known = map[nsID]string{}
}

// name returns the nlemu namespace for thread tid, decided from the
// thread's own namespace (the notification's pid is the thread's id, and
// unshare/setns change one thread).
func (m *nsMap) name(tid int, start nsID, startName string) (string, error) {
	id, err := nsOf("/proc/" + strconv.Itoa(tid) + "/ns/net")
	if err != nil {
		return "", fmt.Errorf("the network namespace of thread %d: %w", tid, err)
	}
	if id == start {
		return startName, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.known[id]; ok {
		return n, nil
	}
	name := ""
	if ents, err := os.ReadDir(runNetns); err == nil {
		for _, e := range ents {
			if nid, err := nsOf(filepath.Join(runNetns, e.Name())); err == nil && nid == id {
				name = e.Name()
				break
			}
		}
	}
	if name == "" {
		name = "netns-" + strconv.FormatUint(id.ino, 10)
	}
	if err := m.create(name); err != nil {
		return "", err
	}
	m.known[id] = name
	return name, nil
}

// create adds namespace name on the server unless it exists.
func (m *nsMap) create(name string) error {
	cl, err := server.DialUnix(m.socket, server.Options{})
	if err != nil {
		return fmt.Errorf("no server at %s: %w", m.socket, err)
	}
	defer cl.Close()
	err = cl.NetnsAdd(name)
	var ae *server.AdminError
	if errors.As(err, &ae) && ae.Errno == syscall.EEXIST {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating namespace %q on the server: %w", name, err)
	}
	return nil
}
