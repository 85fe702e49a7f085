/* Container interface helpers shared by the interface plugins. */
#include "iface.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "addr.h"
#include "invoke.h"
#include "route.h"
#include "sysctl.h"

/* Keep the first error: copy a scratch error into err unless one is set. */
static int err_keep(struct cni_err *err, const struct cni_err *tmp)
{
	if (!err_isset(err))
		*err = *tmp;
	return -1;
}

int iface_add_veth(struct cni_nl *host_nl, struct cni_nl *cont_nl, const struct cni_netns *ns,
		   const char *ifname, unsigned mtu, const uint8_t *mac, struct cni_veth_pair *out,
		   struct cni_err *err)
{
	struct cni_link l;
	char name[LINK_NAME_MAX];
	int r;

	/* Ask first, for a clear message: EEXIST from the creation alone
	 * cannot tell which of the two names is taken. */
	r = link_get_by_name(cont_nl, ifname, &l, err);
	if (r == 0)
		return err_set(err, CNI_ERR_INTERNAL, "container veth name \"%s\" already exists",
			       ifname);
	if (r != -ENODEV)
		return -1;

	/* Ten tries, as the reference: with 32 random bits a second
	 * collision means something else is wrong. */
	for (int i = 0;; i++) {
		uint8_t rnd[4];
		random_bytes(rnd, sizeof(rnd));
		snprintf(name, sizeof(name), IFACE_VETH_PREFIX "%02x%02x%02x%02x", rnd[0], rnd[1],
			 rnd[2], rnd[3]);
		struct cni_veth v = {
		    .name = name,
		    .peer = ifname,
		    .peer_ns = ns,
		    .mtu = mtu,
		    .peer_mac = mac,
		};
		struct cni_err tmp = {0};
		r = link_add_veth(host_nl, &v, &tmp);
		if (r == 0)
			break;
		if (r != -EEXIST || i == 9)
			return err_keep(err, &tmp);
		struct cni_err ignore = {0};
		if (link_get_by_name(cont_nl, ifname, &l, &ignore) == 0)
			return err_set(err, CNI_ERR_INTERNAL,
				       "container veth name \"%s\" already exists", ifname);
		if (link_get_by_name(host_nl, name, &l, &ignore) != 0)
			return err_keep(err, &tmp);
		/* The host name was taken: draw again. */
	}

	memset(out, 0, sizeof(*out));
	r = link_get_by_name(host_nl, name, &out->host, err);
	if (r == 0)
		r = link_get_by_name(cont_nl, ifname, &out->cont, err);
	if (r < 0) {
		if (r == -ENODEV)
			err_set(err, CNI_ERR_INTERNAL, "veth %s (peer %s) vanished after creation",
				name, ifname);
		struct cni_err ignore = {0};
		link_del_by_name(host_nl, name, &ignore);
		return -1;
	}
	return 0;
}

/* ipam.ConfigureIface turns IPv6 on for lo and the link before adding an
 * IPv6 address (a runtime may have disabled it by default), and keeps the
 * addresses when the link goes down. */
static int enable_ipv6(const struct cni_netns *ns, const char *ifname, struct cni_err *err)
{
	const char *names[] = {"lo", ifname};
	char path[128], cur[64];
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct cni_err ignore = {0};
		snprintf(path, sizeof(path), "net/ipv6/conf/%s/disable_ipv6", names[i]);
		/* Unreadable: leave it to the address request to fail. */
		if (sysctl_get_in(ns, path, cur, sizeof(cur), &ignore) < 0 || streq(cur, "0"))
			continue;
		if (sysctl_set_in(ns, path, "0", err) < 0)
			return err_append(err, "failed to enable IPv6 for interface %s", names[i]);
	}
	snprintf(path, sizeof(path), "net/ipv6/conf/%s/keep_addr_on_down", ifname);
	if (sysctl_set_in(ns, path, "1", err) < 0)
		return err_append(err, "failed to enable keep_addr_on_down for interface %s",
				  ifname);
	return 0;
}

