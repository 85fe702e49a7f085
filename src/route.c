/* Routes (RTM_*ROUTE), policy rules (RTM_*RULE) and neighbour entries
 * (RTM_*NEIGH) over rtnetlink. */
#define CNI_NETLINK_INTERNAL
#include "route.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "link.h"

/* Our constants are the kernel's values, so they pass through as is. */
_Static_assert((int)ROUTE_TABLE_MAIN == (int)RT_TABLE_MAIN &&
		   (int)ROUTE_TABLE_LOCAL == (int)RT_TABLE_LOCAL,
	       "RT_TABLE_*");
_Static_assert((int)ROUTE_SCOPE_LINK == (int)RT_SCOPE_LINK &&
		   (int)ROUTE_SCOPE_HOST == (int)RT_SCOPE_HOST,
	       "RT_SCOPE_*");
_Static_assert(ROUTE_PROTO_BOOT == RTPROT_BOOT && ROUTE_PROTO_STATIC == RTPROT_STATIC &&
		   ROUTE_PROTO_KERNEL == RTPROT_KERNEL,
	       "RTPROT_*");
_Static_assert((int)ROUTE_TYPE_UNICAST == (int)RTN_UNICAST &&
		   (int)ROUTE_TYPE_LOCAL == (int)RTN_LOCAL &&
		   (int)ROUTE_TYPE_BLACKHOLE == (int)RTN_BLACKHOLE &&
		   (int)ROUTE_TYPE_UNREACHABLE == (int)RTN_UNREACHABLE,
	       "RTN_*");

static bool family_ok(int f)
{
	return f == AF_INET || f == AF_INET6;
}

static void put_ip(struct nl_msg *m, int type, const struct cni_ip *ip)
{
	netlink_put(m, type, ip->a, (size_t)ip_len(ip));
}

static int check_rt(const struct cni_rt *rt, struct cni_err *err)
{
	int f = rt->dst.ip.family;
	if (!family_ok(f) || rt->dst.prefix < 0 || rt->dst.prefix > ip_bits(&rt->dst.ip) ||
	    (ip_isset(&rt->gw) && rt->gw.family != f) ||
	    (ip_isset(&rt->src) && rt->src.family != f)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid route (family %d/%d/%d, prefix %d)", f,
			rt->gw.family, rt->src.family, rt->dst.prefix);
		return -EINVAL;
	}
	return 0;
}

/* "10.0.0.0/24 via 10.0.0.1" plus " table N" outside main. */
static void format_rt(const struct cni_rt *rt, char *buf, size_t size, char *tail, size_t tsize)
{
	char d[CIDR_STRLEN], g[IP_STRLEN];
	if (ip_isset(&rt->gw))
		snprintf(buf, size, "%s via %s", ip_cidr_format(&rt->dst, d),
			 ip_format(&rt->gw, g));
	else
		snprintf(buf, size, "%s", ip_cidr_format(&rt->dst, d));
	if (rt->table && rt->table != RT_TABLE_MAIN)
		snprintf(tail, tsize, " table %u", rt->table);
	else
		tail[0] = 0;
}

static struct nl_msg *route_msg(int type, int flags, const struct cni_rt *rt)
{
	bool del = type == RTM_DELROUTE;
	unsigned table = rt->table ? rt->table : RT_TABLE_MAIN;
	struct rtmsg rtm = {
	    .rtm_family = (uint8_t)rt->dst.ip.family,
	    .rtm_dst_len = (uint8_t)rt->dst.prefix,
	    .rtm_table = (uint8_t)(table < 256 ? table : RT_TABLE_UNSPEC),
	    /* For a delete, 0 matches any protocol and type, and
	     * RT_SCOPE_NOWHERE any scope (IPv4; IPv6 ignores scope). */
	    .rtm_protocol = (uint8_t)(rt->proto ? rt->proto : (del ? 0 : RTPROT_BOOT)),
	    .rtm_scope = (uint8_t)(del ? RT_SCOPE_NOWHERE : rt->scope),
	    .rtm_type = (uint8_t)(rt->type ? rt->type : (del ? 0 : RTN_UNICAST)),
	    .rtm_flags = (rt->flags & ROUTE_F_ONLINK) ? RTNH_F_ONLINK : 0,
	};
	struct nl_msg *m = netlink_msg(type, flags, &rtm, sizeof(rtm));
	netlink_put_u32(m, RTA_TABLE, table);
	if (rt->dst.prefix > 0)
		put_ip(m, RTA_DST, &rt->dst.ip);
	if (ip_isset(&rt->gw))
		put_ip(m, RTA_GATEWAY, &rt->gw);
	if (ip_isset(&rt->src))
		put_ip(m, RTA_PREFSRC, &rt->src);
	if (rt->ifindex > 0)
		netlink_put_u32(m, RTA_OIF, (uint32_t)rt->ifindex);
	if (rt->priority)
		netlink_put_u32(m, RTA_PRIORITY, rt->priority);
	if (rt->mtu || rt->advmss) {
		struct nlattr *mx = netlink_nest(m, RTA_METRICS);
		if (rt->mtu)
			netlink_put_u32(m, RTAX_MTU, rt->mtu);
		if (rt->advmss)
			netlink_put_u32(m, RTAX_ADVMSS, rt->advmss);
		netlink_nest_end(m, mx);
	}
	return m;
}

