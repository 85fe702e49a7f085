/* bridge: attach the container to a Linux bridge in the host through a
 * veth pair, optionally with the bridge as its gateway.
 *
 * ADD creates the bridge when missing (never deleted afterwards: other
 * containers may use it, as in the reference), a veth pair whose host end
 * ("veth" + 8 random hex digits) is a port of the bridge and whose other
 * end is created directly inside the container as CNI_IFNAME, then runs
 * IPAM and applies its result there. With isGateway the first address of
 * each subnet (or the IPAM gateway) goes on the bridge, shared by every
 * container of the subnet, and forwarding is enabled on the host. The
 * result lists the bridge, the host veth and the container interface, in
 * that order, as the reference does. Every step that changes the host is
 * undone if a later one fails; the IPAM reservation is released.
 * DEL deletes the container interface (its peer goes with it), releases
 * the IPAM reservation even when the namespace is gone, and removes the
 * ipMasq rules. CHECK compares the bridge, the veth pair, the addresses
 * and the routes with prevResult. STATUS and GC delegate to IPAM.
 *
 * Differences from the reference:
 *  - IPv6 addresses in the container are added without duplicate address
 *    detection (IFA_F_NODAD) unless enabledad is set, so an ADD never
 *    waits for DAD; the reference disables accept_dad and still waits.
 *    The gateway address on the bridge skips DAD too, so the container
 *    can reach it at once.
 *  - The bridge's MAC is pinned to the one it has when the gateway is
 *    added if it had none (zero) before: a bridge whose last port left
 *    has the zero MAC, which the kernel refuses to set.
 *  - ipMasqBackend defaults to nftables (the netfilter layer's choice);
 *    the reference defaults to iptables when it is installed.
 *  - vlan/vlanTrunk turn vlan_filtering on for an existing bridge too;
 *    the reference only sets it when it creates the bridge, so the VLANs
 *    it configures have no effect on a bridge made by someone else.
 *  - DEL removes the ipMasq rules of the attachment even when the
 *    container namespace is already gone.
 *  - CHECK of an L2-only network (no ipam.type) does not run IPAM CHECK,
 *    which in the reference fails looking for a plugin named "".
 *  - Contradictory or malformed settings are code 7 naming the field,
 *    before anything changes; the reference reports them as code 999.
 *  - macspoofchk lives in our own table "bridge cni" (one rule, and two
 *    set elements per attachment) instead of the reference's per-container
 *    chains in "bridge nat"; the effect is the same: a frame entering the
 *    bridge from the container's port with another source MAC is dropped. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "addr.h"
#include "applet.h"
#include "fw.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "sysctl.h"

#define BR_DEFAULT_NAME "cni0"
#define BR_OPER_UP 6 /* IF_OPER_UP */

struct br_conf {
	const char *bridge;
	bool is_gw, is_default_gw, force_addr, ip_masq, hairpin, promisc;
	bool preserve_vlan, enable_dad, spoofchk, no_cont_iface, isolate;
	enum fw_backend masq_backend;
	unsigned mtu, vlan;
	bool trunk_set;	 /* vlanTrunk given (even empty): vlan_filtering on */
	unsigned *trunk; /* sorted, unique */
	size_t n_trunk;
	bool has_mac;
	uint8_t mac[6];
	bool l3; /* ipam.type given */
	struct cni_dns dns;

	/* Sockets kept for the undo steps, which run after the handler. */
	struct cni_nl *host_nl, *cont_nl;
};

static void br_free(void *priv)
{
	struct br_conf *c = priv;
	if (!c)
		return;
	free(c->trunk);
	dns_clear(&c->dns);
	netlink_close(c->host_nl);
	netlink_close(c->cont_nl);
	free(c);
}

static void br_freep(struct br_conf **c)
{
	br_free(*c);
}

/* The kernel's dev_valid_name(), within IFNAMSIZ. */
static bool ifname_ok(const char *s)
{
	if (!name_is_safe(s, LINK_NAME_MAX - 1))
		return false;
	for (const char *p = s; *p; p++)
		if (*p == ':' || *p == ' ' || *p == '\t' || *p == '\n')
			return false;
	return true;
}

/* vlanTrunk: [{"id": N} | {"minID": A, "maxID": B}, ...], VLAN ids 1..4094,
 * as the reference's collectVlanTrunk. */