/* With IFACE_DAD: poll until no IPv6 address of the link is tentative, as
 * ip.SettleAddresses (5 s, 50 ms steps). A link that is not operationally
 * up never finishes DAD; that is not an error, as in the reference. */
static int settle(struct cni_nl *nl, int ifindex, const char *ifname, struct cni_err *err)
{
	for (int step = 0;; step++) {
		_cleanup_free_ struct cni_addr *a = NULL;
		size_t n = 0;
		if (addr_list(nl, ifindex, AF_INET6, &a, &n, err) < 0)
			return -1;
		bool tentative = false;
		for (size_t i = 0; i < n; i++) {
			if (a[i].flags & ADDR_F_DADFAILED) {
				char buf[CIDR_STRLEN];
				return err_set(err, CNI_ERR_INTERNAL,
					       "link %s has address %s in DADFAILED state", ifname,
					       ip_format(&a[i].cidr.ip, buf));
			}
			tentative |= (a[i].flags & ADDR_F_TENTATIVE) != 0;
		}
		if (!tentative)
			return 0;
		if (step == 100) {
			struct cni_link l;
			if (link_get_by_index(nl, ifindex, &l, err) < 0)
				return -1;
			if (l.operstate == 6 /* IF_OPER_UP */)
				return err_set(
				    err, CNI_ERR_INTERNAL,
				    "link %s still has tentative addresses after 5 seconds",
				    ifname);
			return 0;
		}
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
	}
}

int iface_configure(struct cni_nl *nl, const struct cni_netns *ns, int ifindex,
		    const struct cni_result *res, int iface_idx, unsigned flags,
		    struct cni_err *err)
{
	if (iface_idx < 0 || (size_t)iface_idx >= res->n_ifaces)
		return err_set(err, CNI_ERR_INTERNAL, "no interfaces to configure");
	struct cni_link link;
	if (link_get_by_index(nl, ifindex, &link, err) < 0) {
		if (!err_isset(err))
			err_set(err, CNI_ERR_INTERNAL, "failed to lookup link %d: no such device",
				ifindex);
		return -1;
	}
	struct cni_ip gw4 = {0}, gw6 = {0};
	bool v6 = false;
	for (size_t i = 0; i < res->n_ips; i++) {
		const struct cni_ipconf *ipc = &res->ips[i];
		char buf[CIDR_STRLEN];
		if (ipc->iface < 0)
			continue;
		if (ipc->iface != iface_idx)
			return err_set(
			    err, CNI_ERR_INTERNAL,
			    "failed to add IP addr %s to \"%s\": invalid interface index",
			    ip_cidr_format(&ipc->address, buf), link.name);
		bool is6 = ipc->address.ip.family == AF_INET6;
		if (is6 && !v6) {
			if (enable_ipv6(ns, link.name, err) < 0)
				return -1;
			v6 = true;
		}
		/* IPv6 addresses skip DAD unless asked (addr_add's default). */
		unsigned af = (flags & IFACE_DAD) ? ADDR_ADD_DAD : 0;
		if (addr_add(nl, ifindex, &ipc->address, af, err) < 0)
			return -1;
		struct cni_ip *gw = ipc->gateway.family == AF_INET6 ? &gw6 : &gw4;
		if (ip_isset(&ipc->gateway) && !ip_isset(gw))
			*gw = ipc->gateway;
	}
	if (!(flags & IFACE_NO_UP) && link_set_up(nl, ifindex, err) < 0)
		return -1;
	if ((flags & IFACE_DAD) && v6 && settle(nl, ifindex, link.name, err) < 0)
		return -1;
	for (size_t i = 0; i < res->n_routes; i++) {
		const struct cni_route *r = &res->routes[i];
		struct cni_rt rt = {
		    .dst = r->dst,
		    .gw = r->gw,
		    .ifindex = ifindex,
		    .scope = r->scope >= 0 ? r->scope : ROUTE_SCOPE_UNIVERSE,
		    .table = r->table,
		    .priority = r->priority,
		    .mtu = r->mtu,
		    .advmss = r->advmss,
		};
		if (!ip_isset(&rt.gw))
			rt.gw = r->dst.ip.family == AF_INET6 ? gw6 : gw4;
		if (route_add(nl, &rt, err) < 0)
			return -1;
	}
	return 0;
}