static int route_change(struct cni_nl *nl, int type, int flags, const struct cni_rt *rt,
			const char *verb, struct cni_err *err)
{
	int r = check_rt(rt, err);
	if (r < 0)
		return r;
	r = netlink_request(nl, route_msg(type, flags, rt), NULL, NULL);
	if (type == RTM_DELROUTE && (r == -ESRCH || r == -ENOENT || r == -ENODEV))
		return 0;
	if (r < 0) {
		char what[128], tail[32];
		format_rt(rt, what, sizeof(what), tail, sizeof(tail));
		if (rt->ifindex > 0) {
			char v[192];
			snprintf(v, sizeof(v), "%s route %s dev", verb, what);
			return link_fail(nl, r, rt->ifindex, err, v, "%s", tail);
		}
		return netlink_fail(nl, r, err, "failed to %s route %s%s", verb, what, tail);
	}
	return 0;
}

int route_add(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err)
{
	return route_change(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, rt, "add", err);
}

int route_replace(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err)
{
	return route_change(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, rt, "replace", err);
}

int route_del(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err)
{
	return route_change(nl, RTM_DELROUTE, 0, rt, "delete", err);
}

struct rt_vec {
	int family, ifindex;
	unsigned table;
	struct cni_rt *v;
	size_t n, cap;
};

static const struct nla_policy rt_policy[RTA_MAX + 1] = {
    [RTA_OIF] = {.type = NLA_U32},
    [RTA_PRIORITY] = {.type = NLA_U32},
    [RTA_TABLE] = {.type = NLA_U32},
    [RTA_METRICS] = {.type = NLA_NESTED},
};

static bool get_ip(const struct nlattr *a, int family, struct cni_ip *out)
{
	int len = family == AF_INET ? 4 : 16;
	if (!a || nla_len(a) != len)
		return false;
	out->family = family;
	memcpy(out->a, nla_data(a), (size_t)len);
	return true;
}

