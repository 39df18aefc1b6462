// The build constraint below is for the Go tool only: shim_test.go compiles
// this file with gcc at test time and runs it under the LD_PRELOAD shim.
//
//go:build ignore

/*
 * shim_prog.c - exercises libnlemu_preload.so the way libc netlink clients do.
 *
 * usage: shim_prog MODE [ARGS]
 * Each mode prints "key=value" lines on stdout and exits 0, or prints
 * "FAIL: ..." on stderr and exits 1. Modes that compare with the real kernel
 * (sockopt, peek) print only values that must be equal on both.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/fib_rules.h>
#include <linux/genetlink.h>

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "FAIL: %s:%d: ", __func__, __LINE__);          \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)
#define CHECK(c, ...)                                                          \
	do {                                                                   \
		if (!(c))                                                      \
			FAIL(__VA_ARGS__);                                     \
	} while (0)

static int nlsock(int flags)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | flags, NETLINK_ROUTE);
	CHECK(fd >= 0, "socket: %s", strerror(errno));
	return fd;
}

static uint32_t portid_of(int fd)
{
	struct sockaddr_nl nl;
	socklen_t len = sizeof(nl);
	memset(&nl, 0xAA, sizeof(nl));
	CHECK(getsockname(fd, (struct sockaddr *)&nl, &len) == 0, "getsockname: %s", strerror(errno));
	CHECK(len == sizeof(nl), "getsockname len %u", len);
	CHECK(nl.nl_family == AF_NETLINK, "getsockname family %u", nl.nl_family);
	return nl.nl_pid;
}

static void send_dump(int fd, uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
	} req;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_GETRULE;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = seq;
	req.r.family = AF_INET;
	ssize_t n = send(fd, &req, sizeof(req), 0);
	CHECK(n == (ssize_t)sizeof(req), "send dump: %zd %s", n, strerror(errno));
}

/* recv_dump reads a RTM_GETRULE dump with bufsz-byte reads until NLMSG_DONE
 * and returns the number of rules. With wait, it polls before each read (the
 * socket is nonblocking). */
static int recv_dump(int fd, uint32_t seq, size_t bufsz, int wait, int *datagrams)
{
	uint32_t pid = portid_of(fd);
	char *buf = malloc(bufsz);
	int rules = 0, dgrams = 0;
	for (;;) {
		if (wait) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int r = poll(&p, 1, 5000);
			CHECK(r == 1 && (p.revents & POLLIN), "poll: %d revents %#x %s", r, p.revents,
			      strerror(errno));
		}
		struct sockaddr_nl from;
		struct iovec iov = {.iov_base = buf, .iov_len = bufsz};
		struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				   .msg_iovlen = 1};
		ssize_t n = recvmsg(fd, &m, 0);
		CHECK(n > 0, "recvmsg: %zd %s", n, strerror(errno));
		CHECK(!(m.msg_flags & MSG_TRUNC), "datagram truncated with a %zu-byte buffer", bufsz);
		CHECK(m.msg_namelen == sizeof(from) && from.nl_family == AF_NETLINK && from.nl_pid == 0,
		      "sender namelen %u family %u pid %u", m.msg_namelen, from.nl_family, from.nl_pid);
		dgrams++;
		size_t left = (size_t)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			CHECK(h->nlmsg_seq == seq && h->nlmsg_pid == pid, "seq %u pid %u, want %u %u",
			      h->nlmsg_seq, h->nlmsg_pid, seq, pid);
			if (h->nlmsg_type == NLMSG_DONE) {
				free(buf);
				if (datagrams)
					*datagrams = dgrams;
				return rules;
			}
			CHECK(h->nlmsg_type != NLMSG_ERROR, "dump error %d",
			      ((struct nlmsgerr *)NLMSG_DATA(h))->error);
			CHECK(h->nlmsg_type == RTM_NEWRULE, "type %u", h->nlmsg_type);
			CHECK(h->nlmsg_flags & NLM_F_MULTI, "dump part without NLM_F_MULTI");
			rules++;
		}
	}
}

/* ---- modes ----------------------------------------------------------- */

/* A nonblocking socket driven by poll. */
static void mode_nonblock(void)
{
	int fd = nlsock(SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK, "O_NONBLOCK not set");
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC, "FD_CLOEXEC not set");
	char b[64];
	CHECK(recv(fd, b, sizeof(b), 0) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
	      "recv on an empty nonblocking socket: %s", strerror(errno));
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK(poll(&p, 1, 0) == 0, "poll reports an empty socket readable");
	send_dump(fd, 42);
	int n = recv_dump(fd, 42, 32768, 1, NULL);
	printf("rules=%d\n", n);
	CHECK(recv(fd, b, sizeof(b), MSG_DONTWAIT) < 0 && errno == EAGAIN, "data after NLMSG_DONE");
	/* blocking socket, MSG_DONTWAIT per call */
	int fd2 = nlsock(0);
	CHECK(recv(fd2, b, sizeof(b), MSG_DONTWAIT) < 0 && errno == EAGAIN, "MSG_DONTWAIT: %s",
	      strerror(errno));
	close(fd2);
	close(fd);
}

/* iproute2's rtnl_recvmsg: peek with MSG_PEEK|MSG_TRUNC and no buffer for
 * the size, then receive the datagram. */