static int parse_trunk(const struct cni_json *arr, struct br_conf *c, struct cni_err *err)
{
	bool seen[4095] = {0};
	size_t cap = 0;
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct cni_json *it = json_at(arr, i);
		int64_t lo = 0, hi = 0, id = 0;
		if (!json_is(it, JSON_OBJECT))
			return json_err(err, it, "expected an object {id} or {minID, maxID}");
		int has_lo = json_get_int(it, "minID", 0, 1, 4094, &lo, err);
		int has_hi = json_get_int(it, "maxID", 0, 1, 4094, &hi, err);
		int has_id = json_get_int(it, "id", 0, 1, 4094, &id, err);
		if (has_lo < 0 || has_hi < 0 || has_id < 0)
			return -1;
		if (has_lo && !has_hi)
			return json_err_key(err, it, "maxID",
					    "minID and maxID must be given together");
		if (has_hi && !has_lo)
			return json_err_key(err, it, "minID",
					    "minID and maxID must be given together");
		if (has_lo && hi < lo)
			return json_err_key(err, it, "minID", "greater than maxID");
		for (int64_t v = lo; has_lo && v <= hi; v++)
			seen[v] = true;
		if (has_id)
			seen[id] = true;
	}
	for (unsigned v = 1; v < ARRAY_SIZE(seen); v++) {
		if (!seen[v])
			continue;
		xgrow(&c->trunk, &cap, c->n_trunk, sizeof(*c->trunk));
		c->trunk[c->n_trunk++] = v;
	}
	return 0;
}

/* The runtime's MAC: runtimeConfig.mac, else args.cni.mac, else CNI_ARGS
 * MAC=, as the reference's loadNetConf. */
static int parse_mac(struct cni_req *req, struct br_conf *c, struct cni_err *err)
{
	static const char *const known[] = {"MAC", NULL};
	const char *mac = NULL, *field = NULL;
	const struct cni_json *args = NULL, *cni = NULL;

	if (args_check_known(&req->args, known, err) < 0)
		return -1;
	if ((mac = args_get(&req->args, "MAC")) && *mac)
		field = "CNI_ARGS MAC";
	if (json_get_obj(req->conf, "args", 0, &args, err) < 0 ||
	    json_get_obj(args, "cni", 0, &cni, err) < 0)
		return -1;
	const char *m = NULL;
	if (json_get_str(cni, "mac", 0, &m, err) < 0)
		return -1;
	if (!strempty(m)) {
		mac = m;
		field = "args.cni.mac";
	}
	m = NULL;
	if (json_get_str(req->rt, "mac", 0, &m, err) < 0)
		return -1;
	if (!strempty(m)) {
		mac = m;
		field = "runtimeConfig.mac";
	}
	if (strempty(mac))
		return 0;
	if (link_parse_mac(mac, c->mac) < 0 || (c->mac[0] & 1))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "%s: \"%.32s\" is not a unicast MAC address", field, mac);
	c->has_mac = true;
	return 0;
}