static int on_route(const struct nlmsghdr *h, void *arg)
{
	struct rt_vec *rv = arg;
	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
		return 0;
	const struct rtmsg *rtm = nlmsg_data(h);
	if (!family_ok(rtm->rtm_family) || (rv->family && rtm->rtm_family != rv->family) ||
	    (rtm->rtm_flags & RTM_F_CLONED))
		return 0;
	struct nlattr *tb[RTA_MAX + 1];
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*rtm), tb, RTA_MAX,
			(struct nla_policy *)rt_policy) < 0)
		return -EPROTO;
	struct cni_rt rt = {0};
	rt.table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
	if (rv->table && rt.table != rv->table)
		return 0;
	rt.dst.ip.family = rtm->rtm_family;
	rt.dst.prefix = rtm->rtm_dst_len;
	if (tb[RTA_DST] && !get_ip(tb[RTA_DST], rtm->rtm_family, &rt.dst.ip))
		return 0;
	get_ip(tb[RTA_GATEWAY], rtm->rtm_family, &rt.gw);
	get_ip(tb[RTA_PREFSRC], rtm->rtm_family, &rt.src);
	if (tb[RTA_OIF])
		rt.ifindex = (int)nla_get_u32(tb[RTA_OIF]);
	if (tb[RTA_MULTIPATH] && nla_len(tb[RTA_MULTIPATH]) >= (int)sizeof(struct rtnexthop)) {
		const struct rtnexthop *nh = nla_data(tb[RTA_MULTIPATH]);
		if (nh->rtnh_len >= sizeof(*nh) &&
		    (int)nh->rtnh_len <= nla_len(tb[RTA_MULTIPATH])) {
			if (!rt.ifindex)
				rt.ifindex = nh->rtnh_ifindex;
			struct nlattr *nt[RTA_MAX + 1];
			if (!ip_isset(&rt.gw) && nh->rtnh_len > sizeof(*nh) &&
			    nla_parse(nt, RTA_MAX, (struct nlattr *)RTNH_DATA(nh),
				      (int)(nh->rtnh_len - sizeof(*nh)), NULL) == 0)
				get_ip(nt[RTA_GATEWAY], rtm->rtm_family, &rt.gw);
		}
	}
	if (rv->ifindex && rt.ifindex != rv->ifindex)
		return 0;
	if (tb[RTA_PRIORITY])
		rt.priority = nla_get_u32(tb[RTA_PRIORITY]);
	if (tb[RTA_METRICS]) {
		struct nlattr *mx[RTAX_MAX + 1];
		if (nla_parse_nested(mx, RTAX_MAX, tb[RTA_METRICS], NULL) == 0) {
			if (mx[RTAX_MTU] && nla_len(mx[RTAX_MTU]) == 4)
				rt.mtu = nla_get_u32(mx[RTAX_MTU]);
			if (mx[RTAX_ADVMSS] && nla_len(mx[RTAX_ADVMSS]) == 4)
				rt.advmss = nla_get_u32(mx[RTAX_ADVMSS]);
		}
	}
	rt.scope = rtm->rtm_scope;
	rt.proto = rtm->rtm_protocol;
	rt.type = rtm->rtm_type;
	rt.flags = (rtm->rtm_flags & RTNH_F_ONLINK) ? ROUTE_F_ONLINK : 0;
	xgrow(&rv->v, &rv->cap, rv->n, sizeof(*rv->v));
	rv->v[rv->n++] = rt;
	return 0;
}

int route_list(struct cni_nl *nl, int family, unsigned table, int ifindex, struct cni_rt **out,
	       size_t *n, struct cni_err *err)
{
	struct rt_vec rv = {.family = family, .table = table, .ifindex = ifindex};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		rv.n = 0;
		struct rtmsg rtm = {.rtm_family = (uint8_t)family};
		struct nl_msg *m = netlink_msg(RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof(rtm));
		/* A kernel-side table filter; on_route filters again for
		 * kernels without strict dump checking. */
		if (table)
			netlink_put_u32(m, RTA_TABLE, table);
		r = netlink_request(nl, m, on_route, &rv);
		if (r != -EINTR)
			break;
	}
	/* A filtered IPv4 dump of a table that does not exist yet. */
	if (r == -ENOENT && table)
		r = 0;
	if (r < 0) {
		free(rv.v);
		return netlink_fail(nl, r, err, "failed to list routes");
	}
	*out = rv.v;
	*n = rv.n;
	return 0;
}

static int rule_family(const struct cni_rule *rule)
{
	if (rule->family)
		return rule->family;
	if (rule->src.ip.family)
		return rule->src.ip.family;
	return rule->dst.ip.family;
}

static int check_rule(const struct cni_rule *rule, int family, struct cni_err *err)
{
	const struct cni_cidr *c[2] = {&rule->src, &rule->dst};
	bool bad = !family_ok(family);
	for (int i = 0; i < 2 && !bad; i++)
		if (c[i]->ip.family && (c[i]->ip.family != family || c[i]->prefix < 0 ||
					c[i]->prefix > ip_bits(&c[i]->ip)))
			bad = true;
	if (bad || strnlen(rule->iif, sizeof(rule->iif)) >= sizeof(rule->iif) ||
	    strnlen(rule->oif, sizeof(rule->oif)) >= sizeof(rule->oif)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid routing rule (family %d)", family);
		return -EINVAL;
	}
	return 0;
}

