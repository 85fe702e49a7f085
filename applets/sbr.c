/* sbr: source-based routing for CNI_IFNAME (a chained plugin).
 *
 * ADD gives each address of the interface in prevResult its own routing
 * table: a rule "from <address>/32 (/128) lookup T", a default route via
 * the address's gateway (or the configured static gateway of its family)
 * in T, and a copy in T of the interface's main-table routes that belong
 * to it (source or gateway inside the address's subnet, or neither set).
 * The interface's main-table routes are then removed, or, with
 * addSourceHints, kept as subnet routes with the address as preferred
 * source while only the non-link routes go. T is the first table from 100
 * up that no rule and no route uses. With "table", ADD only adds the rules
 * towards that table and leaves every route alone.
 *
 * DEL deletes the rules whose source is an address of the interface (once
 * the interface is gone: an address prevResult gave it), with "table" only
 * the rules towards it, and, without "table", the routes through the
 * interface left in the tables those rules pointed to. A missing namespace
 * or interface is success. CHECK verifies that each address has
 * its rule. Concurrent sbr runs on one namespace are serialized with a
 * lock on the namespace file, as the reference does.
 *
 * Differences from the reference: a static gateway replaces the default
 * route in the address's table (the reference copies the main table's
 * default route over it); a free table is one without rules and
 * without routes in any table (the reference looks at rules and main-table
 * routes only); bad gateways or table are code 7 before anything changes;
 * DEL also empties the per-interface tables (the reference leaves their
 * routes for the kernel to drop with the interface) and, when the interface
 * is already gone, still removes the rules of prevResult's addresses (the
 * reference then leaves them); CHECK checks the
 * rules (the reference's CHECK does nothing). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>

#include "addr.h"
#include "applet.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "route.h"

#define SBR_FIRST_TABLE 100

struct sbr_conf {
	int64_t table; /* 0: pick one per address */
	struct cni_ip gw4, gw6;
	bool source_hints;
	struct cni_nl *nl; /* container socket, kept for the undo steps */
	int lock;	   /* flock()ed namespace file, or -1 */
};

static void sbr_free(void *priv)
{
	struct sbr_conf *c = priv;
	if (!c)
		return;
	netlink_close(c->nl);
	if (c->lock >= 0)
		close(c->lock);
	free(c);
}

static void sbr_freep(struct sbr_conf **c)
{
	sbr_free(*c);
}

static int sbr_parse(struct cni_req *req, struct cni_err *err)
{
	const struct cni_json *conf = req->conf;
	_cleanup_(sbr_freep) struct sbr_conf *c = xcalloc(1, sizeof(*c));
	c->lock = -1;
	int r = json_get_int(conf, "table", 0, 1, UINT32_MAX, &c->table, err);
	if (r < 0)
		return -1;
	/* DEL needs only the table: a gateway ADD would have refused must
	 * not keep DEL from removing rules. */
	if (req->cmd == CNI_CMD_DEL) {
		req->priv = TAKE_PTR(c);
		return 0;
	}
	const struct cni_json *gws = NULL;
	if (json_get_arr(conf, "gateways", 0, &gws, err) < 0 ||
	    json_get_bool(conf, "addSourceHints", 0, &c->source_hints, err) < 0)
		return -1;
	if (json_len(gws) > 2)
		return json_err(err, gws, "at most 2 entries (one IPv4, one IPv6)");
	for (size_t i = 0; i < json_len(gws); i++) {
		struct cni_ip ip;
		if (json_as_ip(json_at(gws, i), &ip, err) < 0)
			return -1;
		struct cni_ip *slot = ip.family == AF_INET ? &c->gw4 : &c->gw6;
		if (ip_isset(slot))
			return json_err(err, json_at(gws, i), "a second %s gateway",
					ip.family == AF_INET ? "IPv4" : "IPv6");
		*slot = ip;
	}
	req->priv = TAKE_PTR(c);
	return 0;
}

/* The addresses of prevResult that belong to CNI_IFNAME: those pointing at
 * an interface of that name, or at none (as the reference, which also
 * keeps an index past the end of the list). */
static bool sbr_mine(const struct cni_result *r, const struct cni_ipconf *ip, const char *ifname)
{
	if (ip->iface < 0 || (size_t)ip->iface >= r->n_ifaces)
		return true;
	return streq(r->ifaces[ip->iface].name, ifname);
}