static int br_parse(struct cni_req *req, struct cni_err *err)
{
	_cleanup_(br_freep) struct br_conf *c = xcalloc(1, sizeof(*c));
	const struct cni_json *j = req->conf, *trunk = NULL, *dns = NULL;
	int64_t mtu = 0, vlan = 0;

	c->bridge = BR_DEFAULT_NAME;
	if (json_get_str(j, "bridge", 0, &c->bridge, err) < 0 ||
	    json_get_bool(j, "isGateway", 0, &c->is_gw, err) < 0 ||
	    json_get_bool(j, "isDefaultGateway", 0, &c->is_default_gw, err) < 0 ||
	    json_get_bool(j, "forceAddress", 0, &c->force_addr, err) < 0 ||
	    json_get_bool(j, "ipMasq", 0, &c->ip_masq, err) < 0 ||
	    fw_parse_backend(j, "ipMasqBackend",
			     FW_ALLOW(FW_BACKEND_IPTABLES) | FW_ALLOW(FW_BACKEND_NFTABLES),
			     &c->masq_backend, err) < 0 ||
	    json_get_int(j, "mtu", 0, 0, 65535, &mtu, err) < 0 ||
	    json_get_bool(j, "hairpinMode", 0, &c->hairpin, err) < 0 ||
	    json_get_bool(j, "promiscMode", 0, &c->promisc, err) < 0 ||
	    json_get_int(j, "vlan", 0, 0, 4094, &vlan, err) < 0 ||
	    json_get_arr(j, "vlanTrunk", 0, &trunk, err) < 0 ||
	    json_get_bool(j, "preserveDefaultVlan", 0, &c->preserve_vlan, err) < 0 ||
	    json_get_bool(j, "enabledad", 0, &c->enable_dad, err) < 0 ||
	    json_get_bool(j, "macspoofchk", 0, &c->spoofchk, err) < 0 ||
	    json_get_bool(j, "disableContainerInterface", 0, &c->no_cont_iface, err) < 0 ||
	    json_get_bool(j, "portIsolation", 0, &c->isolate, err) < 0 ||
	    json_get_obj(j, "dns", 0, &dns, err) < 0 || dns_parse(dns, &c->dns, err) < 0)
		return -1;
	c->mtu = (unsigned)mtu;
	c->vlan = (unsigned)vlan;
	c->trunk_set = trunk != NULL;
	if (parse_trunk(trunk, c, err) < 0)
		return -1;
	if (!ifname_ok(c->bridge))
		return json_err_key(err, j, "bridge", "\"%.32s\" is not a valid interface name",
				    c->bridge);
	if (c->is_default_gw)
		c->is_gw = true;

	const char *ipam_type = NULL;
	if (json_get_str(req->ipam, "type", 0, &ipam_type, err) < 0)
		return -1;
	c->l3 = !strempty(ipam_type);
	if (c->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;

	/* The runtime's MAC and the semantic checks matter to ADD only: a DEL
	 * must still clean up after a config that could never be added. */
	if (req->cmd == CNI_CMD_ADD) {
		if (parse_mac(req, c, err) < 0)
			return -1;
		if (c->l3 && c->no_cont_iface)
			return json_err_key(err, j, "disableContainerInterface",
					    "cannot be used with IPAM (ipam.type is set)");
		if (c->hairpin && c->promisc)
			return json_err_key(err, j, "hairpinMode",
					    "cannot be set together with promiscMode");
		if (c->is_gw && c->vlan &&
		    strlen(c->bridge) + 1 + (size_t)snprintf(NULL, 0, "%u", c->vlan) >=
			LINK_NAME_MAX)
			return json_err_key(err, j, "bridge",
					    "\"%s\" is too long for its vlan gateway interface "
					    "\"%s.%u\"",
					    c->bridge, c->bridge, c->vlan);
	}
	req->priv = TAKE_PTR(c);
	return 0;
}

/* Sockets ------------------------------------------------------------------*/

static int open_host(struct br_conf *c, struct cni_err *err)
{
	if (!c->host_nl)
		c->host_nl = netlink_open(NULL, err);
	return c->host_nl ? 0 : -1;
}


/* ADD ----------------------------------------------------------------------*/

static int ensure_bridge(struct br_conf *c, struct cni_link *br, struct cni_err *err)
{
	struct cni_nl *nl = c->host_nl;
	bool filtering = c->vlan || c->trunk_set;
	int r = link_get_by_name(nl, c->bridge, br, err);
	if (r == -ENODEV) {
		struct cni_bridge_opts o = {.link.mtu = c->mtu, .vlan_filtering = filtering};
		struct cni_err tmp = {0};
		/* Another ADD may create it at the same time: EEXIST is fine. */
		r = link_add_bridge(nl, c->bridge, &o, &tmp);
		if (r < 0 && r != -EEXIST) {
			*err = tmp;
			return -1;
		}
		r = link_get_by_name(nl, c->bridge, br, err);
		if (r == -ENODEV)
			return err_set(err, CNI_ERR_INTERNAL,
				       "bridge \"%s\" vanished after creation", c->bridge);
	}
	if (r < 0)
		return -1;
	if (!streq(br->kind, "bridge"))
		return err_set(err, CNI_ERR_INTERNAL, "\"%s\" already exists but is not a bridge",
			       c->bridge);
	if (filtering && !br->vlan_filtering) {
		struct cni_bridge_opts o = {.vlan_filtering = true};
		if (link_set_bridge(nl, br->ifindex, &o, err) < 0)
			return -1;
	}
	if (c->promisc && !(br->flags & IFF_PROMISC) &&
	    link_set_promisc(nl, br->ifindex, true, err) < 0)
		return -1;
	/* We own the bridge's routes: no router advertisements. */
	char key[64];
	struct cni_err ignore = {0};
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", c->bridge);
	sysctl_set_in(NULL, key, "0", &ignore);
	if (!(br->flags & IFF_UP) && link_set_up(nl, br->ifindex, err) < 0)
		return -1;
	return 0;
}

/* Put a host veth end on the bridge with the port settings of the config
 * (setupVeth in the reference), then bring it up. */
static int setup_port(struct br_conf *c, const struct cni_link *br, const struct cni_link *port,
		      unsigned vlan, const unsigned *trunk, size_t n_trunk, bool hairpin,
		      bool isolate, struct cni_err *err)
{
	struct cni_nl *nl = c->host_nl;
	int idx = port->ifindex;
	char key[64];
	struct cni_err ignore = {0};

	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", port->name);
	sysctl_set_in(NULL, key, "0", &ignore);
	if (link_set_master(nl, idx, br->ifindex, err) < 0)
		return -1;
	if (hairpin && link_set_brport(nl, idx, LINK_BRPORT_HAIRPIN, true, err) < 0)
		return -1;
	if (isolate && link_set_brport(nl, idx, LINK_BRPORT_ISOLATED, true, err) < 0)
		return -1;
	if ((vlan || n_trunk) && !c->preserve_vlan) {
		_cleanup_free_ struct cni_brvlan *v = NULL;
		size_t n = 0;
		if (link_bridge_vlan_list(nl, idx, &v, &n, err) < 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (link_bridge_vlan_del(nl, idx, v[i].vid, 0, 0, err) < 0)
				return -1;
	}
	if (vlan && link_bridge_vlan_add(nl, idx, vlan, 0, LINK_BRVLAN_PVID | LINK_BRVLAN_UNTAGGED,
					 err) < 0)
		return -1;
	for (size_t i = 0; i < n_trunk;) {
		size_t k = i;
		while (k + 1 < n_trunk && trunk[k + 1] == trunk[k] + 1)
			k++;
		if (link_bridge_vlan_add(nl, idx, trunk[i], k > i ? trunk[k] : 0, 0, err) < 0)
			return -1;
		i = k + 1;
	}
	/* A trunk without a native VLAN gets VLAN 1, as in the reference. */
	if (!vlan && n_trunk &&
	    link_bridge_vlan_add(nl, idx, 1, 0, LINK_BRVLAN_PVID | LINK_BRVLAN_UNTAGGED, err) < 0)
		return -1;
	return link_set_up(nl, idx, err);
}

/* The host-side gateway of a VLAN network: a veth pair "<bridge>.<vlan>"
 * whose other end is an access port of the VLAN, shared by every
 * container of that VLAN and never deleted (ensureVlanInterface). */
static int ensure_vlan_iface(struct br_conf *c, const struct cni_link *br, struct cni_link *out,
			     struct cni_err *err)
{
	char name[LINK_NAME_MAX];
	snprintf(name, sizeof(name), "%s.%u", c->bridge, c->vlan);
	int r = link_get_by_name(c->host_nl, name, out, err);
	if (r != -ENODEV)
		return r < 0 ? -1 : 0;
	struct cni_veth_pair p;
	struct cni_err tmp = {0};
	if (iface_add_veth(c->host_nl, c->host_nl, NULL, name, br->mtu, NULL, &p, &tmp) < 0) {
		/* Lost a race with a concurrent ADD: use theirs. */
		if (link_get_by_name(c->host_nl, name, out, err) == 0)
			return 0;
		*err = tmp;
		return -1;
	}
	if (setup_port(c, br, &p.host, c->vlan, NULL, 0, false, false, err) < 0 ||
	    link_set_up(c->host_nl, p.cont.ifindex, err) < 0) {
		struct cni_err ignore = {0};
		link_del(c->host_nl, p.host.ifindex, &ignore);
		return err_append(err, "failed to create the vlan gateway %s", name);
	}
	*out = p.cont;
	return 0;
}

/* Put gw on the bridge (or VLAN gateway) unless it is there already
 * (ensureAddr). Another IPv4 address, or an IPv6 address of an
 * overlapping prefix, is an error unless forceAddress replaces it. */
static int ensure_addr(struct br_conf *c, const struct cni_link *l, const struct cni_cidr *gw,
		       struct cni_err *err)
{
	_cleanup_free_ struct cni_addr *a = NULL;
	size_t n = 0;
	char buf[CIDR_STRLEN], obuf[CIDR_STRLEN];
	int family = gw->ip.family;
	if (addr_list(c->host_nl, l->ifindex, family, &a, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (a[i].cidr.prefix == gw->prefix && ip_eq(&a[i].cidr.ip, &gw->ip))
			return 0;
		if (family == AF_INET6 && !ip_cidr_contains(&a[i].cidr, &gw->ip) &&
		    !ip_cidr_contains(gw, &a[i].cidr.ip))
			continue;
		if (!c->force_addr)
			return err_set(err, CNI_ERR_INTERNAL,
				       "\"%s\" already has an IP address (%s) different from %s",
				       l->name, ip_cidr_format(&a[i].cidr, obuf),
				       ip_cidr_format(gw, buf));
		if (addr_del(c->host_nl, l->ifindex, &a[i].cidr, err) < 0)
			return -1;
	}
	/* Concurrent ADDs of one subnet race to add the same gateway. */
	struct cni_err tmp = {0};
	int r = addr_add(c->host_nl, l->ifindex, gw, 0, &tmp);
	if (r < 0 && r != -EEXIST) {
		*err = tmp;
		return -1;
	}
	/* Pin the MAC: a bridge otherwise takes the lowest MAC of its ports,
	 * which changes as containers come and go. A bridge whose last port
	 * left has the zero MAC until a port joins again: then pin the one
	 * it has now. */
	static const uint8_t zero[6];
	struct cni_link now;
	const uint8_t *mac = l->mac;
	if (l->mac_len != 6 || !memcmp(l->mac, zero, 6)) {
		if (link_get_by_index(c->host_nl, l->ifindex, &now, err) < 0)
			return -1;
		mac = now.mac_len == 6 && memcmp(now.mac, zero, 6) ? now.mac : NULL;
	}
	if (mac && link_set_mac(c->host_nl, l->ifindex, mac, err) < 0)
		return -1;
	return 0;
}

/* The gateway of each address (the IPAM one, else the subnet's first
 * address with isGateway), the default routes with isDefaultGateway, and
 * the gateway addresses for the bridge (calcGateways). */
static void calc_gateways(struct br_conf *c, struct cni_result *r, struct cni_cidr **gws,
			  size_t *n_gws)
{
	size_t cap = 0;
	bool have_default[2] = {false, false};
	for (size_t i = 0; i < r->n_ips; i++) {
		struct cni_ipconf *ipc = &r->ips[i];
		int fam = ipc->address.ip.family;
		bool *def = &have_default[fam == AF_INET6];
		ipc->iface = 2;
		if (!ip_isset(&ipc->gateway) && c->is_gw) {
			struct cni_cidr net = ip_cidr_network(&ipc->address);
			ipc->gateway = net.ip;
			ip_next(&ipc->gateway);
		}
		if (c->is_default_gw && !*def) {
			for (size_t k = 0; k < r->n_routes && !*def; k++)
				*def = r->routes[k].dst.ip.family == fam &&
				       r->routes[k].dst.prefix == 0 && ip_isset(&r->routes[k].gw);
			if (!*def) {
				struct cni_cidr any = {.ip.family = fam, .prefix = 0};
				result_add_route(r, &any, &ipc->gateway);
				*def = true;
			}
		}
		if (c->is_gw) {
			xgrow(gws, &cap, *n_gws, sizeof(**gws));
			(*gws)[*n_gws] =
			    (struct cni_cidr){.ip = ipc->gateway, .prefix = ipc->address.prefix};
			(*n_gws)++;
		}
	}
}

static int set_gateways(struct br_conf *c, const struct cni_link *br, struct cni_result *r,
			const struct cni_cidr *gws, size_t n_gws, struct cni_err *err)
{
	struct cni_link vl;
	bool vlan_listed = false;
	for (int fam = AF_INET; fam; fam = fam == AF_INET ? AF_INET6 : 0) {
		bool any = false;
		for (size_t i = 0; i < n_gws; i++) {
			if (gws[i].ip.family != fam)
				continue;
			any = true;
			const struct cni_link *target = br;
			if (c->vlan) {
				if (ensure_vlan_iface(c, br, &vl, err) < 0)
					return -1;
				if (!vlan_listed) {
					result_add_iface(r, vl.name, vl.mac_str, NULL);
					vlan_listed = true;
				}
				target = &vl;
			}
			if (ensure_addr(c, target, &gws[i], err) < 0)
				return err_append(err, "failed to set the gateway address on %s",
						  target->name);
		}
		if (any && iface_enable_forward_family(fam, err) < 0)
			return -1;
	}
	return 0;
}

/* The reference waits for the host end to be operationally up, so that
 * the container's first packets are not dropped by a port still coming
 * up. */
static int wait_port_up(struct br_conf *c, int ifindex, struct cni_link *out, struct cni_err *err)
{
	static const int sleeps_ms[] = {0, 50, 500, 1000, 1000};
	for (size_t i = 0; i < ARRAY_SIZE(sleeps_ms); i++) {
		long ms = sleeps_ms[i];
		nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000},
			  NULL);
		if (link_get_by_index(c->host_nl, ifindex, out, err) < 0)
			return err_set(err, CNI_ERR_INTERNAL, "host veth %d vanished", ifindex);
		if (out->operstate == BR_OPER_UP)
			return 0;
	}
	return err_set(err, CNI_ERR_INTERNAL, "bridge port %s in error state (operstate %d)",
		       out->name, out->operstate);
}

static void cont_sysctls(struct cni_req *req, struct br_conf *c)
{
	char key[96];
	struct cni_err ignore = {0};
	const char *ifn = req->ifname;
	if (c->enable_dad) {
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/enhanced_dad", ifn);
		sysctl_set_in(req->ns, key, "1", &ignore);
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifn);
		sysctl_set_in(req->ns, key, "1", &ignore);
	} else {
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifn);
		sysctl_set_in(req->ns, key, "0", &ignore);
	}
	/* Tell the neighbours at once when the address (or MAC) changes. */
	snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", ifn);
	sysctl_set_in(req->ns, key, "1", &ignore);
}

