/* ipvlan: an ipvlan of a host interface as the container's interface.
 *
 * ADD creates the ipvlan of `master` directly inside CNI_NETNS under
 * CNI_IFNAME, so it never exists in the host and cannot collide with a
 * host link name (the reference creates it under a random name and
 * renames it). Without `master`, a chained ipvlan takes the single
 * interface of prevResult, otherwise the interface of the default route.
 * The addresses come from the IPAM plugin, or, chained without ipam, from
 * prevResult's ips; they are applied with the routes, arp_notify and
 * ndisc_notify, and the link is brought up. A failed ADD deletes the link
 * and releases the allocation.
 * DEL releases the allocation (when ipam is set; also when the namespace
 * is gone), then deletes CNI_IFNAME; a missing namespace or link is
 * success. CHECK runs the IPAM CHECK and compares the live link (kind,
 * mode, MAC), its addresses and the routes with prevResult. STATUS and GC
 * are delegated to the IPAM plugin.
 *
 * A kernel without ipvlan (CONFIG_IPVLAN) fails ADD with "kernel lacks
 * ipvlan support" before anything is created or allocated.
 *
 * Differences from the reference: a bad mode, a missing master or a
 * prevResult without a single interface are code 7 naming the field, found
 * before any change; CHECK without `master` skips the master look-up (the
 * reference looks up an empty name and fails); GC is delegated to IPAM. */
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

struct ipv_conf {
	const char *master; /* NULL: chained interface or default route's */
	int mode;
	const char *mode_name;
	unsigned mtu;
	bool in_container; /* linkInContainer: master is in CNI_NETNS */
	bool l3;	   /* ipam.type given */
	struct cni_dns dns;

	/* Kept here so that the undo steps, which run after ADD returns,
	 * can still use them. */
	struct cni_nl *hnl, *cnl;
	int ifindex; /* the created link, in CNI_NETNS */
};

static void ipv_free(void *priv)
{
	struct ipv_conf *c = priv;
	if (!c)
		return;
	dns_clear(&c->dns);
	netlink_close(c->hnl);
	netlink_close(c->cnl);
	free(c);
}

static int ipv_parse(struct cni_req *req, struct cni_err *err)
{
	struct ipv_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	const char *ipam_type = NULL;
	const struct cni_json *dns = NULL;
	int64_t mtu = 0;
	c->mode_name = "l2";
	if (json_get_str(req->conf, "master", 0, &c->master, err) < 0 ||
	    json_get_str(req->conf, "mode", 0, &c->mode_name, err) < 0 ||
	    json_get_int(req->conf, "mtu", 0, 0, INT_MAX, &mtu, err) < 0 ||
	    json_get_bool(req->conf, "linkInContainer", 0, &c->in_container, err) < 0 ||
	    json_get_str(req->ipam, "type", 0, &ipam_type, err) < 0 ||
	    json_get_obj(req->conf, "dns", 0, &dns, err) < 0)
		return -1;
	if (strempty(c->master))
		c->master = NULL;
	else if (!name_is_safe(c->master, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "master"), "not a valid interface name");
	if (!*c->mode_name)
		c->mode_name = "l2";
	c->mode = link_ipvlan_mode_parse(c->mode_name);
	if (c->mode < 0)
		return json_err(err, json_get(req->conf, "mode"), "unknown ipvlan mode \"%.32s\"",
				c->mode_name);
	c->mtu = (unsigned)mtu;
	c->l3 = !strempty(ipam_type);
	if (c->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	if (dns && dns_parse(dns, &c->dns, err) < 0)
		return -1;
	/* ADD needs addresses: from IPAM, or chained from prevResult. */
	if (req->cmd == CNI_CMD_ADD && !c->l3 && !(req->prev && req->prev->n_ips))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam: missing IPAM configuration (required unless chained after "
			       "a plugin that assigned addresses)");
	return 0;
}

static int ipv_open(struct cni_req *req, struct ipv_conf *c, bool *gone, struct cni_err *err)
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
static int ipv_default_link(struct cni_nl *nl, struct cni_link *out, struct cni_err *err)
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

/* The master, where it lives: configured, else (ADD, chained) the one
 * interface of prevResult, else the default route's interface. */
static int ipv_master(struct cni_req *req, struct ipv_conf *c, struct cni_link *m,
		      struct cni_err *err)
{
	struct cni_nl *nl = c->in_container ? c->cnl : c->hnl;
	const char *name = c->master;
	if (!name && req->prev && req->cmd == CNI_CMD_ADD) {
		if (req->prev->n_ifaces != 1 || strempty(req->prev->ifaces[0].name))
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "master: not set, and prevResult lacks a single named "
				       "interface to use");
		name = req->prev->ifaces[0].name;
	}
	if (!name)
		return ipv_default_link(nl, m, err);
	int r = link_get_by_name(nl, name, m, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "master: link \"%s\" not found%s", name,
			       c->in_container ? " in the container namespace" : "");
	return r < 0 ? -1 : 0;
}

static void ipv_undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

static void ipv_undo_link(struct cni_req *req, void *arg)
{
	struct ipv_conf *c = req->priv;
	struct cni_err e = {0};
	link_del(c->cnl, c->ifindex, &e);
}

