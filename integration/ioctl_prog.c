// The build constraint below is for the Go tool only: ioctl_test.go compiles
// this file with gcc at test time and runs it on the kernel and under the
// LD_PRELOAD shim.
//
//go:build ignore

/*
 * ioctl_prog.c - issues the interface ioctls (SIOCGIF* / SIOCSIF*, routes,
 * ARP, bridge, VLAN, ethtool) the way net-tools and old iproute2 paths do,
 * and prints one line per call: "CASE rc=R errno=NAME [values]".
 *
 * usage: ioctl_prog MODE
 *   read     every read-only request, on every socket family
 *   flags    SIOCSIFFLAGS lo up, read back, lo down, read back
 *   unpriv   becomes uid 65534 (no capabilities), then every set request
 *   escape   SIOCSIFFLAGS lo up on an AF_INET socket and SIOCADDRT
 *            127.1.2.0/24 dev lo: under the shim neither may reach the kernel
 *   unsup    requests nlemu has no feature for yet (addresses, routes, ARP,
 *            MTU...): their answers differ from the kernel's, but must not
 *            change the kernel namespace the program runs in
 *   tun      TUNSETIFF and TUNSETPERSIST on /dev/net/tun: under the shim
 *            they may not create a device in the kernel namespace
 *   nlfd     FIONREAD on a NETLINK_ROUTE socket with one reply queued
 * Run in a fresh kernel namespace, modes read, flags and unpriv print the
 * same lines on the kernel and under the shim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <net/route.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/ethtool.h>
#include <linux/if_tun.h>
#include <linux/if_vlan.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

static const char *ename(int e)
{
	static char buf[16];
	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ENXIO: return "ENXIO";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ERANGE: return "ERANGE";
	case ENOPKG: return "ENOPKG";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case ENETUNREACH: return "ENETUNREACH";
	case ENOBUFS: return "ENOBUFS";
	case EACCES: return "EACCES";
	}
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

struct fam {
	const char *name;
	int domain, type, proto;
};

static const struct fam fams[] = {
	{"inet", AF_INET, SOCK_DGRAM, 0},
	{"inet6", AF_INET6, SOCK_DGRAM, 0},
	{"unix", AF_UNIX, SOCK_DGRAM, 0},
	{"netlink", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
	{"tcp", AF_INET, SOCK_STREAM, 0},
	{"packet", AF_PACKET, SOCK_DGRAM, 0}, /* iproute2's get_ctl_fd() second choice */
};
#define NFAMS (sizeof(fams) / sizeof(fams[0]))

static int open_fam(const struct fam *f)
{
	int fd = socket(f->domain, f->type, f->proto);
	if (fd < 0) {
		fprintf(stderr, "FAIL: socket %s: %s\n", f->name, strerror(errno));
		exit(1);
	}
	return fd;
}

/* call issues one ioctl and prints its result; returns rc. */
static int call(const char *fam, const char *what, int fd, unsigned long req, void *arg)
{
	errno = 0;
	int rc = ioctl(fd, req, arg);
	int e = rc < 0 ? errno : 0;
	printf("%s/%s rc=%d errno=%s", fam, what, rc < 0 ? -1 : rc, ename(e));
	return rc;
}

static void set_name(struct ifreq *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	strncpy(r->ifr_name, name, IFNAMSIZ - 1);
}

static const char *devs[] = {"lo", "nosuch0"};