/* The attachment's spoof-check entry: by prevResult's host port and
 * container MAC (interfaces [bridge, host veth, container]) when given,
 * else by the attachment's comment. */
static int spoofchk_del(struct cni_req *req, struct cni_err *err)
{
	struct fw_att a = {req->name, req->container_id, req->ifname};
	const struct cni_result *p = req->prev;
	int ci = p ? result_find_iface(p, req->ifname, req->netns_path) : -1;
	if (ci >= 1 && p->ifaces[ci].mac)
		return fw_spoofchk_del(&a, p->ifaces[ci - 1].name, p->ifaces[ci].mac, err);
	return fw_spoofchk_del(&a, NULL, NULL, err);
}

static void undo_spoofchk(struct cni_req *req, void *arg)
{
	struct cni_err ignore = {0};
	struct fw_att a = {req->name, req->container_id, req->ifname};
	fw_spoofchk_del(&a, NULL, NULL, &ignore);
}

static int br_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct br_conf *c = req->priv;
	struct cni_link br, port;
	struct cni_veth_pair p;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	_cleanup_free_ struct cni_cidr *gws = NULL;
	size_t n_gws = 0;

	if (open_host(c, err) < 0 || iface_open_cont(req, &c->cont_nl, NULL, err) < 0)
		return -1;
	if (ensure_bridge(c, &br, err) < 0)
		return -1;
	if (iface_add_veth(c->host_nl, c->cont_nl, req->ns, req->ifname, c->mtu,
			   c->has_mac ? c->mac : NULL, &p, err) < 0)
		return -1;
	iface_push_undo_link(req, c->host_nl, p.host.ifindex);
	if (setup_port(c, &br, &p.host, c->vlan, c->trunk, c->n_trunk, c->hairpin, c->isolate,
		       err) < 0)
		return err_append(err, "failed to connect %s to bridge %s", p.host.name, c->bridge);

	if (c->l3) {
		if (iface_ipam_add(req, &r, err) < 0)
			return -1;
		iface_result_from_ipam(r);
	} else {
		r = result_new(req->version);
	}
	result_add_iface(r, c->bridge, br.mac_str, NULL);
	result_add_iface(r, p.host.name, p.host.mac_str, NULL);
	result_add_iface(r, req->ifname, p.cont.mac_str, req->netns_path);

	if (c->l3) {
		calc_gateways(c, r, &gws, &n_gws);
		cont_sysctls(req, c);
		if (iface_configure(c->cont_nl, req->ns, p.cont.ifindex, r, 2,
				    c->enable_dad ? IFACE_DAD : 0, err) < 0)
			return -1;
		if (c->is_gw && set_gateways(c, &br, r, gws, n_gws, err) < 0)
			return -1;
		if (c->ip_masq && iface_masq_add(req, r, c->masq_backend, err) < 0)
			return -1;
	} else if (!c->no_cont_iface && link_set_up(c->cont_nl, p.cont.ifindex, err) < 0) {
		return -1;
	}
	if (c->spoofchk) {
		struct fw_att a = {req->name, req->container_id, req->ifname};
		if (fw_spoofchk_add(&a, p.host.name, p.cont.mac_str, err) < 0)
			return -1;
		req_push_undo(req, undo_spoofchk, NULL, NULL);
	}

	if (!c->no_cont_iface) {
		if (wait_port_up(c, p.host.ifindex, &port, err) < 0)
			return -1;
	} else if (link_get_by_index(c->host_nl, p.host.ifindex, &port, err) < 0) {
		return -1;
	}
	/* Both MACs may have changed: the port's since creation, the
	 * bridge's when its first port arrived or its address was set. */
	free(r->ifaces[1].mac);
	r->ifaces[1].mac = xstrdup(port.mac_str);
	if (link_get_by_index(c->host_nl, br.ifindex, &br, err) < 0)
		return -1;
	free(r->ifaces[0].mac);
	r->ifaces[0].mac = xstrdup(br.mac_str);

	iface_result_finish(res, r, &c->dns, req->version);
	return 0;
}

