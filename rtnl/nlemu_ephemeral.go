package rtnl

// Ephemeral namespaces (docs/PROTOCOL.md, server/ephemeral.go).
const (
	// NLEMU_HELLO_CREATE (HELLO option bit 4) creates the namespace the
	// HELLO names when it does not exist.
	NLEMU_HELLO_CREATE = 1 << 4
	// NLEMU_HELLO_EPHEMERAL (bit 5) creates it as an ephemeral namespace,
	// deleted when its last socket closes.
	NLEMU_HELLO_EPHEMERAL = 1 << 5
	// NLEMU_NETNS_EPHEMERAL is an administration request answered like
	// NETNS_LIST with the names of the ephemeral namespaces.
	NLEMU_NETNS_EPHEMERAL = 0xFE14
)
