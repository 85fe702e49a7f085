/* Interface addresses over rtnetlink. */
#define CNI_NETLINK_INTERNAL
#include "addr.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "link.h"

_Static_assert(ADDR_F_NODAD == IFA_F_NODAD && ADDR_F_TENTATIVE == IFA_F_TENTATIVE &&
		   ADDR_F_DADFAILED == IFA_F_DADFAILED && ADDR_F_PERMANENT == IFA_F_PERMANENT &&
		   ADDR_F_NOPREFIXROUTE == IFA_F_NOPREFIXROUTE &&
		   ADDR_F_MANAGETEMPADDR == IFA_F_MANAGETEMPADDR,
	       "IFA_F_* values");

static int check_cidr(const struct cni_cidr *c, struct cni_err *err)
{
	if ((c->ip.family != AF_INET && c->ip.family != AF_INET6) || c->prefix < 0 ||
	    c->prefix > ip_bits(&c->ip)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid address (family %d, prefix %d)",
			c->ip.family, c->prefix);
		return -EINVAL;
	}
	return 0;
}

static struct nl_msg *addr_msg(int type, int flags, int ifindex, const struct cni_cidr *c,
			       unsigned ifa_flags)
{
	struct ifaddrmsg ifa = {
	    .ifa_family = (uint8_t)c->ip.family,
	    .ifa_prefixlen = (uint8_t)c->prefix,
	    .ifa_flags = (uint8_t)(ifa_flags & 0xff),
	    .ifa_index = (uint32_t)ifindex,
	};
	struct nl_msg *m = netlink_msg(type, flags, &ifa, sizeof(ifa));
	netlink_put(m, IFA_LOCAL, c->ip.a, (size_t)ip_len(&c->ip));
	netlink_put(m, IFA_ADDRESS, c->ip.a, (size_t)ip_len(&c->ip));
	return m;
}

int addr_add(struct cni_nl *nl, int ifindex, const struct cni_cidr *cidr, unsigned flags,
	     struct cni_err *err)
{
	int r = check_cidr(cidr, err);
	if (r < 0)
		return r;
	unsigned kflags = flags & (ADDR_F_NODAD | ADDR_F_NOPREFIXROUTE | ADDR_F_HOMEADDRESS |
				   ADDR_F_MANAGETEMPADDR);
	if (cidr->ip.family == AF_INET6 && !(flags & ADDR_ADD_DAD))
		kflags |= ADDR_F_NODAD;
	if (flags & ADDR_ADD_DAD)
		kflags &= ~(unsigned)ADDR_F_NODAD;
	int nlflags = NLM_F_CREATE | ((flags & ADDR_ADD_REPLACE) ? NLM_F_REPLACE : NLM_F_EXCL);
	struct nl_msg *m = addr_msg(RTM_NEWADDR, nlflags, ifindex, cidr, kflags);
	/* ifa_flags has 8 bits; NOPREFIXROUTE and later live in IFA_FLAGS. */
	netlink_put_u32(m, IFA_FLAGS, kflags);
	if (cidr->ip.family == AF_INET && cidr->prefix < 31) {
		/* The kernel sets no broadcast address by itself; the
		 * reference (vishvananda/netlink) adds the prefix's last. */
		uint8_t brd[4];
		memcpy(brd, cidr->ip.a, 4);
		uint32_t host = cidr->prefix ? (0xffffffffu >> cidr->prefix) : 0xffffffffu;
		for (int i = 0; i < 4; i++)
			brd[i] |= (uint8_t)(host >> (24 - 8 * i));
		netlink_put(m, IFA_BROADCAST, brd, 4);
	}
	r = netlink_request(nl, m, NULL, NULL);
	if (r < 0) {
		char buf[CIDR_STRLEN], verb[80];
		snprintf(verb, sizeof(verb), "add address %s to", ip_cidr_format(cidr, buf));
		return link_fail(nl, r, ifindex, err, verb, NULL);
	}
	return 0;
}

int addr_del(struct cni_nl *nl, int ifindex, const struct cni_cidr *cidr, struct cni_err *err)
{
	int r = check_cidr(cidr, err);
	if (r < 0)
		return r;
	struct nl_msg *m = addr_msg(RTM_DELADDR, 0, ifindex, cidr, 0);
	r = netlink_request(nl, m, NULL, NULL);
	/* EADDRNOTAVAIL: no such address; ENODEV: no such link. */
	if (r == -EADDRNOTAVAIL || r == -ENODEV)
		return 0;
	if (r < 0) {
		char buf[CIDR_STRLEN], verb[80];
		snprintf(verb, sizeof(verb), "delete address %s from", ip_cidr_format(cidr, buf));
		return link_fail(nl, r, ifindex, err, verb, NULL);
	}
	return 0;
}

struct addr_vec {
	int ifindex, family;
	struct cni_addr *v;
	size_t n, cap;
};

static const struct nla_policy addr_policy[IFA_MAX + 1] = {
    [IFA_FLAGS] = {.type = NLA_U32},
};

static int on_addr(const struct nlmsghdr *h, void *arg)
{
	struct addr_vec *av = arg;
	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)))
		return 0;
	const struct ifaddrmsg *ifa = nlmsg_data(h);
	if ((av->ifindex && (int)ifa->ifa_index != av->ifindex) ||
	    (av->family && ifa->ifa_family != av->family))
		return 0;
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return 0;
	struct nlattr *tb[IFA_MAX + 1];
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*ifa), tb, IFA_MAX,
			(struct nla_policy *)addr_policy) < 0)
		return -EPROTO;
	/* IFA_LOCAL is the interface's own address; IFA_ADDRESS is the
	 * peer's on point-to-point links and the only one for most IPv6. */
	struct nlattr *a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	int alen = ifa->ifa_family == AF_INET ? 4 : 16;
	if (!a || nla_len(a) != alen)
		return 0;
	xgrow(&av->v, &av->cap, av->n, sizeof(*av->v));
	struct cni_addr *out = &av->v[av->n++];
	memset(out, 0, sizeof(*out));
	out->cidr.ip.family = ifa->ifa_family;
	memcpy(out->cidr.ip.a, nla_data(a), (size_t)alen);
	out->cidr.prefix = ifa->ifa_prefixlen;
	out->ifindex = (int)ifa->ifa_index;
	out->flags = tb[IFA_FLAGS] ? nla_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;
	out->scope = ifa->ifa_scope;
	return 0;
}

int addr_list(struct cni_nl *nl, int ifindex, int family, struct cni_addr **out, size_t *n,
	      struct cni_err *err)
{
	struct addr_vec av = {.ifindex = ifindex, .family = family};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		av.n = 0;
		/* With strict checking the kernel filters by index itself;
		 * on_addr filters again for older kernels. */
		struct ifaddrmsg ifa = {.ifa_family = (uint8_t)family,
					.ifa_index = (uint32_t)(ifindex > 0 ? ifindex : 0)};
		struct nl_msg *m = netlink_msg(RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof(ifa));
		r = netlink_request(nl, m, on_addr, &av);
		if (r != -EINTR)
			break;
	}
	if (r < 0) {
		free(av.v);
		if (ifindex > 0)
			return link_fail(nl, r, ifindex, err, "list addresses of", NULL);
		return netlink_fail(nl, r, err, "failed to list addresses");
	}
	*out = av.v;
	*n = av.n;
	return 0;
}
