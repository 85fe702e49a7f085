/* loopback: bring `lo` up (ADD) or down (DEL) in the container namespace.
 *
 * ADD reports interface "lo" with the reference's all-zero MAC and every
 * address lo carries (127.0.0.1/8, and ::1/128 when IPv6 is on), so its
 * result matches the reference's shape. CNI_IFNAME is not consulted: the
 * loopback device is always "lo", as in the reference.
 * DEL succeeds when the namespace is already gone. CHECK verifies lo is up.
 * The work is one ioctl and one getifaddrs inside the namespace, so this
 * applet needs no netlink socket of its own. */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "applet.h"
#include "plugin.h"

struct lo_op {
	int up; /* 1 up, 0 down, -1 query */
	short flags;
	struct cni_result *res;
	const char *sandbox;
};

static int lo_flags(void *arg)
{
	struct lo_op *op = arg;
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	strcpy(ifr.ifr_name, "lo");
	int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (r == 0 && op->up >= 0) {
		if (op->up)
			ifr.ifr_flags |= IFF_UP;
		else
			ifr.ifr_flags &= ~IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	int e = errno;
	op->flags = ifr.ifr_flags;
	close(fd);
	errno = e;
	if (r < 0 || !op->res)
		return r;

	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0)
		return -1;
	int idx = result_add_iface(op->res, "lo", "00:00:00:00:00:00", op->sandbox);
	for (int family = AF_INET; family; family = family == AF_INET ? AF_INET6 : 0) {
		for (struct ifaddrs *p = ifa; p; p = p->ifa_next) {
			if (!p->ifa_addr || p->ifa_addr->sa_family != family ||
			    strcmp(p->ifa_name, "lo"))
				continue;
			struct cni_cidr c = {.ip.family = family};
			struct cni_ip mask = {.family = family};
			if (family == AF_INET) {
				memcpy(c.ip.a, &((struct sockaddr_in *)p->ifa_addr)->sin_addr, 4);
				memcpy(mask.a, &((struct sockaddr_in *)p->ifa_netmask)->sin_addr, 4);
			} else {
				memcpy(c.ip.a, &((struct sockaddr_in6 *)p->ifa_addr)->sin6_addr, 16);
				memcpy(mask.a, &((struct sockaddr_in6 *)p->ifa_netmask)->sin6_addr,
				       16);
			}
			c.prefix = ip_mask_to_prefix(&mask);
			if (c.prefix >= 0)
				result_add_ip(op->res, &c, NULL, idx);
		}
	}
	freeifaddrs(ifa);
	return 0;
}

static int lo_run(struct cni_req *req, struct lo_op *op, struct cni_err *err)
{
	bool gone = false;
	struct cni_netns *ns = req_netns(req, &gone, err);
	if (!ns)
		return gone ? 0 : -1;
	if (netns_run(ns, lo_flags, op) < 0)
		return err_errno(err, CNI_ERR_INTERNAL, errno, "failed to %s lo in %s",
				 op->up > 0 ? "bring up" : op->up == 0 ? "bring down" : "query",
				 req->netns_path);
	return 0;
}

static int lo_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	/* An interface plugin's result starts fresh even when chained. */
	struct cni_result *fresh = result_new(req->version);
	struct lo_op op = {.up = 1, .res = fresh, .sandbox = req->netns_path};
	int r = lo_run(req, &op, err);
	if (r == 0) {
		/* Move the fresh result into res (keeping res's identity). */
		struct cni_result tmp = *res;
		*res = *fresh;
		*fresh = tmp;
	}
	result_free(fresh);
	return r;
}

static int lo_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct lo_op op = {.up = 0};
	return lo_run(req, &op, err);
}

static int lo_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct lo_op op = {.up = -1};
	if (lo_run(req, &op, err) < 0)
		return -1;
	if (!(op.flags & IFF_UP))
		return err_set(err, CNI_ERR_INTERNAL, "loopback interface is down");
	return 0;
}

const struct cni_applet loopback_applet = {
	.name = "loopback",
	.summary = "bring up the loopback interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"loopback\"}\n",
	.add = lo_add,
	.del = lo_del,
	.check = lo_check,
};
