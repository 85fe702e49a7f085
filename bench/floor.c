/* floor: the kernel work of one podman-chain attachment, issued by about the
 * smallest program that can do it. bench/run builds it with cc (not meson)
 * and times it beside the plugins: what it costs is the floor for us.
 *
 *   floor add NETNS INDEX DIR    attach container INDEX
 *   floor del NETNS INDEX DIR    detach it
 *   floor -v add|del ...         also print each step's time on stderr
 *
 * ADD: one RTM_NEWLINK creating the veth pair (host end a port of bridge
 * cnibench2 and up, container end eth0 created in NETNS), one RTM_SETLINK
 * for hairpin mode, then in the container one RTM_NEWLINK setting eth0 up
 * (a veth end cannot come up in the message that creates the pair), one
 * RTM_NEWADDR and one RTM_NEWROUTE (the default route), the IPAM
 * reservation (one exclusive
 * file create and the last-reserved file, as host-local, no fsync as the
 * reference), the netfilter rules of ipMasq, portmap (one tcp mapping,
 * hairpin and localhost masquerade) and firewall as ONE nftables transaction
 * in table inet cnibench_floor (set up by bench/run with the same maps as
 * ours), and the result cache file. DEL: one RTM_DELLINK in the container
 * (the peer goes with it), the IPAM file, one transaction removing the
 * map elements and chains, the cache file.
 *
 * Raw rtnetlink, no library; libnftables only for the netfilter batch
 * (its parser costs some user time, which the -v output shows). Container
 * INDEX has address 10.200.108.0/22 + INDEX + 2 and host port 29000+INDEX.
 * Exit status 0 on success; errors on stderr. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h> /* before the linux/ headers */
#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BRIDGE "cnibench2"
#define TABLE "inet cnibench_floor"

static bool verbose;
static struct timespec t_last;

static void step(const char *what)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (verbose && what)
		fprintf(stderr, "floor: %-10s %7.3f ms\n", what,
			(t.tv_sec - t_last.tv_sec) * 1e3 + (t.tv_nsec - t_last.tv_nsec) / 1e6);
	t_last = t;
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("floor: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

struct req {
	struct nlmsghdr *h;
	char buf[1024];
};

static void *req_init(struct req *r, int type, int flags, size_t hdr)
{
	memset(r->buf, 0, sizeof(r->buf));
	r->h = (struct nlmsghdr *)r->buf;
	r->h->nlmsg_len = NLMSG_LENGTH(hdr);
	r->h->nlmsg_type = type;
	r->h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	return NLMSG_DATA(r->h);
}

static struct rtattr *attr(struct req *r, int type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)(r->buf + NLMSG_ALIGN(r->h->nlmsg_len));
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	r->h->nlmsg_len = NLMSG_ALIGN(r->h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

static void attr_str(struct req *r, int type, const char *s)
{
	attr(r, type, s, strlen(s) + 1);
}

static void attr_u32(struct req *r, int type, uint32_t v)
{
	attr(r, type, &v, sizeof(v));
}

static void nest_end(struct req *r, struct rtattr *a)
{
	a->rta_len = (unsigned short)(r->buf + r->h->nlmsg_len - (char *)a);
}

/* Send and wait for the ack; returns 0 or -errno. */
static int talk(int fd, struct req *r)
{
	char ack[512];
	if (send(fd, r->buf, r->h->nlmsg_len, 0) < 0)
		return -errno;
	ssize_t n = recv(fd, ack, sizeof(ack), 0);
	if (n < 0)
		return -errno;
	struct nlmsghdr *h = (struct nlmsghdr *)ack;
	if (h->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	return 0;
}

static int rtnl(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("netlink socket: %s", strerror(errno));
	return fd;
}

/* A netlink socket in the namespace of nsfd, and eth0's index there. */
static int rtnl_in(int nsfd, int *eth0)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(nsfd, CLONE_NEWNET) < 0)
		die("setns: %s", strerror(errno));
	int fd = rtnl();
	if (eth0)
		*eth0 = (int)if_nametoindex("eth0");
	if (setns(self, CLONE_NEWNET) < 0)
		abort();
	close(self);
	return fd;
}

static void nft(const char *cmds)
{
	struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!c)
		die("nft_ctx_new failed");
	if (nft_run_cmd_from_buffer(c, cmds) != 0)
		die("nftables transaction failed:\n%s", cmds);
	nft_ctx_free(c);
}

static void write_file(const char *path, const char *data, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
	if (fd < 0 || write(fd, data, strlen(data)) < 0 || close(fd) < 0)
		die("%s: %s", path, strerror(errno));
}