/* Lock the namespace (flock on its file) and open its socket. */
static int sbr_open(struct cni_req *req, struct sbr_conf *c, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return -1;
	if (c->lock < 0) {
		c->lock = open(req->netns_path, O_RDONLY | O_CLOEXEC);
		if (c->lock < 0 || flock(c->lock, LOCK_EX) < 0)
			return err_errno(err, CNI_ERR_INTERNAL, errno, "failed to lock %s",
					 req->netns_path);
	}
	if (!c->nl && !(c->nl = netlink_open(ns, err)))
		return -1;
	return 0;
}

enum sbr_undo_what { SBR_U_RULE, SBR_U_ROUTE_DEL, SBR_U_ROUTE_ADD };
struct sbr_undo {
	enum sbr_undo_what what;
	struct cni_rule rule;
	struct cni_rt rt;
};

static void sbr_undo(struct cni_req *req, void *arg)
{
	struct sbr_conf *c = req->priv;
	struct sbr_undo *u = arg;
	struct cni_err e = {0};
	if (u->what == SBR_U_RULE)
		rule_del(c->nl, &u->rule, &e);
	else if (u->what == SBR_U_ROUTE_DEL)
		route_del(c->nl, &u->rt, &e);
	else
		route_add(c->nl, &u->rt, &e);
	if (err_isset(&e))
		fprintf(stderr, "sbr: undo: %s: %s\n", e.msg, e.details);
}

static void sbr_push_rule(struct cni_req *req, const struct cni_rule *rule)
{
	struct sbr_undo *u = xcalloc(1, sizeof(*u));
	u->what = SBR_U_RULE;
	u->rule = *rule;
	req_push_undo(req, sbr_undo, u, free);
}

static void sbr_push_route(struct cni_req *req, enum sbr_undo_what what, const struct cni_rt *rt)
{
	struct sbr_undo *u = xcalloc(1, sizeof(*u));
	u->what = what;
	u->rt = *rt;
	req_push_undo(req, sbr_undo, u, free);
}

static struct cni_rule sbr_rule(const struct cni_ip *ip, unsigned table)
{
	struct cni_rule rule = {.family = ip->family, .table = table};
	rule.src.ip = *ip;
	rule.src.prefix = ip_bits(ip);
	return rule;
}

/* Tables in use: by a rule, or holding a route. */
struct sbr_tables {
	unsigned *v;
	size_t n, cap;
};

static void sbr_tables_add(struct sbr_tables *t, unsigned table)
{
	xgrow(&t->v, &t->cap, t->n, sizeof(*t->v));
	t->v[t->n++] = table;
}

static unsigned sbr_next_table(const struct sbr_tables *t, unsigned from)
{
	for (unsigned table = from;; table++) {
		bool used = false;
		for (size_t i = 0; i < t->n && !used; i++)
			used = t->v[i] == table;
		if (!used)
			return table;
	}
}

static int sbr_used_tables(struct cni_nl *nl, struct sbr_tables *t, struct cni_err *err)
{
	_cleanup_free_ struct cni_rule *rules = NULL;
	_cleanup_free_ struct cni_rt *routes = NULL;
	size_t nr = 0, nt = 0;
	if (rule_list(nl, 0, 0, &rules, &nr, err) < 0 ||
	    route_list(nl, 0, 0, 0, &routes, &nt, err) < 0)
		return -1;
	for (size_t i = 0; i < nr; i++)
		sbr_tables_add(t, rules[i].table);
	for (size_t i = 0; i < nt; i++)
		sbr_tables_add(t, routes[i].table);
	return 0;
}

/* Rules only, towards the configured table. */
static int sbr_add_rules(struct cni_req *req, struct sbr_conf *c, struct cni_err *err)
{
	const struct cni_result *prev = req->prev;
	for (size_t i = 0; i < prev->n_ips; i++) {
		if (!sbr_mine(prev, &prev->ips[i], req->ifname))
			continue;
		struct cni_rule rule = sbr_rule(&prev->ips[i].address.ip, (unsigned)c->table);
		if (rule_add(c->nl, &rule, err) < 0)
			return -1;
		sbr_push_rule(req, &rule);
	}
	return 0;
}