static void mode_peek(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
	uint32_t pid = portid_of(fd);
	send_dump(fd, 7);

	struct sockaddr_nl from;
	memset(&from, 0xAA, sizeof(from));
	struct iovec iov = {.iov_base = NULL, .iov_len = 0};
	struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1};
	ssize_t len = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
	CHECK(len > 0, "peek: %zd %s", len, strerror(errno));
	printf("peek_trunc=%d\n", !!(m.msg_flags & MSG_TRUNC));
	printf("peek_namelen=%u family=%u nl_pid=%u nl_groups=%u\n", m.msg_namelen, from.nl_family,
	       from.nl_pid, from.nl_groups);

	/* a second peek into a small buffer sees the same length again */
	char small[16];
	iov.iov_base = small;
	iov.iov_len = sizeof(small);
	m.msg_namelen = sizeof(from);
	ssize_t len2 = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
	printf("peek_again_same=%d trunc=%d\n", len2 == len, !!(m.msg_flags & MSG_TRUNC));

	/* without MSG_TRUNC a peek returns what fits */
	m.msg_namelen = sizeof(from);
	ssize_t len3 = recvmsg(fd, &m, MSG_PEEK);
	printf("peek_plain=%zd trunc=%d\n", len3, !!(m.msg_flags & MSG_TRUNC));

	char *buf = malloc((size_t)len);
	iov.iov_base = buf;
	iov.iov_len = (size_t)len;
	m.msg_namelen = sizeof(from);
	ssize_t got = recvmsg(fd, &m, 0);
	printf("recv_full=%d trunc=%d\n", got == len, !!(m.msg_flags & MSG_TRUNC));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	printf("reply_pid_ok=%d reply_seq=%u\n", h->nlmsg_pid == pid, h->nlmsg_seq);
	int rules = 0, done = 0;
	size_t left = (size_t)got;
	for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_type == RTM_NEWRULE)
			rules++;
		if (h->nlmsg_type == NLMSG_DONE)
			done = 1;
	}
	printf("first_datagram_rules=%d done=%d\n", rules, done);
	free(buf);

	/* recvfrom fills a sockaddr_nl too; a short address buffer is cut */
	send_dump(fd, 8);
	char big[65536];
	struct sockaddr_nl rf;
	socklen_t rl = sizeof(rf);
	memset(&rf, 0xAA, sizeof(rf));
	ssize_t n = recvfrom(fd, big, sizeof(big), 0, (struct sockaddr *)&rf, &rl);
	printf("recvfrom_ok=%d addrlen=%u family=%u nl_pid=%u\n", n > 0, rl, rf.nl_family, rf.nl_pid);
	while (n > 0) { /* drain the rest of dump 8 */
		int fin = 0;
		size_t l = (size_t)n;
		for (struct nlmsghdr *x = (struct nlmsghdr *)big; NLMSG_OK(x, l); x = NLMSG_NEXT(x, l))
			fin |= x->nlmsg_type == NLMSG_DONE;
		if (fin)
			break;
		n = recv(fd, big, sizeof(big), 0);
	}
	close(fd);
}

/* A dump that needs many datagrams, read with a small buffer. */
static void mode_dump(const char *arg)
{
	size_t bufsz = arg ? (size_t)atoi(arg) : 4096;
	int fd = nlsock(SOCK_CLOEXEC);
	/* an empty datagram is a no-op for netlink (and must not end the
	 * connection to the server) */
	CHECK(send(fd, "", 0, 0) == 0, "empty send: %s", strerror(errno));
	send_dump(fd, 99);
	int dgrams = 0;
	int n = recv_dump(fd, 99, bufsz, 0, &dgrams);
	printf("rules=%d\ndatagrams=%d\n", n, dgrams);
	/* the same with read()/write() */
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
	} req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETRULE,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 100},
		 .r = {.family = AF_INET}};
	CHECK(write(fd, &req, sizeof(req)) == (ssize_t)sizeof(req), "write: %s", strerror(errno));
	char *buf = malloc(bufsz);
	int rules = 0;
	for (int fin = 0; !fin;) {
		ssize_t r = read(fd, buf, bufsz);
		CHECK(r > 0, "read: %s", strerror(errno));
		size_t l = (size_t)r;
		for (struct nlmsghdr *x = (struct nlmsghdr *)buf; NLMSG_OK(x, l); x = NLMSG_NEXT(x, l)) {
			CHECK(x->nlmsg_seq == 100, "seq %u", x->nlmsg_seq);
			if (x->nlmsg_type == NLMSG_DONE)
				fin = 1;
			else if (x->nlmsg_type == RTM_NEWRULE)
				rules++;
		}
	}
	printf("read_rules=%d\n", rules);
	free(buf);
	/* A larger buffer, once seen, lets later dumps use larger datagrams
	 * (the kernel's max_recvmsg_len; nlemu's NLEMU_RECVLEN). */
	send_dump(fd, 101);
	recv_dump(fd, 101, 32768, 0, NULL);
	send_dump(fd, 102);
	recv_dump(fd, 102, 32768, 0, &dgrams);
	printf("big_datagrams=%d\n", dgrams);
	close(fd);
}

