/* nlprog: rtnetlink through raw system calls, built static (gcc -static) so
 * that only the seccomp supervisor of nlemu exec can reach it, and dynamic
 * for the LD_PRELOAD comparison. Each command prints what the kernel (or
 * nlemu) answered, in a form the test compares with a kernel namespace's.
 *
 *   nlprog rules                 list IPv4 rules
 *   nlprog rule-add PRIO TABLE   add an IPv4 rule, print the ack's errno
 *   nlprog route-get ADDR        IPv4 route get, print errno or table/type
 *   nlprog addr                  getsockname/recvmsg sender checks
 *   nlprog peek                  MSG_PEEK/MSG_TRUNC/MSG_DONTWAIT, NETLINK_PKTINFO
 *   nlprog fork | thread         rules from a forked child / a second thread
 *   nlprog others                AF_INET UDP and NETLINK_GENERIC reach the kernel
 *   nlprog read                  read/readv of notifications, dup2/dup3 onto itself
 *   nlprog bench N ADDR          N route gets, prints ns per round trip
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned seq = 1;

static int nl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		printf("socket: %s\n", strerror(errno));
		exit(1);
	}
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("bind: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static void nl_send(int fd, struct nlmsghdr *h)
{
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};
	h->nlmsg_seq = seq++;
	if (sendto(fd, h, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
		printf("sendto: %s\n", strerror(errno));
		exit(1);
	}
}

/* nl_recv receives one datagram and checks what netlink_recvmsg() reports
 * with it: a 12-byte sockaddr_nl from the kernel (nl_pid 0). */
static ssize_t nl_recv(int fd, char *buf, size_t len)
{
	struct sockaddr_nl from;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n = recvmsg(fd, &m, 0);
	if (n < 0) {
		printf("recvmsg: %s\n", strerror(errno));
		exit(1);
	}
	if (m.msg_namelen != sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0) {
		printf("recvmsg: sender namelen %u family %u pid %u\n", m.msg_namelen, from.nl_family, from.nl_pid);
		exit(1);
	}
	return n;
}

static void addattr32(struct nlmsghdr *h, int type, unsigned v)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(4);
	memcpy(RTA_DATA(a), &v, 4);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static int ack(int fd)
{
	char buf[8192];
	ssize_t n = nl_recv(fd, buf, sizeof(buf));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (n < (ssize_t)NLMSG_LENGTH(4) || h->nlmsg_type != NLMSG_ERROR)
		return 9999;
	return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

static void rules(int fd)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
	} req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETRULE,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		 .r = {.family = AF_INET}};
	nl_send(fd, &req.h);
	char buf[32768];
	for (;;) {
		ssize_t n = nl_recv(fd, buf, sizeof(buf));
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return;
			if (h->nlmsg_type == NLMSG_ERROR) {
				printf("dump error %d\n", ((struct nlmsgerr *)NLMSG_DATA(h))->error);
				return;
			}
			struct fib_rule_hdr *r = NLMSG_DATA(h);
			unsigned prio = 0, table = r->table;
			int alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(*r));
			for (struct rtattr *a = (struct rtattr *)(r + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type == FRA_PRIORITY)
					memcpy(&prio, RTA_DATA(a), 4);
				if (a->rta_type == FRA_TABLE)
					memcpy(&table, RTA_DATA(a), 4);
			}
			printf("rule %u table %u action %u\n", prio, table, r->action);
		}
	}
}

static int rule_add(int fd, unsigned prio, unsigned table)
{
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		char attrs[64];
	} req = {.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct fib_rule_hdr)), .nlmsg_type = RTM_NEWRULE,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL},
		 .r = {.family = AF_INET, .action = FR_ACT_TO_TBL, .table = RT_TABLE_UNSPEC}};
	addattr32(&req.h, FRA_PRIORITY, prio);
	addattr32(&req.h, FRA_TABLE, table);
	nl_send(fd, &req.h);
	return ack(fd);
}

static void route_get_send(int fd, const char *addr)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg r;
		char attrs[64];
	} req = {.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)), .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST},
		 .r = {.rtm_family = AF_INET, .rtm_dst_len = 32}};
	struct in_addr a;
	inet_pton(AF_INET, addr, &a);
	addattr32(&req.h, RTA_DST, a.s_addr);
	nl_send(fd, &req.h);
}

