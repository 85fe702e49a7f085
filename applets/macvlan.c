/* macvlan: a macvlan of a host interface as the container's interface.
 *
 * ADD creates the macvlan of `master` directly inside CNI_NETNS under
 * CNI_IFNAME (IFLA_NET_NS_FD in the creating request), so it never exists
 * in the host, not even briefly, and its name cannot collide with a host
 * link; the reference creates it under a random name and renames it. With
 * ipam, the allocation is applied (addresses, link up, routes; arp_notify
 * and ndisc_notify set); without, the link is only brought up. A failed
 * ADD deletes the link and releases the allocation.
 * DEL releases the allocation first (also when the namespace is gone),
 * then deletes CNI_IFNAME; a missing namespace or link is success.
 * CHECK runs the IPAM CHECK, then compares the live link (kind, mode, MAC),
 * its addresses and the routes with prevResult. STATUS and GC are
 * delegated to the IPAM plugin.
 *
 * Differences from the reference: config errors the reference finds late
 * (bad mode, MAC, a master that does not exist or is smaller than `mtu`)
 * are code 7 naming the field, found before any change; "source" mode is
 * refused as the reference does, since a source-mode macvlan needs a MAC
 * list no config field provides; `bcqueuelen` other than 0 is refused
 * (code 2): the netlink core cannot set it yet; GC is delegated to IPAM
 * (the reference has no GC). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "applet.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "route.h"
#include "sysctl.h"

struct mv_conf {
	const char *master; /* NULL: the default route's interface */
	int mode;
	const char *mode_name;
	unsigned mtu;
	bool has_mac;
	uint8_t mac[6];
	bool in_container; /* linkInContainer: master is in CNI_NETNS */
	bool l3;	   /* ipam.type given */
	struct cni_dns dns;

	/* Sockets, opened by the handlers; kept here so that the undo
	 * steps, which run after ADD returns, can still use them. */
	struct cni_nl *hnl, *cnl;
	int ifindex; /* the created link, in CNI_NETNS */
};

static void mv_free(void *priv)
{
	struct mv_conf *c = priv;
	if (!c)
		return;
	dns_clear(&c->dns);
	netlink_close(c->hnl);
	netlink_close(c->cnl);
	free(c);
}

/* The MAC, by the reference's priority: runtimeConfig.mac (capability
 * "mac"), else CNI_ARGS MAC=, else the config's "mac". */
static int mv_parse_mac(struct cni_req *req, struct mv_conf *c, struct cni_err *err)
{
	static const char *const known[] = {"MAC", NULL};
	const char *mac = NULL, *field = "mac";
	if (json_get_str(req->conf, "mac", 0, &mac, err) < 0)
		return -1;
	if (!strempty(req->args_raw)) {
		if (args_check_known(&req->args, known, err) < 0)
			return -1;
		const char *a = args_get(&req->args, "MAC");
		if (!strempty(a)) {
			mac = a;
			field = "CNI_ARGS MAC";
		}
	}
	const char *rt = NULL;
	if (json_get_str(req->rt, "mac", 0, &rt, err) < 0)
		return -1;
	if (!strempty(rt)) {
		mac = rt;
		field = "runtimeConfig.mac";
	}
	if (strempty(mac))
		return 0;
	if (link_parse_mac(mac, c->mac) < 0)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: invalid MAC address \"%.40s\"",
			       field, mac);
	c->has_mac = true;
	return 0;
}