/* sendmmsg/recvmmsg: two acked requests out, two NLMSG_ERRORs back. */
static void mode_mmsg(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		struct nlattr a;
		uint32_t prio;
	} req[2];
	struct iovec siov[2];
	struct mmsghdr out[2];
	memset(req, 0, sizeof(req));
	memset(out, 0, sizeof(out));
	for (int i = 0; i < 2; i++) {
		req[i].h.nlmsg_len = sizeof(req[i]);
		req[i].h.nlmsg_type = RTM_DELRULE;
		req[i].h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
		req[i].h.nlmsg_seq = (uint32_t)(i + 1);
		req[i].r.family = AF_INET6;
		req[i].a.nla_type = FRA_PRIORITY;
		req[i].a.nla_len = NLA_HDRLEN + 4;
		req[i].prio = 4242;
		siov[i].iov_base = &req[i];
		siov[i].iov_len = sizeof(req[i]);
		out[i].msg_hdr.msg_iov = &siov[i];
		out[i].msg_hdr.msg_iovlen = 1;
	}
	int sent = sendmmsg(fd, out, 2, 0);
	printf("sent=%d len0=%u\n", sent, out[0].msg_len);
	char bufs[4][4096];
	struct iovec riov[4];
	struct sockaddr_nl names[4];
	struct mmsghdr in[4];
	int got = 0, seqs = 0, names_ok = 1;
	while (got < 2) {
		memset(in, 0, sizeof(in));
		for (int i = 0; i < 4; i++) {
			riov[i].iov_base = bufs[i];
			riov[i].iov_len = sizeof(bufs[i]);
			in[i].msg_hdr.msg_iov = &riov[i];
			in[i].msg_hdr.msg_iovlen = 1;
			in[i].msg_hdr.msg_name = &names[i];
			in[i].msg_hdr.msg_namelen = sizeof(names[i]);
		}
		int n = recvmmsg(fd, in, 4, MSG_WAITFORONE, NULL);
		CHECK(n > 0, "recvmmsg: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct nlmsghdr *h = (struct nlmsghdr *)bufs[i];
			CHECK(in[i].msg_len >= NLMSG_HDRLEN && h->nlmsg_type == NLMSG_ERROR, "not an error");
			seqs += (int)h->nlmsg_seq;
			names_ok &= in[i].msg_hdr.msg_namelen == sizeof(names[i]) && names[i].nl_family == AF_NETLINK;
		}
		got += n;
	}
	printf("received=%d seq_sum=%d names_ok=%d\n", got, seqs, names_ok);
	close(fd);
}

/* socket() alone: how it fails without a server or namespace. */
static void mode_open(void)
{
	errno = 0;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	printf("fd_ok=%d errno=%s\n", fd >= 0, fd >= 0 ? "-" : strerror(errno));
}

/* Two sockets in one process: distinct port ids; bind groups show up. */
static void mode_two(void)
{
	int a = nlsock(SOCK_CLOEXEC), b = nlsock(SOCK_CLOEXEC);
	uint32_t pa = portid_of(a), pb = portid_of(b);
	printf("distinct=%d nonzero=%d\n", pa != pb, pa != 0 && pb != 0);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_RULE};
	CHECK(bind(b, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
	struct sockaddr_nl got;
	socklen_t len = sizeof(got);
	CHECK(getsockname(b, (struct sockaddr *)&got, &len) == 0, "getsockname");
	printf("groups=%#x same_pid_after_bind=%d\n", got.nl_groups, got.nl_pid == pb);
	/* bind with a short address or a wrong family fails like netlink_bind */
	errno = 0;
	int br = bind(a, (struct sockaddr *)&sa, 4);
	printf("bind_short=%d errno=%d\n", br, errno);
	/* a short getsockname buffer is cut and told the full length */
	char tiny[4];
	len = sizeof(tiny);
	CHECK(getsockname(a, (struct sockaddr *)tiny, &len) == 0, "short getsockname");
	printf("short_len=%u\n", len);
	/* both sockets work independently */
	send_dump(a, 1);
	send_dump(b, 2);
	int rb = recv_dump(b, 2, 32768, 0, NULL), ra = recv_dump(a, 1, 32768, 0, NULL);
	printf("both_dumped=%d\n", ra > 0 && ra == rb);
	close(a);
	close(b);
}

static void show_int(int fd, int level, int name, const char *label)
{
	int v = -1;
	socklen_t len = sizeof(v);
	int r = getsockopt(fd, level, name, &v, &len);
	if (r < 0)
		printf("%s=err:%d\n", label, errno);
	else
		printf("%s=%d len=%u\n", label, v, len);
}

static void set_int(int fd, int level, int name, int v, const char *label)
{
	int r = setsockopt(fd, level, name, &v, sizeof(v));
	if (r < 0)
		printf("set_%s=err:%d\n", label, errno);
}

/* Option round trips; the output is compared with the real kernel's. */
static void mode_sockopt(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	static const struct {
		int name;
		const char *label;
	} flags[] = {
		{NETLINK_EXT_ACK, "ext_ack"}, {NETLINK_CAP_ACK, "cap_ack"},
		{NETLINK_GET_STRICT_CHK, "strict"}, {NETLINK_NO_ENOBUFS, "no_enobufs"},
		{NETLINK_PKTINFO, "pktinfo"}, {NETLINK_BROADCAST_ERROR, "broadcast_error"},
		{NETLINK_LISTEN_ALL_NSID, "listen_all_nsid"},
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		show_int(fd, SOL_NETLINK, flags[i].name, flags[i].label);
		set_int(fd, SOL_NETLINK, flags[i].name, 1, flags[i].label);
		show_int(fd, SOL_NETLINK, flags[i].name, flags[i].label);
		set_int(fd, SOL_NETLINK, flags[i].name, 0, flags[i].label);
		show_int(fd, SOL_NETLINK, flags[i].name, flags[i].label);
	}
	/* a short option buffer */
	char c;
	socklen_t cl = 1;
	errno = 0;
	int sr = getsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &c, &cl);
	printf("short_get=%d errno=%d\n", sr, errno);
	/* unknown option */
	errno = 0;
	int v = 1;
	int ur = setsockopt(fd, SOL_NETLINK, 99, &v, sizeof(v));
	printf("unknown_set=%d errno=%d\n", ur, errno);
	show_int(fd, SOL_NETLINK, 99, "unknown_get");

	/* memberships */
	set_int(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RTNLGRP_IPV4_RULE, "add_ipv4_rule");
	set_int(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RTNLGRP_IPV6_RULE, "add_ipv6_rule");
	set_int(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, 0, "add_zero");
	set_int(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, 100000, "add_huge");
	uint32_t groups[8] = {0};
	socklen_t gl = sizeof(uint32_t);
	CHECK(getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &gl) == 0, "list: %s",
	      strerror(errno));
	printf("memberships[0]=%#x\n", groups[0]);
	struct sockaddr_nl nl;
	socklen_t nll = sizeof(nl);
	getsockname(fd, (struct sockaddr *)&nl, &nll);
	printf("getsockname_groups=%#x\n", nl.nl_groups);
	set_int(fd, SOL_NETLINK, NETLINK_DROP_MEMBERSHIP, RTNLGRP_IPV4_RULE, "drop_ipv4_rule");
	gl = sizeof(uint32_t);
	getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &gl);
	printf("memberships_after_drop[0]=%#x\n", groups[0]);

	/* buffers: as iproute2 sets them */
	set_int(fd, SOL_SOCKET, SO_SNDBUF, 32768, "sndbuf");
	set_int(fd, SOL_SOCKET, SO_RCVBUF, 1048576, "rcvbuf");
	show_int(fd, SOL_SOCKET, SO_SNDBUF, "sndbuf");
	show_int(fd, SOL_SOCKET, SO_RCVBUF, "rcvbuf");
	set_int(fd, SOL_SOCKET, SO_RCVBUF, 1, "rcvbuf_tiny");
	show_int(fd, SOL_SOCKET, SO_RCVBUF, "rcvbuf_tiny");
	show_int(fd, SOL_SOCKET, SO_TYPE, "so_type");
	show_int(fd, SOL_SOCKET, SO_DOMAIN, "so_domain");
	show_int(fd, SOL_SOCKET, SO_PROTOCOL, "so_protocol");
	show_int(fd, SOL_SOCKET, SO_ERROR, "so_error");

	/* SOCK_DGRAM works as well */
	int d = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
	CHECK(d >= 0, "dgram socket: %s", strerror(errno));
	show_int(d, SOL_SOCKET, SO_TYPE, "dgram_so_type");
	close(d);
	close(fd);
}