/* DEL ----------------------------------------------------------------------*/

static int br_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct br_conf *c = req->priv;
	_cleanup_free_ struct cni_cidr *nets = NULL;
	size_t n = 0;
	bool gone = false;

	if (iface_open_cont(req, &c->cont_nl, &gone, err) < 0 && !gone)
		return -1;
	/* The interface first, then the reservation, as the reference: an
	 * address is never handed out while still configured. */
	if (!gone && iface_del(c->cont_nl, req->ifname, &nets, &n, err) < 0)
		return -1;
	if (c->l3 && iface_ipam_run(req, CNI_CMD_DEL, err) < 0)
		return -1;
	if (c->l3 && c->ip_masq &&
	    fw_masq_del(req->name, req->container_id, req->ifname, nets, n, err) < 0)
		return -1;
	if (c->spoofchk && spoofchk_del(req, err) < 0)
		return -1;
	return 0;
}

/* CHECK --------------------------------------------------------------------*/

static int check_bridge(struct br_conf *c, const struct cni_result *prev, struct cni_link *br,
			struct cni_err *err)
{
	int i = result_find_iface(prev, c->bridge, NULL);
	if (i < 0)
		return err_set(
		    err, CNI_ERR_INTERNAL,
		    "CNI created bridge %s in host namespace was not found in prevResult",
		    c->bridge);
	if (iface_check_link(c->host_nl, &prev->ifaces[i], "bridge", br, err) < 0)
		return -1;
	bool promisc = (br->flags & IFF_PROMISC) != 0;
	if (promisc != c->promisc)
		return err_set(
		    err, CNI_ERR_INTERNAL,
		    "bridge %s: configured promiscMode %s doesn't match current state %s",
		    c->bridge, c->promisc ? "true" : "false", promisc ? "true" : "false");
	return 0;
}