/* The addresses and routes for the link at index idx of fresh: from the
 * IPAM plugin, or, chained without ipam, from prevResult. */
static int ipv_addresses(struct cni_req *req, struct ipv_conf *c, struct cni_result *fresh,
			 int idx, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	const struct cni_result *src = req->prev;
	if (c->l3 || !req->prev || !req->prev->n_ips) {
		if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
			return -1;
		req_push_undo(req, ipv_undo_ipam, NULL, NULL);
		if (!ipam || ipam->n_ips == 0)
			return err_set(err, CNI_ERR_INTERNAL,
				       "IPAM plugin returned missing IP config");
		src = ipam;
	}
	for (size_t i = 0; i < src->n_ips; i++)
		result_add_ip(fresh, &src->ips[i].address, &src->ips[i].gateway, idx);
	for (size_t i = 0; i < src->n_routes; i++) {
		xgrow(&fresh->routes, &fresh->cap_routes, fresh->n_routes, sizeof(*fresh->routes));
		fresh->routes[fresh->n_routes++] = src->routes[i];
	}
	return 0;
}

static int ipv_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ipv_conf *c = req->priv;
	struct cni_link m, l;
	if (ipv_open(req, c, NULL, err) < 0 || ipv_master(req, c, &m, err) < 0)
		return -1;
	struct cni_link_opts o = {
		.mtu = c->mtu,
		.ns = c->in_container ? NULL : req->ns,
	};
	struct cni_nl *mnl = c->in_container ? c->cnl : c->hnl;
	if (link_add_ipvlan(mnl, req->ifname, m.ifindex, (unsigned)c->mode, LINK_IPVLAN_F_BRIDGE,
			    &o, err) < 0)
		return -1;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "ipvlan %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	c->ifindex = l.ifindex;
	req_push_undo(req, ipv_undo_link, NULL, NULL);

	_cleanup_(result_freep) struct cni_result *fresh = result_new(req->version);
	int idx = result_add_iface(fresh, req->ifname, l.mac_str, req->netns_path);
	if (ipv_addresses(req, c, fresh, idx, err) < 0)
		return -1;
	/* Best effort, as in the reference. */
	char key[96];
	struct cni_err e = {0};
	snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", req->ifname);
	sysctl_set_in(req->ns, key, "1", &e);
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/ndisc_notify", req->ifname);
	sysctl_set_in(req->ns, key, "1", &e);
	if (iface_configure(c->cnl, req->ns, c->ifindex, fresh, idx, 0, err) < 0)
		return -1;
	/* The config's DNS replaces whatever IPAM said, as the reference. */
	dns_copy(&fresh->dns, &c->dns);
	struct cni_result tmp = *res;
	*res = *fresh;
	*fresh = tmp;
	return 0;
}

static int ipv_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ipv_conf *c = req->priv;
	bool gone = false;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_DEL, &r, err) < 0)
			return -1;
	}
	if (ipv_open(req, c, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(c->cnl, req->ifname, NULL, NULL, err);
}

static const char *ipv_mode_name(unsigned mode)
{
	switch (mode) {
	case LINK_IPVLAN_L2:
		return "l2";
	case LINK_IPVLAN_L3:
		return "l3";
	case LINK_IPVLAN_L3S:
		return "l3s";
	}
	return "unknown";
}

static int ipv_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ipv_conf *c = req->priv;
	struct cni_link m, l;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_CHECK, &r, err) < 0)
			return -1;
	}
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || ipv_open(req, c, NULL, err) < 0)
		return -1;
	if (c->master && ipv_master(req, c, &m, err) < 0)
		return -1;
	if (iface_check_link(c->cnl, &req->prev->ifaces[idx], "ipvlan", &l, err) < 0)
		return -1;
	if (l.mode != (unsigned)c->mode)
		return err_set(err, CNI_ERR_INTERNAL, "ipvlan %s has mode %s, the config says %s",
			       l.name, ipv_mode_name(l.mode), c->mode_name);
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

static int ipv_ipam_only(struct cni_req *req, enum cni_cmd cmd, struct cni_err *err)
{
	struct ipv_conf *c = req->priv;
	if (!c->l3)
		return 0;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, cmd, &r, err);
}

static int ipv_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return ipv_ipam_only(req, CNI_CMD_STATUS, err);
}

static int ipv_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return ipv_ipam_only(req, CNI_CMD_GC, err);
}

const struct cni_applet ipvlan_applet = {
	.name = "ipvlan",
	.summary = "give the container an ipvlan of a host interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"ipvlan\",\n"
		 "  \"master\": IFNAME, \"mode\": \"l2\"|\"l3\"|\"l3s\", \"mtu\": N,\n"
		 "  \"linkInContainer\": BOOL, \"ipam\": {...}}\n"
		 "master defaults to prevResult's interface or the default route's.\n"
		 "See cni-ipvlan(8).\n",
	.parse = ipv_parse,
	.free = ipv_free,
	.add = ipv_add,
	.del = ipv_del,
	.check = ipv_check,
	.status = ipv_status,
	.gc = ipv_gc,
};