static struct nl_msg *rule_msg(int type, int flags, const struct cni_rule *rule, int family)
{
	struct fib_rule_hdr frh = {
	    .family = (uint8_t)family,
	    .dst_len = (uint8_t)(rule->dst.ip.family ? rule->dst.prefix : 0),
	    .src_len = (uint8_t)(rule->src.ip.family ? rule->src.prefix : 0),
	    .table = (uint8_t)(rule->table < 256 ? rule->table : RT_TABLE_UNSPEC),
	    /* On delete, no table means "any rule", whatever it does. */
	    .action = (uint8_t)(rule->table || type == RTM_NEWRULE ? FR_ACT_TO_TBL : 0),
	    .flags = rule->invert ? FIB_RULE_INVERT : 0,
	};
	struct nl_msg *m = netlink_msg(type, flags, &frh, sizeof(frh));
	if (rule->table)
		netlink_put_u32(m, FRA_TABLE, rule->table);
	if (rule->priority)
		netlink_put_u32(m, FRA_PRIORITY, rule->priority);
	if (rule->src.ip.family)
		put_ip(m, FRA_SRC, &rule->src.ip);
	if (rule->dst.ip.family)
		put_ip(m, FRA_DST, &rule->dst.ip);
	if (rule->iif[0])
		netlink_put_str(m, FRA_IIFNAME, rule->iif);
	if (rule->oif[0])
		netlink_put_str(m, FRA_OIFNAME, rule->oif);
	if (rule->fwmark) {
		netlink_put_u32(m, FRA_FWMARK, rule->fwmark);
		if (rule->fwmask)
			netlink_put_u32(m, FRA_FWMASK, rule->fwmask);
	}
	return m;
}

static void format_rule(const struct cni_rule *rule, char *buf, size_t size)
{
	char s[CIDR_STRLEN] = "all";
	if (rule->src.ip.family)
		ip_cidr_format(&rule->src, s);
	size_t n = (size_t)snprintf(buf, size, "from %s", s);
	if (rule->dst.ip.family && n < size)
		n += (size_t)snprintf(buf + n, size - n, " to %s", ip_cidr_format(&rule->dst, s));
	if (rule->table && n < size)
		n += (size_t)snprintf(buf + n, size - n, " table %u", rule->table);
	if (rule->priority && n < size)
		snprintf(buf + n, size - n, " priority %u", rule->priority);
}

int rule_add(struct cni_nl *nl, const struct cni_rule *rule, struct cni_err *err)
{
	int family = rule_family(rule);
	int r = check_rule(rule, family, err);
	if (r < 0)
		return r;
	if (!rule->table) {
		err_set(err, CNI_ERR_INTERNAL, "routing rule without a table");
		return -EINVAL;
	}
	r = netlink_request(nl, rule_msg(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, rule, family),
			    NULL, NULL);
	if (r < 0) {
		char what[160];
		format_rule(rule, what, sizeof(what));
		return netlink_fail(nl, r, err, "failed to add rule %s", what);
	}
	return 0;
}

int rule_del(struct cni_nl *nl, const struct cni_rule *rule, struct cni_err *err)
{
	int family = rule_family(rule);
	int r = check_rule(rule, family, err);
	if (r < 0)
		return r;
	r = netlink_request(nl, rule_msg(RTM_DELRULE, 0, rule, family), NULL, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		char what[160];
		format_rule(rule, what, sizeof(what));
		return netlink_fail(nl, r, err, "failed to delete rule %s", what);
	}
	return 0;
}

struct rule_vec {
	int family;
	unsigned table;
	struct cni_rule *v;
	size_t n, cap;
};

static const struct nla_policy rule_policy[FRA_MAX + 1] = {
    [FRA_TABLE] = {.type = NLA_U32},	  [FRA_PRIORITY] = {.type = NLA_U32},
    [FRA_FWMARK] = {.type = NLA_U32},	  [FRA_FWMASK] = {.type = NLA_U32},
    [FRA_IIFNAME] = {.type = NLA_STRING}, [FRA_OIFNAME] = {.type = NLA_STRING},
};