/* The host end: a veth of prevResult whose peer is the container end and
 * whose master is the bridge. Other interfaces are not ours and skipped,
 * but must exist in the host, as in the reference. */
static int check_veth(struct br_conf *c, const struct cni_result *prev, int cont_idx,
		      const struct cni_link *br, const struct cni_link *cont, struct cni_err *err)
{
	for (size_t i = 0; i < prev->n_ifaces; i++) {
		const struct cni_iface *f = &prev->ifaces[i];
		struct cni_link l;
		if ((int)i == cont_idx || streq(f->name, c->bridge))
			continue;
		if (!strempty(f->sandbox))
			return err_set(err, CNI_ERR_INTERNAL,
				       "interface %s should not be in a sandbox", f->name);
		if (iface_check_link(c->host_nl, &(struct cni_iface){.name = f->name}, NULL, &l,
				     err) < 0)
			return -1;
		if (!streq(l.kind, "veth") || l.ifindex != cont->parent ||
		    l.parent != cont->ifindex || l.master != br->ifindex)
			continue;
		if (!strempty(f->mac) && strcasecmp(f->mac, l.mac_str) != 0)
			return err_set(err, CNI_ERR_INTERNAL,
				       "interface %s MAC %s doesn't match %s", f->name, l.mac_str,
				       f->mac);
		return 0;
	}
	return err_set(err, CNI_ERR_INTERNAL, "CNI veth created for bridge %s was not found",
		       c->bridge);
}