static void route_get(int fd, const char *addr, int quiet)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg r;
		char attrs[64];
	} req = {.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)), .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST},
		 .r = {.rtm_family = AF_INET, .rtm_dst_len = 32}};
	struct in_addr a;
	inet_pton(AF_INET, addr, &a);
	addattr32(&req.h, RTA_DST, a.s_addr);
	nl_send(fd, &req.h);
	char buf[8192];
	ssize_t n = nl_recv(fd, buf, sizeof(buf));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (quiet)
		return;
	if (h->nlmsg_type == NLMSG_ERROR)
		printf("route get %s: error %d\n", addr, ((struct nlmsgerr *)NLMSG_DATA(h))->error);
	else if (h->nlmsg_type == RTM_NEWROUTE) {
		struct rtmsg *r = NLMSG_DATA(h);
		printf("route get %s: table %u type %u\n", addr, r->rtm_table, r->rtm_type);
	} else
		printf("route get %s: type %u (n=%zd)\n", addr, h->nlmsg_type, n);
}

static void *thread_main(void *arg)
{
	(void)arg;
	int fd = nl_open();
	printf("thread:\n");
	rules(fd);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	const char *cmd = argv[1];
	if (!strcmp(cmd, "rules")) {
		rules(nl_open());
	} else if (!strcmp(cmd, "rule-add") && argc == 4) {
		printf("rule add %s table %s: %d\n", argv[2], argv[3], rule_add(nl_open(), atoi(argv[2]), atoi(argv[3])));
	} else if (!strcmp(cmd, "route-get") && argc == 3) {
		route_get(nl_open(), argv[2], 0);
	} else if (!strcmp(cmd, "addr")) {
		int fd = nl_open();
		struct sockaddr_nl sa;
		socklen_t len = sizeof(sa);
		if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
			printf("getsockname: %s\n", strerror(errno));
		else
			printf("getsockname: len %u family %u pid-nonzero %d groups %u\n", len, sa.nl_family, sa.nl_pid != 0, sa.nl_groups);
		int one = 1;
		printf("setsockopt ext_ack: %d\n", setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)));
		int v = 0;
		len = sizeof(v);
		getsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &v, &len);
		printf("getsockopt ext_ack: %d len %u\n", v, len);
		int r = setsockopt(fd, SOL_NETLINK, 9999, &one, sizeof(one));
		printf("setsockopt bad: %d %s\n", r, r < 0 ? strerror(errno) : "");
		int d = dup(fd);
		printf("dup: ok %d\n", d >= 0);
		route_get(d, "10.0.0.1", 0);
		/* a truncated receive reports the full length with MSG_TRUNC */
		rules(fd);
	} else if (!strcmp(cmd, "peek")) {
		/* iproute2's sizing peek, a short buffer, MSG_DONTWAIT on an empty
		 * socket, and NETLINK_PKTINFO's cmsg */
		int fd = nl_open(), one = 1;
		setsockopt(fd, SOL_NETLINK, NETLINK_PKTINFO, &one, sizeof(one));
		route_get_send(fd, "10.0.0.1");
		char buf[8192], cbuf[64];
		struct sockaddr_nl from;
		struct iovec iov = {.iov_base = buf, .iov_len = 0};
		struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
		printf("peek|trunc len 0: %zd flags %#x namelen %u\n", n, m.msg_flags, m.msg_namelen);
		iov.iov_len = 8;
		m.msg_namelen = sizeof(from);
		n = recvmsg(fd, &m, MSG_PEEK);
		printf("peek len 8: %zd flags %#x\n", n, m.msg_flags);
		iov.iov_len = sizeof(buf);
		m.msg_namelen = sizeof(from);
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		n = recvmsg(fd, &m, 0);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		printf("read: %zd flags %#x controllen %zu cmsg %d/%d group %u\n", n, m.msg_flags, (size_t)m.msg_controllen,
		       c ? c->cmsg_level : -1, c ? c->cmsg_type : -1, c ? *(unsigned *)CMSG_DATA(c) : 0);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		printf("empty dontwait: %zd %s\n", n, n < 0 ? strerror(errno) : "");
	} else if (!strcmp(cmd, "fork")) {
		int fd = nl_open();
		pid_t p = fork();
		if (p == 0) {
			printf("child:\n");
			rules(fd);
			int own = nl_open();
			printf("child own socket:\n");
			rules(own);
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		printf("parent:\n");
		rules(fd);
	} else if (!strcmp(cmd, "thread")) {
		pthread_t t;
		pthread_create(&t, NULL, thread_main, NULL);
		pthread_join(t, NULL);
	} else if (!strcmp(cmd, "others")) {
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t l = sizeof(sin);
		if (bind(u, (struct sockaddr *)&sin, sizeof(sin)) < 0 || getsockname(u, (struct sockaddr *)&sin, &l) < 0) {
			printf("udp bind: %s\n", strerror(errno));
		} else {
			struct timeval tv = {.tv_sec = 5};
			setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			sendto(u, "hi", 2, 0, (struct sockaddr *)&sin, sizeof(sin));
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			char b[8];
			ssize_t n = recvfrom(u, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
			printf("udp: %zd bytes from family %u len %u\n", n, from.sin_family, fl);
		}
		int g = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
		struct {
			struct nlmsghdr h;
			struct genlmsghdr g;
			char attrs[32];
		} req = {.h = {.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN), .nlmsg_type = GENL_ID_CTRL,
			       .nlmsg_flags = NLM_F_REQUEST},
			 .g = {.cmd = CTRL_CMD_GETFAMILY, .version = 1}};
		struct rtattr *a = (struct rtattr *)((char *)&req + req.h.nlmsg_len);
		a->rta_type = CTRL_ATTR_FAMILY_NAME;
		a->rta_len = RTA_LENGTH(7);
		memcpy(RTA_DATA(a), "nlctrl", 7);
		req.h.nlmsg_len += RTA_ALIGN(a->rta_len);
		send(g, &req, req.h.nlmsg_len, 0);
		char buf[4096];
		struct sockaddr_nl from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(g, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		printf("genl: reply type %s len-ok %d from pid %u\n", h->nlmsg_type == GENL_ID_CTRL ? "ctrl" : "other",
		       n > 0, from.nl_pid);
	} else if (!strcmp(cmd, "read")) {
		/* read() and readv() of a subscribed socket's notifications: the
		 * datagram as netlink_recvmsg() gives it (no sender, no framing) */
		int l = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_RULE};
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			printf("bind groups: %s\n", strerror(errno));
		int fd = nl_open();
		char buf[8192], small[8];
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		printf("add: %d\n", rule_add(fd, 300, 300));
		ssize_t n = read(l, buf, sizeof(buf));
		printf("read: type %u whole %d\n", n > 0 ? h->nlmsg_type : 0, n > 0 && (size_t)n == h->nlmsg_len);
		printf("add: %d\n", rule_add(fd, 301, 301));
		struct iovec iov[2] = {{.iov_base = buf, .iov_len = 16}, {.iov_base = buf + 16, .iov_len = sizeof(buf) - 16}};
		n = readv(l, iov, 2);
		printf("readv: type %u whole %d\n", n > 0 ? h->nlmsg_type : 0, n > 0 && (size_t)n == h->nlmsg_len);
		printf("add: %d\n", rule_add(fd, 302, 302));
		n = read(l, small, sizeof(small));
		printf("short read: %zd\n", n);
		fcntl(l, F_SETFL, O_NONBLOCK);
		n = read(l, buf, sizeof(buf));
		printf("empty nonblocking read: %zd %s\n", n, n < 0 ? strerror(errno) : "");
		n = syscall(SYS_readv, l, iov, -1); /* raw: the count is the point */
		printf("readv -1: %zd %s\n", n, n < 0 ? strerror(errno) : "");
		n = syscall(SYS_readv, l, iov, 1025);
		printf("readv 1025: %zd %s\n", n, n < 0 ? strerror(errno) : "");
		printf("dup2 onto itself: %d\n", dup2(l, l) == l);
		n = syscall(SYS_dup3, l, l, 0);
		printf("dup3 onto itself: %zd %s\n", n, n < 0 ? strerror(errno) : "");
	} else if (!strcmp(cmd, "bench") && argc == 4) {
		int fd = nl_open(), n = atoi(argv[2]);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n; i++)
			route_get(fd, argv[3], 1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
		printf("%d route gets: %.0f ns each\n", n, ns / n);
	} else {
		return 2;
	}
	return 0;
}
