package nsmgr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nlemu/nlemu/rtnl"
)

// DefaultName is the namespace that always exists.
const DefaultName = "default"

// Errors returned by Manager.
var (
	ErrExists   = errors.New("namespace already exists")
	ErrNotFound = errors.New("namespace does not exist")
	ErrInvalid  = errors.New("invalid namespace name")
	ErrDefault  = errors.New("the default namespace cannot be deleted")
)

// Manager is the namespace registry. A deleted namespace is only removed
// from the registry: sockets that hold it keep using it until they close,
// as with `ip netns del`.
type Manager struct {
	cfg    *rtnl.LockConfig
	limits *Limits // shared by every namespace (limits.go)
	mu     sync.RWMutex
	ns     map[string]*Namespace // guarded by mu
	jn     NamespaceJournal      // guarded by mu: nil without --state
}

// NamespaceJournal records namespace changes (durable state, journal/).
// Manager calls it under the registry lock, so that the journal's order is
// the registry's; an error refuses the change before anyone sees it. The
// returned wait blocks until the record is durable; Manager calls it after
// releasing the lock, and Add and Del return only then.
type NamespaceJournal interface {
	Added(ns *Namespace) (wait func() error, err error)
	Deleted(ns *Namespace) (wait func() error, err error)
}

// SetJournal makes every later Add and Del go through j (nil: none).
func (m *Manager) SetJournal(j NamespaceJournal) {
	m.mu.Lock()
	m.jn = j
	m.mu.Unlock()
}

// NewManager returns a registry holding the default namespace.
func NewManager(cfg *rtnl.LockConfig) *Manager {
	m := &Manager{cfg: cfg, limits: &Limits{}, ns: map[string]*Namespace{}}
	m.ns[DefaultName] = newNamespace(DefaultName, cfg)
	m.ns[DefaultName].limits = m.limits
	return m
}

// ValidName reports whether name is usable, with `ip netns add`'s rules.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00") && len(name) <= 255
}

// Add creates namespace name; with a journal, it returns once the
// namespace's record is durable.
func (m *Manager) Add(name string) error {
	wait, err := m.AddThen(name)
	if err == nil {
		err = wait()
	}
	return err
}

// AddThen is Add without the journal's wait, which it returns instead
// (it never returns a nil one): a caller holding a lock of its own (the
// server's ephemeral namespaces, server/ephemeral.go) releases it first.
// The namespace exists once AddThen returns; it must not be answered for
// before the wait returns.
func (m *Manager) AddThen(name string) (wait func() error, err error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalid, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ns[name]; ok {
		return nil, fmt.Errorf("%w: %q", ErrExists, name)
	}
	if err := m.checkNetns(); err != nil {
		return nil, err
	}
	m.ns[name] = newNamespace(name, m.cfg)
	m.ns[name].limits = m.limits
	if m.jn != nil {
		if wait, err = m.jn.Added(m.ns[name]); err != nil {
			delete(m.ns, name) // nobody saw it: the lock is still held
			return nil, err
		}
		return wait, nil
	}
	return noWait, nil
}

func noWait() error { return nil }

// Del removes namespace name from the registry; with a journal, it returns
// once the deletion's record is durable.
func (m *Manager) Del(name string) error {
	wait, err := m.DelThen(name)
	if err == nil {
		err = wait()
	}
	return err
}

// DelThen is Del without the journal's wait, which it returns instead
// (never nil), as AddThen.
func (m *Manager) DelThen(name string) (wait func() error, err error) {
	if name == DefaultName {
		return nil, ErrDefault
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns, ok := m.ns[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	wait = noWait
	if m.jn != nil {
		if wait, err = m.jn.Deleted(ns); err != nil {
			return nil, err
		}
	}
	delete(m.ns, name)
	return wait, nil
}

// Get returns namespace name.
func (m *Manager) Get(name string) (*Namespace, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns, ok := m.ns[name]
	return ns, ok
}

// List returns the namespace names, sorted.
func (m *Manager) List() []string {
	m.mu.RLock()
	names := make([]string, 0, len(m.ns))
	for n := range m.ns {
		names = append(names, n)
	}
	m.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Len returns the number of namespaces.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.ns)
}

// Each calls fn for every namespace.
func (m *Manager) Each(fn func(*Namespace)) {
	m.mu.RLock()
	all := make([]*Namespace, 0, len(m.ns))
	for _, ns := range m.ns {
		all = append(all, ns)
	}
	m.mu.RUnlock()
	for _, ns := range all {
		fn(ns)
	}
}
