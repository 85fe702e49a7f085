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
#include <limits.h>
#include <stdio.h>

#include "applet.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "sysctl.h"

struct tap_conf {
	unsigned mtu;
	bool has_mac;
	uint8_t mac[6];
	bool multi_queue;
	long owner, group; /* -1: unset */
	const char *bridge;
	bool l3; /* ipam.type given */
	struct cni_dns dns;

	/* Kept here so that the undo steps, which run after ADD returns,
	 * can still use it. */
	struct cni_nl *cnl;
	int ifindex; /* the created tap, in CNI_NETNS */
};

static void tap_free(void *priv)
{
	struct tap_conf *c = priv;
	if (!c)
		return;
	dns_clear(&c->dns);
	netlink_close(c->cnl);
	free(c);
}

/* The MAC, by the reference's priority: runtimeConfig.mac (capability
 * "mac"), else CNI_ARGS MAC=, else the config's "mac". */
static int tap_parse_mac(struct cni_req *req, struct tap_conf *c, struct cni_err *err)
{
	static const char *const known[] = {"MAC", NULL};
	const char *mac = NULL, *field = "mac", *rt = NULL;
	if (json_get_str(req->conf, "mac", 0, &mac, err) < 0 ||
	    json_get_str(req->rt, "mac", 0, &rt, err) < 0)
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

static int tap_parse(struct cni_req *req, struct cni_err *err)
{
	struct tap_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	const char *ipam_type = NULL, *selinux = NULL;
	const struct cni_json *dns = NULL;
	int64_t mtu = 0, owner = -1, group = -1;
	/* encoding/json matches keys case-insensitively: the reference's
	 * README says "selinuxcontext", its struct "selinuxContext". */
	if (json_get_int(req->conf, "mtu", 0, 0, INT_MAX, &mtu, err) < 0 ||
	    json_get_bool(req->conf, "multiQueue", 0, &c->multi_queue, err) < 0 ||
	    json_get_int(req->conf, "owner", 0, 0, UINT32_MAX, &owner, err) < 0 ||
	    json_get_int(req->conf, "group", 0, 0, UINT32_MAX, &group, err) < 0 ||
	    json_get_str(req->conf, "selinuxContext", 0, &selinux, err) < 0 ||
	    json_get_str(req->conf, "selinuxcontext", 0, &selinux, err) < 0 ||
	    json_get_str(req->conf, "bridge", 0, &c->bridge, err) < 0 ||
	    json_get_str(req->ipam, "type", 0, &ipam_type, err) < 0 ||
	    json_get_obj(req->conf, "dns", 0, &dns, err) < 0)
		return -1;
	if (strempty(c->bridge))
		c->bridge = NULL;
	else if (!name_is_safe(c->bridge, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "bridge"), "not a valid interface name");
	if (!strempty(selinux) && req->cmd == CNI_CMD_ADD)
		fprintf(stderr, "tap: selinuxContext \"%.64s\" ignored: the tap is created "
				"without an SELinux label\n", selinux);
	c->mtu = (unsigned)mtu;
	c->owner = (long)owner;
	c->group = (long)group;
	c->l3 = !strempty(ipam_type);
	if (c->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	if (dns && dns_parse(dns, &c->dns, err) < 0)
		return -1;
	/* Only ADD uses the MAC: DEL must not fail on it. */
	bool need_mac = req->cmd == CNI_CMD_ADD || req->cmd == CNI_CMD_CHECK;
	return need_mac ? tap_parse_mac(req, c, err) : 0;
}

static int tap_open(struct cni_req *req, struct tap_conf *c, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return gone && *gone ? 0 : -1;
	if (!c->cnl && !(c->cnl = netlink_open(ns, err)))
		return -1;
	return 0;
}

static void tap_undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err e = {0};
	_cleanup_(result_freep) struct cni_result *r = NULL;
	ipam_exec(req, CNI_CMD_DEL, &r, &e);
}

static void tap_undo_link(struct cni_req *req, void *arg)
{
	struct tap_conf *c = req->priv;
	struct cni_err e = {0};
	link_del(c->cnl, c->ifindex, &e);
}

static int tap_ipam_add(struct cni_req *req, struct cni_result *fresh, int idx,
			struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *ipam = NULL;
	if (ipam_exec(req, CNI_CMD_ADD, &ipam, err) < 0)
		return -1;
	req_push_undo(req, tap_undo_ipam, NULL, NULL);
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

static int tap_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	struct cni_link br = {0}, l;
	if (tap_open(req, c, NULL, err) < 0)
		return -1;
	if (c->bridge) {
		int r = link_get_by_name(c->cnl, c->bridge, &br, err);
		if (r == -ENODEV)
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "bridge: link \"%s\" not found in the container namespace",
				       c->bridge);
		if (r < 0)
			return -1;
	}
	unsigned flags = c->multi_queue ? LINK_TAP_MULTI_QUEUE : 0;
	if (link_add_tap(req->ns, req->ifname, flags, c->owner, c->group, err) < 0)
		return -1;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "tap %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	c->ifindex = l.ifindex;
	req_push_undo(req, tap_undo_link, NULL, NULL);
	if ((c->mtu && link_set_mtu(c->cnl, c->ifindex, c->mtu, err) < 0) ||
	    (c->has_mac && link_set_mac(c->cnl, c->ifindex, c->mac, err) < 0) ||
	    (c->bridge && link_set_master(c->cnl, c->ifindex, br.ifindex, err) < 0) ||
	    link_set_up(c->cnl, c->ifindex, err) < 0 ||
	    link_get_by_index(c->cnl, c->ifindex, &l, err) < 0)
		return -1;

	_cleanup_(result_freep) struct cni_result *fresh = result_new(req->version);
	int idx = result_add_iface(fresh, req->ifname, l.mac_str, req->netns_path);
	if (c->l3) {
		if (tap_ipam_add(req, fresh, idx, err) < 0)
			return -1;
		char key[96];
		struct cni_err e = {0};
		snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", req->ifname);
		sysctl_set_in(req->ns, key, "1", &e);
		if (iface_configure(c->cnl, req->ns, c->ifindex, fresh, idx, 0, err) < 0)
			return -1;
	}
	dns_copy(&fresh->dns, &c->dns);
	/* An interface plugin's result starts afresh even when chained. */
	struct cni_result tmp = *res;
	*res = *fresh;
	*fresh = tmp;
	return 0;
}

