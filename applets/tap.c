/* tap: a persistent tap device in the container (for a VM or a userspace
 * network stack running there).
 *
 * ADD creates the tap through /dev/net/tun inside CNI_NETNS under
 * CNI_IFNAME (so it never exists in the host), owned by `owner`/`group`
 * when given and multi-queue with `multiQueue`; sets `mtu` and the MAC
 * (runtimeConfig.mac, else CNI_ARGS MAC=, else `mac`); enslaves it to
 * `bridge`, a bridge that must already exist in the container namespace;
 * applies the IPAM allocation when ipam is set (arp_notify on) and brings
 * it up. A failed ADD deletes the tap and releases the allocation.
 * DEL releases the allocation (also when the namespace is gone), then
 * deletes CNI_IFNAME; a missing namespace or link is success. CHECK runs
 * the IPAM CHECK and compares the live link (a tap, its MAC, the owner and
 * group when configured), its addresses and the routes with prevResult.
 * STATUS and GC are delegated to the IPAM plugin.
 *
 * Differences from the reference: `selinuxContext` is accepted and
 * ignored with a note on stderr (the reference labels the `ip` process it
 * runs to create the tap); the tap is created directly, never by running
 * `ip`, and without IFF_VNET_HDR, whatever owner and group say (the
 * reference sets it only when both are given); a missing bridge and a bad
 * MAC are code 7, found before the tap is created; CHECK also compares the
 * link itself; GC is delegated to IPAM. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"

struct tap_conf {
	struct cni_linkplug lp; /* first: the shared handlers take req->priv */
	bool multi_queue;
	long owner, group; /* -1: unset */
	const char *bridge;
};
_Static_assert(offsetof(struct tap_conf, lp) == 0, "lp must come first");

static int tap_parse(struct cni_req *req, struct cni_err *err)
{
	struct tap_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	const char *selinux = NULL;
	int64_t owner = -1, group = -1;
	/* encoding/json matches keys case-insensitively: the reference's
	 * README says "selinuxcontext", its struct "selinuxContext". */
	if (json_get_bool(req->conf, "multiQueue", 0, &c->multi_queue, err) < 0 ||
	    json_get_int(req->conf, "owner", 0, 0, UINT32_MAX, &owner, err) < 0 ||
	    json_get_int(req->conf, "group", 0, 0, UINT32_MAX, &group, err) < 0 ||
	    json_get_str(req->conf, "selinuxContext", 0, &selinux, err) < 0 ||
	    json_get_str(req->conf, "selinuxcontext", 0, &selinux, err) < 0 ||
	    json_get_str(req->conf, "bridge", 0, &c->bridge, err) < 0)
		return -1;
	if (strempty(c->bridge))
		c->bridge = NULL;
	else if (!name_is_safe(c->bridge, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "bridge"), "not a valid interface name");
	if (!strempty(selinux) && req->cmd == CNI_CMD_ADD)
		fprintf(stderr, "tap: selinuxContext \"%.64s\" ignored: the tap is created "
				"without an SELinux label\n", selinux);
	c->owner = (long)owner;
	c->group = (long)group;
	return linkplug_parse(req, &c->lp,
			      LINKPLUG_MTU | LINKPLUG_MAC | LINKPLUG_DNS | LINKPLUG_ARP_NOTIFY, err);
}

static int tap_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	struct cni_linkplug *lp = &c->lp;
	struct cni_link br = {0}, l;
	if (linkplug_open(req, lp, NULL, err) < 0)
		return -1;
	if (c->bridge) {
		int r = link_get_by_name(lp->cnl, c->bridge, &br, err);
		if (r == -ENODEV)
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "bridge: link \"%s\" not found in the container namespace",
				       c->bridge);
		if (r < 0)
			return -1;
	}
	unsigned flags = c->multi_queue ? LINK_TAP_MULTI_QUEUE : 0;
	if (link_add_tap(req->ns, req->ifname, flags, c->owner, c->group, err) < 0 ||
	    linkplug_adopt(req, lp, "tap", &l, err) < 0)
		return -1;
	if ((lp->mtu && link_set_mtu(lp->cnl, l.ifindex, lp->mtu, err) < 0) ||
	    (lp->has_mac && link_set_mac(lp->cnl, l.ifindex, lp->mac, err) < 0) ||
	    (c->bridge && link_set_master(lp->cnl, l.ifindex, br.ifindex, err) < 0) ||
	    link_set_up(lp->cnl, l.ifindex, err) < 0 ||
	    link_get_by_index(lp->cnl, l.ifindex, &l, err) < 0)
		return -1;
	return linkplug_add_result(req, lp, lp->cnl, &l, res, err);
}

static int tap_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	struct cni_link l;
	if (linkplug_check(req, &c->lp, "tun", &l, err) < 0)
		return -1;
	if (!l.tun_tap)
		return err_set(err, CNI_ERR_INTERNAL, "interface %s is a tun, not a tap", l.name);
	if (c->owner >= 0 && l.tun_owner != c->owner)
		return err_set(err, CNI_ERR_INTERNAL, "tap %s is owned by %ld, the config says %ld",
			       l.name, l.tun_owner, c->owner);
	if (c->group >= 0 && l.tun_group != c->group)
		return err_set(err, CNI_ERR_INTERNAL, "tap %s has group %ld, the config says %ld",
			       l.name, l.tun_group, c->group);
	return iface_check_ips(c->lp.cnl, req->ifname, req->prev, err);
}

const struct cni_applet tap_applet = {
	.name = "tap",
	.summary = "give the container a persistent tap device",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"tap\",\n"
		 "  \"mtu\": N, \"mac\": MAC, \"multiQueue\": BOOL, \"owner\": UID,\n"
		 "  \"group\": GID, \"bridge\": IFNAME, \"ipam\": {...}}\n"
		 "See cni-tap(8).\n",
	.parse = tap_parse,
	.free = linkplug_free,
	.add = tap_add,
	.del = linkplug_del,
	.check = tap_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
