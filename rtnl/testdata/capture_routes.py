#!/usr/bin/env python3
"""Records raw rtnetlink route requests and the kernel's replies for
rtnl's golden tests (TestRouteGolden*). Run inside the namespace that
capture_routes.sh prepares; writes routes.golden to stdout.

Each case is: a name, whether the socket sets NETLINK_GET_STRICT_CHK, and
the request (nlmsghdr + rtmsg + attributes). Output lines:
  case NAME strict=0|1
  req HEX
  rep HEX        (one line per reply message, in order)
"""
import socket, struct, sys

SOL_NETLINK, EXT_ACK, STRICT = 270, 11, 12
NEW, DEL, GET = 24, 25, 26
REQ, ACK, DUMP = 1, 4, 0x300
CREATE, EXCL = 0x400, 0x200
AF4, AF6 = 2, 10
(DST, SRC, IIF, OIF, GW, PRIO, PREFSRC, METRICS, MP, FLOW, TABLE, MARK, VIA,
 PREF, ENCAP_TYPE, ENCAP, EXPIRES, UID, IP_PROTO, SPORT, DPORT, NH_ID, FLOWLABEL) = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 15, 16, 18, 20, 21, 22, 23, 25, 27, 28, 29, 30, 31)


def nla(t, d):
    n = 4 + len(d)
    return struct.pack('=HH', n, t) + d + b'\0' * ((4 - n % 4) % 4)


def u32(v): return struct.pack('=I', v)
def u16(v): return struct.pack('=H', v)
def be16(v): return struct.pack('!H', v)
def be32(v): return struct.pack('!I', v)
def a4(s): return socket.inet_pton(socket.AF_INET, s)
def a6(s): return socket.inet_pton(socket.AF_INET6, s)


def rtm(fam, dst_len=0, src_len=0, tos=0, table=0, proto=0, scope=0, typ=0, flags=0):
    return struct.pack('=BBBBBBBBI', fam, dst_len, src_len, tos, table, proto, scope, typ, flags)


def msg(typ, flags, body, seq=77):
    return struct.pack('=IHHII', 16 + len(body), typ, flags, seq, 0) + body


def new4(*attrs, tos=0, **kw):
    h = dict(dst_len=16, table=254, proto=3, scope=253, typ=1)
    h.update(kw)
    return msg(NEW, REQ | ACK | CREATE | EXCL, rtm(AF4, tos=tos, **h) + b''.join(attrs))


def new6(*attrs, tos=1, **kw):
    # tos 1 makes the kernel stop right after the attribute policy with
    # "Invalid dsfield (tos): option not available for IPv6".
    h = dict(dst_len=64, table=254, proto=3, scope=0, typ=1)
    h.update(kw)
    return msg(NEW, REQ | ACK | CREATE | EXCL, rtm(AF6, tos=tos, **h) + b''.join(attrs))


def get(fam, *attrs, flags=0, **kw):
    return msg(GET, REQ, rtm(fam, flags=flags, **kw) + b''.join(attrs))


def dump(fam, *attrs, body=None, **kw):
    if body is None:
        body = rtm(fam, **kw) + b''.join(attrs)
    return msg(GET, REQ | DUMP, body)


D4 = nla(DST, a4('10.220.0.0'))
ECN = dict(tos=1)  # rtm_to_fib_config() stops right after the policy: ECN bits

