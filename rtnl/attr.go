package rtnl

import "iter"

// nlaHdrLen is sizeof(struct nlattr).
const nlaHdrLen = 4

// nlaTypeMask strips NLA_F_NESTED and NLA_F_NET_BYTEORDER from nla_type.
const nlaTypeMask = 0x3fff

// rawAttr is one attribute of a request, as the kernel's nla_for_each_attr
// sees it.
type rawAttr struct {
	typ    uint16 // nla_type() (flags stripped)
	nested bool   // NLA_F_NESTED was set
	data   []byte
	off    uint32 // offset of the nlattr from the start of the nlmsghdr
}

// walkAttrs calls fn for each attribute in b with the kernel's nla_ok() /
// nla_next() rules: iteration stops silently at an attribute whose length is
// shorter than its header or longer than what is left, and leftover bytes
// are ignored (the liberal parse that rtnetlink's deprecated parsers use).
// base is the offset of b from the start of the nlmsghdr. The walk is our
// own rather than mdlayher/netlink's AttributeDecoder because the kernel's
// semantics for malformed tails and the offsets reported in extended acks
// must be reproduced exactly.
func walkAttrs(b []byte, base int, fn func(a rawAttr) *Error) *Error {
	for it := (attrIter{b: b, base: base}); ; {
		a, ok := it.next()
		if !ok {
			return nil
		}
		if err := fn(a); err != nil {
			return err
		}
	}
}

// attrIter is walkAttrs as an iterator (no closure, so callers' values can
// stay on the stack).
type attrIter struct {
	b    []byte
	base int
	off  int
}

func (it *attrIter) next() (rawAttr, bool) {
	if len(it.b)-it.off < nlaHdrLen {
		return rawAttr{}, false
	}
	n := int(ne.Uint16(it.b[it.off:]))
	if n < nlaHdrLen || n > len(it.b)-it.off {
		return rawAttr{}, false
	}
	t := ne.Uint16(it.b[it.off+2:])
	a := rawAttr{
		typ:    t & nlaTypeMask,
		nested: t&nlaFNested != 0,
		data:   it.b[it.off+nlaHdrLen : it.off+n : it.off+n],
		off:    uint32(it.base + it.off),
	}
	it.off += align4(n)
	return a, true
}

// leftover is __nla_validate_parse()'s "rem" after the walk: bytes after
// the last whole attribute (negative when its padding was cut short).
func (it *attrIter) leftover() int { return len(it.b) - it.off }

// Attr is one netlink attribute as the kernel's nla_for_each_attr() sees
// it: the type without its flag bits (nla_type()), the flags, the payload
// (nla_len - 4 bytes, padding excluded) and the offset of its header from
// the start of the walked buffer.
type Attr struct {
	Type         uint16
	Nested       bool // NLA_F_NESTED
	NetByteOrder bool // NLA_F_NET_BYTEORDER
	Data         []byte
	Off          int
}

// RawType is the attribute's nla_type field with its flag bits.
func (a Attr) RawType() uint16 {
	t := a.Type
	if a.Nested {
		t |= nlaFNested
	}
	if a.NetByteOrder {
		t |= nlaFNetByteOrder
	}
	return t
}

// nlaFNetByteOrder is NLA_F_NET_BYTEORDER.
const nlaFNetByteOrder = 0x4000

// Attrs iterates over the attributes in b with the kernel's nla_ok() /
// nla_next() rules: the walk ends silently at an attribute whose length is
// shorter than its header or longer than what is left, and a last
// attribute's padding may be cut short. It is the one attribute walker for
// code outside rtnl (clients, tests, renderers); AttrsLeftover tells what
// the walk left.
func Attrs(b []byte) iter.Seq[Attr] {
	return func(yield func(Attr) bool) {
		for it := (attrIter{b: b}); ; {
			a, ok := it.next()
			if !ok {
				return
			}
			raw := ne.Uint16(b[a.off+2:])
			if !yield(Attr{Type: a.typ, Nested: a.nested, NetByteOrder: raw&nlaFNetByteOrder != 0, Data: a.data, Off: int(a.off)}) {
				return
			}
		}
	}
}

// AttrsLeftover returns the bytes after the last whole attribute of b
// (__nla_validate_parse()'s rem: what the kernel warns about as "bytes
// leftover after parsing attributes"; negative when the last attribute's
// padding was cut short).
func AttrsLeftover(b []byte) int {
	it := attrIter{b: b}
	for {
		if _, ok := it.next(); !ok {
			return it.leftover()
		}
	}
}