static int on_rule(const struct nlmsghdr *h, void *arg)
{
	struct rule_vec *rv = arg;
	if (h->nlmsg_type != RTM_NEWRULE ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct fib_rule_hdr)))
		return 0;
	const struct fib_rule_hdr *frh = nlmsg_data(h);
	if (!family_ok(frh->family) || (rv->family && frh->family != rv->family))
		return 0;
	struct nlattr *tb[FRA_MAX + 1];
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*frh), tb, FRA_MAX,
			(struct nla_policy *)rule_policy) < 0)
		return -EPROTO;
	struct cni_rule rule = {.family = frh->family};
	rule.table = tb[FRA_TABLE] ? nla_get_u32(tb[FRA_TABLE]) : frh->table;
	if (rv->table && rule.table != rv->table)
		return 0;
	if (get_ip(tb[FRA_SRC], frh->family, &rule.src.ip))
		rule.src.prefix = frh->src_len;
	if (get_ip(tb[FRA_DST], frh->family, &rule.dst.ip))
		rule.dst.prefix = frh->dst_len;
	if (tb[FRA_PRIORITY])
		rule.priority = nla_get_u32(tb[FRA_PRIORITY]);
	netlink_attr_str(rule.iif, sizeof(rule.iif), tb[FRA_IIFNAME]);
	netlink_attr_str(rule.oif, sizeof(rule.oif), tb[FRA_OIFNAME]);
	if (tb[FRA_FWMARK])
		rule.fwmark = nla_get_u32(tb[FRA_FWMARK]);
	if (tb[FRA_FWMASK])
		rule.fwmask = nla_get_u32(tb[FRA_FWMASK]);
	rule.invert = (frh->flags & FIB_RULE_INVERT) != 0;
	xgrow(&rv->v, &rv->cap, rv->n, sizeof(*rv->v));
	rv->v[rv->n++] = rule;
	return 0;
}

int rule_list(struct cni_nl *nl, int family, unsigned table, struct cni_rule **out, size_t *n,
	      struct cni_err *err)
{
	struct rule_vec rv = {.family = family, .table = table};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		rv.n = 0;
		struct fib_rule_hdr frh = {.family = (uint8_t)family};
		struct nl_msg *m = netlink_msg(RTM_GETRULE, NLM_F_DUMP, &frh, sizeof(frh));
		r = netlink_request(nl, m, on_rule, &rv);
		if (r != -EINTR)
			break;
	}
	if (r < 0) {
		free(rv.v);
		return netlink_fail(nl, r, err, "failed to list routing rules");
	}
	*out = rv.v;
	*n = rv.n;
	return 0;
}

static struct nl_msg *neigh_msg(int type, int flags, int ifindex, const struct cni_ip *ip)
{
	struct ndmsg nd = {
	    .ndm_family = (uint8_t)ip->family,
	    .ndm_ifindex = ifindex,
	    .ndm_state = NUD_PERMANENT,
	};
	struct nl_msg *m = netlink_msg(type, flags, &nd, sizeof(nd));
	put_ip(m, NDA_DST, ip);
	return m;
}

int neigh_add(struct cni_nl *nl, int ifindex, const struct cni_ip *ip, const uint8_t mac[6],
	      struct cni_err *err)
{
	if (!family_ok(ip->family)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid neighbour address");
		return -EINVAL;
	}
	struct nl_msg *m = neigh_msg(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, ifindex, ip);
	netlink_put(m, NDA_LLADDR, mac, 6);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0) {
		char a[IP_STRLEN], verb[80];
		snprintf(verb, sizeof(verb), "add neighbour %s on", ip_format(ip, a));
		return link_fail(nl, r, ifindex, err, verb, NULL);
	}
	return 0;
}

int neigh_del(struct cni_nl *nl, int ifindex, const struct cni_ip *ip, struct cni_err *err)
{
	if (!family_ok(ip->family)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid neighbour address");
		return -EINVAL;
	}
	int r = netlink_request(nl, neigh_msg(RTM_DELNEIGH, 0, ifindex, ip), NULL, NULL);
	if (r == -ENOENT || r == -ENODEV)
		return 0;
	if (r < 0) {
		char a[IP_STRLEN], verb[80];
		snprintf(verb, sizeof(verb), "delete neighbour %s from", ip_format(ip, a));
		return link_fail(nl, r, ifindex, err, verb, NULL);
	}
	return 0;
}
