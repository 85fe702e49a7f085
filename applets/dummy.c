/* dummy: a dummy interface in the container, carrying the IPAM addresses
 * (an address that is reachable from inside without any device behind it).
 *
 * ADD creates a dummy link named CNI_IFNAME inside CNI_NETNS, applies the
 * IPAM allocation (addresses, routes) and brings it up. A failed ADD
 * deletes the link and releases the allocation. DEL releases the
 * allocation (also when the namespace is gone), then deletes CNI_IFNAME;
 * a missing namespace or link is success. CHECK runs the IPAM CHECK and
 * compares the live link (kind, MAC, up), its addresses and the routes
 * with prevResult. STATUS and GC are delegated to the IPAM plugin.
 *
 * A kernel without dummy links (CONFIG_DUMMY) fails ADD with "kernel lacks
 * dummy support" before anything is allocated.
 *
 * Differences from the reference: a missing ipam is code 7, for every
 * verb, before any change (the reference says so only on ADD and CHECK);
 * CHECK also verifies prevResult's routes; GC is delegated to IPAM. The
 * result keeps the IPAM plugin's DNS, as the reference does. */
#include <errno.h>
#include <net/if.h>

#include "applet.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"

struct dm_conf {
	/* Kept here so that the undo step, which runs after ADD returns,
	 * can still use it. */
	struct cni_nl *cnl;
	int ifindex; /* the created link, in CNI_NETNS */
};

static void dm_free(void *priv)
{
	struct dm_conf *c = priv;
	if (!c)
		return;
	netlink_close(c->cnl);
	free(c);
}

static int dm_parse(struct cni_req *req, struct cni_err *err)
{
	req->priv = xcalloc(1, sizeof(struct dm_conf));
	const char *type = NULL;
	if (!req->ipam)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam: missing (a dummy interface requires an IPAM configuration)");
	if (json_get_str(req->ipam, "type", JSON_REQ | JSON_NONEMPTY, &type, err) < 0 ||
	    invoke_check_type(type, "ipam.type", err) < 0)
		return -1;
	return 0;
}

static int dm_open(struct cni_req *req, struct dm_conf *c, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return gone && *gone ? 0 : -1;
	if (!c->cnl && !(c->cnl = netlink_open(ns, err)))
		return -1;
	return 0;
}

static void dm_undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

static void dm_undo_link(struct cni_req *req, void *arg)
{
	struct dm_conf *c = req->priv;
	struct cni_err e = {0};
	link_del(c->cnl, c->ifindex, &e);
}

static int dm_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct dm_conf *c = req->priv;
	struct cni_link l;
	if (dm_open(req, c, NULL, err) < 0 || link_add_dummy(c->cnl, req->ifname, NULL, err) < 0)
		return -1;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "dummy %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	c->ifindex = l.ifindex;
	req_push_undo(req, dm_undo_link, NULL, NULL);

	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
		return -1;
	req_push_undo(req, dm_undo_ipam, NULL, NULL);
	if (!ipam || ipam->n_ips == 0)
		return err_set(err, CNI_ERR_INTERNAL, "IPAM plugin returned missing IP config");
	/* The IPAM result, DNS included, becomes ours with the dummy as the
	 * interface of every address. */
	free(ipam->cni_version);
	ipam->cni_version = xstrdup(req->version);
	int idx = result_add_iface(ipam, req->ifname, l.mac_str, req->netns_path);
	for (size_t i = 0; i < ipam->n_ips; i++)
		ipam->ips[i].iface = idx;
	if (iface_configure(c->cnl, req->ns, c->ifindex, ipam, idx, 0, err) < 0)
		return -1;
	struct cni_result tmp = *res;
	*res = *ipam;
	*ipam = tmp;
	return 0;
}

static int dm_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct dm_conf *c = req->priv;
	bool gone = false;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	if (ipam_exec(req, CNI_CMD_DEL, &r, err) < 0 || dm_open(req, c, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(c->cnl, req->ifname, NULL, NULL, err);
}

static int dm_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct dm_conf *c = req->priv;
	struct cni_link l;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	if (ipam_exec(req, CNI_CMD_CHECK, &r, err) < 0)
		return -1;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || dm_open(req, c, NULL, err) < 0 ||
	    iface_check_link(c->cnl, &req->prev->ifaces[idx], "dummy", &l, err) < 0)
		return -1;
	if (!(l.flags & IFF_UP))
		return err_set(err, CNI_ERR_INTERNAL, "interface %s is down", l.name);
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

static int dm_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, CNI_CMD_STATUS, &r, err);
}

static int dm_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, CNI_CMD_GC, &r, err);
}

const struct cni_applet dummy_applet = {
	.name = "dummy",
	.summary = "give the container a dummy interface with IPAM addresses",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"dummy\",\n"
		 "  \"ipam\": {...}}\n"
		 "See cni-dummy(8).\n",
	.parse = dm_parse,
	.free = dm_free,
	.add = dm_add,
	.del = dm_del,
	.check = dm_check,
	.status = dm_status,
	.gc = dm_gc,
};
