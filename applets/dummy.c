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
#include <net/if.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"

static int dm_parse(struct cni_req *req, struct cni_err *err)
{
	struct cni_linkplug *lp = xcalloc(1, sizeof(*lp));
	req->priv = lp;
	if (!req->ipam)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam: missing (a dummy interface requires an IPAM configuration)");
	return linkplug_parse(req, lp, LINKPLUG_IPAM_REQ | LINKPLUG_IPAM_DNS, err);
}

static int dm_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_linkplug *lp = req->priv;
	struct cni_link l;
	if (linkplug_open(req, lp, NULL, err) < 0 ||
	    link_add_dummy(lp->cnl, req->ifname, NULL, err) < 0 ||
	    linkplug_adopt(req, lp, "dummy", &l, err) < 0)
		return -1;
	return linkplug_add_result(req, lp, lp->cnl, &l, res, err);
}

static int dm_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_linkplug *lp = req->priv;
	struct cni_link l;
	if (linkplug_check(req, lp, "dummy", &l, err) < 0)
		return -1;
	if (!(l.flags & IFF_UP))
		return err_set(err, CNI_ERR_INTERNAL, "interface %s is down", l.name);
	return iface_check_ips(lp->cnl, req->ifname, req->prev, err);
}

const struct cni_applet dummy_applet = {
	.name = "dummy",
	.summary = "give the container a dummy interface with IPAM addresses",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"dummy\",\n"
		 "  \"ipam\": {...}}\n"
		 "See cni-dummy(8).\n",
	.parse = dm_parse,
	.free = linkplug_free,
	.add = dm_add,
	.del = linkplug_del,
	.check = dm_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
