/* The shared part of the simple link applets: config, ADD tail, DEL,
 * CHECK, IPAM delegation. */
#include "linkplug.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/socket.h>

#include "iface.h"
#include "invoke.h"
#include "plugin.h"
#include "route.h"
#include "sysctl.h"

/* The MAC, by the reference's priority: runtimeConfig.mac (capability
 * "mac"), else CNI_ARGS MAC=, else the config's "mac". */
static int parse_mac(struct cni_req *req, struct cni_linkplug *lp, struct cni_err *err)
{
	static const char *const known[] = {"MAC", NULL};
	const char *mac = NULL, *field = "mac", *rt = NULL;
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
	if (json_get_str(req->rt, "mac", 0, &rt, err) < 0)
		return -1;
	if (!strempty(rt)) {
		mac = rt;
		field = "runtimeConfig.mac";
	}
	if (strempty(mac))
		return 0;
	if (link_parse_mac(mac, lp->mac) < 0)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: invalid MAC address \"%.40s\"",
			       field, mac);
	lp->has_mac = true;
	return 0;
}

int linkplug_parse(struct cni_req *req, struct cni_linkplug *lp, unsigned flags,
		   struct cni_err *err)
{
	const char *ipam_type = NULL;
	const struct cni_json *dns = NULL;
	int64_t mtu = 0;
	int master = (flags & LINKPLUG_MASTER_REQ) ? JSON_REQ | JSON_NONEMPTY : 0;
	lp->flags = flags;
	if (((flags & (LINKPLUG_MASTER | LINKPLUG_MASTER_REQ)) &&
	     json_get_str(req->conf, "master", master, &lp->master, err) < 0) ||
	    ((flags & LINKPLUG_MTU) && json_get_int(req->conf, "mtu", 0, 0, INT_MAX, &mtu, err) < 0) ||
	    ((flags & LINKPLUG_IN_CONTAINER) &&
	     json_get_bool(req->conf, "linkInContainer", 0, &lp->in_container, err) < 0) ||
	    ((flags & LINKPLUG_DNS) && json_get_obj(req->conf, "dns", 0, &dns, err) < 0))
		return -1;
	lp->mtu = (unsigned)mtu;
	if (strempty(lp->master))
		lp->master = NULL;
	else if (!name_is_safe(lp->master, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "master"), "not a valid interface name");
	/* A plugin that needs IPAM (vlan, dummy) has nothing to allocate,
	 * release or check without it, on any verb. */
	int ipam = 0;
	if (flags & LINKPLUG_IPAM_REQ) {
		if (!req->ipam)
			return err_set(err, CNI_ERR_INVALID_CONFIG, "ipam: missing (required)");
		ipam = JSON_REQ | JSON_NONEMPTY;
	}
	if (json_get_str(req->ipam, "type", ipam, &ipam_type, err) < 0)
		return -1;
	lp->l3 = !strempty(ipam_type);
	if (lp->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	if (dns && dns_parse(dns, &lp->dns, err) < 0)
		return -1;
	bool need_mac = req->cmd == CNI_CMD_ADD || req->cmd == CNI_CMD_CHECK;
	return (flags & LINKPLUG_MAC) && need_mac ? parse_mac(req, lp, err) : 0;
}

void linkplug_clear(struct cni_linkplug *lp)
{
	dns_clear(&lp->dns);
	netlink_close(lp->hnl);
	netlink_close(lp->cnl);
	lp->hnl = lp->cnl = NULL;
}

void linkplug_free(void *priv)
{
	if (!priv)
		return;
	linkplug_clear(priv);
	free(priv);
}

int linkplug_open(struct cni_req *req, struct cni_linkplug *lp, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return gone && *gone ? 0 : -1;
	if (!lp->cnl && !(lp->cnl = netlink_open(ns, err)))
		return -1;
	return 0;
}

static int default_link(struct cni_nl *nl, struct cni_link *out, struct cni_err *err)
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

/* The master, looked up where it lives (see linkplug_add_master). */
static int find_master(struct cni_req *req, struct cni_linkplug *lp, const char *name,
		       struct cni_link *m, struct cni_err *err)
{
	if (linkplug_open(req, lp, NULL, err) < 0)
		return -1;
	if (!lp->in_container && !lp->hnl && !(lp->hnl = netlink_open(NULL, err)))
		return -1;
	struct cni_nl *nl = lp->in_container ? lp->cnl : lp->hnl;
	if (!name)
		return default_link(nl, m, err);
	int r = link_get_by_name(nl, name, m, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "master: link \"%s\" not found%s", name,
			       lp->in_container ? " in the container namespace" : "");
	return r < 0 ? -1 : 0;
}

struct cni_nl *linkplug_add_master(struct cni_req *req, struct cni_linkplug *lp, const char *name,
				   struct cni_link *m, struct cni_link_opts *o, struct cni_err *err)
{
	if (find_master(req, lp, name, m, err) < 0)
		return NULL;
	if ((lp->flags & LINKPLUG_MTU_MAX) && lp->mtu > m->mtu) {
		err_set(err, CNI_ERR_INVALID_CONFIG,
			"mtu: invalid MTU %u, must be [0, master MTU(%u)] of %s", lp->mtu, m->mtu,
			m->name);
		return NULL;
	}
	*o = (struct cni_link_opts){
		.mtu = lp->mtu,
		.mac = lp->has_mac ? lp->mac : NULL,
		.ns = lp->in_container ? NULL : req->ns,
	};
	return lp->in_container ? lp->cnl : lp->hnl;
}

static void undo_link(struct cni_req *req, void *arg)
{
	struct cni_linkplug *lp = arg;
	struct cni_err e = {0};
	link_del(lp->cnl, lp->ifindex, &e);
}

int linkplug_adopt(struct cni_req *req, struct cni_linkplug *lp, const char *kind,
		   struct cni_link *l, struct cni_err *err)
{
	int r = link_get_by_name(lp->cnl, req->ifname, l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "%s %s vanished from %s", kind,
					      req->ifname, req->netns_path)
				    : -1;
	lp->ifindex = l->ifindex;
	req_push_undo(req, undo_link, lp, NULL);
	return 0;
}

static void undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

/* Best effort, as in the reference: announce the new link's MAC. */
static void notify(struct cni_req *req, unsigned flags)
{
	char key[96];
	struct cni_err e = {0};
	if (flags & LINKPLUG_ARP_NOTIFY) {
		snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", req->ifname);
		sysctl_set_in(req->ns, key, "1", &e);
	}
	if (flags & LINKPLUG_NDISC_NOTIFY) {
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/ndisc_notify", req->ifname);
		sysctl_set_in(req->ns, key, "1", &e);
	}
}

int linkplug_add_result(struct cni_req *req, struct cni_linkplug *lp, struct cni_nl *nl,
			const struct cni_link *l, struct cni_result *res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	const struct cni_result *src = NULL;
	if (lp->l3) {
		if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
			return lp->flags & LINKPLUG_IPAM_CONTEXT
				   ? err_append(err, "failed to execute IPAM delegate")
				   : -1;
		req_push_undo(req, undo_ipam, NULL, NULL);
		if (!ipam || ipam->n_ips == 0)
			return err_set(err, CNI_ERR_INTERNAL,
				       "IPAM plugin returned missing IP config");
		src = ipam;
	} else if (lp->flags & LINKPLUG_PREV_IPS) {
		src = req->prev;
	}

	/* An interface plugin's result starts afresh even when chained. */
	_cleanup_(result_freep) struct cni_result *r = result_new(req->version);
	int idx = result_add_iface(r, req->ifname, l ? l->mac_str : NULL, req->netns_path);
	if (src) {
		for (size_t i = 0; i < src->n_ips; i++)
			result_add_ip(r, &src->ips[i].address, &src->ips[i].gateway, idx);
		for (size_t i = 0; i < src->n_routes; i++) {
			xgrow(&r->routes, &r->cap_routes, r->n_routes, sizeof(*r->routes));
			r->routes[r->n_routes++] = src->routes[i];
		}
		if (l) {
			notify(req, lp->flags);
			if (iface_configure(nl, req->ns, l->ifindex, r, idx, 0, err) < 0)
				return -1;
		}
	}
	dns_copy(&r->dns, ipam && (lp->flags & LINKPLUG_IPAM_DNS) ? &ipam->dns : &lp->dns);
	iface_result_set(res, r, req->version);
	return 0;
}

int linkplug_ipam(struct cni_req *req, const struct cni_linkplug *lp, enum cni_cmd cmd,
		  struct cni_err *err)
{
	if (!lp->l3)
		return 0;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, cmd, &r, err);
}

int linkplug_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_linkplug *lp = req->priv;
	bool gone = false;
	if (linkplug_ipam(req, lp, CNI_CMD_DEL, err) < 0 || linkplug_open(req, lp, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(lp->cnl, req->ifname, NULL, NULL, err);
}

int linkplug_check(struct cni_req *req, struct cni_linkplug *lp, const char *kind,
		   struct cni_link *l, struct cni_err *err)
{
	struct cni_link m;
	if (linkplug_ipam(req, lp, CNI_CMD_CHECK, err) < 0)
		return -1;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || linkplug_open(req, lp, NULL, err) < 0)
		return -1;
	bool master = lp->master || (lp->flags & LINKPLUG_CHECK_DEFAULT_MASTER);
	if (master && find_master(req, lp, lp->master, &m, err) < 0)
		return -1;
	return iface_check_link(lp->cnl, &req->prev->ifaces[idx], kind, l, err);
}

int linkplug_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return linkplug_ipam(req, req->priv, CNI_CMD_STATUS, err);
}

int linkplug_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return linkplug_ipam(req, req->priv, CNI_CMD_GC, err);
}