/* dup, dup2, dup3, F_DUPFD_CLOEXEC and close share and free the state. */
static void mode_dup(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	uint32_t pid = portid_of(fd);
	int d1 = dup(fd);
	int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 50);
	int d3 = dup3(fd, 60, O_CLOEXEC);
	CHECK(d1 >= 0 && d2 >= 50 && d3 == 60, "dups %d %d %d", d1, d2, d3);
	printf("dup_pids_equal=%d\n", portid_of(d1) == pid && portid_of(d2) == pid && portid_of(d3) == pid);
	CHECK(close(fd) == 0, "close");
	/* the dups keep working after the original is closed */
	send_dump(d1, 5);
	printf("dup_dump_rules=%d\n", recv_dump(d2, 5, 32768, 0, NULL));
	int opt = 1;
	CHECK(setsockopt(d1, SOL_NETLINK, NETLINK_EXT_ACK, &opt, sizeof(opt)) == 0, "setsockopt");
	int got = 0;
	socklen_t gl = sizeof(got);
	getsockopt(d3, SOL_NETLINK, NETLINK_EXT_ACK, &got, &gl);
	printf("shared_option=%d\n", got);

	/* dup2 over a netlink fd with another netlink fd */
	int other = nlsock(SOCK_CLOEXEC);
	uint32_t opid = portid_of(other);
	CHECK(dup2(other, d3) == d3, "dup2");
	printf("dup2_replaced=%d\n", portid_of(d3) == opid && opid != pid);
	/* dup2 of a pipe over a netlink fd: that fd is no netlink socket any more */
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	CHECK(dup2(pfd[1], d2) == d2, "dup2 pipe");
	CHECK(write(d2, "x", 1) == 1, "write to dup2'ed pipe: %s", strerror(errno));
	char c;
	CHECK(read(pfd[0], &c, 1) == 1 && c == 'x', "pipe read");
	close(pfd[0]);
	close(pfd[1]);
	close(d2);
	close(d1);
	close(d3);
	close(other);
	/* the numbers are free again; a plain socket reusing one is untouched */
	int in = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	CHECK(getsockname(in, (struct sockaddr *)&sin, &sl) == 0, "inet getsockname: %s", strerror(errno));
	printf("reused_fd=%d family_inet=%d\n", in == fd || in == d1, sin.sin_family == AF_INET);
	close(in);
}

