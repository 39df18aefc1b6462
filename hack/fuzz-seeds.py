#!/usr/bin/env python3
"""Writes the fuzz seeds from the straces hack/fuzz-seeds.sh captured.

usage: fuzz-seeds.py REPO WORKDIR

Each seed is a file in Go's corpus format (testdata/fuzz/FuzzX/NAME) holding
a real datagram `ip` sent to the kernel (ip-NN-K, NN the command's line in
hack/fuzz-seeds.sh) or the shim sent to nlemu (shim-...), cut into the
arguments each target takes.
"""
import glob, hashlib, os, re, struct, sys

repo, work = sys.argv[1], sys.argv[2]

CALL = re.compile(r'^(?:(\d+)\s+)?(sendmsg|sendto|write)\((\d+),')
HEX = re.compile(r'^(?:\d+\s+)? \| [0-9a-f]{5}  (.{49})')


def datagrams(path):
    """[(pid, fd, bytes)] for each traced send with a hex dump."""
    out = []
    for line in open(path):
        m = CALL.match(line)
        if m:
            out.append([m.group(1), int(m.group(3)), bytearray()])
            continue
        m = HEX.match(line)
        if m and out:
            out[-1][2] += bytes.fromhex(m.group(1).replace(' ', ''))
    return [(p, fd, bytes(b)) for p, fd, b in out if is_netlink(bytes(b))]


def is_netlink(b):
    return len(b) >= 16 and 16 <= struct.unpack_from('<I', b)[0] <= len(b)


def messages(b):
    """netlink_rcv_skb()'s split: [(type, flags, seq, payload)]."""
    out = []
    while len(b) >= 16:
        n, t, f, s = struct.unpack_from('<IHHI', b)
        if n < 16 or n > len(b):
            break
        out.append((t, f, s, b[16:n]))
        b = b[min((n + 3) & ~3, len(b)):]
    return out


def lit(v):
    if isinstance(v, bool):
        return 'bool(%s)' % ('true' if v else 'false')
    if isinstance(v, tuple):
        return '%s(%d)' % v
    s = ''.join(chr(c) if 32 <= c < 127 and c not in (34, 92) else '\\x%02x' % c for c in v)
    return '[]byte("%s")' % s


written = {}


def seed(pkg, target, name, *args):
    d = os.path.join(repo, pkg, 'testdata', 'fuzz', target)
    if d not in written:
        os.makedirs(d, exist_ok=True)
        for old in glob.glob(os.path.join(d, 'ip-*')) + glob.glob(os.path.join(d, 'shim-*')):
            os.remove(old)
        written[d] = set()
    body = 'go test fuzz v1\n' + ''.join(lit(a) + '\n' for a in args)
    h = hashlib.sha256(body.encode()).hexdigest()
    if h in written[d]:
        return
    written[d].add(h)
    with open(os.path.join(d, name), 'w') as f:
        f.write(body)


# The message types of server.FuzzRequest's kinds, in its order.
REQUEST_TYPES = [16, 17, 18, 19, 20, 21, 22, 24, 25, 26, 32, 33, 34]
NLM_F_DUMP = 0x300

for path in sorted(glob.glob(os.path.join(work, 'ip-*.strace'))):
    tag = os.path.basename(path)[:-len('.strace')]
    for k, (_, _, b) in enumerate(datagrams(path)):
        name = '%s-%d' % (tag, k)
        seed('rtnl', 'FuzzSplitDatagram', name, b)
        seed('rtnl', 'FuzzDecoders', name, b)
        for t, f, _, p in messages(b):
            if t in REQUEST_TYPES:
                seed('server', 'FuzzRequest', name, ('uint8', REQUEST_TYPES.index(t)), ('uint16', f), p)
            if t in (32, 33, 34):
                seed('server', 'FuzzRuleRequest', name, ('uint8', t - 32), ('uint16', f), p)
            if t in (24, 25, 26):
                seed('rtnl', 'FuzzRouteDecode', name, b)
            if t in (24, 25):
                seed('fib', 'FuzzRouteConfig', name, p, False)
            if t == 26 and f & NLM_F_DUMP == 0:
                seed('nsmgr', 'FuzzRouteGet', name, p, False)
                seed('nsmgr', 'FuzzRouteGet', name + '-strict', p, True)
            if t in (20, 21, 22):
                seed('rtnl', 'FuzzAddrDecode', name, p)
            if t in (16, 17, 18, 19):
                seed('rtnl', 'FuzzDecodeLinkConf', name, p)

NLEMU_HELLO, CTRL_MIN, CTRL_MAX = 0xFE00, 0xFE00, 0xFEFF
for path in sorted(glob.glob(os.path.join(work, 'shim-*.strace'))):
    tag = os.path.basename(path)[:-len('.strace')]
    hello = {}  # (pid, fd) -> the HELLO that opened the connection
    for k, (pid, fd, b) in enumerate(datagrams(path)):
        name = '%s-%d' % (tag, k)
        seed('rtnl', 'FuzzSplitDatagram', name, b)
        ms = messages(b)
        if ms and ms[0][0] == NLEMU_HELLO:
            hello[(pid, fd)] = b
            seed('server', 'FuzzUnixHandshake', name, b, b'')
            continue
        if (pid, fd) in hello:
            seed('server', 'FuzzUnixHandshake', name, hello[(pid, fd)], b)
        for t, f, _, p in ms:
            if CTRL_MIN <= t <= CTRL_MAX:
                seed('server', 'FuzzControl', name, ('uint8', t - CTRL_MIN), ('uint16', f), p)

for d in sorted(written):
    print('%4d seeds  %s' % (len(written[d]), os.path.relpath(d, repo)))