static void read_one(const struct fam *f, int fd)
{
	struct ifreq r;
	const char *fn = f->name;
	char what[64];
	for (size_t d = 0; d < sizeof(devs) / sizeof(devs[0]); d++) {
		const char *dev = devs[d];
#define GET(REQ, PRINT)                                                        \
	do {                                                                   \
		set_name(&r, dev);                                             \
		snprintf(what, sizeof(what), "%s(%s)", #REQ, dev);             \
		if (call(fn, what, fd, REQ, &r) == 0)                          \
			PRINT;                                                 \
		printf("\n");                                                  \
	} while (0)
		GET(SIOCGIFINDEX, printf(" index=%d", r.ifr_ifindex));
		GET(SIOCGIFFLAGS, printf(" flags=%#x", (unsigned short)r.ifr_flags));
		GET(SIOCGIFMTU, printf(" mtu=%d", r.ifr_mtu));
		GET(SIOCGIFTXQLEN, printf(" qlen=%d", r.ifr_qlen));
		GET(SIOCGIFMETRIC, printf(" metric=%d", r.ifr_metric));
		GET(SIOCGIFHWADDR, {
			printf(" family=%d addr=", r.ifr_hwaddr.sa_family);
			for (int i = 0; i < 14; i++)
				printf("%02x", (unsigned char)r.ifr_hwaddr.sa_data[i]);
		});
		GET(SIOCGIFMAP, printf(" map=%lu,%lu,%u,%u,%u,%u", r.ifr_map.mem_start, r.ifr_map.mem_end,
				       r.ifr_map.base_addr, r.ifr_map.irq, r.ifr_map.dma, r.ifr_map.port));
		GET(SIOCGIFADDR, printf(" family=%d", r.ifr_addr.sa_family));
		GET(SIOCGIFNETMASK, printf(" family=%d", r.ifr_addr.sa_family));
		GET(SIOCGIFBRDADDR, printf(" family=%d", r.ifr_addr.sa_family));
		GET(SIOCGIFDSTADDR, printf(" family=%d", r.ifr_addr.sa_family));
		GET(SIOCGIFSLAVE, (void)0);
		GET(SIOCGIFPFLAGS, (void)0);
		GET(SIOCGIFENCAP, printf(" encap=%d", r.ifr_metric));
		GET(SIOCGMIIPHY, (void)0);
		GET(SIOCGHWTSTAMP, (void)0);
		{
			struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};
			set_name(&r, dev);
			r.ifr_data = (void *)&di;
			snprintf(what, sizeof(what), "SIOCETHTOOL-GDRVINFO(%s)", dev);
			if (call(fn, what, fd, SIOCETHTOOL, &r) == 0)
				printf(" driver=%s", di.driver);
			printf("\n");
			struct ethtool_value ev = {.cmd = ETHTOOL_GLINK};
			set_name(&r, dev);
			r.ifr_data = (void *)&ev;
			snprintf(what, sizeof(what), "SIOCETHTOOL-GLINK(%s)", dev);
			if (call(fn, what, fd, SIOCETHTOOL, &r) == 0)
				printf(" link=%u", ev.data);
			printf("\n");
		}
		{
			struct vlan_ioctl_args va;
			memset(&va, 0, sizeof(va));
			va.cmd = GET_VLAN_REALDEV_NAME_CMD;
			strncpy(va.device1, dev, sizeof(va.device1) - 1);
			snprintf(what, sizeof(what), "SIOCGIFVLAN(%s)", dev);
			call(fn, what, fd, SIOCGIFVLAN, &va);
			printf("\n");
		}
		{
			struct arpreq ar;
			memset(&ar, 0, sizeof(ar));
			struct sockaddr_in *sin = (struct sockaddr_in *)&ar.arp_pa;
			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = htonl(0x7f000001);
			strncpy(ar.arp_dev, dev, sizeof(ar.arp_dev) - 1);
			snprintf(what, sizeof(what), "SIOCGARP(%s)", dev);
			call(fn, what, fd, SIOCGARP, &ar);
			printf("\n");
		}
	}
	for (int idx = 1; idx <= 2; idx++) {
		memset(&r, 0, sizeof(r));
		r.ifr_ifindex = idx;
		snprintf(what, sizeof(what), "SIOCGIFNAME(%d)", idx);
		if (call(fn, what, fd, SIOCGIFNAME, &r) == 0)
			printf(" name=%s", r.ifr_name);
		printf("\n");
	}
	{
		struct ifconf ic = {.ifc_len = 0, .ifc_buf = NULL};
		if (call(fn, "SIOCGIFCONF(NULL)", fd, SIOCGIFCONF, &ic) == 0)
			printf(" len=%d", ic.ifc_len);
		printf("\n");
		struct ifreq v[8];
		ic.ifc_len = sizeof(v);
		ic.ifc_req = v;
		if (call(fn, "SIOCGIFCONF", fd, SIOCGIFCONF, &ic) == 0)
			printf(" len=%d", ic.ifc_len);
		printf("\n");
	}
	{
		int n = -1;
		if (call(fn, "SIOCGIFCOUNT", fd, SIOCGIFCOUNT, &n) == 0)
			printf(" n=%d", n);
		printf("\n");
	}
}

static void mode_read(void)
{
	for (size_t i = 0; i < NFAMS; i++) {
		int fd = open_fam(&fams[i]);
		read_one(&fams[i], fd);
		close(fd);
	}
}

static void show_flags(const char *fn, int fd, const char *tag)
{
	struct ifreq r;
	set_name(&r, "lo");
	char what[64];
	snprintf(what, sizeof(what), "SIOCGIFFLAGS(lo,%s)", tag);
	if (call(fn, what, fd, SIOCGIFFLAGS, &r) == 0)
		printf(" flags=%#x", (unsigned short)r.ifr_flags);
	printf("\n");
}

static void set_flags(const char *fn, int fd, const char *dev, short flags, const char *tag)
{
	struct ifreq r;
	set_name(&r, dev);
	r.ifr_flags = flags;
	char what[64];
	snprintf(what, sizeof(what), "SIOCSIFFLAGS(%s,%s)", dev, tag);
	call(fn, what, fd, SIOCSIFFLAGS, &r);
	printf("\n");
}

