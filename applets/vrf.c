/* vrf: put CNI_IFNAME into a VRF of the container namespace, creating the
 * VRF when it does not exist yet (a chained plugin).
 *
 * ADD finds or creates the VRF "vrfname" (with "table", or else the
 * lowest table id no other VRF of the namespace uses, from 1 as the
 * reference), sets it up and makes it the interface's master. Enslaving
 * moves the interface's routes out of main and drops its global IPv6
 * addresses unless keep_addr_on_down is set: the addresses are added back
 * (waiting, up to about 2.5 s, for their local route to appear in the
 * VRF's table) and the interface's main-table routes are re-created in the
 * VRF's table. The result is prevResult unchanged.
 *
 * DEL releases the interface and deletes the VRF once no interface is
 * left in it; a missing namespace, VRF or interface is success. CHECK
 * verifies the interface's master is the VRF.
 *
 * On a kernel without CONFIG_NET_VRF, ADD fails (code 999) with "kernel
 * lacks vrf support" and the config option in details, before touching
 * anything.
 *
 * Differences from the reference: vrfname is checked as an interface name
 * at parse time (code 7); DEL succeeds when the interface is already gone
 * (the reference fails) and only releases it if the VRF is its master;
 * all cniVersions are accepted (the reference starts at 0.3.1). */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "addr.h"
#include "applet.h"
#include "iface.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "route.h"

struct vrf_conf {
	const char *name;
	uint64_t table;	   /* 0: pick a free one */
	struct cni_nl *nl; /* container socket, kept for the undo steps */
};

static void vrf_free(void *priv)
{
	struct vrf_conf *c = priv;
	if (!c)
		return;
	netlink_close(c->nl);
	free(c);
}

static void vrf_freep(struct vrf_conf **c)
{
	vrf_free(*c);
}

static int vrf_parse(struct cni_req *req, struct cni_err *err)
{
	_cleanup_(vrf_freep) struct vrf_conf *c = xcalloc(1, sizeof(*c));
	if (json_get_str(req->conf, "vrfname", JSON_REQ | JSON_NONEMPTY, &c->name, err) < 0)
		return -1;
	if (env_check_ifname(c->name, "vrfname", err) < 0) {
		err->code = CNI_ERR_INVALID_CONFIG;
		return -1;
	}
	if (json_get_uint(req->conf, "table", 0, UINT32_MAX, &c->table, err) < 0)
		return -1;
	req->priv = TAKE_PTR(c);
	return 0;
}

/* The VRF named in the config: 0 and *out, -ENODEV when there is none,
 * -1 with err when that name is something else. */
static int vrf_find(struct vrf_conf *c, struct cni_link *out, struct cni_err *err)
{
	int r = link_get_by_name(c->nl, c->name, out, err);
	if (r < 0)
		return r == -ENODEV ? r : -1;
	if (!streq(out->kind, "vrf"))
		return err_set(err, CNI_ERR_INTERNAL, "%s exists and is not a VRF (kind \"%s\")",
			       c->name, out->kind);
	return 0;
}

/* The lowest table id from 1 that no VRF of the namespace uses. */
static int vrf_free_table(struct vrf_conf *c, unsigned *table, struct cni_err *err)
{
	_cleanup_free_ struct cni_link *links = NULL;
	size_t n = 0;
	if (link_list(c->nl, &links, &n, err) < 0)
		return -1;
	for (unsigned t = 1; t != 0; t++) {
		bool used = false;
		for (size_t i = 0; i < n && !used; i++)
			used = streq(links[i].kind, "vrf") && links[i].vrf_table == t;
		if (!used) {
			*table = t;
			return 0;
		}
	}
	return err_set(err, CNI_ERR_INTERNAL, "no free routing table for VRF %s", c->name);
}

enum vrf_undo_what { VRF_U_DEL, VRF_U_NOMASTER };
struct vrf_undo {
	enum vrf_undo_what what;
	int ifindex;
};