static void do_add(int nsfd, int idx, const char *ip, const char *dir)
{
	struct req r;
	char host[IFNAMSIZ], buf[2048], path[512];
	snprintf(host, sizeof(host), "cbfl%d", idx);
	int hfd = rtnl();
	unsigned br = if_nametoindex(BRIDGE);
	if (!br)
		die("bridge %s: %s", BRIDGE, strerror(errno));

	struct ifinfomsg *ifi = req_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(*ifi));
	ifi->ifi_flags = ifi->ifi_change = IFF_UP;
	attr_str(&r, IFLA_IFNAME, host);
	attr_u32(&r, IFLA_MASTER, br);
	struct rtattr *li = attr(&r, IFLA_LINKINFO, NULL, 0);
	attr_str(&r, IFLA_INFO_KIND, "veth");
	struct rtattr *data = attr(&r, IFLA_INFO_DATA, NULL, 0);
	struct rtattr *peer = attr(&r, VETH_INFO_PEER, NULL, 0);
	/* Not up: veth_open() of the peer fails (ENOTCONN) until the pair
	 * is complete. */
	struct ifinfomsg pi = {0};
	memcpy(r.buf + r.h->nlmsg_len, &pi, sizeof(pi));
	r.h->nlmsg_len += NLMSG_ALIGN(sizeof(pi));
	attr_str(&r, IFLA_IFNAME, "eth0");
	attr_u32(&r, IFLA_NET_NS_FD, (uint32_t)nsfd);
	nest_end(&r, peer);
	nest_end(&r, data);
	nest_end(&r, li);
	int e = talk(hfd, &r);
	if (e)
		die("veth: %s", strerror(-e));
	step("veth");

	ifi = req_init(&r, RTM_SETLINK, 0, sizeof(*ifi));
	ifi->ifi_family = AF_BRIDGE;
	ifi->ifi_index = (int)if_nametoindex(host);
	struct rtattr *pr = attr(&r, IFLA_PROTINFO | NLA_F_NESTED, NULL, 0);
	uint8_t on = 1;
	attr(&r, IFLA_BRPORT_MODE, &on, 1);
	nest_end(&r, pr);
	if ((e = talk(hfd, &r)))
		die("hairpin: %s", strerror(-e));
	step("hairpin");

	int eth0 = 0;
	int cfd = rtnl_in(nsfd, &eth0);
	if (!eth0)
		die("eth0 not in the container");
	ifi = req_init(&r, RTM_NEWLINK, 0, sizeof(*ifi));
	ifi->ifi_index = eth0;
	ifi->ifi_flags = ifi->ifi_change = IFF_UP;
	if ((e = talk(cfd, &r)))
		die("eth0 up: %s", strerror(-e));
	struct in_addr a, gw;
	inet_pton(AF_INET, ip, &a);
	inet_pton(AF_INET, "10.200.108.1", &gw);
	struct ifaddrmsg *ifa = req_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 22;
	ifa->ifa_index = (unsigned)eth0;
	attr(&r, IFA_LOCAL, &a, 4);
	attr(&r, IFA_ADDRESS, &a, 4);
	if ((e = talk(cfd, &r)))
		die("address: %s", strerror(-e));
	struct rtmsg *rt = req_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, sizeof(*rt));
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	attr(&r, RTA_GATEWAY, &gw, 4);
	attr_u32(&r, RTA_OIF, (uint32_t)eth0);
	if ((e = talk(cfd, &r)))
		die("route: %s", strerror(-e));
	step("container");

	snprintf(path, sizeof(path), "%s/ipam/%s", dir, ip);
	snprintf(buf, sizeof(buf), "floor-%d\r\neth0", idx);
	write_file(path, buf, O_EXCL);
	snprintf(path, sizeof(path), "%s/ipam/last_reserved_ip.0", dir);
	write_file(path, ip, O_TRUNC);
	step("ipam");

	int port = 29000 + idx;
	snprintf(buf, sizeof(buf),
		 "add chain " TABLE " masq-%1$d\n"
		 "add rule " TABLE " masq-%1$d ip saddr %2$s ip daddr != 10.200.108.0/22 masquerade\n"
		 "add element " TABLE " masq_src4 { %2$s : jump masq-%1$d }\n"
		 "add chain " TABLE " pm-%1$d\n"
		 "add rule " TABLE " pm-%1$d meta nfproto ipv4 tcp dport %3$d dnat ip to %2$s:80\n"
		 "add element " TABLE " pm_any { ipv4 . tcp . %3$d : jump pm-%1$d }\n"
		 "add chain " TABLE " pmm-%1$d\n"
		 "add rule " TABLE " pmm-%1$d ip saddr 10.200.108.0/22 meta l4proto tcp ct original "
		 "proto-dst %3$d masquerade\n"
		 "add rule " TABLE " pmm-%1$d ip saddr 127.0.0.0/8 meta l4proto tcp ct original "
		 "proto-dst %3$d masquerade\n"
		 "add element " TABLE " pm_masq4 { %2$s : jump pmm-%1$d }\n"
		 "add chain " TABLE " fw-%1$d\n"
		 "add rule " TABLE " fw-%1$d ip daddr %2$s ct state established,related accept\n"
		 "add rule " TABLE " fw-%1$d ip saddr %2$s accept\n"
		 "add element " TABLE " fw_dst4 { %2$s : jump fw-%1$d }\n"
		 "add element " TABLE " fw_src4 { %2$s : jump fw-%1$d }\n",
		 idx, ip, port);
	nft(buf);
	step("nftables");

	snprintf(path, sizeof(path), "%s/cache/floor-%d", dir, idx);
	snprintf(buf, sizeof(buf),
		 "{\"kind\":\"cniCacheV1\",\"containerId\":\"floor-%d\",\"ifName\":\"eth0\","
		 "\"result\":{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"%s/22\","
		 "\"gateway\":\"10.200.108.1\",\"interface\":2}]}}",
		 idx, ip);
	write_file(path, buf, O_TRUNC);
	step("cache");
	close(cfd);
	close(hfd);
	step("close");
}