static int mv_parse(struct cni_req *req, struct cni_err *err)
{
	struct mv_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	const char *ipam_type = NULL;
	const struct cni_json *dns = NULL;
	int64_t mtu = 0;
	uint64_t bcq = 0;
	c->mode_name = "bridge";
	if (json_get_str(req->conf, "master", 0, &c->master, err) < 0 ||
	    json_get_str(req->conf, "mode", 0, &c->mode_name, err) < 0 ||
	    json_get_int(req->conf, "mtu", 0, 0, INT_MAX, &mtu, err) < 0 ||
	    json_get_bool(req->conf, "linkInContainer", 0, &c->in_container, err) < 0 ||
	    json_get_uint(req->conf, "bcqueuelen", 0, UINT32_MAX, &bcq, err) < 0 ||
	    json_get_str(req->ipam, "type", 0, &ipam_type, err) < 0 ||
	    json_get_obj(req->conf, "dns", 0, &dns, err) < 0)
		return -1;
	if (strempty(c->master))
		c->master = NULL;
	else if (!name_is_safe(c->master, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "master"), "not a valid interface name");
	if (!*c->mode_name)
		c->mode_name = "bridge";
	c->mode = link_macvlan_mode_parse(c->mode_name);
	if (c->mode < 0 || c->mode == LINK_MACVLAN_SOURCE)
		return json_err(err, json_get(req->conf, "mode"), "unknown macvlan mode \"%.32s\"",
				c->mode_name);
	if (bcq)
		return err_set(err, CNI_ERR_UNSUPPORTED_FIELD,
			       "bcqueuelen: setting the broadcast queue length is not supported");
	c->mtu = (unsigned)mtu;
	c->l3 = !strempty(ipam_type);
	if (c->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	if (dns && dns_parse(dns, &c->dns, err) < 0)
		return -1;
	/* Only ADD uses the MAC: DEL must not fail on it (the reference's
	 * DEL reads neither the MAC nor CNI_ARGS). */
	bool need_mac = req->cmd == CNI_CMD_ADD || req->cmd == CNI_CMD_CHECK;
	return need_mac ? mv_parse_mac(req, c, err) : 0;
}

/* The host socket and, unless the namespace is gone (DEL), the
 * container's. */
static int mv_open(struct cni_req *req, struct mv_conf *c, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return gone && *gone ? 0 : -1;
	if (!c->hnl && !(c->hnl = netlink_open(NULL, err)))
		return -1;
	if (!c->cnl && !(c->cnl = netlink_open(ns, err)))
		return -1;
	return 0;
}

/* The interface of the first default route of the main table, IPv4 first,
 * as the reference picks it. Read-only. */
static int mv_default_link(struct cni_nl *nl, struct cni_link *out, struct cni_err *err)
{
	static const int families[] = {AF_INET, AF_INET6};
	for (size_t f = 0; f < ARRAY_SIZE(families); f++) {
		_cleanup_free_ struct cni_rt *rts = NULL;
		size_t n = 0;
		if (route_list(nl, families[f], ROUTE_TABLE_MAIN, 0, &rts, &n, err) < 0)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (rts[i].dst.prefix != 0 || rts[i].ifindex <= 0)
				continue;
			int r = link_get_by_index(nl, rts[i].ifindex, out, err);
			if (r == 0)
				return 0;
			if (r != -ENODEV)
				return -1;
		}
	}
	return err_set(err, CNI_ERR_INVALID_CONFIG,
		       "master: not set, and no default route interface found");
}

/* Look up master (or the default route's interface) where it lives. */
static int mv_master(struct mv_conf *c, struct cni_link *m, struct cni_err *err)
{
	struct cni_nl *nl = c->in_container ? c->cnl : c->hnl;
	if (!c->master)
		return mv_default_link(nl, m, err);
	int r = link_get_by_name(nl, c->master, m, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "master: link \"%s\" not found%s",
			       c->master, c->in_container ? " in the container namespace" : "");
	return r < 0 ? -1 : 0;
}

static void mv_undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

static void mv_undo_link(struct cni_req *req, void *arg)
{
	struct mv_conf *c = req->priv;
	struct cni_err e = {0};
	link_del(c->cnl, c->ifindex, &e);
}

/* Take the IPAM allocation for the link at index idx of fresh: its
 * addresses (all on this link) and routes. The DNS of the result is the
 * config's, never the IPAM plugin's, as in the reference. */
static int mv_ipam_add(struct cni_req *req, struct cni_result *fresh, int idx,
		       struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
		return -1;
	req_push_undo(req, mv_undo_ipam, NULL, NULL);
	if (!ipam || ipam->n_ips == 0)
		return err_set(err, CNI_ERR_INTERNAL, "IPAM plugin returned missing IP config");
	for (size_t i = 0; i < ipam->n_ips; i++)
		result_add_ip(fresh, &ipam->ips[i].address, &ipam->ips[i].gateway, idx);
	for (size_t i = 0; i < ipam->n_routes; i++) {
		xgrow(&fresh->routes, &fresh->cap_routes, fresh->n_routes, sizeof(*fresh->routes));
		fresh->routes[fresh->n_routes++] = ipam->routes[i];
	}
	return 0;
}