static int br_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct br_conf *c = req->priv;
	const struct cni_result *prev = req->prev;
	struct cni_link br, cont;

	if (open_host(c, err) < 0 || iface_open_cont(req, &c->cont_nl, NULL, err) < 0)
		return -1;
	if (c->l3 && iface_ipam_run(req, CNI_CMD_CHECK, err) < 0)
		return -1;
	if (!prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int ci = iface_check_find(prev, req->ifname, req->netns_path, err);
	if (ci < 0 || check_bridge(c, prev, &br, err) < 0 ||
	    iface_check_link(c->cont_nl, &prev->ifaces[ci], "veth", &cont, err) < 0 ||
	    check_veth(c, prev, ci, &br, &cont, err) < 0 ||
	    iface_check_ips(c->cont_nl, req->ifname, prev, err) < 0)
		return -1;
	if (c->spoofchk && (ci < 1 || fw_spoofchk_check(prev->ifaces[ci - 1].name,
							  prev->ifaces[ci].mac, err) < 0))
		return ci < 1 ? err_set(err, CNI_ERR_INTERNAL, "macspoofchk: no host port in "
								 "prevResult")
			      : -1;
	if (c->l3 && c->ip_masq && iface_masq_check(req, prev, c->masq_backend, err) < 0)
		return -1;
	return 0;
}

