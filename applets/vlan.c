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
 * `vlanId` is 0..4094 as in the reference (0: priority-tagged frames,
 * 802.1p, a tag without a VLAN id); 4095 is reserved.
 *
 * Differences from the reference: `vlanId` is required (the reference
 * takes a missing id as 0); config errors are code 7 naming the field,
 * all found before any change, including a master that does not exist or
 * is smaller than `mtu`; GC is delegated to IPAM. */
#include <stddef.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"

struct vl_conf {
	struct cni_linkplug lp; /* first: the shared handlers take req->priv */
	unsigned vid;
};
_Static_assert(offsetof(struct vl_conf, lp) == 0, "lp must come first");

static int vl_parse(struct cni_req *req, struct cni_err *err)
{
	struct vl_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	int64_t vid = 0;
	if (json_get_int(req->conf, "vlanId", JSON_REQ, 0, 4094, &vid, err) < 0)
		return -1;
	c->vid = (unsigned)vid;
	return linkplug_parse(req, &c->lp,
			      LINKPLUG_MASTER_REQ | LINKPLUG_MTU | LINKPLUG_MTU_MAX |
				  LINKPLUG_IN_CONTAINER | LINKPLUG_DNS | LINKPLUG_IPAM_REQ |
				  LINKPLUG_IPAM_CONTEXT,
			      err);
}

static int vl_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vl_conf *c = req->priv;
	struct cni_link m, l;
	struct cni_link_opts o;
	struct cni_nl *mnl = linkplug_add_master(req, &c->lp, c->lp.master, &m, &o, err);
	if (!mnl || link_add_vlan(mnl, req->ifname, m.ifindex, c->vid, &o, err) < 0 ||
	    linkplug_adopt(req, &c->lp, "vlan", &l, err) < 0)
		return -1;
	return linkplug_add_result(req, &c->lp, c->lp.cnl, &l, res, err);
}

static int vl_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vl_conf *c = req->priv;
	struct cni_link l;
	if (linkplug_check(req, &c->lp, "vlan", &l, err) < 0)
		return -1;
	if (l.vlan_id != c->vid)
		return err_set(err, CNI_ERR_INTERNAL, "vlan %s has VLAN id %u, the config says %u",
			       l.name, l.vlan_id, c->vid);
	if (c->lp.mtu && l.mtu != c->lp.mtu)
		return err_set(err, CNI_ERR_INTERNAL, "vlan %s has MTU %u, the config says %u",
			       l.name, l.mtu, c->lp.mtu);
	return iface_check_ips(c->lp.cnl, req->ifname, req->prev, err);
}

const struct cni_applet vlan_applet = {
	.name = "vlan",
	.summary = "give the container a VLAN sub-interface of a host interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"vlan\",\n"
		 "  \"master\": IFNAME, \"vlanId\": 0..4094, \"mtu\": N,\n"
		 "  \"linkInContainer\": BOOL, \"ipam\": {...}, \"dns\": {...}}\n"
		 "See cni-vlan(8).\n",
	.parse = vl_parse,
	.free = linkplug_free,
	.add = vl_add,
	.del = linkplug_del,
	.check = vl_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
