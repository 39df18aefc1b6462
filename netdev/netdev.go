// Package netdev holds a namespace's network devices. For now every
// namespace has exactly one: the loopback device "lo" with ifindex 1, which
// rules bind to by name (`ip rule add iif lo ...`). Full links and
// addresses come with their own issue.
package netdev

import "bytes"

// Link is one network device.
type Link struct {
	Index int32
	Name  string
	Type  uint16 // ARPHRD_*
	Flags uint32 // IFF_*
	MTU   uint32
}

// Loopback constants, as a fresh kernel namespace has them (lo is down).
const (
	LoopbackIndex  = 1
	arphrdLoopback = 772
	iffLoopback    = 0x8
)

// Devices is the device table of one namespace. It is immutable for now
// (only lo), so it needs no locking.
type Devices struct {
	links []Link
}

// New returns the devices of a fresh namespace: lo, down, like the kernel's.
func New() *Devices {
	return &Devices{links: []Link{{Index: LoopbackIndex, Name: "lo", Type: arphrdLoopback, Flags: iffLoopback, MTU: 65536}}}
}

// IndexByName returns the ifindex of the device called name, or 0.
func (d *Devices) IndexByName(name []byte) int32 {
	for _, l := range d.links {
		if bytes.Equal([]byte(l.Name), name) {
			return l.Index
		}
	}
	return 0
}

// ByIndex returns the device with ifindex i.
func (d *Devices) ByIndex(i int32) (Link, bool) {
	for _, l := range d.links {
		if l.Index == i {
			return l, true
		}
	}
	return Link{}, false
}

// Links returns every device in ifindex order.
func (d *Devices) Links() []Link { return append([]Link(nil), d.links...) }