/* Other netlink protocols and other families pass through untouched. */
static void mode_passthrough(void)
{
	/* the emulated socket is an AF_UNIX socket underneath */
	int fd = nlsock(SOCK_CLOEXEC);
	int dom = -1;
	socklen_t l = sizeof(dom);
	syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
	printf("route_kernel_domain_unix=%d\n", dom == AF_UNIX);
	close(fd);

	/* NETLINK_GENERIC talks to the kernel: resolve "nlctrl" */
	int g = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	CHECK(g >= 0, "generic socket: %s", strerror(errno));
	dom = -1;
	l = sizeof(dom);
	syscall(SYS_getsockopt, g, SOL_SOCKET, SO_DOMAIN, &dom, &l);
	printf("generic_kernel_domain_netlink=%d\n", dom == AF_NETLINK);
	struct {
		struct nlmsghdr h;
		struct genlmsghdr g;
		char attr[NLA_HDRLEN + 8];
	} req;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_type = GENL_ID_CTRL;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	req.g.cmd = CTRL_CMD_GETFAMILY;
	req.g.version = 1;
	struct nlattr *a = (struct nlattr *)req.attr;
	a->nla_type = CTRL_ATTR_FAMILY_NAME;
	a->nla_len = NLA_HDRLEN + 7;
	memcpy(req.attr + NLA_HDRLEN, "nlctrl", 7);
	req.h.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(a->nla_len);
	CHECK(send(g, &req, req.h.nlmsg_len, 0) == (ssize_t)req.h.nlmsg_len, "genl send: %s",
	      strerror(errno));
	char buf[8192];
	ssize_t n = recv(g, buf, sizeof(buf), 0);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	printf("generic_reply=%d\n", n > 0 && h->nlmsg_type == GENL_ID_CTRL);
	close(g);

	/* AF_INET: UDP to ourselves over loopback through send/recv/sendto/recvfrom */
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(u, (struct sockaddr *)&sin, sizeof(sin)) == 0, "udp bind: %s", strerror(errno));
	socklen_t sl = sizeof(sin);
	CHECK(getsockname(u, (struct sockaddr *)&sin, &sl) == 0 && sin.sin_port != 0, "udp getsockname");
	CHECK(sendto(u, "ping", 4, 0, (struct sockaddr *)&sin, sizeof(sin)) == 4, "udp sendto: %s",
	      strerror(errno));
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	char pb[8];
	n = recvfrom(u, pb, sizeof(pb), 0, (struct sockaddr *)&from, &fl);
	printf("udp_roundtrip=%d from_inet=%d\n", n == 4 && memcmp(pb, "ping", 4) == 0,
	       fl == sizeof(from) && from.sin_family == AF_INET);
	int rcv = 0;
	socklen_t rl = sizeof(rcv);
	CHECK(getsockopt(u, SOL_SOCKET, SO_TYPE, &rcv, &rl) == 0 && rcv == SOCK_DGRAM, "udp SO_TYPE");
	close(u);
}

/* if_nametoindex / if_indextoname resolve through the emulated namespace. */
static void mode_ifindex(const char *name)
{
	errno = 0;
	unsigned lo = if_nametoindex("lo");
	printf("lo=%u\n", lo);
	char buf[IF_NAMESIZE];
	char *r = if_indextoname(1, buf);
	printf("index1=%s\n", r ? r : "(null)");
	errno = 0;
	unsigned x = if_nametoindex(name ? name : "nlemu-nosuch0");
	printf("unknown=%u errno=%s\n", x, x ? "-" : strerror(errno));
	errno = 0;
	r = if_indextoname(4242, buf);
	printf("unknown_index=%s errno=%s\n", r ? r : "(null)", r ? "-" : strerror(errno));
	struct if_nameindex *all = if_nameindex();
	CHECK(all, "if_nameindex: %s", strerror(errno));
	for (struct if_nameindex *p = all; p->if_index; p++)
		printf("link=%u:%s\n", p->if_index, p->if_name);
	if_freenameindex(all);
}

/* Notifications overflow a small receive buffer: ENOBUFS once, then more. */
static void mode_enobufs(void)
{
	int fd = nlsock(SOCK_CLOEXEC | SOCK_NONBLOCK);
	int v = 1; /* the minimum */
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0, "rcvbuf");
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_RULE};
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind");
	printf("ready\n");
	fflush(stdout);
	char line[16];
	CHECK(fgets(line, sizeof(line), stdin), "stdin closed");
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN), "not readable after the overflow");
	int enobufs = 0, notes = 0, first_error_at = -1;
	char buf[32768];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == ENOBUFS) {
			if (first_error_at < 0)
				first_error_at = notes;
			enobufs++;
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			/* the server may still be moving queued datagrams (and
			 * the error) into the socket: done after a quiet spell */
			if (poll(&p, 1, 300) == 0)
				break;
			continue;
		}
		CHECK(n > 0, "recv: %s", strerror(errno));
		size_t l = (size_t)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, l); h = NLMSG_NEXT(h, l))
			notes += h->nlmsg_type == RTM_NEWRULE;
	}
	printf("enobufs=%d notifications=%d\n", enobufs, notes);
	close(fd);
}

/* The socket is shared across fork; each process can use it. */
static void mode_fork(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	uint32_t pid = portid_of(fd);
	pid_t c = fork();
	CHECK(c >= 0, "fork");
	if (c == 0) {
		if (portid_of(fd) != pid)
			_exit(2);
		send_dump(fd, 11);
		_exit(recv_dump(fd, 11, 32768, 0, NULL) > 0 ? 0 : 3);
	}
	int st;
	CHECK(waitpid(c, &st, 0) == c, "waitpid");
	printf("child_ok=%d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	send_dump(fd, 12);
	printf("parent_rules=%d\n", recv_dump(fd, 12, 32768, 0, NULL));
	/* exec: a SOCK_CLOEXEC socket is gone, a plain one survives */
	int keep = nlsock(0);
	char a1[16], a2[16];
	snprintf(a1, sizeof(a1), "%d", fd);
	snprintf(a2, sizeof(a2), "%d", keep);
	fflush(stdout);
	c = fork();
	if (c == 0) {
		execl("/proc/self/exe", "shim_prog", "checkfds", a1, a2, (char *)NULL);
		_exit(4);
	}
	CHECK(waitpid(c, &st, 0) == c, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "checkfds failed: %#x", st);
	close(keep);
	close(fd);
}

static void mode_checkfds(const char *cloexec_fd, const char *kept_fd)
{
	printf("cloexec_closed=%d\n", fcntl(atoi(cloexec_fd), F_GETFD) < 0 && errno == EBADF);
	printf("plain_kept=%d\n", fcntl(atoi(kept_fd), F_GETFD) >= 0);
}

static void *thread_dumps(void *arg)
{
	int fd = nlsock(SOCK_CLOEXEC);
	for (int i = 0; i < 200; i++) {
		send_dump(fd, (uint32_t)(1000 + i));
		if (recv_dump(fd, (uint32_t)(1000 + i), 32768, 0, NULL) != *(int *)arg)
			return (void *)1;
		int d = dup(fd);
		close(d);
	}
	close(fd);
	return NULL;
}

/* Threads with their own sockets, dup/close churn on the shared table. */
static void mode_threads(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	send_dump(fd, 1);
	int want = recv_dump(fd, 1, 32768, 0, NULL);
	close(fd);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_dumps, &want);
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += r != NULL;
	}
	printf("threads_ok=%d\n", bad == 0);
}