static void vrf_undo(struct cni_req *req, void *arg)
{
	struct vrf_conf *c = req->priv;
	struct vrf_undo *u = arg;
	struct cni_err e = {0};
	if (u->what == VRF_U_DEL)
		link_del(c->nl, u->ifindex, &e);
	else
		link_set_master(c->nl, u->ifindex, 0, &e);
	if (err_isset(&e))
		fprintf(stderr, "vrf: undo: %s: %s\n", e.msg, e.details);
}

static void vrf_push(struct cni_req *req, enum vrf_undo_what what, int ifindex)
{
	struct vrf_undo *u = xcalloc(1, sizeof(*u));
	u->what = what;
	u->ifindex = ifindex;
	req_push_undo(req, vrf_undo, u, free);
}

static int vrf_create(struct cni_req *req, struct vrf_conf *c, struct cni_link *vrf,
		      struct cni_err *err)
{
	/* Say what is missing before anything else can fail less clearly. */
	if (link_kind_check(c->nl, "vrf", err) < 0)
		return -1;
	unsigned table = (unsigned)c->table;
	if (!table && vrf_free_table(c, &table, err) < 0)
		return -1;
	if (link_add_vrf(c->nl, c->name, table, NULL, err) < 0)
		return -1;
	int r = link_get_by_name(c->nl, c->name, vrf, err);
	if (r < 0)
		return err_isset(err) ? -1
				      : err_set(err, CNI_ERR_INTERNAL, "VRF %s vanished", c->name);
	vrf_push(req, VRF_U_DEL, vrf->ifindex);
	return link_set_up(c->nl, vrf->ifindex, err);
}

/* Wait for the kernel to install the local route of a re-added address in
 * the VRF's table: 10 ms, doubling, about 2.5 s in all. */
static int vrf_wait_local(struct vrf_conf *c, const struct cni_link *vrf, int ifindex,
			  const struct cni_ip *ip, struct cni_err *err)
{
	for (int i = 0; i <= 8; i++) {
		_cleanup_free_ struct cni_rt *rt = NULL;
		size_t n = 0;
		if (route_list(c->nl, AF_INET6, vrf->vrf_table, ifindex, &rt, &n, err) < 0)
			return -1;
		for (size_t k = 0; k < n; k++)
			if (rt[k].dst.prefix == 128 && ip_eq(&rt[k].dst.ip, ip))
				return 0;
		if (i < 8) {
			struct timespec ts = {0, 10000000L << i};
			while (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			nanosleep(&ts, NULL);
		}
	}
	char a[IP_STRLEN];
	return err_set(err, CNI_ERR_INTERNAL, "address %s did not appear in table %u of VRF %s",
		       ip_format(ip, a), vrf->vrf_table, c->name);
}

static int vrf_enslave(struct cni_req *req, struct vrf_conf *c, const struct cni_link *vrf,
		       struct cni_err *err)
{
	struct cni_link l;
	int r = link_get_by_name(c->nl, req->ifname, &l, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "could not get link by name %s", req->ifname);
	if (r < 0)
		return -1;
	if (l.master) {
		struct cni_link m;
		if (link_get_by_index(c->nl, l.master, &m, NULL) < 0)
			snprintf(m.name, sizeof(m.name), "%d", l.master);
		return err_set(err, CNI_ERR_INTERNAL, "interface %s has already a master set: %s",
			       req->ifname, m.name);
	}
	_cleanup_free_ struct cni_addr *before = NULL, *after = NULL;
	_cleanup_free_ struct cni_rt *routes = NULL;
	size_t nb = 0, na = 0, nr = 0;
	if (addr_list(c->nl, l.ifindex, AF_INET6, &before, &nb, err) < 0 ||
	    route_list(c->nl, 0, ROUTE_TABLE_MAIN, l.ifindex, &routes, &nr, err) < 0)
		return -1;
	if (link_set_master(c->nl, l.ifindex, vrf->ifindex, err) < 0)
		return -1;
	vrf_push(req, VRF_U_NOMASTER, l.ifindex);
	if (addr_list(c->nl, l.ifindex, AF_INET6, &after, &na, err) < 0)
		return -1;
	for (size_t i = 0; i < nb; i++) {
		if (before[i].scope != ROUTE_SCOPE_UNIVERSE)
			continue;
		bool kept = false;
		for (size_t k = 0; k < na && !kept; k++)
			kept = ip_eq(&after[k].cidr.ip, &before[i].cidr.ip);
		if (kept)
			continue;
		unsigned flags =
		    (before[i].flags & (ADDR_F_NODAD | ADDR_F_NOPREFIXROUTE)) | ADDR_F_NODAD;
		if (addr_add(c->nl, l.ifindex, &before[i].cidr, flags, err) < 0 ||
		    vrf_wait_local(c, vrf, l.ifindex, &before[i].cidr.ip, err) < 0)
			return -1;
	}
	/* Enslaving flushed them from main: only the universe-scope ones
	 * (not the connected and local routes the kernel recreates). */
	for (size_t i = 0; i < nr; i++) {
		if (routes[i].scope != ROUTE_SCOPE_UNIVERSE)
			continue;
		struct cni_rt rt = routes[i];
		rt.table = vrf->vrf_table;
		if (route_replace(c->nl, &rt, err) < 0)
			return -1;
	}
	return 0;
}

static int vrf_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vrf_conf *c = req->priv;
	if (!req->prev)
		return err_set(
		    err, CNI_ERR_INVALID_CONFIG,
		    "prevResult: missing (vrf must be chained after an interface plugin)");
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0)
		return -1;
	struct cni_link vrf;
	int r = vrf_find(c, &vrf, err);
	if (r == 0 && c->table && vrf.vrf_table != c->table)
		return err_set(err, CNI_ERR_INTERNAL,
			       "VRF %s already exists with a different routing table (%u)", c->name,
			       vrf.vrf_table);
	if (r == -ENODEV)
		r = vrf_create(req, c, &vrf, err);
	if (r < 0)
		return -1;
	return vrf_enslave(req, c, &vrf, err);
}