static int sbr_add_routes(struct cni_req *req, struct sbr_conf *c, struct cni_err *err)
{
	const struct cni_result *prev = req->prev;
	struct sbr_tables used = {0};
	_cleanup_free_ struct cni_rt *routes = NULL;
	size_t n = 0;
	struct cni_link l;
	int rc = -1;

	if (sbr_used_tables(c->nl, &used, err) < 0)
		goto out;
	int r = link_get_by_name(c->nl, req->ifname, &l, err);
	if (r == -ENODEV) {
		err_set(err, CNI_ERR_INTERNAL, "cannot find network interface %s", req->ifname);
		goto out;
	}
	if (r < 0 || route_list(c->nl, 0, ROUTE_TABLE_MAIN, l.ifindex, &routes, &n, err) < 0)
		goto out;

	unsigned table = sbr_next_table(&used, SBR_FIRST_TABLE);
	for (size_t i = 0; i < prev->n_ips; i++) {
		const struct cni_ipconf *ip = &prev->ips[i];
		if (!sbr_mine(prev, ip, req->ifname))
			continue;
		struct cni_rule rule = sbr_rule(&ip->address.ip, table);
		if (rule_add(c->nl, &rule, err) < 0)
			goto out;
		sbr_push_rule(req, &rule);
		sbr_tables_add(&used, table);

		bool v4 = ip->address.ip.family == AF_INET;
		const struct cni_ip *gw = v4 ? &c->gw4 : &c->gw6;
		if (!ip_isset(gw))
			gw = &ip->gateway;
		if (ip_isset(gw) && gw->family == ip->address.ip.family) {
			/* The interface plugin may have put the default route
			 * in main; this table needs its own. */
			struct cni_rt def = {.gw = *gw, .ifindex = l.ifindex, .table = table};
			def.dst.ip.family = gw->family;
			if (route_add(c->nl, &def, err) < 0)
				goto out;
			sbr_push_route(req, SBR_U_ROUTE_DEL, &def);
		}
		bool static_gw = ip_isset(v4 ? &c->gw4 : &c->gw6);
		for (size_t k = 0; k < n; k++) {
			struct cni_rt rt = routes[k];
			/* A configured gateway wins over the default route in
			 * main (the reference lets the copy replace it). */
			if (static_gw && rt.dst.prefix == 0 && rt.dst.ip.family == gw->family)
				continue;
			if (!ip_cidr_contains(&ip->address, &rt.src) &&
			    !ip_cidr_contains(&ip->address, &rt.gw) &&
			    (ip_isset(&rt.src) || ip_isset(&rt.gw)))
				continue;
			/* Replace: the default route above may be among them. */
			rt.table = table;
			rt.flags = 0;
			if (route_replace(c->nl, &rt, err) < 0)
				goto out;
			sbr_push_route(req, SBR_U_ROUTE_DEL, &rt);
		}
		table = sbr_next_table(&used, table + 1);
	}

	if (c->source_hints) {
		/* Subnet routes stay in main, with the address as source, so
		 * that traffic not bound to an address still finds its way. */
		for (size_t i = 0; i < prev->n_ips; i++) {
			const struct cni_ipconf *ip = &prev->ips[i];
			if (!sbr_mine(prev, ip, req->ifname))
				continue;
			struct cni_rt hint = {
			    .dst = ip_cidr_network(&ip->address),
			    .src = ip->address.ip,
			    .ifindex = l.ifindex,
			    .table = ROUTE_TABLE_MAIN,
			    .scope = ROUTE_SCOPE_LINK,
			};
			struct cni_err e = {0};
			if (route_replace(c->nl, &hint, &e) < 0)
				fprintf(stderr, "sbr: warning: %s: %s\n", e.msg, e.details);
		}
	}
	/* Moved, not copied: the main-table routes go (all of them, or with
	 * source hints the ones that are not subnet routes). Deleting only
	 * now lets several addresses of one subnet each copy them. */
	for (size_t k = 0; k < n; k++) {
		if (c->source_hints && routes[k].scope == ROUTE_SCOPE_LINK)
			continue;
		struct cni_err e = {0};
		if (route_del(c->nl, &routes[k], c->source_hints ? &e : err) < 0) {
			if (!c->source_hints)
				goto out;
			fprintf(stderr, "sbr: warning: %s: %s\n", e.msg, e.details);
			continue;
		}
		sbr_push_route(req, SBR_U_ROUTE_ADD, &routes[k]);
	}
	rc = 0;
out:
	free(used.v);
	return rc;
}

static int sbr_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct sbr_conf *c = req->priv;
	if (!req->prev)
		return err_set(
		    err, CNI_ERR_INVALID_CONFIG,
		    "prevResult: missing (sbr must be chained after an interface plugin)");
	size_t mine = 0;
	for (size_t i = 0; i < req->prev->n_ips; i++)
		mine += sbr_mine(req->prev, &req->prev->ips[i], req->ifname);
	if (!req->prev->n_ips)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: no IP addresses supplied on interface %s", req->ifname);
	bool gone = false;
	if (sbr_open(req, c, &gone, err) < 0)
		return -1;
	if (!mine)
		return 0;
	return c->table ? sbr_add_rules(req, c, err) : sbr_add_routes(req, c, err);
}

/* The addresses whose rules DEL removes: those on the interface, or, once
 * it is gone, those prevResult gave it. */
