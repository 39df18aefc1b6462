package nsmgr

import (
	"fmt"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// Limits bound what one registry holds (`nlemu serve --max-netns,
// --max-rules, --max-routes, --max-links`). A zero field is no limit.
//
// The kernel has no such counts for rules, routes or links (only memory:
// fib_nl_newrule() and ip6_route_info_create() fail with ENOMEM,
// fib_create_info() with ENOBUFS). What it has for namespaces is the
// ucount limit /proc/sys/user/max_net_namespaces, and creating one more
// fails with ENOSPC (inc_net_namespaces(), measured: `unshare -n` says
// "No space left on device"). ENOSPC is the kernel's errno for a configured
// count that is used up (ucounts, inotify watches, epoll watches), so every
// limit here answers ENOSPC, with an extack naming the limit and its flag:
// a daemon sees a failed change (as on a kernel out of memory), and a person
// sees which flag to raise.
type Limits struct {
	// Netns bounds the namespaces of the registry, "default" included.
	Netns int
	// Rules bounds the rules of one family in one namespace, the
	// default rules included (what `ip rule show` lists).
	Rules int
	// Routes bounds the routes of one namespace, both families and every
	// table (local and connected routes included; an IPv6 multipath
	// route counts once per hop).
	Routes int
	// Links bounds the devices of one namespace, lo included.
	Links int
}

// SetLimits sets the registry's limits. Call it before the registry is
// shared: the limits are read without a lock.
func (m *Manager) SetLimits(l Limits) { *m.limits = l }

// Limits returns the registry's limits.
func (m *Manager) Limits() Limits { return *m.limits }

// errLimit is the refusal of a change that would pass limit n of flag.
func errLimit(what string, n int, flag string) *rtnl.Error {
	return rtnl.Errorf(syscall.ENOSPC, fmt.Sprintf("nlemu: too many %s (limit %d, --%s)", what, n, flag))
}

// ErrTooManyNamespaces is the error of Manager.Add past Limits.Netns; it
// wraps syscall.ENOSPC, which is what unshare(CLONE_NEWNET) returns past
// max_net_namespaces.
type ErrTooManyNamespaces struct{ Limit int }

func (e *ErrTooManyNamespaces) Error() string {
	return fmt.Sprintf("nlemu: too many namespaces (limit %d, --max-netns)", e.Limit)
}

// Unwrap makes errors.Is(err, syscall.ENOSPC) hold.
func (e *ErrTooManyNamespaces) Unwrap() error { return syscall.ENOSPC }

// checkNetns is Add's check, with m.mu held.
func (m *Manager) checkNetns() error {
	if n := m.limits.Netns; n > 0 && len(m.ns) >= n {
		return &ErrTooManyNamespaces{Limit: n}
	}
	return nil
}

// checkRuleAdd refuses an RTM_NEWRULE when the family already holds
// Limits.Rules rules. Like the kernel's allocation in fib_nl_newrule(),
// which comes before the rule is compared with the others, it refuses at
// the limit whether or not the rule would be new. It is checked before
// rulesops takes the family's lock, so concurrent adds to one family may
// pass the limit by one each.
func (ns *Namespace) checkRuleAdd(typ uint16, count int) *rtnl.Error {
	if typ != rtnl.RTM_NEWRULE || ns.limits == nil {
		return nil
	}
	if n := ns.limits.Rules; n > 0 && count >= n {
		return errLimit("rules in this namespace and family", n, "max-rules")
	}
	return nil
}

// checkRouteAdd refuses an RTM_NEWROUTE when the namespace already holds
// Limits.Routes routes (replaces included: fib_create_info() and
// ip6_route_info_create() allocate the new route before looking for the
// old one). IPv4 changes hold RTNL, so for them the bound is exact; IPv6
// writers of one namespace may pass it by one each.
func (ns *Namespace) checkRouteAdd() *rtnl.Error {
	if ns.limits == nil {
		return nil
	}
	if n := ns.limits.Routes; n > 0 && ns.v4.Routes()+ns.v6.Routes() >= n {
		return errLimit("routes in this namespace", n, "max-routes")
	}
	return nil
}

// checkLinkAdd refuses creating a device of kind when the namespace's
// devices would pass Limits.Links (a veth is two). Device creation holds
// RTNL, so the bound is exact.
func (ns *Namespace) checkLinkAdd(kind string) *rtnl.Error {
	if ns.limits == nil {
		return nil
	}
	add := 1
	if kind == "veth" {
		add = 2
	}
	if n := ns.limits.Links; n > 0 && len(ns.devs.Links())+add > n {
		return errLimit("links in this namespace", n, "max-links")
	}
	return nil
}
