package nsmgr

// Seed makes the namespace's random draws (MAC addresses, IPv6 reachable
// times: netdev.Devices.Seed) a function of seed and of the order of its
// changes. The journal (durable state) seeds each namespace when it is
// created and again, with the same seed, when it restores it, so that the
// replayed changes create the same addresses. Call it before any change.
func (ns *Namespace) Seed(seed [32]byte) { ns.devs.Seed(seed) }