static int sbr_del_addrs(struct cni_req *req, struct sbr_conf *c, int *ifindex, struct cni_ip **out,
			 size_t *n, struct cni_err *err)
{
	struct cni_link l;
	int r = link_get_by_name(c->nl, req->ifname, &l, err);
	if (r < 0 && r != -ENODEV)
		return -1;
	*ifindex = r == 0 ? l.ifindex : 0;
	*n = 0;
	if (r == 0) {
		_cleanup_free_ struct cni_addr *addrs = NULL;
		size_t na = 0;
		if (addr_list(c->nl, l.ifindex, 0, &addrs, &na, err) < 0)
			return -1;
		*out = xcalloc(na + 1, sizeof(**out));
		for (size_t i = 0; i < na; i++)
			(*out)[(*n)++] = addrs[i].cidr.ip;
		return 0;
	}
	const struct cni_result *prev = req->prev;
	*out = xcalloc((prev ? prev->n_ips : 0) + 1, sizeof(**out));
	for (size_t i = 0; prev && i < prev->n_ips; i++)
		if (sbr_mine(prev, &prev->ips[i], req->ifname))
			(*out)[(*n)++] = prev->ips[i].address.ip;
	return 0;
}

static int sbr_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct sbr_conf *c = req->priv;
	bool gone = false;
	if (sbr_open(req, c, &gone, err) < 0)
		return gone ? 0 : -1;
	_cleanup_free_ struct cni_ip *addrs = NULL;
	_cleanup_free_ struct cni_rule *rules = NULL;
	size_t na = 0, nr = 0;
	int ifindex = 0;
	if (sbr_del_addrs(req, c, &ifindex, &addrs, &na, err) < 0)
		return -1;
	if (!na)
		return 0;
	if (rule_list(c->nl, 0, (unsigned)c->table, &rules, &nr, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < nr; i++) {
		const struct cni_rule *rule = &rules[i];
		bool ours = false;
		for (size_t k = 0; k < na && !ours && ip_isset(&rule->src.ip); k++)
			ours = ip_eq(&rule->src.ip, &addrs[k]);
		if (!ours)
			continue;
		/* Keep going past a failure, reporting the first one. */
		struct cni_err e = {0};
		if (rule_del(c->nl, rule, &e) < 0) {
			if (!err_isset(err))
				*err = e;
			rc = -1;
			continue;
		}
		/* The routes this interface left in its own table; a
		 * configured table is the user's, and the kernel's own
		 * tables (253-255) are never ours. */
		if (c->table || !ifindex || rule->table >= 253 || rule->table == 0)
			continue;
		_cleanup_free_ struct cni_rt *routes = NULL;
		size_t nt = 0;
		if (route_list(c->nl, 0, rule->table, ifindex, &routes, &nt, &e) < 0) {
			fprintf(stderr, "sbr: %s: %s\n", e.msg, e.details);
			continue;
		}
		for (size_t k = 0; k < nt; k++)
			if (route_del(c->nl, &routes[k], &e) < 0)
				fprintf(stderr, "sbr: %s: %s\n", e.msg, e.details);
	}
	return rc;
}

static int sbr_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct sbr_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	bool gone = false;
	if (sbr_open(req, c, &gone, err) < 0)
		return -1;
	_cleanup_free_ struct cni_rule *rules = NULL;
	size_t nr = 0;
	if (rule_list(c->nl, 0, (unsigned)c->table, &rules, &nr, err) < 0)
		return -1;
	for (size_t i = 0; i < req->prev->n_ips; i++) {
		const struct cni_ipconf *ip = &req->prev->ips[i];
		if (!sbr_mine(req->prev, ip, req->ifname))
			continue;
		bool found = false;
		for (size_t k = 0; k < nr && !found; k++)
			found = ip_eq(&rules[k].src.ip, &ip->address.ip) &&
				rules[k].src.prefix == ip_bits(&ip->address.ip);
		if (!found) {
			char a[IP_STRLEN];
			return err_set(err, CNI_ERR_INTERNAL, "no source routing rule for %s",
				       ip_format(&ip->address.ip, a));
		}
	}
	return 0;
}

const struct cni_applet sbr_applet = {
    .name = "sbr",
    .summary = "source-based routing: a routing table per interface address",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"sbr\",\n"
	     "         \"table\": N, \"gateways\": [IP...], \"addSourceHints\": BOOL}\n"
	     "Chained after an interface plugin; needs prevResult.\n",
    .parse = sbr_parse,
    .free = sbr_free,
    .add = sbr_add,
    .del = sbr_del,
    .check = sbr_check,
};
