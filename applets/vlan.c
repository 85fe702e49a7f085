/* vlan: an 802.1Q sub-interface of a host interface as the container's
 * interface.
 *
 * ADD creates VLAN `vlanId` of `master` directly inside CNI_NETNS under
 * CNI_IFNAME, so it never exists in the host and cannot collide with a
 * host link name (the reference creates it under a random name and
 * renames it), applies the IPAM allocation (addresses, routes) and brings
 * it up. A failed ADD deletes the link and releases the allocation.
 * DEL releases the allocation (also when the namespace is gone), then
 * deletes CNI_IFNAME; a missing namespace or link is success. CHECK runs
 * the IPAM CHECK and compares the live link (kind, VLAN id, MTU when
 * configured, MAC), its addresses and the routes with prevResult. STATUS
 * and GC are delegated to the IPAM plugin.
 *
 * A kernel without 802.1Q support (CONFIG_VLAN_8021Q) fails ADD with
 * "kernel lacks vlan support" before anything is created or allocated.
 *
 * Differences from the reference: `vlanId` is required and must be
 * 1..4094 (the reference takes a missing id as 0 and accepts 0); config
 * errors are code 7 naming the field, all found before any change,
 * including a master that does not exist or is smaller than `mtu`; GC is
 * delegated to IPAM. */
#include <errno.h>
#include <limits.h>

#include "applet.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"

struct vl_conf {
	const char *master;
	unsigned vid;
	unsigned mtu;
	bool in_container; /* linkInContainer: master is in CNI_NETNS */
	struct cni_dns dns;

	/* Kept here so that the undo steps, which run after ADD returns,
	 * can still use them. */
	struct cni_nl *hnl, *cnl;
	int ifindex; /* the created link, in CNI_NETNS */
};

static void vl_free(void *priv)
{
	struct vl_conf *c = priv;
	if (!c)
		return;
	dns_clear(&c->dns);
	netlink_close(c->hnl);
	netlink_close(c->cnl);
	free(c);
}

static int vl_parse(struct cni_req *req, struct cni_err *err)
{
	struct vl_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	const char *ipam_type = NULL;
	const struct cni_json *dns = NULL;
	int64_t mtu = 0, vid = 0;
	if (json_get_str(req->conf, "master", JSON_REQ | JSON_NONEMPTY, &c->master, err) < 0 ||
	    json_get_int(req->conf, "vlanId", JSON_REQ, 1, 4094, &vid, err) < 0 ||
	    json_get_int(req->conf, "mtu", 0, 0, INT_MAX, &mtu, err) < 0 ||
	    json_get_bool(req->conf, "linkInContainer", 0, &c->in_container, err) < 0 ||
	    json_get_obj(req->conf, "dns", 0, &dns, err) < 0)
		return -1;
	if (!name_is_safe(c->master, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "master"), "not a valid interface name");
	/* The reference hands every verb to IPAM: without one it has
	 * nothing to allocate, release or check. */
	if (!req->ipam)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "ipam: missing (required)");
	if (json_get_str(req->ipam, "type", JSON_REQ | JSON_NONEMPTY, &ipam_type, err) < 0 ||
	    invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	c->vid = (unsigned)vid;
	c->mtu = (unsigned)mtu;
	return dns ? dns_parse(dns, &c->dns, err) : 0;
}

static int vl_open(struct cni_req *req, struct vl_conf *c, bool *gone, struct cni_err *err)
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

static int vl_master(struct vl_conf *c, struct cni_link *m, struct cni_err *err)
{
	int r = link_get_by_name(c->in_container ? c->cnl : c->hnl, c->master, m, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "master: link \"%s\" not found%s",
			       c->master, c->in_container ? " in the container namespace" : "");
	return r < 0 ? -1 : 0;
}

static void vl_undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

static void vl_undo_link(struct cni_req *req, void *arg)
{
	struct vl_conf *c = req->priv;
	struct cni_err e = {0};
	link_del(c->cnl, c->ifindex, &e);
}

static int vl_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vl_conf *c = req->priv;
	struct cni_link m, l;
	if (vl_open(req, c, NULL, err) < 0 || vl_master(c, &m, err) < 0)
		return -1;
	if (c->mtu > m.mtu)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "mtu: invalid MTU %u, must be [0, master MTU(%u)] of %s", c->mtu,
			       m.mtu, m.name);
	struct cni_link_opts o = {
		.mtu = c->mtu,
		.ns = c->in_container ? NULL : req->ns,
	};
	if (link_add_vlan(c->in_container ? c->cnl : c->hnl, req->ifname, m.ifindex, c->vid, &o,
			  err) < 0)
		return -1;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "vlan %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	c->ifindex = l.ifindex;
	req_push_undo(req, vl_undo_link, NULL, NULL);

	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
		return err_append(err, "failed to execute IPAM delegate");
	req_push_undo(req, vl_undo_ipam, NULL, NULL);
	if (!ipam || ipam->n_ips == 0)
		return err_set(err, CNI_ERR_INTERNAL, "IPAM plugin returned missing IP config");
	/* The IPAM result becomes ours: its addresses all on the vlan, and
	 * the config's DNS in place of IPAM's, as the reference. */
	free(ipam->cni_version);
	ipam->cni_version = xstrdup(req->version);
	int idx = result_add_iface(ipam, req->ifname, l.mac_str, req->netns_path);
	for (size_t i = 0; i < ipam->n_ips; i++)
		ipam->ips[i].iface = idx;
	if (iface_configure(c->cnl, req->ns, c->ifindex, ipam, idx, 0, err) < 0)
		return -1;
	dns_copy(&ipam->dns, &c->dns);
	struct cni_result tmp = *res;
	*res = *ipam;
	*ipam = tmp;
	return 0;
}

static int vl_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vl_conf *c = req->priv;
	bool gone = false;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	if (ipam_exec(req, CNI_CMD_DEL, &r, err) < 0 || vl_open(req, c, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(c->cnl, req->ifname, NULL, NULL, err);
}

static int vl_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vl_conf *c = req->priv;
	struct cni_link m, l;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	if (ipam_exec(req, CNI_CMD_CHECK, &r, err) < 0)
		return -1;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || vl_open(req, c, NULL, err) < 0 || vl_master(c, &m, err) < 0 ||
	    iface_check_link(c->cnl, &req->prev->ifaces[idx], "vlan", &l, err) < 0)
		return -1;
	if (l.vlan_id != c->vid)
		return err_set(err, CNI_ERR_INTERNAL, "vlan %s has VLAN id %u, the config says %u",
			       l.name, l.vlan_id, c->vid);
	if (c->mtu && l.mtu != c->mtu)
		return err_set(err, CNI_ERR_INTERNAL, "vlan %s has MTU %u, the config says %u",
			       l.name, l.mtu, c->mtu);
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

static int vl_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, CNI_CMD_STATUS, &r, err);
}

static int vl_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, CNI_CMD_GC, &r, err);
}

const struct cni_applet vlan_applet = {
	.name = "vlan",
	.summary = "give the container a VLAN sub-interface of a host interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"vlan\",\n"
		 "  \"master\": IFNAME, \"vlanId\": 1..4094, \"mtu\": N,\n"
		 "  \"linkInContainer\": BOOL, \"ipam\": {...}, \"dns\": {...}}\n"
		 "See cni-vlan(8).\n",
	.parse = vl_parse,
	.free = vl_free,
	.add = vl_add,
	.del = vl_del,
	.check = vl_check,
	.status = vl_status,
	.gc = vl_gc,
};