static void mode_flags(void)
{
	for (size_t i = 0; i < NFAMS; i++) {
		int fd = open_fam(&fams[i]);
		const char *fn = fams[i].name;
		show_flags(fn, fd, "before");
		set_flags(fn, fd, "lo", IFF_UP | IFF_LOOPBACK, "up");
		show_flags(fn, fd, "up");
		set_flags(fn, fd, "lo", IFF_LOOPBACK, "down");
		show_flags(fn, fd, "down");
		set_flags(fn, fd, "nosuch0", IFF_UP, "up");
		set_flags(fn, fd, "", IFF_UP, "up");
		set_flags(fn, fd, "lo:1", IFF_UP | IFF_LOOPBACK, "up");
		show_flags(fn, fd, "alias up");
		set_flags(fn, fd, "lo:1", IFF_LOOPBACK, "down");
		close(fd);
	}
}

/* set_all issues every set request once on lo and once on a missing device. */
static void set_all(const struct fam *f, int fd)
{
	const char *fn = f->name;
	char what[64];
	struct ifreq r;
	for (size_t d = 0; d < sizeof(devs) / sizeof(devs[0]); d++) {
		const char *dev = devs[d];
#define SET(REQ, FILL)                                                         \
	do {                                                                   \
		set_name(&r, dev);                                             \
		FILL;                                                          \
		snprintf(what, sizeof(what), "%s(%s)", #REQ, dev);             \
		call(fn, what, fd, REQ, &r);                                   \
		printf("\n");                                                  \
	} while (0)
		SET(SIOCSIFFLAGS, r.ifr_flags = IFF_UP);
		SET(SIOCSIFMTU, r.ifr_mtu = 1500);
		SET(SIOCSIFTXQLEN, r.ifr_qlen = 10);
		SET(SIOCSIFHWADDR, r.ifr_hwaddr.sa_family = ARPHRD_LOOPBACK);
		SET(SIOCSIFMETRIC, r.ifr_metric = 1);
		SET(SIOCSIFMAP, (void)0);
		SET(SIOCSIFPFLAGS, (void)0);
		SET(SIOCSIFLINK, (void)0);
		SET(SIOCADDMULTI, r.ifr_hwaddr.sa_family = AF_UNSPEC);
		SET(SIOCBRADDIF, r.ifr_ifindex = 1);
		SET(SIOCSHWTSTAMP, (void)0);
		{
			struct sockaddr_in *sin = (struct sockaddr_in *)&r.ifr_addr;
			SET(SIOCSIFADDR, (sin->sin_family = AF_INET, sin->sin_addr.s_addr = htonl(0x7f010203)));
			SET(SIOCSIFNETMASK, (sin->sin_family = AF_INET, sin->sin_addr.s_addr = htonl(0xffffff00)));
			SET(SIOCSIFBRDADDR, (sin->sin_family = AF_INET, sin->sin_addr.s_addr = htonl(0x7f0102ff)));
			SET(SIOCSIFDSTADDR, (sin->sin_family = AF_INET, sin->sin_addr.s_addr = htonl(0x7f010204)));
			SET(SIOCDIFADDR, (sin->sin_family = AF_INET, sin->sin_addr.s_addr = htonl(0x7f010203)));
		}
		{
			struct arpreq ar;
			memset(&ar, 0, sizeof(ar));
			struct sockaddr_in *sin = (struct sockaddr_in *)&ar.arp_pa;
			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = htonl(0x7f000002);
			ar.arp_ha.sa_family = ARPHRD_ETHER;
			ar.arp_flags = ATF_COM;
			strncpy(ar.arp_dev, dev, sizeof(ar.arp_dev) - 1);
			snprintf(what, sizeof(what), "SIOCSARP(%s)", dev);
			call(fn, what, fd, SIOCSARP, &ar);
			printf("\n");
			snprintf(what, sizeof(what), "SIOCDARP(%s)", dev);
			call(fn, what, fd, SIOCDARP, &ar);
			printf("\n");
		}
		{
			struct rtentry rt;
			memset(&rt, 0, sizeof(rt));
			struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
			struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
			dst->sin_family = AF_INET;
			dst->sin_addr.s_addr = htonl(0x7f010200);
			mask->sin_family = AF_INET;
			mask->sin_addr.s_addr = htonl(0xffffff00);
			rt.rt_gateway.sa_family = AF_INET;
			rt.rt_flags = RTF_UP;
			rt.rt_dev = (char *)dev;
			snprintf(what, sizeof(what), "SIOCADDRT(%s)", dev);
			call(fn, what, fd, SIOCADDRT, &rt);
			printf("\n");
			snprintf(what, sizeof(what), "SIOCDELRT(%s)", dev);
			call(fn, what, fd, SIOCDELRT, &rt);
			printf("\n");
		}
		SET(SIOCSIFNAME, strcpy(r.ifr_newname, dev));
		{
			struct vlan_ioctl_args va;
			memset(&va, 0, sizeof(va));
			va.cmd = ADD_VLAN_CMD;
			va.u.VID = 5;
			strncpy(va.device1, dev, sizeof(va.device1) - 1);
			snprintf(what, sizeof(what), "SIOCSIFVLAN-ADD(%s)", dev);
			call(fn, what, fd, SIOCSIFVLAN, &va);
			printf("\n");
		}
	}
	{
		char br[IFNAMSIZ] = "nlemubr0";
		call(fn, "SIOCBRADDBR", fd, SIOCBRADDBR, br);
		printf("\n");
		call(fn, "SIOCBRDELBR", fd, SIOCBRDELBR, br);
		printf("\n");
	}
}

static void mode_unpriv(void)
{
	/* sockets first (AF_PACKET needs CAP_NET_RAW), then nobody's uid:
	 * setuid() from root clears every capability, so the kernel's
	 * ns_capable(CAP_NET_ADMIN) checks fail, and the nlemu server, which
	 * decides privilege by the uid of the peer that connects, refuses
	 * changes on the connections the shim opens from then on. */
	int fds[NFAMS];
	for (size_t i = 0; i < NFAMS; i++)
		fds[i] = open_fam(&fams[i]);
	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
		fprintf(stderr, "FAIL: setuid: %s\n", strerror(errno));
		exit(1);
	}
	for (size_t i = 0; i < NFAMS; i++) {
		set_all(&fams[i], fds[i]);
		close(fds[i]);
	}
}

