// unshare_rule: enters a new network namespace with unshare(CLONE_NEWNET),
// adds the IPv4 rule "pref 77 lookup 77" over NETLINK_ROUTE, dumps the
// IPv4 rules on a second socket and prints them, then prints
// "ready INODE PID" (the inode of its new namespace, its pid) and waits for its
// standard input to close before closing its sockets. Used by
// integration/netns_inside_test.go under `nlemu exec`: the rule must land
// in nlemu's namespace for the new kernel namespace, not in the kernel's.
#define _GNU_SOURCE
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int nlsock(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		exit(1);
	}
	return fd;
}

int main(void)
{
	if (unshare(CLONE_NEWNET) < 0) {
		perror("unshare(CLONE_NEWNET)");
		return 1;
	}
	struct stat st;
	if (stat("/proc/thread-self/ns/net", &st) < 0) {
		perror("stat");
		return 1;
	}
	int a = nlsock();
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
		struct rtattr prio_a;
		unsigned prio;
		struct rtattr table_a;
		unsigned table;
	} req = {
		.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_NEWRULE,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, .nlmsg_seq = 1},
		.r = {.family = AF_INET, .table = 77, .action = FR_ACT_TO_TBL},
		.prio_a = {.rta_len = RTA_LENGTH(4), .rta_type = FRA_PRIORITY}, .prio = 77,
		.table_a = {.rta_len = RTA_LENGTH(4), .rta_type = FRA_TABLE}, .table = 77,
	};
	if (send(a, &req, sizeof(req), 0) < 0) {
		perror("send");
		return 1;
	}
	char buf[32768];
	ssize_t n = recv(a, buf, sizeof(buf), 0);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (n < (ssize_t)(NLMSG_HDRLEN + 4) || h->nlmsg_type != NLMSG_ERROR) {
		fprintf(stderr, "no ack\n");
		return 1;
	}
	printf("add: %d\n", ((struct nlmsgerr *)NLMSG_DATA(h))->error);

	int b = nlsock();
	struct {
		struct nlmsghdr h;
		struct fib_rule_hdr r;
	} dump = {
		.h = {.nlmsg_len = sizeof(dump), .nlmsg_type = RTM_GETRULE, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 2},
		.r = {.family = AF_INET},
	};
	if (send(b, &dump, sizeof(dump), 0) < 0) {
		perror("send");
		return 1;
	}
	for (int done = 0; !done;) {
		n = recv(b, buf, sizeof(buf), 0);
		if (n <= 0) {
			perror("recv");
			return 1;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type != RTM_NEWRULE)
				continue;
			struct fib_rule_hdr *r = NLMSG_DATA(h);
			unsigned prio = 0, table = r->table;
			int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*r));
			for (struct rtattr *at = (struct rtattr *)(r + 1); RTA_OK(at, len); at = RTA_NEXT(at, len)) {
				if (at->rta_type == FRA_PRIORITY)
					memcpy(&prio, RTA_DATA(at), 4);
				if (at->rta_type == FRA_TABLE)
					memcpy(&table, RTA_DATA(at), 4);
			}
			printf("rule %u table %u\n", prio, table);
		}
	}
	printf("ready %llu %d\n", (unsigned long long)st.st_ino, (int)getpid());
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0) {
	}
	close(a);
	close(b);
	return 0;
}
