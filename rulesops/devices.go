package rulesops

import "sync/atomic"

// The live binding of rules to devices: fib_rules_event() in
// net/core/fib_rules.c. A rule's FRA_IIFNAME / FRA_OIFNAME is stored as a
// name and resolved when the rule is added (nl2ruleLocked); these methods
// keep that resolution current as devices come, go and change names. They
// take the ops mutex so that a rule added concurrently either resolved the
// name against the devices before the change or is seen here, never
// neither (the kernel has RTNL for this).

// DevRegistered is attach_rules() for NETDEV_REGISTER (and the second
// half of NETDEV_CHANGENAME): every detached rule naming name gets index.
// No notification is sent, as in the kernel.
func (o *Ops) DevRegistered(name []byte, index int32) {
	if len(name) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.cur.Load().extras {
		if atomic.LoadInt32(&x.iifIndex) == -1 && string(cstr(&x.IIFName)) == string(name) {
			atomic.StoreInt32(&x.iifIndex, index)
		}
		if atomic.LoadInt32(&x.oifIndex) == -1 && string(cstr(&x.OIFName)) == string(name) {
			atomic.StoreInt32(&x.oifIndex, index)
		}
	}
}

// DevUnregistered is detach_rules() for NETDEV_UNREGISTER (and the first
// half of NETDEV_CHANGENAME): every rule bound to index becomes detached,
// whatever name it stores.
func (o *Ops) DevUnregistered(index int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.cur.Load().extras {
		if atomic.LoadInt32(&x.iifIndex) == index {
			atomic.StoreInt32(&x.iifIndex, -1)
		}
		if atomic.LoadInt32(&x.oifIndex) == index {
			atomic.StoreInt32(&x.oifIndex, -1)
		}
	}
}

// DevRenamed is NETDEV_CHANGENAME: detach the rules bound to index, then
// attach those naming the new name (renaming back re-attaches).
func (o *Ops) DevRenamed(newName []byte, index int32) {
	o.DevUnregistered(index)
	o.DevRegistered(newName, index)
}