/* The kernel's ack path through sendmsg with a destination address. */
static void mode_ack(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	int one = 1;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		struct nlattr a;
		uint32_t prio;
	} req;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_DELRULE;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.h.nlmsg_seq = 77;
	req.r.family = AF_INET6;
	req.a.nla_type = FRA_PRIORITY;
	req.a.nla_len = NLA_HDRLEN + 4;
	req.prio = 4242;
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};
	struct iovec iov[2] = {{&req, 16}, {(char *)&req + 16, sizeof(req) - 16}};
	struct msghdr m = {.msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = iov, .msg_iovlen = 2};
	CHECK(sendmsg(fd, &m, 0) == (ssize_t)sizeof(req), "sendmsg: %s", strerror(errno));
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	CHECK(n >= (ssize_t)NLMSG_LENGTH(sizeof(int)) && h->nlmsg_type == NLMSG_ERROR, "no NLMSG_ERROR");
	printf("del_missing_error=%d seq=%u\n", ((struct nlmsgerr *)NLMSG_DATA(h))->error, h->nlmsg_seq);
	close(fd);
}


/* ---- issue 7 item 4: memberships in effect on return, their errnos, and
 * the group of a notification ---- */

/* rule_add adds IPv4 rule "pref prio table 100" on fd and waits for its ack. */
static void rule_add(int fd, uint32_t seq, uint32_t prio)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		struct rtattr a;
		uint32_t p;
		struct rtattr ta;
		uint32_t t;
	} m;
	memset(&m, 0, sizeof(m));
	m.h.nlmsg_len = sizeof(m);
	m.h.nlmsg_type = RTM_NEWRULE;
	m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	m.h.nlmsg_seq = seq;
	m.r.family = AF_INET;
	m.r.action = FR_ACT_TO_TBL;
	m.a.rta_type = FRA_PRIORITY;
	m.a.rta_len = 8;
	m.p = prio;
	m.ta.rta_type = FRA_TABLE;
	m.ta.rta_len = 8;
	m.t = 100;
	CHECK(send(fd, &m, sizeof(m), 0) == sizeof(m), "send rule: %s", strerror(errno));
	char buf[8192];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		CHECK(n > 0, "rule ack: %s", strerror(errno));
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == seq) {
			int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			CHECK(e == 0, "rule add: %s", strerror(-e));
			return;
		}
	}
}

/* ping_count sends NLMSG_NOOP with NLM_F_ACK on fd and counts the
 * RTM_NEWRULE messages read before its ack: netlink_rcv_skb() acks it after
 * whatever was already queued, so no timed wait is needed. */
static int ping_count(int fd, uint32_t seq)
{
	struct nlmsghdr h = {.nlmsg_len = sizeof(h), .nlmsg_type = NLMSG_NOOP,
			     .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = seq};
	CHECK(send(fd, &h, sizeof(h), 0) == sizeof(h), "send noop: %s", strerror(errno));
	char buf[8192];
	int rules = 0;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		CHECK(n > 0, "recv: %s", strerror(errno));
		size_t l = (size_t)n;
		for (struct nlmsghdr *m = (struct nlmsghdr *)buf; NLMSG_OK(m, l); m = NLMSG_NEXT(m, l)) {
			if (m->nlmsg_type == NLMSG_ERROR && m->nlmsg_seq == seq)
				return rules;
			rules += m->nlmsg_type == RTM_NEWRULE;
		}
	}
}

/* bindrace N bind|join: N fresh listeners, each followed at once by a rule
 * add from another socket; prints how many saw their rule. */
static void mode_bindrace(const char *n_arg, const char *way)
{
	int n = atoi(n_arg), got = 0;
	int changer = nlsock(SOCK_CLOEXEC);
	for (int i = 0; i < n; i++) {
		int l = nlsock(SOCK_CLOEXEC);
		struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
		if (!strcmp(way, "bind"))
			sa.nl_groups = RTMGRP_IPV4_RULE;
		CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
		if (strcmp(way, "bind")) {
			int g = RTNLGRP_IPV4_RULE;
			CHECK(setsockopt(l, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) == 0,
			      "add membership: %s", strerror(errno));
		}
		rule_add(changer, (uint32_t)i + 1, (strcmp(way, "bind") ? 30000 : 20000) + (uint32_t)i);
		got += ping_count(l, 77) == 1;
		close(l);
	}
	printf("bindrace_%s=%d of %d\n", way, got, n);
	close(changer);
}

static void show_setopt(int fd, const char *label, int name, const void *v, socklen_t len)
{
	errno = 0;
	int r = setsockopt(fd, SOL_NETLINK, name, v, len);
	printf("%s=%d errno=%d\n", label, r, r < 0 ? errno : 0);
}

