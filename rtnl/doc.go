// Package rtnl is nlemu's wire layer and core plumbing: netlink framing (one
// datagram in, its messages out, replies framed exactly as the kernel frames
// them), typed rtnetlink messages and their encoding, the Error type every
// handler returns (errno + extended-ack text + attribute offset), and the
// instrumented global RTNL lock.
//
// Only this package touches bytes. Handlers in rulesops, fib and netdev see
// typed values (RuleMsg, LinkMsg) and return *Error; the server moves
// datagrams and never parses an attribute.
//
// All errors returned by decoders in this package are of type *Error.
package rtnl
