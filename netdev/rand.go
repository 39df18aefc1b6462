package netdev

import (
	crand "crypto/rand"
	"math/rand/v2"
	"sync"
)

// source is a namespace's random source for what the kernel draws at
// random when it creates a device: the MAC address (eth_hw_addr_random())
// and the IPv6 reachable time (neigh_rand_reach_time()). Without a seed
// (nil) it draws from crypto/rand and math/rand, as before; a seeded one
// (Devices.Seed) makes a namespace's draws a function of its seed and of
// the order of its changes, so that replaying the same changes (durable
// state, journal/) creates the same addresses.
type source struct {
	mu sync.Mutex
	r  *rand.ChaCha8 // guarded by mu
}

func (s *source) read(b []byte) {
	if s == nil {
		_, _ = crand.Read(b)
		return
	}
	s.mu.Lock()
	_, _ = s.r.Read(b)
	s.mu.Unlock()
}

// reachableTime is randReachableTime() drawn from s.
func (s *source) reachableTime() uint32 {
	if s == nil {
		return randReachableTime()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return uint32(rand.New(s.r).IntN(baseReachableJiffies)+baseReachableJiffies/2) * msPerJiffy
}

// Seed makes the namespace draw from a source seeded with seed, as if it
// had been created with it: lo's reachable time is drawn again. Call it on
// a fresh namespace, before any change.
func (d *Devices) Seed(seed [32]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rnd = &source{r: rand.NewChaCha8(seed)}
	links := append([]Link(nil), *d.links.Load()...)
	for i := range links {
		if links[i].Index == LoopbackIndex {
			links[i].Inet6.ReachableTime = d.rnd.reachableTime()
		}
	}
	d.links.Store(&links)
}