CASES = [
    # Dumps (strict and legacy, both families, filters).
    ('dump4-strict', 1, dump(AF4)),
    ('dump6-strict', 1, dump(AF6)),
    ('dump-all-legacy', 0, dump(0)),
    ('dump4-table100', 1, dump(AF4, nla(TABLE, u32(100)))),
    ('dump6-oif', 1, dump(AF6, nla(OIF, u32(3)))),
    ('dump4-proto-static', 1, dump(AF4, proto=4)),
    ('dump4-cloned', 1, dump(AF4, flags=0x200)),
    # Route get replies.
    ('get4-gw', 1, get(AF4, nla(DST, a4('8.8.8.8')), dst_len=32, flags=0x1000)),
    ('get4-mark-uid', 1, get(AF4, nla(DST, a4('10.1.2.3')), nla(MARK, u32(16)), nla(UID, u32(1500)), dst_len=32, flags=0x1000)),
    ('get4-from', 1, get(AF4, nla(DST, a4('10.2.3.4')), nla(SRC, a4('10.0.0.1')), dst_len=32, src_len=32, flags=0x1000)),
    ('get4-local', 1, get(AF4, nla(DST, a4('10.0.0.1')), dst_len=32, flags=0x1000)),
    ('get4-brd', 1, get(AF4, nla(DST, a4('10.0.0.255')), dst_len=32, flags=0x1000)),
    ('get4-iif', 1, get(AF4, nla(DST, a4('10.1.2.3')), nla(SRC, a4('10.0.0.9')), nla(IIF, u32(3)), dst_len=32, src_len=32, flags=0x1000)),
    ('get4-fibmatch', 1, get(AF4, nla(DST, a4('10.1.2.3')), dst_len=32, flags=0x3000)),
    ('get4-fibmatch-mp', 1, get(AF4, nla(DST, a4('10.8.1.1')), dst_len=32, flags=0x3000)),
    ('get4-notify', 1, get(AF4, nla(DST, a4('10.3.1.1')), dst_len=32, flags=0x1100)),
    ('get4-legacy', 0, get(AF4, nla(DST, a4('8.8.4.4')))),
    ('get6-gw', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), dst_len=128)),
    ('get6-local', 1, get(AF6, nla(DST, a6('2001:db8::1')), dst_len=128)),
    ('get6-iif', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), nla(SRC, a6('2001:db8:3::5')), nla(IIF, u32(3)), dst_len=128, src_len=128)),
    ('get6-fibmatch', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), dst_len=128, flags=0x2000)),
    ('get6-fibmatch-ecmp', 1, get(AF6, nla(DST, a6('2001:db8:3::5')), dst_len=128, flags=0x2000)),
    ('get6-prefsrc', 1, get(AF6, nla(DST, a6('2001:db8:7::5')), dst_len=128)),
    ('get6-flowlabel', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), nla(FLOWLABEL, be32(0x12345)), nla(IP_PROTO, b'\x06'), nla(SPORT, be16(1000)), nla(DPORT, be16(80)), dst_len=128)),
    ('get6-two-prefsrc', 1, get(AF6, nla(DST, a6('2001:db8:9::5')), dst_len=128)),
    ('get6-srcroute', 1, get(AF6, nla(DST, a6('2001:db8:4::5')), nla(SRC, a6('2001:db8:aa::9')), dst_len=128, src_len=128)),
    ('get6-expires', 1, get(AF6, nla(DST, a6('2001:db8:6::5')), dst_len=128, flags=0x2000)),
    ('get6-linklocal-gw', 1, get(AF6, nla(DST, a6('2001:db8:8::5')), nla(OIF, u32(3)), dst_len=128)),
    ('get4-via6', 1, get(AF4, nla(DST, a4('10.14.1.1')), dst_len=32, flags=0x1000)),
    ('get4-metrics', 1, get(AF4, nla(DST, a4('10.15.1.1')), dst_len=32, flags=0x1000)),
    ('get4-mp', 1, get(AF4, nla(DST, a4('10.8.1.1')), dst_len=32, flags=0x1000)),
    ('get4-linkdown', 1, get(AF4, nla(DST, a4('10.12.1.1')), dst_len=32, flags=0x3000)),
    # Decode errors: NEWROUTE policy (E15), IPv4 then IPv6.
    ('err-new4-prio-short', 0, new4(D4, nla(OIF, u32(3)), nla(PRIO, b'\x05\x00'))),
    ('err-new4-dst-short', 0, new4(nla(DST, b'\x0a\x00'))),
    ('err-new4-metrics-short', 0, new4(D4, nla(METRICS, b'\x01\x02'))),
    ('err-new4-mp-short', 0, new4(D4, nla(MP, b'\x01\x02\x03\x04'))),
    ('err-new4-encaptype-short', 0, new4(D4, nla(ENCAP_TYPE, b'\x01'))),
    ('err-new4-encap-short', 0, new4(D4, nla(ENCAP, b'\x01\x02'))),
    ('err-new4-ipproto-empty', 0, new4(D4, nla(IP_PROTO, b''))),
    ('err-new4-nhid-long', 0, new4(D4, nla(NH_ID, b'\x01\x00\x00\x00\x00\x00\x00\x00'))),
    ('err-new4-nhid-short', 0, new4(D4, nla(NH_ID, b'\x01\x00'))),
    ('err-new4-nhid-nested', 0, new4(D4, nla(NH_ID | 0x8000, u32(1)))),
    ('err-new4-flowlabel', 0, new4(D4, nla(FLOWLABEL, be32(1)))),
    ('err-new4-unknown-type-ignored', 0, new4(D4, nla(40, u32(1)), nla(0, u32(1)), **ECN)),
    ('err-new4-metrics-nested-ok', 0, new4(D4, nla(METRICS | 0x8000, nla(2, u32(1400))), **ECN)),
    ('err-new4-trailing-ok', 0, new4(D4, b'\x01\x00', **ECN)),
    ('err-new4-short-body', 0, msg(NEW, REQ | ACK | CREATE | EXCL, b'\x02\x10\x00\x00')),
    ('err-new4-empty-body', 0, msg(NEW, REQ | ACK | CREATE | EXCL, b'')),
    ('err-new6-short-body', 0, msg(NEW, REQ | ACK | CREATE | EXCL, b'\x0a\x40\x00\x00\x00\x00')),
    ('err-del4-short-body', 0, msg(DEL, REQ | ACK, b'\x02')),
    ('err-del6-prio-short', 0, msg(DEL, REQ | ACK, rtm(AF6, 64, table=254) + nla(DST, a6('2001:db8:1::')) + nla(PRIO, b'\x01'))),
    ('err-new0', 0, msg(NEW, REQ | ACK | CREATE | EXCL, rtm(0, 16, table=254, proto=3, typ=1) + D4)),
    ('err-del7', 0, msg(DEL, REQ | ACK, rtm(7, 16, table=254) + D4)),
    ('err-new6-gw-short', 0, new6(nla(GW, a4('10.0.0.2')))),
    ('err-new6-prefsrc-short', 0, new6(nla(PREFSRC, b'\x20\x01'))),
    ('err-new6-flowlabel-short', 0, new6(nla(FLOWLABEL, b'\x00\x01'))),
    ('err-new6-pref-empty', 0, new6(nla(PREF, b''))),
    ('err-new6-expires-short', 0, new6(nla(EXPIRES, b'\x01'))),
    ('err-new6-dst-short-ok', 0, new6(nla(DST, b'\x20\x01'))),
    ('err-new6-gw4-in-v4policy-ok', 0, new6(nla(VIA, b'\x02\x00' + a4('10.0.0.2')))),
    # Decode errors: route get, strict and legacy.
    ('err-get4-short', 1, msg(GET, REQ, b'\x02\x20\x00\x00')),
    ('err-get6-short', 1, msg(GET, REQ, b'\x0a\x80\x00\x00')),
    ('err-get4-hdr', 1, get(AF4, nla(DST, a4('8.8.8.8')), dst_len=24)),
    ('err-get4-hdr-table', 1, get(AF4, nla(DST, a4('8.8.8.8')), dst_len=32, table=254)),
    ('err-get4-flags', 1, get(AF4, nla(DST, a4('8.8.8.8')), dst_len=32, flags=0x200)),
    ('err-get4-dstlen0', 1, get(AF4, nla(DST, a4('8.8.8.8')))),
    ('err-get4-table-attr', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(TABLE, u32(254)), dst_len=32)),
    ('err-get4-unknown', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(40, u32(1)), dst_len=32)),
    ('err-get4-type0', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(0, u32(1)), dst_len=32)),
    ('err-get4-trailing', 1, get(AF4, nla(DST, a4('8.8.8.8')), b'\x01\x00\x00', dst_len=32)),
    ('err-get4-flowlabel', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(FLOWLABEL, be32(1)), dst_len=32)),
    ('err-get4-mark-short', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(MARK, b'\x01\x00'), dst_len=32)),
    ('err-get4-sport-short', 1, get(AF4, nla(DST, a4('8.8.8.8')), nla(SPORT, b'\x01'), dst_len=32)),
    ('err-get4-legacy-table-ok', 0, get(AF4, nla(DST, a4('8.8.8.8')), nla(TABLE, u32(254)), dst_len=32, table=9)),
    ('err-get6-hdr', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), dst_len=64)),
    ('err-get6-flags', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), dst_len=128, flags=0x1000)),
    ('err-get6-dstlen0', 1, get(AF6, nla(DST, a6('2001:db8:1::5')))),
    ('err-get6-table-attr', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), nla(TABLE, u32(254)), dst_len=128)),
    ('err-get6-flowlabel-short', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), nla(FLOWLABEL, b'\x00\x01'), dst_len=128)),
    ('err-get6-flowlabel-nested', 1, get(AF6, nla(DST, a6('2001:db8:1::5')), nla(FLOWLABEL | 0x8000, be32(1)), dst_len=128)),
    # Decode errors: dumps (strict), answered in NLMSG_DONE.
    ('err-dump4-short', 1, dump(AF4, body=b'\x02\x00\x00\x00')),
    ('err-dump6-short', 1, dump(AF6, body=b'\x0a\x00\x00\x00')),
    ('err-dump4-hdr', 1, dump(AF4, dst_len=8)),
    ('err-dump6-hdr-scope', 1, dump(AF6, scope=253)),
    ('err-dump4-flags', 1, dump(AF4, flags=0x1000)),
    ('err-dump4-attr', 1, dump(AF4, nla(PRIO, u32(1)))),
    ('err-dump6-attr', 1, dump(AF6, nla(DST, a6('2001:db8::')))),
    ('err-dump4-unknown', 1, dump(AF4, nla(40, u32(1)))),
    ('err-dump4-trailing', 1, dump(AF4, nla(TABLE, u32(254)), b'\x01\x00')),
    ('err-dump4-table-short', 1, dump(AF4, nla(TABLE, b'\x01\x00'))),
    ('err-dump4-oif-unknown', 1, dump(AF4, nla(OIF, u32(999)))),
    ('err-dump4-prio-then-oif-unknown', 1, dump(AF4, nla(PRIO, u32(1)), nla(OIF, u32(999)))),
    ('err-dump4-oif-unknown-then-dst', 1, dump(AF4, nla(OIF, u32(999)), nla(DST, a4('10.0.0.0')))),
    ('err-dump6-table-then-oif-unknown', 1, dump(AF6, nla(TABLE, u32(100)), nla(OIF, u32(999)))),
    ('err-dump4-legacy-hdr-ok', 0, dump(AF4, nla(PRIO, u32(1)), dst_len=8, scope=9)),
    # lwtunnel_valid_encap_type() (ValidEncapType) and
    # lwtunnel_valid_encap_type_attr() (ValidMultipathEncap): otherwise
    # valid requests with dst_len 33, so an accepted type answers "Invalid
    # prefix length" (checked after the attribute loop).
    ('enc-type0', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(0)), dst_len=33)),
    ('enc-type-mpls', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(1)), dst_len=33)),
    ('enc-type-ip-ok', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(2)), dst_len=33)),
    ('enc-type-bpf-ok', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(6)), dst_len=33)),
    ('enc-type-xfrm', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(10)), dst_len=33)),
    ('enc-type11', 0, new4(D4, nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(11)), dst_len=33)),
    ('enc-mp-type200', 0, new4(D4, nla(MP, struct.pack('=HBBi', 16, 0, 0, 3) + nla(ENCAP_TYPE, u16(200))), dst_len=33)),
    ('enc-mp-type-short', 0, new4(D4, nla(MP, struct.pack('=HBBi', 16, 0, 0, 3) + nla(ENCAP_TYPE, b'\x01')), dst_len=33)),
    ('enc-mp-second-hop', 0, new4(D4, nla(MP, struct.pack('=HBBi', 8, 0, 0, 3) + struct.pack('=HBBi', 16, 0, 0, 3) + nla(ENCAP_TYPE, u16(3))), dst_len=33)),
    ('enc-v6-mpls', 0, new6(nla(DST, a6('2001:db8:f2::')), nla(OIF, u32(3)), nla(ENCAP_TYPE, u16(1)), tos=0)),
    ('enc-v6-mp-order', 0, new6(nla(DST, a6('2001:db8:f2::')), nla(MP, struct.pack('=HBBi', 16, 0, 0, 3) + nla(ENCAP_TYPE, u16(200))), tos=0)),
    # rtm_to_fib_config()'s attribute loop (RouteMsg.CheckAttrLoop4): RTA_VIA,
    # RTA_MULTIPATH encap types and RTA_ENCAP_TYPE fail in message order.
    ('loop-via-short', 0, new4(D4, nla(VIA, b'\x02'), dst_len=33)),
    ('loop-via4-badlen', 0, new4(D4, nla(VIA, b'\x02\x00\x0a\x00\x00'), dst_len=33)),
    ('loop-via6-badlen', 0, new4(D4, nla(VIA, b'\x0a\x00' + a4('10.0.0.2')), dst_len=33)),
    ('loop-via-fam7', 0, new4(D4, nla(VIA, b'\x07\x00' + a4('10.0.0.2')), dst_len=33)),
    ('loop-via4-ok', 0, new4(D4, nla(VIA, b'\x02\x00' + a4('10.0.0.2')), dst_len=33)),
    ('loop-encap-then-via', 0, new4(D4, nla(ENCAP_TYPE, u16(1)), nla(VIA, b'\x07\x00'), dst_len=33)),
    ('loop-via-then-encap', 0, new4(D4, nla(VIA, b'\x07\x00'), nla(ENCAP_TYPE, u16(1)), dst_len=33)),
    ('loop-mp-then-via', 0, new4(D4, nla(MP, struct.pack('=HBBi', 16, 0, 0, 3) + nla(ENCAP_TYPE, u16(1))), nla(VIA, b'\x07\x00'), dst_len=33)),
    ('loop-two-via-first-bad', 0, new4(D4, nla(VIA, b'\x07\x00'), nla(VIA, b'\x02\x00' + a4('10.0.0.2')), dst_len=33)),
    ('loop-tos-first-order', 0, new4(D4, nla(VIA, b'\x07\x00'), tos=3, dst_len=33)),
    ('loop-type-first-order', 0, new4(D4, nla(VIA, b'\x07\x00'), typ=12, dst_len=33)),
    # ip_metrics_convert() (RouteMsg.ConvertMetrics): otherwise valid routes
    # whose metrics fail, then one that succeeds with clamped values and the
    # fibmatch get that shows what the kernel stored.
    ('met-type-big', 0, new4(D4, nla(OIF, u32(3)), nla(METRICS, nla(2, u32(1400)) + nla(18, u32(1))))),
    ('met-type-big-v6', 0, new6(nla(DST, a6('2001:db8:f0::')), nla(OIF, u32(3)), nla(METRICS, nla(18, u32(1))), tos=0)),
    ('met-short', 0, new4(D4, nla(OIF, u32(3)), nla(METRICS, nla(2, u32(1400)) + nla(8, b'\x01\x02')))),
    ('met-long', 0, new4(D4, nla(OIF, u32(3)), nla(METRICS, nla(2, b'\x01\x02\x00\x00\x00\x00\x00\x00')))),
    ('met-cc-unknown', 0, new4(D4, nla(OIF, u32(3)), nla(METRICS, nla(16, b'nosuch\0')))),
    ('met-features', 0, new4(D4, nla(OIF, u32(3)), nla(METRICS, nla(12, u32(0x100))))),
    ('met-type0-ok', 0, new4(nla(DST, a4('10.222.0.0')), nla(OIF, u32(3)), nla(METRICS, nla(0, u32(5)) + nla(2, u32(1500))))),
    ('met-clamp-ok', 0, new4(nla(DST, a4('10.221.0.0')), nla(OIF, u32(3)), nla(METRICS, nla(2, u32(70000)) + nla(8, u32(70000)) + nla(10, u32(300)) + nla(16, b'cubic\0') + nla(12, u32(1)) + nla(3, u32(0))))),
    ('met-clamp-show', 1, get(AF4, nla(DST, a4('10.221.1.1')), dst_len=32, flags=0x3000)),
    ('met-clamp6-ok', 0, new6(nla(DST, a6('2001:db8:f1::')), nla(OIF, u32(3)), nla(METRICS, nla(2, u32(70000)) + nla(10, u32(300)) + nla(16, b'bbr')), tos=0)),
    ('met-clamp6-show', 1, get(AF6, nla(DST, a6('2001:db8:f1::1')), dst_len=128, flags=0x2000)),
]


