// SPDX-License-Identifier: GPL-2.0
/*
 * kbench-routes: install many routes at once through rtnetlink, for the route
 * lookup benchmarks (kfunc.fib4_lookup, kfunc.fib6_lookup) in a VM guest.
 *
 * busybox `ip` forks once per route, which costs ~12 ms a route under TCG;
 * this sends every RTM_NEWROUTE in a few large netlink writes instead.
 *
 *   kbench-routes [-4 PREFIX/LEN -n COUNT -l ROUTE_LEN] [-6 PREFIX/LEN -N COUNT -L ROUTE_LEN]
 *
 * Routes are consecutive subnets of ROUTE_LEN bits starting at PREFIX, all via
 * the loopback device (brought up first). Prints one line: `ipv4=N ipv6=M`.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * Requests in flight before their acks are read: 256 acks overflowed the socket's
 * receive buffer on 6.12 (ENOBUFS), 64 leave room on every kernel tried.
 */
#define BATCH 64

struct route_req {
	struct nlmsghdr nh;
	struct rtmsg rt;
	char attrs[64];
};

static void die(const char *what)
{
	fprintf(stderr, "kbench-routes: error: %s: %s\n", what, strerror(errno));
	exit(3);
}

static void usage(const char *msg)
{
	fprintf(stderr, "kbench-routes: error: %s\n"
		"usage: kbench-routes [-4 PREFIX/LEN -n COUNT -l ROUTE_LEN] [-6 PREFIX/LEN -N COUNT -L ROUTE_LEN]\n",
		msg);
	exit(2);
}

static void add_attr(struct nlmsghdr *nh, int type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)nh + NLMSG_ALIGN(nh->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static int loopback_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		die("SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		die("SIOCSIFFLAGS lo");
	close(fd);
	return (int)if_nametoindex("lo");
}

/* Read acks until `expected` have arrived; return how many reported errors. */
static int collect_acks(int fd, int expected)
{
	char buf[1 << 16];
	int seen = 0, errors = 0;

	while (seen < expected) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0)
			die("recv");
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *err = NLMSG_DATA(nh);

				seen++;
				if (err->error && err->error != -EEXIST) {
					if (!errors)
						fprintf(stderr, "kbench-routes: route %u: %s\n",
							nh->nlmsg_seq, strerror(-err->error));
					errors++;
				}
			}
		}
	}
	return errors;
}

/* Install `count` routes of `route_len` bits starting at `base` (network byte order bytes). */
static int add_routes(int fd, int family, const unsigned char *base, int addr_len,
		      int route_len, long count, int oif)
{
	static struct route_req reqs[BATCH];
	unsigned int seq = 0;
	long done = 0;
	int errors = 0;

	while (done < count) {
		int batch = count - done < BATCH ? (int)(count - done) : BATCH;
		int i;

		for (i = 0; i < batch; i++) {
			struct route_req *r = &reqs[i];
			unsigned char addr[16];
			unsigned __int128 v = 0, step;
			int b;

			for (b = 0; b < addr_len; b++)
				v = (v << 8) | base[b];
			step = (unsigned __int128)1 << (addr_len * 8 - route_len);
			v += step * (unsigned __int128)(done + i);
			for (b = addr_len - 1; b >= 0; b--) {
				addr[b] = (unsigned char)(v & 0xff);
				v >>= 8;
			}
			memset(r, 0, sizeof(*r));
			r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
			r->nh.nlmsg_type = RTM_NEWROUTE;
			r->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
			r->nh.nlmsg_seq = ++seq;
			r->rt.rtm_family = family;
			r->rt.rtm_dst_len = route_len;
			r->rt.rtm_table = RT_TABLE_MAIN;
			r->rt.rtm_protocol = RTPROT_STATIC;
			r->rt.rtm_scope = RT_SCOPE_LINK;
			r->rt.rtm_type = RTN_UNICAST;
			add_attr(&r->nh, RTA_DST, addr, addr_len);
			add_attr(&r->nh, RTA_OIF, &oif, sizeof(oif));
		}
		for (i = 0; i < batch; i++)
			if (send(fd, &reqs[i], reqs[i].nh.nlmsg_len, 0) < 0)
				die("send");
		errors += collect_acks(fd, batch);
		done += batch;
	}
	return errors;
}

static void parse_prefix(int family, const char *text, unsigned char *addr, int *len)
{
	char buf[64];
	char *slash;

	if (strlen(text) >= sizeof(buf))
		usage("prefix too long");
	strcpy(buf, text);
	slash = strchr(buf, '/');
	if (!slash)
		usage("a prefix needs /LEN");
	*slash = '\0';
	*len = atoi(slash + 1);
	if (inet_pton(family, buf, addr) != 1)
		usage("malformed prefix address");
}

int main(int argc, char **argv)
{
	unsigned char v4[4] = { 0 }, v6[16] = { 0 };
	int v4_plen = -1, v6_plen = -1, v4_rlen = 20, v6_rlen = 42, opt, fd, oif;
	long v4_count = 0, v6_count = 0;
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	int errors = 0;

	while ((opt = getopt(argc, argv, "4:6:n:N:l:L:")) != -1) {
		switch (opt) {
		case '4': parse_prefix(AF_INET, optarg, v4, &v4_plen); break;
		case '6': parse_prefix(AF_INET6, optarg, v6, &v6_plen); break;
		case 'n': v4_count = atol(optarg); break;
		case 'N': v6_count = atol(optarg); break;
		case 'l': v4_rlen = atoi(optarg); break;
		case 'L': v6_rlen = atoi(optarg); break;
		default: usage("unknown option");
		}
	}
	if (v4_count && (v4_plen < 0 || v4_rlen < v4_plen || v4_rlen > 32 ||
			 (v4_rlen - v4_plen < 62 && v4_count > (1L << (v4_rlen - v4_plen)))))
		usage("IPv4: ROUTE_LEN must be within 32 and leave room for COUNT subnets of PREFIX");
	if (v6_count && (v6_plen < 0 || v6_rlen < v6_plen || v6_rlen > 128 ||
			 (v6_rlen - v6_plen < 62 && v6_count > (1L << (v6_rlen - v6_plen)))))
		usage("IPv6: ROUTE_LEN must be within 128 and leave room for COUNT subnets of PREFIX");
	oif = loopback_up();
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("netlink socket");
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0)
		die("netlink bind");
	/* Acks without a copy of each request: smaller, so more fit in the buffer. */
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &(int){ 1 }, sizeof(int));
	if (v4_count)
		errors += add_routes(fd, AF_INET, v4, 4, v4_rlen, v4_count, oif);
	if (v6_count)
		errors += add_routes(fd, AF_INET6, v6, 16, v6_rlen, v6_count, oif);
	printf("ipv4=%ld ipv6=%ld errors=%d\n", v4_count, v6_count, errors);
	return errors ? 3 : 0;
}