/* membership_errors: errnos of netlink_setsockopt() and netlink_bind(). */
static void mode_membership_errors(void)
{
	int fd = nlsock(SOCK_CLOEXEC);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
	static const struct {
		const char *label;
		int name, val;
	} rows[] = {
		{"add_0", NETLINK_ADD_MEMBERSHIP, 0},
		{"drop_0", NETLINK_DROP_MEMBERSHIP, 0},
		{"add_8", NETLINK_ADD_MEMBERSHIP, RTNLGRP_IPV4_RULE},
		{"add_39", NETLINK_ADD_MEMBERSHIP, 39},
		{"add_40", NETLINK_ADD_MEMBERSHIP, 40},
		{"drop_40", NETLINK_DROP_MEMBERSHIP, 40},
		{"add_minus1", NETLINK_ADD_MEMBERSHIP, -1},
		{"add_30_mroute", NETLINK_ADD_MEMBERSHIP, 30},
		{"add_31_mroute6", NETLINK_ADD_MEMBERSHIP, 31},
		{"drop_30", NETLINK_DROP_MEMBERSHIP, 30},
		{"drop_8", NETLINK_DROP_MEMBERSHIP, RTNLGRP_IPV4_RULE},
		{"unknown_0", 0, 1},
		{"rx_ring_6", 6, 1},
		{"unknown_99", 99, 1},
		{"listen_all_nsid_on", NETLINK_LISTEN_ALL_NSID, 1},
		{"listen_all_nsid_off", NETLINK_LISTEN_ALL_NSID, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		show_setopt(fd, rows[i].label, rows[i].name, &rows[i].val, sizeof(int));
	int one = 1;
	show_setopt(fd, "add_short_optlen", NETLINK_ADD_MEMBERSHIP, &one, 2);
	show_setopt(fd, "add_null_optval", NETLINK_ADD_MEMBERSHIP, NULL, sizeof(int));
	show_setopt(fd, "unknown_null_optval", 99, NULL, sizeof(int));
	uint32_t groups[2] = {0};
	socklen_t gl = sizeof(groups);
	CHECK(getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &gl) == 0, "list");
	printf("memberships=%#x,%#x len=%u\n", groups[0], groups[1], gl);
	close(fd);
	/* bind() checks each group with rtnetlink_bind() before binding */
	static const struct {
		const char *label;
		uint32_t groups;
	} binds[] = {
		{"bind_rules", RTMGRP_IPV4_RULE}, {"bind_mroute", 1u << 29}, {"bind_all", 0xffffffffu},
	};
	for (size_t i = 0; i < sizeof(binds) / sizeof(binds[0]); i++) {
		int b = nlsock(SOCK_CLOEXEC);
		struct sockaddr_nl bs = {.nl_family = AF_NETLINK, .nl_groups = binds[i].groups};
		errno = 0;
		int r = bind(b, (struct sockaddr *)&bs, sizeof(bs));
		printf("%s=%d errno=%d", binds[i].label, r, r < 0 ? errno : 0);
		uint32_t g[2] = {0};
		socklen_t l = sizeof(g);
		getsockopt(b, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, g, &l);
		printf(" memberships=%#x\n", g[0]);
		close(b);
	}
}

/* show_recv receives one datagram with recvmsg() and prints what
 * netlink_recvmsg() reports besides the bytes: nl_groups, the
 * NETLINK_PKTINFO group, MSG_TRUNC/MSG_CTRUNC. */
static void show_recv(const char *who, int fd, size_t bufsz, size_t ctlsz, int flags)
{
	char buf[8192], cbuf[64];
	struct sockaddr_nl sa;
	memset(&sa, 0xAA, sizeof(sa));
	struct iovec iov = {.iov_base = buf, .iov_len = bufsz};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = ctlsz ? cbuf : NULL, .msg_controllen = ctlsz};
	ssize_t n = recvmsg(fd, &m, flags);
	CHECK(n >= 0, "%s: recvmsg: %s", who, strerror(errno));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	printf("%s: n=%zd", who, n);
	if ((size_t)n >= sizeof(*h) && bufsz >= sizeof(*h))
		printf(" type=%u len=%u", h->nlmsg_type, h->nlmsg_len);
	printf(" namelen=%u pid=%u groups=%#x trunc=%d ctrunc=%d", m.msg_namelen, sa.nl_pid,
	       sa.nl_groups, !!(m.msg_flags & MSG_TRUNC), !!(m.msg_flags & MSG_CTRUNC));
	if (ctlsz) {
		printf(" controllen=%zu", m.msg_controllen);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct nl_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			printf(" cmsg=%d/%d/%zu:%u", c->cmsg_level, c->cmsg_type, c->cmsg_len, pi.group);
		}
	}
	printf("\n");
}

static void rule_send(int fd, uint32_t seq, int family, uint32_t prio, int echo)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		struct rtattr a;
		uint32_t p;
		struct rtattr ta;
		uint32_t t;
	} m;
	memset(&m, 0, sizeof(m));
	m.h.nlmsg_len = sizeof(m);
	m.h.nlmsg_type = RTM_NEWRULE;
	m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (echo ? NLM_F_ECHO : 0);
	m.h.nlmsg_seq = seq;
	m.r.family = (unsigned char)family;
	m.r.action = FR_ACT_TO_TBL;
	m.a.rta_type = FRA_PRIORITY;
	m.a.rta_len = 8;
	m.p = prio;
	m.ta.rta_type = FRA_TABLE;
	m.ta.rta_len = 8;
	m.t = 100;
	CHECK(send(fd, &m, sizeof(m), 0) == sizeof(m), "send rule: %s", strerror(errno));
}

/* groupinfo: the sender address and NETLINK_PKTINFO of notifications,
 * echoes and acks, with the receive variants that size and truncate. */