int iface_check_find(const struct cni_result *prev, const char *ifname, const char *netns,
		     struct cni_err *err)
{
	for (size_t i = 0; i < prev->n_ifaces; i++)
		if (streq(prev->ifaces[i].name, ifname) && streq(prev->ifaces[i].sandbox, netns))
			return (int)i;
	return err_set(err, CNI_ERR_INTERNAL,
		       "Sandbox in prevResult doesn't match configured netns: %s "
		       "(no interface %s in it)",
		       netns ? netns : "", ifname ? ifname : "");
}

int iface_check_link(struct cni_nl *nl, const struct cni_iface *want, const char *kind,
		     struct cni_link *out, struct cni_err *err)
{
	struct cni_link l;
	if (strempty(want->name))
		return err_set(err, CNI_ERR_INTERNAL, "interface name missing in prevResult");
	int r = link_get_by_name(nl, want->name, &l, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "interface %s in prevResult not found",
			       want->name);
	if (r < 0)
		return -1;
	if (kind && !streq(l.kind, kind))
		return err_set(err, CNI_ERR_INTERNAL, "interface %s is of type %s, not %s",
			       want->name, *l.kind ? l.kind : "device", kind);
	if (!strempty(want->mac) && strcasecmp(want->mac, l.mac_str) != 0)
		return err_set(err, CNI_ERR_INTERNAL,
			       "interface %s MAC %s doesn't match the prevResult's %s", want->name,
			       l.mac_str, want->mac);
	if (out)
		*out = l;
	return 0;
}

/* Same destination prefix, any address bits beyond the prefix. */
static bool same_dst(const struct cni_cidr *a, const struct cni_cidr *b)
{
	if (a->prefix != b->prefix)
		return false;
	if (a->prefix == 0)
		return true;
	struct cni_cidr na = ip_cidr_network(a), nb = ip_cidr_network(b);
	return ip_eq(&na.ip, &nb.ip);
}

static bool has_route(const struct cni_rt *rts, size_t n, const struct cni_cidr *dst,
		      const struct cni_ip *gw)
{
	for (size_t i = 0; i < n; i++) {
		if (rts[i].dst.ip.family && rts[i].dst.ip.family != dst->ip.family)
			continue;
		if (!same_dst(&rts[i].dst, dst))
			continue;
		if (gw && ip_isset(gw) && !ip_eq(&rts[i].gw, gw))
			continue;
		return true;
	}
	return false;
}

int iface_check_ips(struct cni_nl *nl, const char *ifname, const struct cni_result *prev,
		    struct cni_err *err)
{
	struct cni_link l;
	_cleanup_free_ struct cni_addr *addrs = NULL;
	_cleanup_free_ struct cni_rt *rts = NULL;
	size_t n_addrs = 0, n_rts = 0;
	char buf[CIDR_STRLEN], gbuf[IP_STRLEN];

