package server

import "github.com/nlemu/nlemu/rtnl"

// A socket's receive queue is charged what the kernel charges its
// sk_rmem_alloc: each queued skb's truesize, not the bytes the reader will
// get. These are the sk_buff geometry of Linux 6.18 on x86_64 (SLUB, 4 KiB
// pages), measured on that kernel (SO_MEMINFO of a netlink listener that
// never reads; SIOCOUTQ of an AF_UNIX sender) and reproduced exactly by
// the functions below; see docs/PROTOCOL.md, "Receive buffer accounting".
const (
	// skbStruct is SKB_DATA_ALIGN(sizeof(struct sk_buff)) (224 bytes).
	skbStruct = 256
	// skbShinfo is SKB_DATA_ALIGN(sizeof(struct skb_shared_info)).
	skbShinfo = 320
	// skbSmallHead is SKB_SMALL_HEAD_CACHE_SIZE: kmalloc_reserve() takes
	// heads up to this size from the skbuff_small_head cache.
	skbSmallHead = 576
	// kmallocMaxCache is KMALLOC_MAX_CACHE_SIZE (two pages): larger heads
	// come from the page allocator, a power-of-two number of pages.
	kmallocMaxCache = 8192
	pageSize        = 4096
	// skbMaxAlloc is SKB_MAX_ALLOC, SKB_WITH_OVERHEAD(PAGE_SIZE <<
	// PAGE_ALLOC_COSTLY_ORDER): the largest linear part of an AF_UNIX skb.
	skbMaxAlloc = 32768 - skbShinfo
)

// skbHead is the head buffer __alloc_skb() gets for size bytes of data:
// kmalloc_reserve() of SKB_HEAD_ALIGN(size), from the small-head cache when
// small enough and small is allowed (not for __GFP_ACCOUNT allocations such
// as an AF_UNIX send), else rounded to a kmalloc size class.
func skbHead(size int, small bool) int {
	obj := (size+63)&^63 + skbShinfo
	if small && obj <= skbSmallHead {
		return skbSmallHead
	}
	n := 512 // obj > 320: kmalloc-512 and up are powers of two
	for n < obj {
		n <<= 1
	}
	return n // beyond kmallocMaxCache: PAGE_SIZE << get_order(obj), the same
}

// skbTruesize is SKB_TRUESIZE(SKB_WITH_OVERHEAD(head)) of a fresh skb of
// size bytes: the head plus the struct sk_buff.
func skbTruesize(size int) int { return skbHead(size, true) + skbStruct }

// trimmedTruesize is the truesize of an skb allocated with alloc bytes and
// holding n, after netlink_trim() (netlink_broadcast(), netlink_unicast()):
// when at least half its truesize is unused tailroom, pskb_expand_head()
// moves it into a head of just n bytes. An IPv6 rule notification
// (alloc 260, head 1024) of 60 bytes is trimmed to 832; one of 80 bytes is
// not and stays 1280.
func trimmedTruesize(alloc, n int) int {
	ts := skbTruesize(alloc)
	end := skbHead(alloc, true) - skbShinfo
	if (end-n)*2 < ts {
		return ts
	}
	return skbTruesize(n)
}

// Kernel allocation sizes (nlmsg_new()) of rule notifications:
// nlmsg_total_size(fib_rule_nlmsg_size()), whose common part in 6.18 is 204
// bytes (header, IIF/OIFNAME, priority, table, suppressors, fwmark/mask,
// tun_id, uid range, protocol, ip_proto, port ranges, DSCP, flow label and
// masks), plus the family's nlmsg_payload(): fib4_rule_nlmsg_payload() (dst,
// src, flow: 24) and fib6_rule_nlmsg_payload() (dst, src: 40); IPMR and
// IP6MR have none.
const (
	ruleAllocV4  = rtnl.NLMSG_HDRLEN + 204 + 24 // 244: small head, 832
	ruleAllocV6  = rtnl.NLMSG_HDRLEN + 204 + 40 // 260: kmalloc-1024
	ruleAllocIMR = rtnl.NLMSG_HDRLEN + 204
)

// datagramTruesize is what queueing b costs the receiver; forced is
// push's force (dump batches and nlemu's own control answers).
//
// nlemu's control messages (HELLO, control ACKs, admin answers) are no
// netlink data and cost nothing. A dump batch (netlink_dump()) is one skb
// of the size the dump allocated (at least NLMSG_GOODSIZE, up to 32 KiB as
// the reader's buffer allows: the batch's capacity), never trimmed.
// Anything else is one message built with nlmsg_new(): for rule
// notifications (and their NLM_F_ECHO copies) of the family's
// fib_rule_nlmsg_size(), for ACKs and other replies of just their length
// (netlink_ack() sizes the ACK exactly), then trimmed.
func datagramTruesize(b []byte, forced bool) int {
	if len(b) < rtnl.NLMSG_HDRLEN {
		return skbTruesize(len(b))
	}
	typ := ne.Uint16(b[4:])
	if typ >= rtnl.NLEMU_CTRL_MIN && typ <= rtnl.NLEMU_CTRL_MAX {
		return 0
	}
	if forced && typ != rtnl.NLMSG_ERROR {
		return skbTruesize(max(cap(b), len(b), rtnl.NLMSG_GOODSIZE))
	}
	alloc := (len(b) + 3) &^ 3
	if (typ == rtnl.RTM_NEWRULE || typ == rtnl.RTM_DELRULE) && len(b) > rtnl.NLMSG_HDRLEN {
		switch b[rtnl.NLMSG_HDRLEN] {
		case rtnl.AF_INET:
			alloc = ruleAllocV4
		case rtnl.AF_INET6:
			alloc = ruleAllocV6
		default:
			alloc = ruleAllocIMR
		}
		alloc = max(alloc, len(b))
	}
	return trimmedTruesize(alloc, len(b))
}

// unixCharge is what an AF_UNIX SOCK_SEQPACKET datagram of n bytes costs
// its sender's sk_wmem_alloc (SIOCOUTQ) until the peer has read it:
// unix_dgram_sendmsg() puts up to SKB_MAX_ALLOC in the head (memcg
// accounted, so never the small-head cache) and the rest, page-aligned, in
// page fragments.
func unixCharge(n int) int {
	frags := 0
	if n > skbMaxAlloc {
		frags = (n - skbMaxAlloc + pageSize - 1) &^ (pageSize - 1)
	}
	return skbHead(n-frags, false) + skbStruct + frags
}