static void mode_groupinfo(void)
{
	struct timeval tv = {.tv_sec = 10};
	int l4 = nlsock(SOCK_CLOEXEC), l6 = nlsock(SOCK_CLOEXEC), c = nlsock(SOCK_CLOEXEC);
	int one = 1, g6 = RTNLGRP_IPV6_RULE;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_RULE};
	CHECK(bind(l4, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind l4");
	sa.nl_groups = 0;
	CHECK(bind(l6, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind l6");
	CHECK(setsockopt(l6, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g6, sizeof(g6)) == 0, "add l6");
	CHECK(setsockopt(l6, SOL_NETLINK, NETLINK_PKTINFO, &one, sizeof(one)) == 0, "pktinfo l6");
	CHECK(setsockopt(c, SOL_NETLINK, NETLINK_PKTINFO, &one, sizeof(one)) == 0, "pktinfo c");
	int fds[] = {l4, l6, c};
	for (int i = 0; i < 3; i++)
		setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	rule_send(c, 1, AF_INET, 500, 1);
	show_recv("changer_echo", c, sizeof(char[8192]), 64, 0);
	show_recv("changer_ack", c, 8192, 64, 0);
	rule_send(c, 2, AF_INET6, 600, 0);
	show_recv("changer_ack_small_cmsg", c, 8192, 8, 0);

	/* l4: plain recvmsg, then recvfrom */
	show_recv("l4_v4", l4, 8192, 0, 0);
	rule_send(c, 3, AF_INET, 501, 0);
	show_recv("changer_ack3", c, 8192, 64, 0);
	char buf[8192];
	struct sockaddr_nl from;
	socklen_t fl = sizeof(from);
	memset(&from, 0xAA, sizeof(from));
	ssize_t n = recvfrom(l4, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	printf("l4_recvfrom: n=%zd fromlen=%u pid=%u groups=%#x\n", n, fl, from.nl_pid, from.nl_groups);

	/* l6 (PKTINFO): the sizing peek, a peek, a truncating read */
	show_recv("l6_sizing_peek", l6, 0, 64, MSG_PEEK | MSG_TRUNC);
	show_recv("l6_peek", l6, 8192, 64, MSG_PEEK);
	show_recv("l6_trunc", l6, 16, 64, MSG_TRUNC);
	close(l4);
	close(l6);
	close(c);
}

/* stash: notifications queued before a setsockopt(ADD_MEMBERSHIP) or a
 * bind() are still received afterwards, in order, with MSG_PEEK leaving
 * them queued, and poll() sees them (the shim reads them while it waits
 * for the server's ack and keeps them). */
static void mode_stash(void)
{
	int l = nlsock(SOCK_CLOEXEC | SOCK_NONBLOCK), c = nlsock(SOCK_CLOEXEC);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_RULE};
	CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind");
	for (uint32_t i = 0; i < 3; i++)
		rule_add(c, i + 1, 40000 + i);
	/* let the notifications reach the socket before the option call */
	struct pollfd p = {.fd = l, .events = POLLIN};
	CHECK(poll(&p, 1, 10000) == 1, "no notification");
	usleep(100000);
	int g = RTNLGRP_IPV6_RULE;
	CHECK(setsockopt(l, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) == 0, "add: %s",
	      strerror(errno));
	CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINVAL, "rebind");
	p.revents = 0;
	printf("readable_after_option=%d\n", poll(&p, 1, 10000) == 1 && (p.revents & POLLIN));
	char buf[8192];
	for (int i = 0;; i++) {
		ssize_t pk = recv(l, buf, sizeof(buf), MSG_PEEK);
		uint32_t peeked = 0;
		if (pk > 0)
			peeked = ((struct nlmsghdr *)buf)->nlmsg_type;
		ssize_t n = recv(l, buf, sizeof(buf), 0);
		if (n < 0) {
			printf("end errno=%s\n", errno == EAGAIN ? "EAGAIN" : strerror(errno));
			break;
		}
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		uint32_t prio = 0;
		struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + sizeof(struct fib_rule_hdr));
		int al = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(struct fib_rule_hdr));
		for (; RTA_OK(a, al); a = RTA_NEXT(a, al))
			if (a->rta_type == FRA_PRIORITY)
				memcpy(&prio, RTA_DATA(a), 4);
		printf("recv%d: peek_n=%zd peek_type=%u n=%zd type=%u prio=%u\n", i, pk, peeked, n,
		       h->nlmsg_type, prio);
	}
	close(l);
	close(c);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		FAIL("usage: shim_prog MODE [ARGS]");
	const char *mode = argv[1], *arg = argc > 2 ? argv[2] : NULL;
	if (!strcmp(mode, "nonblock"))
		mode_nonblock();
	else if (!strcmp(mode, "peek"))
		mode_peek();
	else if (!strcmp(mode, "dump"))
		mode_dump(arg);
	else if (!strcmp(mode, "two"))
		mode_two();
	else if (!strcmp(mode, "sockopt"))
		mode_sockopt();
	else if (!strcmp(mode, "dup"))
		mode_dup();
	else if (!strcmp(mode, "passthrough"))
		mode_passthrough();
	else if (!strcmp(mode, "ifindex"))
		mode_ifindex(arg);
	else if (!strcmp(mode, "enobufs"))
		mode_enobufs();
	else if (!strcmp(mode, "fork"))
		mode_fork();
	else if (!strcmp(mode, "checkfds") && argc > 3)
		mode_checkfds(argv[2], argv[3]);
	else if (!strcmp(mode, "threads"))
		mode_threads();
	else if (!strcmp(mode, "mmsg"))
		mode_mmsg();
	else if (!strcmp(mode, "open"))
		mode_open();
	else if (!strcmp(mode, "ack"))
		mode_ack();
	else if (!strcmp(mode, "bindrace") && argc > 3)
		mode_bindrace(argv[2], argv[3]);
	else if (!strcmp(mode, "membership_errors"))
		mode_membership_errors();
	else if (!strcmp(mode, "groupinfo"))
		mode_groupinfo();
	else if (!strcmp(mode, "stash"))
		mode_stash();
	else
		FAIL("unknown mode %s", mode);
	return 0;
}