static int tap_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	bool gone = false;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_DEL, &r, err) < 0)
			return -1;
	}
	if (tap_open(req, c, &gone, err) < 0)
		return -1;
	return gone ? 0 : iface_del(c->cnl, req->ifname, NULL, NULL, err);
}

static int tap_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	struct cni_link l;
	if (c->l3) {
		_cleanup_(result_freep) struct cni_result *r = NULL;
		if (ipam_exec(req, CNI_CMD_CHECK, &r, err) < 0)
			return -1;
	}
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || tap_open(req, c, NULL, err) < 0 ||
	    iface_check_link(c->cnl, &req->prev->ifaces[idx], "tun", &l, err) < 0)
		return -1;
	if (!l.tun_tap)
		return err_set(err, CNI_ERR_INTERNAL, "interface %s is a tun, not a tap", l.name);
	if (c->owner >= 0 && l.tun_owner != c->owner)
		return err_set(err, CNI_ERR_INTERNAL, "tap %s is owned by %ld, the config says %ld",
			       l.name, l.tun_owner, c->owner);
	if (c->group >= 0 && l.tun_group != c->group)
		return err_set(err, CNI_ERR_INTERNAL, "tap %s has group %ld, the config says %ld",
			       l.name, l.tun_group, c->group);
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

static int tap_ipam_only(struct cni_req *req, enum cni_cmd cmd, struct cni_err *err)
{
	struct tap_conf *c = req->priv;
	if (!c->l3)
		return 0;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	return ipam_exec(req, cmd, &r, err);
}

static int tap_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return tap_ipam_only(req, CNI_CMD_STATUS, err);
}

static int tap_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return tap_ipam_only(req, CNI_CMD_GC, err);
}

const struct cni_applet tap_applet = {
	.name = "tap",
	.summary = "give the container a persistent tap device",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"tap\",\n"
		 "  \"mtu\": N, \"mac\": MAC, \"multiQueue\": BOOL, \"owner\": UID,\n"
		 "  \"group\": GID, \"bridge\": IFNAME, \"ipam\": {...}}\n"
		 "See cni-tap(8).\n",
	.parse = tap_parse,
	.free = tap_free,
	.add = tap_add,
	.del = tap_del,
	.check = tap_check,
	.status = tap_status,
	.gc = tap_gc,
};
