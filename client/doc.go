// Package client gives Go programs an nlemu netlink socket that the Go
// netlink libraries plug into: Dial (over a running server's Unix socket)
// and DialServer (in process) return a *Socket implementing
// github.com/mdlayher/netlink's Socket and the optional interfaces
// netlink.Conn looks for (groups, options, deadlines, buffer sizes, BPF),
// so
//
//	sock, _ := client.Dial("", "ns1")
//	conn := netlink.NewConn(sock, sock.PortID())
//
// behaves as a NETLINK_ROUTE socket in the nlemu namespace "ns1": the same
// replies, errors, sequence and port-id validation, notifications and
// deadlines as netlink.Dial(unix.NETLINK_ROUTE, nil) in a kernel
// namespace (TestConnMethodsMatchKernel). Message types of
// github.com/jsimonetti/rtnetlink/v2 (RouteMessage, LinkMessage,
// AddressMessage, RuleMessage) marshal into the requests (see the
// examples). What differs: SyscallConn is not offered (no descriptor of a
// netlink socket exists), and the limits of SetBPF and SetReadBuffer are
// on their methods.
package client

import "encoding/binary"

var ne = binary.NativeEndian