static void do_del(int nsfd, int idx, const char *ip, const char *dir)
{
	struct req r;
	char buf[2048], path[512];
	int cfd = rtnl_in(nsfd, NULL);
	struct ifinfomsg *ifi = req_init(&r, RTM_DELLINK, 0, sizeof(*ifi));
	(void)ifi;
	attr_str(&r, IFLA_IFNAME, "eth0");
	int e = talk(cfd, &r);
	if (e && e != -ENODEV)
		die("delete eth0: %s", strerror(-e));
	step("veth");

	snprintf(path, sizeof(path), "%s/ipam/%s", dir, ip);
	unlink(path);
	step("ipam");

	int port = 29000 + idx;
	snprintf(buf, sizeof(buf),
		 "delete element " TABLE " masq_src4 { %2$s }\n"
		 "delete element " TABLE " pm_any { ipv4 . tcp . %3$d }\n"
		 "delete element " TABLE " pm_masq4 { %2$s }\n"
		 "delete element " TABLE " fw_dst4 { %2$s }\n"
		 "delete element " TABLE " fw_src4 { %2$s }\n"
		 "delete chain " TABLE " masq-%1$d\n"
		 "delete chain " TABLE " pm-%1$d\n"
		 "delete chain " TABLE " pmm-%1$d\n"
		 "delete chain " TABLE " fw-%1$d\n",
		 idx, ip, port);
	/* nft deletes a chain only once it is empty: flush first. */
	char flush[512];
	snprintf(flush, sizeof(flush),
		 "flush chain " TABLE " masq-%1$d\nflush chain " TABLE " pm-%1$d\n"
		 "flush chain " TABLE " pmm-%1$d\nflush chain " TABLE " fw-%1$d\n",
		 idx);
	char all[2600];
	snprintf(all, sizeof(all), "%s%s", flush, buf);
	nft(all);
	step("nftables");

	snprintf(path, sizeof(path), "%s/cache/floor-%d", dir, idx);
	unlink(path);
	step("cache");
	close(cfd);
	step("close");
}

int main(int argc, char **argv)
{
	int i = 1;
	if (i < argc && !strcmp(argv[i], "-v")) {
		verbose = true;
		i++;
	}
	if (argc - i != 4 || (strcmp(argv[i], "add") && strcmp(argv[i], "del"))) {
		fprintf(stderr, "usage: floor [-v] add|del NETNS INDEX DIR\n");
		return 2;
	}
	step(NULL);
	int idx = atoi(argv[i + 2]);
	int host = idx + 2;
	char ip[32];
	snprintf(ip, sizeof(ip), "10.200.%d.%d", 108 + host / 256, host % 256);
	int nsfd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		die("%s: %s", argv[i + 1], strerror(errno));
	if (!strcmp(argv[i], "add"))
		do_add(nsfd, idx, ip, argv[i + 3]);
	else
		do_del(nsfd, idx, ip, argv[i + 3]);
	close(nsfd);
	return 0;
}