static int mv_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct mv_conf *c = req->priv;
	struct cni_link m, l;
	if (mv_open(req, c, NULL, err) < 0 || mv_master(c, &m, err) < 0)
		return -1;
	if (c->mtu > m.mtu)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "mtu: invalid MTU %u, must be [0, master MTU(%u)] of %s", c->mtu,
			       m.mtu, m.name);

	struct cni_link_opts o = {
		.mtu = c->mtu,
		.mac = c->has_mac ? c->mac : NULL,
		.ns = c->in_container ? NULL : req->ns,
	};
	struct cni_nl *mnl = c->in_container ? c->cnl : c->hnl;
	if (link_add_macvlan(mnl, req->ifname, m.ifindex, (unsigned)c->mode, &o, err) < 0)
		return -1;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "macvlan %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	c->ifindex = l.ifindex;
	req_push_undo(req, mv_undo_link, NULL, NULL);

	_cleanup_(result_freep) struct cni_result *fresh = result_new(req->version);
	int idx = result_add_iface(fresh, req->ifname, l.mac_str, req->netns_path);
	if (c->l3) {
		if (mv_ipam_add(req, fresh, idx, err) < 0)
			return -1;
		/* Best effort, as in the reference: announce the new MAC. */
		char key[96];
		struct cni_err e = {0};
		snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", req->ifname);
		sysctl_set_in(req->ns, key, "1", &e);
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/ndisc_notify", req->ifname);
		sysctl_set_in(req->ns, key, "1", &e);
		if (iface_configure(c->cnl, req->ns, c->ifindex, fresh, idx, 0, err) < 0)
			return -1;
	} else if (link_set_up(c->cnl, c->ifindex, err) < 0) {
		return -1;
	}
	dns_copy(&fresh->dns, &c->dns);
	/* An interface plugin's result starts afresh even when chained. */
	struct cni_result tmp = *res;
	*res = *fresh;
	*fresh = tmp;
	return 0;
}

static int mv_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct mv_conf *c = req->priv;
	bool gone = false;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_DEL, &r, err) < 0)
			return -1;
	}
	if (mv_open(req, c, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(c->cnl, req->ifname, NULL, NULL, err);
}

static const char *mv_mode_name(unsigned mode)
{
	switch (mode) {
	case LINK_MACVLAN_PRIVATE:
		return "private";
	case LINK_MACVLAN_VEPA:
		return "vepa";
	case LINK_MACVLAN_BRIDGE:
		return "bridge";
	case LINK_MACVLAN_PASSTHRU:
		return "passthru";
	case LINK_MACVLAN_SOURCE:
		return "source";
	}
	return "unknown";
}

static int mv_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct mv_conf *c = req->priv;
	struct cni_link m, l;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_CHECK, &r, err) < 0)
			return -1;
	}
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || mv_open(req, c, NULL, err) < 0 || mv_master(c, &m, err) < 0 ||
	    iface_check_link(c->cnl, &req->prev->ifaces[idx], "macvlan", &l, err) < 0)
		return -1;
	if (l.mode != (unsigned)c->mode)
		return err_set(err, CNI_ERR_INTERNAL,
			       "macvlan %s has mode %s, the config says %s", l.name,
			       mv_mode_name(l.mode), c->mode_name);
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

static int mv_ipam_only(struct cni_req *req, enum cni_cmd cmd, struct cni_err *err)
{
	struct mv_conf *c = req->priv;
	if (!c->l3)
		return 0;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, cmd, &r, err);
}

static int mv_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return mv_ipam_only(req, CNI_CMD_STATUS, err);
}

static int mv_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return mv_ipam_only(req, CNI_CMD_GC, err);
}

const struct cni_applet macvlan_applet = {
	.name = "macvlan",
	.summary = "give the container a macvlan of a host interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"macvlan\",\n"
		 "  \"master\": IFNAME, \"mode\": \"bridge\"|\"private\"|\"vepa\"|\"passthru\",\n"
		 "  \"mtu\": N, \"mac\": MAC, \"linkInContainer\": BOOL, \"ipam\": {...}}\n"
		 "master defaults to the interface of the default route. See cni-macvlan(8).\n",
	.parse = mv_parse,
	.free = mv_free,
	.add = mv_add,
	.del = mv_del,
	.check = mv_check,
	.status = mv_status,
	.gc = mv_gc,
};