/* STATUS, GC ---------------------------------------------------------------*/

static int br_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct br_conf *c = req->priv;
	if (!c->l3)
		return 0;
	return iface_ipam_run(req, CNI_CMD_STATUS, err);
}

static int br_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct br_conf *c = req->priv;
	if (!c->l3)
		return 0;
	if (iface_ipam_run(req, CNI_CMD_GC, err) < 0)
		return -1;
	if (c->ip_masq && fw_gc_valid(req->conf, req->name, fw_masq_gc, err) < 0)
		return -1;
	return 0;
}

const struct cni_applet bridge_applet = {
    .name = "bridge",
    .summary = "connect the container to a host bridge through a veth pair",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"bridge\",\n"
	     "  \"bridge\": \"cni0\", \"isGateway\": BOOL, \"isDefaultGateway\": BOOL,\n"
	     "  \"forceAddress\": BOOL, \"ipMasq\": BOOL, \"ipMasqBackend\": "
	     "\"iptables\"|\"nftables\",\n"
	     "  \"mtu\": N, \"hairpinMode\": BOOL, \"promiscMode\": BOOL, \"vlan\": N,\n"
	     "  \"vlanTrunk\": [{\"id\": N} | {\"minID\": N, \"maxID\": N}],\n"
	     "  \"preserveDefaultVlan\": BOOL, \"enabledad\": BOOL, \"macspoofchk\": BOOL,\n"
	     "  \"disableContainerInterface\": BOOL, \"portIsolation\": BOOL,\n"
	     "  \"ipam\": {\"type\": ...}, \"dns\": {...}}\n"
	     "Runtime: runtimeConfig.mac, args.cni.mac or CNI_ARGS MAC=\n",
    .parse = br_parse,
    .free = br_free,
    .add = br_add,
    .del = br_del,
    .check = br_check,
    .status = br_status,
    .gc = br_gc,
};
