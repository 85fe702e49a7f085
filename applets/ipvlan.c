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
#include <stddef.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"

struct ipv_conf {
	struct cni_linkplug lp; /* first: the shared handlers take req->priv */
	int mode;
	const char *mode_name;
};
_Static_assert(offsetof(struct ipv_conf, lp) == 0, "lp must come first");

static int ipv_parse(struct cni_req *req, struct cni_err *err)
{
	struct ipv_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	c->mode_name = "l2";
	if (json_get_str(req->conf, "mode", 0, &c->mode_name, err) < 0)
		return -1;
	if (!*c->mode_name)
		c->mode_name = "l2";
	c->mode = link_ipvlan_mode_parse(c->mode_name);
	if (c->mode < 0)
		return json_err(err, json_get(req->conf, "mode"), "unknown ipvlan mode \"%.32s\"",
				c->mode_name);
	if (linkplug_parse(req, &c->lp,
			   LINKPLUG_MASTER | LINKPLUG_MTU | LINKPLUG_IN_CONTAINER | LINKPLUG_DNS |
			       LINKPLUG_PREV_IPS | LINKPLUG_ARP_NOTIFY | LINKPLUG_NDISC_NOTIFY,
			   err) < 0)
		return -1;
	/* ADD needs addresses: from IPAM, or chained from prevResult. */
	if (req->cmd == CNI_CMD_ADD && !c->lp.l3 && !(req->prev && req->prev->n_ips))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam: missing IPAM configuration (required unless chained after "
			       "a plugin that assigned addresses)");
	return 0;
}

static int ipv_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ipv_conf *c = req->priv;
	struct cni_link m, l;
	if (linkplug_open(req, &c->lp, NULL, err) < 0)
		return -1;
	/* The master: configured, else (chained) the one interface of
	 * prevResult, else the default route's interface. */
	const char *name = c->lp.master;
	if (!name && req->prev) {
		if (req->prev->n_ifaces != 1 || strempty(req->prev->ifaces[0].name))
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "master: not set, and prevResult lacks a single named "
				       "interface to use");
		name = req->prev->ifaces[0].name;
	}
	struct cni_link_opts o;
	struct cni_nl *mnl = linkplug_add_master(req, &c->lp, name, &m, &o, err);
	if (!mnl ||
	    link_add_ipvlan(mnl, req->ifname, m.ifindex, (unsigned)c->mode, LINK_IPVLAN_F_BRIDGE,
			    &o, err) < 0 ||
	    linkplug_adopt(req, &c->lp, "ipvlan", &l, err) < 0)
		return -1;
	return linkplug_add_result(req, &c->lp, c->lp.cnl, &l, res, err);
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
	struct cni_link l;
	if (linkplug_check(req, &c->lp, "ipvlan", &l, err) < 0)
		return -1;
	if (l.mode != (unsigned)c->mode)
		return err_set(err, CNI_ERR_INTERNAL, "ipvlan %s has mode %s, the config says %s",
			       l.name, ipv_mode_name(l.mode), c->mode_name);
	return iface_check_ips(c->lp.cnl, req->ifname, req->prev, err);
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
	.free = linkplug_free,
	.add = ipv_add,
	.del = linkplug_del,
	.check = ipv_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