static void mode_unsup(void)
{
	for (size_t i = 0; i < NFAMS; i++) {
		int fd = open_fam(&fams[i]);
		set_all(&fams[i], fd);
		close(fd);
	}
}

static void mode_escape(void)
{
	int fd = open_fam(&fams[0]);
	set_flags("inet", fd, "lo", IFF_UP | IFF_LOOPBACK, "up");
	struct rtentry rt;
	memset(&rt, 0, sizeof(rt));
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
	struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
	dst->sin_family = AF_INET;
	dst->sin_addr.s_addr = htonl(0x7f010200);
	mask->sin_family = AF_INET;
	mask->sin_addr.s_addr = htonl(0xffffff00);
	rt.rt_gateway.sa_family = AF_INET;
	rt.rt_flags = RTF_UP;
	rt.rt_dev = "lo";
	call("inet", "SIOCADDRT(lo)", fd, SIOCADDRT, &rt);
	printf("\n");
	close(fd);
}

/* TUNSETIFF on /dev/net/tun creates a tun device in the kernel namespace
 * the program runs in (and TUNSETPERSIST would keep it). */
static void mode_tun(void)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "FAIL: open /dev/net/tun: %s\n", strerror(errno));
		exit(1);
	}
	struct ifreq r;
	set_name(&r, "nlemutun0");
	r.ifr_flags = IFF_TUN | IFF_NO_PI;
	call("tun", "TUNSETIFF", fd, TUNSETIFF, &r);
	printf("\n");
	call("tun", "TUNSETPERSIST", fd, TUNSETPERSIST, (void *)1);
	printf("\n");
	close(fd);
}

/* FIONREAD on an emulated netlink socket still answers (the shim passes it
 * to the real socket): after a request, a reply is queued. */
static void mode_nlfd(void)
{
	int fd = open_fam(&fams[3]);
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
		.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = 1},
	};
	if (send(fd, &req, sizeof(req), 0) < 0) {
		fprintf(stderr, "FAIL: send: %s\n", strerror(errno));
		exit(1);
	}
	int n = 0;
	for (int i = 0; i < 1000 && n == 0; i++) {
		if (ioctl(fd, FIONREAD, &n) < 0) {
			fprintf(stderr, "FAIL: FIONREAD: %s\n", strerror(errno));
			exit(1);
		}
		if (n == 0)
			usleep(10000);
	}
	printf("netlink/FIONREAD queued=%d\n", n > 0);
	close(fd);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: ioctl_prog MODE\n");
		return 2;
	}
	const char *m = argv[1];
	if (!strcmp(m, "read"))
		mode_read();
	else if (!strcmp(m, "flags"))
		mode_flags();
	else if (!strcmp(m, "unpriv"))
		mode_unpriv();
	else if (!strcmp(m, "unsup"))
		mode_unsup();
	else if (!strcmp(m, "escape"))
		mode_escape();
	else if (!strcmp(m, "tun"))
		mode_tun();
	else if (!strcmp(m, "nlfd"))
		mode_nlfd();
	else {
		fprintf(stderr, "unknown mode %s\n", m);
		return 2;
	}
	return 0;
}
