package fib

import (
	"syscall"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// LookupBatch resolves a burst of flows: results[i], errs[i] are what
// Lookup(flows[i]) returns, for every i < len(flows) (results and errs must
// be at least as long as flows). The whole batch reads one snapshot of the
// rules and the tables, taken once.
//
// Route hints (seed 003, ip_list_rcv_finish() / ip6_list_rcv_finish()): a
// flow that agrees with the previous one in every key field the lookup
// reads gets the previous result copied instead of a lookup. Hints apply
// only while the namespace has no custom rules (with rules, any field a
// rule selects on could change the answer) and, for IPv6, while neither
// local nor main holds a route with a source prefix (the review of seed
// 003: with subtrees the answer depends on the source only through such
// routes). The fields compared are exactly those the no-rules lookup reads
// (sameFlow4, sameFlow6), so a hint never changes an answer
// (TestLookupBatchMatchesReference); on distinct destinations the cost is
// one address compare per flow (BenchmarkLookupBatch*Distinct).
func (f *FIB) LookupBatch(flows []flow.Key, results []Result, errs []syscall.Errno) {
	f.lookupBatch(flows, results, errs, true)
}

// LookupBatchNoHints is LookupBatch with every flow looked up: the
// baseline the hints are measured against (nlemu bench lookup) and tested
// against.
func (f *FIB) LookupBatchNoHints(flows []flow.Key, results []Result, errs []syscall.Errno) {
	f.lookupBatch(flows, results, errs, false)
}

func (f *FIB) lookupBatch(flows []flow.Key, results []Result, errs []syscall.Errno, hints bool) {
	results, errs = results[:len(flows)], errs[:len(flows)]
	// The flag before the tables, as in Lookup.
	custom := f.rules.HasCustomRules()
	snap := f.tables.Snapshot()
	if custom {
		rs := f.rules.Snapshot()
		for i := range flows {
			h := &results[i]
			*h = hit{}
			errs[i] = f.walk(&snap, rs, &flows[i], h)
			h.seal()
		}
		return
	}
	if f.v6 {
		f.batch6(&snap, flows, results, errs, hints)
		return
	}
	batch4(&snap, flows, results, errs, hints)
}

// sameFlow4 reports whether b's no-rules IPv4 lookup reads the same key
// as a's: lookupNoRules4 reads the destination, the TOS bits a route's tos
// is compared with (fib_dscp_masked_match()), the scope and the oif
// (fib_lookup_good_nhc()). The kernel's ip_can_use_hint() compares the
// input device too because its input path (ip_route_input_slow()) checks
// the device; nlemu's Lookup does not read it without rules.
func sameFlow4(a, b *flow.Key) bool {
	return a.Dst == b.Dst && a.OIF == b.OIF && a.Scope == b.Scope && (a.TOS^b.TOS)&0x1C == 0
}

// sameFlow6 reports whether b's no-rules IPv6 lookup reads the same key as
// a's when no route has a source prefix: the destination and what rt6Oif
// derives the scored device and its strictness from (oif, iif, whether the
// flow has a source).
func sameFlow6(a, b *flow.Key) bool {
	// Split so that the destination compare, the usual answer, inlines
	// into the batch loop: the whole test is over the inlining budget,
	// and a call per flow made hints cost 8 % on distinct destinations.
	return a.Dst == b.Dst && sameDevSource6(a, b)
}

func sameDevSource6(a, b *flow.Key) bool {
	return a.OIF == b.OIF && a.IIF == b.IIF && hasSource(a) == hasSource(b)
}

func hasSource(k *flow.Key) bool { return k.Src.IsValid() && !k.Src.IsUnspecified() }

// batch4 is lookupNoRules4 over a batch, with main's and default's views
// taken once.
func batch4(snap *Snapshot, flows []flow.Key, results []Result, errs []syscall.Errno, hints bool) {
	main, hasMain := snap.MergedMain()
	def, hasDef := snap.Table(rtnl.RT_TABLE_DEFAULT)
	for i := range flows {
		k := &flows[i]
		if hints && i > 0 && sameFlow4(k, &flows[i-1]) {
			results[i], errs[i] = results[i-1], errs[i-1]
			continue
		}
		// Straight into the caller's slot: no 64-byte copy per flow.
		h := &results[i]
		*h = noHit
		err := syscall.ENETUNREACH
		if hasMain {
			err = lookupView(&main, k, false, h)
		}
		if err != 0 && hasDef {
			*h = noHit
			err = lookupView(&def, k, false, h)
		}
		if err == syscall.EAGAIN {
			err = syscall.ENETUNREACH
		}
		errs[i] = err
		h.seal()
	}
}

// batch6 is lookupNoRules6 over a batch, with local's and main's views
// taken once; hints only while neither holds a source-specific route.
func (f *FIB) batch6(snap *Snapshot, flows []flow.Key, results []Result, errs []syscall.Errno, hints bool) {
	local, hasLocal := snap.Table(rtnl.RT_TABLE_LOCAL)
	main, hasMain := snap.Table(rtnl.RT_TABLE_MAIN)
	if hints && (hasSrcRoutes(&local) || hasSrcRoutes(&main)) {
		hints = false
	}
	for i := range flows {
		k := &flows[i]
		if hints && i > 0 && sameFlow6(k, &flows[i-1]) {
			results[i], errs[i] = results[i-1], errs[i-1]
			continue
		}
		h := &results[i]
		*h = noHit
		err := syscall.EAGAIN
		if hasLocal {
			err = lookupView(&local, k, true, h)
		}
		if err == syscall.EAGAIN && hasMain {
			*h = noHit
			err = lookupView(&main, k, true, h)
		}
		if err == syscall.EAGAIN {
			*h, err = noHit, syscall.ENETUNREACH
		}
		errs[i] = err
		h.seal()
	}
}

func hasSrcRoutes(v *View) bool { return v.bt != nil && v.bt.srcRoutes > 0 }