	int r = link_get_by_name(nl, ifname, &l, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "Cannot find container link %s", ifname);
	if (r < 0 || addr_list(nl, l.ifindex, 0, &addrs, &n_addrs, err) < 0 ||
	    route_list(nl, 0, ROUTE_TABLE_MAIN, 0, &rts, &n_rts, err) < 0)
		return -1;
	for (size_t i = 0; i < prev->n_ips; i++) {
		const struct cni_cidr *want = &prev->ips[i].address;
		bool found = false;
		for (size_t k = 0; k < n_addrs && !found; k++)
			found = addrs[k].cidr.prefix == want->prefix &&
				ip_eq(&addrs[k].cidr.ip, &want->ip);
		if (!found)
			return err_set(err, CNI_ERR_INTERNAL,
				       "Failed to match addr %s on interface %s",
				       ip_cidr_format(want, buf), ifname);
		if (!has_route(rts, n_rts, want, NULL))
			return err_set(err, CNI_ERR_INTERNAL,
				       "Failed to find a route to %s for interface %s",
				       ip_cidr_format(want, buf), ifname);
	}
	for (size_t i = 0; i < prev->n_routes; i++) {
		const struct cni_route *want = &prev->routes[i];
		if (!has_route(rts, n_rts, &want->dst, &want->gw))
			return err_set(err, CNI_ERR_INTERNAL,
				       "Expected route %s%s%s not found in routing table",
				       ip_cidr_format(&want->dst, buf),
				       ip_isset(&want->gw) ? " via " : "",
				       ip_isset(&want->gw) ? ip_format(&want->gw, gbuf) : "");
	}
	return 0;
}

/* Go's net.IP.IsGlobalUnicast. */
static bool global_unicast(const struct cni_ip *ip)
{
	const uint8_t *a = ip->a;
	if (ip->family == AF_INET) {
		if (a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0)
			return false;
		if (a[0] == 127 || a[0] >= 224 || (a[0] == 169 && a[1] == 254))
			return false;
		return true;
	}
	static const uint8_t zero[16], one[16] = {[15] = 1};
	if (!memcmp(a, zero, 16) || !memcmp(a, one, 16))
		return false;
	if (a[0] == 0xff || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80))
		return false;
	return true;
}

int iface_del(struct cni_nl *nl, const char *ifname, struct cni_cidr **nets, size_t *n,
	      struct cni_err *err)
{
	struct cni_link l;
	_cleanup_free_ struct cni_addr *a = NULL;
	size_t na = 0;
	if (nets)
		*nets = NULL;
	if (n)
		*n = 0;
	int r = link_get_by_name(nl, ifname, &l, err);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return -1;
	if (nets && addr_list(nl, l.ifindex, 0, &a, &na, err) < 0)
		return -1;
	if (link_del(nl, l.ifindex, err) < 0)
		return -1;
	if (!nets)
		return 0;
	struct cni_cidr *out = xcalloc(na + 1, sizeof(*out));
	size_t k = 0;
	for (size_t i = 0; i < na; i++)
		if (global_unicast(&a[i].cidr.ip))
			out[k++] = a[i].cidr;
	*nets = out;
	*n = k;
	return 0;
}

int iface_enable_forward_family(int family, struct cni_err *err)
{
	const char *path =
	    family == AF_INET6 ? "net/ipv6/conf/all/forwarding" : "net/ipv4/ip_forward";
	char cur[16];
	struct cni_err ignore = {0};
	/* Write only when needed: the reference reads first, and a runtime
	 * may run us where the file is read-only but already 1. */
	if (sysctl_get_in(NULL, path, cur, sizeof(cur), &ignore) == 0 && streq(cur, "1"))
		return 0;
	if (sysctl_set_in(NULL, path, "1", err) < 0)
		return err_append(err, "could not enable IP forwarding");
	return 0;
}

int iface_enable_forward(const struct cni_result *res, struct cni_err *err)
{
	bool v4 = false, v6 = false;
	for (size_t i = 0; i < res->n_ips; i++) {
		bool *done = res->ips[i].address.ip.family == AF_INET6 ? &v6 : &v4;
		if (*done)
			continue;
		if (iface_enable_forward_family(res->ips[i].address.ip.family, err) < 0)
			return -1;
		*done = true;
	}
	return 0;
}

bool iface_dns_set(const struct cni_dns *d)
{
	return d->nameservers || d->search || d->options || !strempty(d->domain);
}