def run(name, strict, req):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_NETLINK, EXT_ACK, 1)
    if strict:
        s.setsockopt(SOL_NETLINK, STRICT, 1)
    s.bind((0, 0))
    s.send(req)
    s.settimeout(2)
    reps = []
    done = False
    is_dump = struct.unpack_from('=H', req, 6)[0] & DUMP == DUMP and struct.unpack_from('=H', req, 4)[0] == GET
    while not done:
        buf = s.recv(1 << 16)
        off = 0
        while off + 16 <= len(buf):
            n, t = struct.unpack_from('=IH', buf, off)
            reps.append(buf[off:off + n])
            if t in (2, 3) or not is_dump:
                done = True
            off += (n + 3) & ~3
    s.close()
    print('case %s strict=%d' % (name, strict))
    print('req ' + req.hex())
    for r in reps:
        print('rep ' + r.hex())


# Route changes made with iproute2 while a socket listens on
# RTNLGRP_IPV4_ROUTE and RTNLGRP_IPV6_ROUTE: the notifications (kernel
# flags included) are recorded as "ntf" lines of a "notify" case.
NOTIFY = [
    'route add 10.30.0.0/16 via 10.0.0.2 metric 3 mtu 1400 realm 4',
    'route replace 10.30.0.0/16 via 10.0.0.3 metric 3',
    'route append 10.30.0.0/16 dev v0 metric 3',
    'route add 10.31.0.0/16 table 500 nexthop via 10.0.0.2 weight 4 nexthop dev v1',
    'route del 10.30.0.0/16 via 10.0.0.3 metric 3',
    'route add prohibit 10.32.0.0/16 table 100000',
    '-6 route add 2001:db8:30::/64 via 2001:db8::2 metric 50',
    '-6 route append 2001:db8:30::/64 via 2001:db8::3 metric 50',
    '-6 route add 2001:db8:31::/64 nexthop via 2001:db8::2 nexthop via 2001:db8::3 weight 2',
    '-6 route del 2001:db8:30::/64 via 2001:db8::2 metric 50',
    '-6 route replace 2001:db8:31::/64 via 2001:db8::4',
    '-6 route add unreachable 2001:db8:32::/64 table 300',
    'route flush table 500',
]


def notify(cmd):
    import subprocess, select
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.bind((0, (1 << 6) | (1 << 10)))
    subprocess.run(['ip'] + cmd.split(), check=True)
    print('case notify %s strict=0' % cmd.replace(' ', '_'))
    while select.select([s], [], [], 0.2)[0]:
        buf = s.recv(1 << 16)
        off = 0
        while off + 16 <= len(buf):
            n = struct.unpack_from('=I', buf, off)[0]
            print('ntf ' + buf[off:off + n].hex())
            off += (n + 3) & ~3
    s.close()


if __name__ == '__main__':
    for c in CASES:
        run(*c)
    for cmd in NOTIFY:
        notify(cmd)