static int vrf_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vrf_conf *c = req->priv;
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0)
		return gone ? 0 : -1;
	struct cni_link vrf, l;
	int r = vrf_find(c, &vrf, err);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return -1;
	r = link_get_by_name(c->nl, req->ifname, &l, err);
	if (r < 0 && r != -ENODEV)
		return -1;
	if (r == 0 && l.master == vrf.ifindex && link_set_master(c->nl, l.ifindex, 0, err) < 0)
		return -1;
	_cleanup_free_ struct cni_link *links = NULL;
	size_t n = 0;
	if (link_list(c->nl, &links, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (links[i].master == vrf.ifindex)
			return 0; /* still in use */
	return link_del(c->nl, vrf.ifindex, err) < 0 ? -1 : 0;
}

static int vrf_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct vrf_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0)
		return -1;
	struct cni_link vrf, l;
	int r = vrf_find(c, &vrf, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "VRF %s not found", c->name);
	if (r < 0)
		return -1;
	r = link_get_by_name(c->nl, req->ifname, &l, err);
	if (r < 0 && r != -ENODEV)
		return -1;
	if (r == -ENODEV || l.master != vrf.ifindex)
		return err_set(err, CNI_ERR_INTERNAL, "failed to find %s associated to vrf %s",
			       req->ifname, c->name);
	return 0;
}

const struct cni_applet vrf_applet = {
    .name = "vrf",
    .summary = "put the interface into a VRF of the container",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"vrf\",\n"
	     "         \"vrfname\": NAME, \"table\": N}\n"
	     "Chained after an interface plugin; needs prevResult and a kernel with\n"
	     "CONFIG_NET_VRF.\n",
    .parse = vrf_parse,
    .free = vrf_free,
    .add = vrf_add,
    .del = vrf_del,
    .check = vrf_check,
};