void iface_result_from_ipam(struct cni_result *r)
{
	for (size_t i = 0; i < r->n_ifaces; i++) {
		struct cni_iface *f = &r->ifaces[i];
		free(f->name);
		free(f->mac);
		free(f->sandbox);
		free(f->socket_path);
		free(f->pci_id);
	}
	r->n_ifaces = 0;
}

void iface_result_set(struct cni_result *res, struct cni_result *r, const char *version)
{
	struct cni_result t = *res;
	*res = *r;
	*r = t;
	free(res->cni_version);
	res->cni_version = xstrdup(version);
}

int iface_open_cont(struct cni_req *req, struct cni_nl **nl, bool *gone, struct cni_err *err)
{
	bool g = false;
	struct cni_netns *ns = req_netns(req, &g, err);
	if (gone)
		*gone = g;
	if (!ns)
		return -1;
	if (!*nl && !(*nl = netlink_open(ns, err)))
		return -1;
	return 0;
}

struct undo_link {
	struct cni_nl *nl;
	int ifindex;
};

static void undo_link(struct cni_req *req, void *arg)
{
	const struct undo_link *u = arg;
	struct cni_err ignore = {0};
	link_del(u->nl, u->ifindex, &ignore);
}

void iface_push_undo_link(struct cni_req *req, struct cni_nl *nl, int ifindex)
{
	struct undo_link *u = xmalloc(sizeof(*u));
	*u = (struct undo_link){nl, ifindex};
	req_push_undo(req, undo_link, u, free);
}

static void undo_ipam(struct cni_req *req, void *arg)
{
	struct cni_err ignore = {0};
	iface_ipam_run(req, CNI_CMD_DEL, &ignore);
}

int iface_ipam_add(struct cni_req *req, struct cni_result **r, struct cni_err *err)
{
	if (ipam_exec(req, CNI_CMD_ADD, r, err) < 0)
		return -1;
	req_push_undo(req, undo_ipam, NULL, NULL);
	if ((*r)->n_ips == 0)
		return err_set(err, CNI_ERR_INTERNAL, "IPAM plugin returned missing IP config");
	return 0;
}

int iface_ipam_run(struct cni_req *req, enum cni_cmd cmd, struct cni_err *err)
{
	struct cni_result *r = NULL;
	int rc = ipam_exec(req, cmd, &r, err);
	result_free(r);
	return rc;
}

static void undo_masq(struct cni_req *req, void *arg)
{
	struct cni_err ignore = {0};
	fw_masq_del(req->name, req->container_id, req->ifname, NULL, 0, &ignore);
}

/* The addresses of r, owned; one spare entry so that none is xcalloc(0). */
static struct cni_cidr *masq_nets(const struct cni_result *r)
{
	struct cni_cidr *nets = xcalloc(r->n_ips + 1, sizeof(*nets));
	for (size_t i = 0; i < r->n_ips; i++)
		nets[i] = r->ips[i].address;
	return nets;
}

int iface_masq_add(struct cni_req *req, const struct cni_result *r, enum fw_backend b,
		   struct cni_err *err)
{
	_cleanup_free_ struct cni_cidr *nets = masq_nets(r);
	if (fw_masq_add(req->name, req->container_id, req->ifname, nets, r->n_ips, b, err) < 0)
		return -1;
	req_push_undo(req, undo_masq, NULL, NULL);
	return 0;
}

int iface_masq_check(struct cni_req *req, const struct cni_result *prev, enum fw_backend b,
		     struct cni_err *err)
{
	_cleanup_free_ struct cni_cidr *nets = masq_nets(prev);
	return fw_masq_check(req->name, req->container_id, req->ifname, nets, prev->n_ips, b, err);
}

void iface_result_finish(struct cni_result *res, struct cni_result *r, const struct cni_dns *dns,
			 const char *version)
{
	if (iface_dns_set(dns)) {
		dns_clear(&r->dns);
		dns_copy(&r->dns, dns);
	}
	iface_result_set(res, r, version);
}
