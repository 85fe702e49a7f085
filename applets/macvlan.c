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
 * list no config field provides; a `bcqueuelen` the kernel cannot apply
 * (before Linux 5.11) fails ADD with code 999 saying so, where the
 * reference's netlink library lets the kernel drop it silently; GC is
 * delegated to IPAM (the reference has no GC). */
#include <stddef.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"

struct mv_conf {
	struct cni_linkplug lp; /* first: the shared handlers take req->priv */
	int mode;
	const char *mode_name;
	unsigned bcq; /* bcqueuelen; 0: kernel default */
};
_Static_assert(offsetof(struct mv_conf, lp) == 0, "lp must come first");

static int mv_parse(struct cni_req *req, struct cni_err *err)
{
	struct mv_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	uint64_t bcq = 0;
	c->mode_name = "bridge";
	if (json_get_str(req->conf, "mode", 0, &c->mode_name, err) < 0 ||
	    json_get_uint(req->conf, "bcqueuelen", 0, UINT32_MAX, &bcq, err) < 0)
		return -1;
	if (!*c->mode_name)
		c->mode_name = "bridge";
	c->mode = link_macvlan_mode_parse(c->mode_name);
	if (c->mode < 0 || c->mode == LINK_MACVLAN_SOURCE)
		return json_err(err, json_get(req->conf, "mode"), "unknown macvlan mode \"%.32s\"",
				c->mode_name);
	c->bcq = (unsigned)bcq;
	return linkplug_parse(req, &c->lp,
			      LINKPLUG_MASTER | LINKPLUG_MTU | LINKPLUG_MTU_MAX |
				  LINKPLUG_IN_CONTAINER | LINKPLUG_MAC | LINKPLUG_DNS |
				  LINKPLUG_ARP_NOTIFY | LINKPLUG_NDISC_NOTIFY |
				  LINKPLUG_CHECK_DEFAULT_MASTER,
			      err);
}

static int mv_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct mv_conf *c = req->priv;
	struct cni_link m, l;
	struct cni_link_opts o;
	struct cni_nl *mnl = linkplug_add_master(req, &c->lp, c->lp.master, &m, &o, err);
	if (!mnl)
		return -1;
	if (link_add_macvlan(mnl, req->ifname, m.ifindex, (unsigned)c->mode, c->bcq, &o, err) < 0)
		return -1;
	if (linkplug_adopt(req, &c->lp, "macvlan", &l, err) < 0)
		return -1;
	/* Without ipam the link is only brought up. */
	if (!c->lp.l3 && link_set_up(c->lp.cnl, l.ifindex, err) < 0)
		return -1;
	return linkplug_add_result(req, &c->lp, c->lp.cnl, &l, res, err);
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
	struct cni_link l;
	if (linkplug_check(req, &c->lp, "macvlan", &l, err) < 0)
		return -1;
	if (l.mode != (unsigned)c->mode)
		return err_set(err, CNI_ERR_INTERNAL,
			       "macvlan %s has mode %s, the config says %s", l.name,
			       mv_mode_name(l.mode), c->mode_name);
	return iface_check_ips(c->lp.cnl, req->ifname, req->prev, err);
}

const struct cni_applet macvlan_applet = {
	.name = "macvlan",
	.summary = "give the container a macvlan of a host interface",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"macvlan\",\n"
		 "  \"master\": IFNAME, \"mode\": \"bridge\"|\"private\"|\"vepa\"|\"passthru\",\n"
		 "  \"mtu\": N, \"mac\": MAC, \"linkInContainer\": BOOL, \"bcqueuelen\": N,\n"
		 "  \"ipam\": {...}}\n"
		 "master defaults to the interface of the default route. See cni-macvlan(8).\n",
	.parse = mv_parse,
	.free = linkplug_free,
	.add = mv_add,
	.del = linkplug_del,
	.check = mv_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
