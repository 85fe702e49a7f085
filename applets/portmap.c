/* portmap: forward host ports to the container (chained plugin).
 *
 * ADD reads the container's first IPv4 and first IPv6 address from
 * prevResult (skipping addresses of host-side interfaces or of another
 * CNI_IFNAME, as the reference), installs DNAT for every entry of
 * runtimeConfig.portMappings and, with snat (the default), masquerading
 * for hairpin and localhost connections, then sets route_localnet on the
 * host interface that routes to the container so 127.0.0.1 can be mapped.
 * The result is prevResult unchanged. CHECK verifies the rules; DEL
 * removes the attachment's rules in every backend; GC removes the rules of
 * this network that belong to no attachment in cni.dev/valid-attachments;
 * STATUS fails with code 50 when no backend is usable.
 *
 * Differences from the reference, and why:
 * - The default backend is nftables (the reference: iptables), unless the
 *   config has iptables-only options (externalSetMarkChain, iptables-style
 *   conditions). The nftables layout is ours (table inet cni, one verdict
 *   map lookup per packet, see src/fw.h), not the reference's cni_hostport.
 * - Port numbers above 65535, unknown protocols, a bad hostIP or invalid
 *   conditions are code 7 naming the field, checked before anything is
 *   installed (the reference reports most of them as code 999 after
 *   parsing, or not at all). A missing protocol means "tcp".
 * - DEL cleans up even when the runtime gives no portMappings, and in both
 *   backends; the reference does nothing without portMappings.
 * - UDP conntrack entries to a mapped host port are deleted after ADD, as
 *   in the reference, through a raw ctnetlink socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <strings.h>

#include "applet.h"
#include "fw.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "route.h"
#include "sysctl.h"

/* Kubernetes uses bits 14 and 15, Calico 20-31: the reference picks 13. */
#define PM_DEFAULT_MARK_BIT 13

struct pm_conf {
	enum fw_backend backend;
	struct fw_pm_conf fw;
	struct fw_portmap *maps;
	const char **cond4, **cond6;
};

static void pm_free(void *priv)
{
	struct pm_conf *c = priv;
	if (!c)
		return;
	free(c->maps);
	free(c->cond4);
	free(c->cond6);
	free(c);
}

static void pm_freep(struct pm_conf **c)
{
	pm_free(*c);
}

static int pm_parse_mapping(const struct cni_json *o, struct fw_portmap *m, struct cni_err *err)
{
	int64_t v;
	const char *proto = NULL, *hip = NULL;
	if (!json_is(o, JSON_OBJECT))
		return json_err(err, o, "expected {hostPort, containerPort, protocol, hostIP}");
	if (json_get_int(o, "hostPort", JSON_REQ, 1, 65535, &v, err) < 0)
		return -1;
	m->host_port = (uint16_t)v;
	if (json_get_int(o, "containerPort", JSON_REQ, 1, 65535, &v, err) < 0)
		return -1;
	m->container_port = (uint16_t)v;
	if (json_get_str(o, "protocol", 0, &proto, err) < 0)
		return -1;
	if (strempty(proto) || !strcasecmp(proto, "tcp"))
		m->proto = IPPROTO_TCP;
	else if (!strcasecmp(proto, "udp"))
		m->proto = IPPROTO_UDP;
	else if (!strcasecmp(proto, "sctp"))
		m->proto = IPPROTO_SCTP;
	else
		return json_err_key(err, o, "protocol",
				    "unknown protocol \"%s\" (tcp, udp or sctp)", proto);
	if (json_get_str(o, "hostIP", 0, &hip, err) < 0)
		return -1;
	if (!strempty(hip) && ip_parse(hip, &m->host_ip) < 0)
		return json_err_key(err, o, "hostIP", "\"%s\" is not an IP address", hip);
	return 0;
}

/* The reference's detectBackendOfConditions applied to each list, and the
 * iptables-only externalSetMarkChain: which backend the config implies. */
static int pm_pick_backend(const struct cni_json *conf, struct pm_conf *c, struct cni_err *err)
{
	const char *ipt[3], *nft[2];
	size_t ni = 0, nn = 0;
	if (c->fw.setmark_chain)
		ipt[ni++] = "externalSetMarkChain";
	enum fw_backend b4 = fw_conditions_backend(c->fw.cond4, c->fw.n_cond4);
	enum fw_backend b6 = fw_conditions_backend(c->fw.cond6, c->fw.n_cond6);
	if (b4 == FW_BACKEND_IPTABLES)
		ipt[ni++] = "conditionsV4";
	if (b4 == FW_BACKEND_NFTABLES)
		nft[nn++] = "conditionsV4";
	if (b6 == FW_BACKEND_IPTABLES)
		ipt[ni++] = "conditionsV6";
	if (b6 == FW_BACKEND_NFTABLES)
		nft[nn++] = "conditionsV6";

	if (c->backend == FW_BACKEND_AUTO && ni && nn)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "%s: iptables syntax, but %s: nftables syntax", ipt[ni - 1], nft[0]);
	if (c->backend == FW_BACKEND_AUTO)
		c->backend = ni ? FW_BACKEND_IPTABLES : nn ? FW_BACKEND_NFTABLES : FW_BACKEND_AUTO;
	if (c->backend == FW_BACKEND_NFTABLES && ni)
		return json_err_key(err, conf, ipt[0],
				    "iptables-specific option, but backend is \"nftables\"");
	if (c->backend == FW_BACKEND_IPTABLES && nn)
		return json_err_key(err, conf, nft[0],
				    "nftables-specific option, but backend is \"iptables\"");
	return 0;
}

/* An iptables chain name as a jump target: 1..28 printable characters
 * without spaces or quotes. */
static bool pm_chain_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 28 || s[0] == '-' || s[0] == '!')
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s == '"' || *s == '\'' || *s == '\\' || *s == 0x7f)
			return false;
	return true;
}

/* The container addresses, as the reference picks them. */
static void pm_container_ips(const struct cni_req *req, struct fw_pm_conf *fw)
{
	const struct cni_result *r = req->prev;
	for (size_t i = 0; r && i < r->n_ips; i++) {
		const struct cni_ipconf *ip = &r->ips[i];
		struct cni_cidr *dst = ip->address.ip.family == AF_INET ? &fw->ip4 : &fw->ip6;
		if (ip_isset(&dst->ip))
			continue;
		if (ip->iface >= 0 && (size_t)ip->iface < r->n_ifaces) {
			const struct cni_iface *f = &r->ifaces[ip->iface];
			if (!streq(f->name, req->ifname) || strempty(f->sandbox))
				continue;
		}
		*dst = ip->address;
	}
}

static int pm_parse(struct cni_req *req, struct cni_err *err)
{
	const struct cni_json *conf = req->conf;
	_cleanup_(pm_freep) struct pm_conf *c = xcalloc(1, sizeof(*c));
	c->fw.att = (struct fw_att){req->name, req->container_id, req->ifname};
	c->fw.snat = true;
	c->fw.mark_bit = PM_DEFAULT_MARK_BIT;

	if (fw_parse_backend(conf, "backend",
			     FW_ALLOW(FW_BACKEND_NFTABLES) | FW_ALLOW(FW_BACKEND_IPTABLES),
			     &c->backend, err) < 0 ||
	    json_get_bool(conf, "snat", 0, &c->fw.snat, err) < 0 ||
	    json_get_bool(conf, "masqAll", 0, &c->fw.masq_all, err) < 0)
		return -1;
	int64_t bit;
	int has_bit = json_get_int(conf, "markMasqBit", 0, 0, 31, &bit, err);
	if (has_bit < 0)
		return -1;
	if (has_bit)
		c->fw.mark_bit = (int)bit;
	int has_ext = json_get_str(conf, "externalSetMarkChain", 0, &c->fw.setmark_chain, err);
	if (has_ext < 0)
		return -1;
	if (has_ext && !pm_chain_name_ok(c->fw.setmark_chain))
		return json_err_key(err, conf, "externalSetMarkChain",
				    "not a valid iptables chain name");
	if (has_bit && has_ext)
		return json_err_key(err, conf, "markMasqBit",
				    "cannot be set together with externalSetMarkChain");
	if (json_get_strv(conf, "conditionsV4", 0, &c->cond4, &c->fw.n_cond4, err) < 0 ||
	    json_get_strv(conf, "conditionsV6", 0, &c->cond6, &c->fw.n_cond6, err) < 0)
		return -1;
	c->fw.cond4 = c->cond4;
	c->fw.cond6 = c->cond6;
	if (pm_pick_backend(conf, c, err) < 0)
		return -1;

	const struct cni_json *maps = NULL;
	if (req->rt && json_get_arr(req->rt, "portMappings", 0, &maps, err) < 0)
		return -1;
	c->maps = xcalloc(json_len(maps) + 1, sizeof(*c->maps));
	for (size_t i = 0; i < json_len(maps); i++)
		if (pm_parse_mapping(json_at(maps, i), &c->maps[i], err) < 0)
			return -1;
	c->fw.maps = c->maps;
	c->fw.n_maps = json_len(maps);

	/* Conditions are spliced into rules: check them now, so that a bad
	 * one is a config error and nothing gets installed. */
	if (c->fw.n_cond4 || c->fw.n_cond6) {
		enum fw_backend b = c->backend;
		if (fw_backend_resolve(&b, err) < 0)
			return -1;
		if (fw_check_conditions(b, AF_INET, c->fw.cond4, c->fw.n_cond4, "conditionsV4",
					err) < 0 ||
		    fw_check_conditions(b, AF_INET6, c->fw.cond6, c->fw.n_cond6, "conditionsV6",
					err) < 0)
			return -1;
	}
	pm_container_ips(req, &c->fw);
	req->priv = TAKE_PTR(c);
	return 0;
}

/* The host interface that routes to ip: longest prefix of the main table,
 * lowest metric (the reference asks the kernel with RouteGet). "" if none. */
static void pm_route_dev(const struct cni_ip *ip, char *name)
{
	struct cni_err e = {0};
	name[0] = 0;
	_cleanup_(netlink_closep) struct cni_nl *nl = netlink_open(NULL, &e);
	if (!nl)
		return;
	struct cni_rt *rt = NULL;
	size_t n = 0;
	if (route_list(nl, AF_INET, ROUTE_TABLE_MAIN, 0, &rt, &n, &e) < 0)
		return;
	const struct cni_rt *best = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!rt[i].ifindex || !ip_cidr_contains(&rt[i].dst, ip))
			continue;
		if (!best || rt[i].dst.prefix > best->dst.prefix ||
		    (rt[i].dst.prefix == best->dst.prefix && rt[i].priority < best->priority))
			best = &rt[i];
	}
	struct cni_link l;
	if (best && link_get_by_index(nl, best->ifindex, &l, &e) == 0)
		snprintf(name, LINK_NAME_MAX, "%s", l.name);
	free(rt);
}

static void pm_undo(struct cni_req *req, void *arg)
{
	struct pm_conf *c = arg;
	struct cni_err ignored = {0};
	fw_portmap_del(c->backend, &c->fw, &ignored);
}

static int pm_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct pm_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: missing (portmap must be called as a chained plugin)");
	if (!c->fw.n_maps)
		return 0;
	if (!ip_isset(&c->fw.ip4.ip) && !ip_isset(&c->fw.ip6.ip))
		return 0; /* nothing to forward to, as the reference */
	if (fw_portmap_add(c->backend, &c->fw, err) < 0)
		return -1;
	req_push_undo(req, pm_undo, c, NULL);

	/* UDP entries made before the mapping would keep bypassing it; drop
	 * them now that the rules are in. Failure is only logged, as in the
	 * reference. */
	_cleanup_free_ uint16_t *udp = xcalloc(c->fw.n_maps, sizeof(*udp));
	size_t n_udp = 0;
	for (size_t i = 0; i < c->fw.n_maps; i++)
		if (c->fw.maps[i].proto == IPPROTO_UDP)
			udp[n_udp++] = c->fw.maps[i].host_port;
	for (int f = AF_INET; n_udp && f; f = f == AF_INET ? AF_INET6 : 0) {
		struct cni_err e = {0};
		if (ip_isset(f == AF_INET ? &c->fw.ip4.ip : &c->fw.ip6.ip) &&
		    fw_conntrack_flush_udp(f, udp, n_udp, &e) < 0)
			fprintf(stderr, "portmap: stale UDP conntrack entries kept: %s %s\n", e.msg,
				e.details);
	}

	if (c->fw.snat && ip_isset(&c->fw.ip4.ip)) {
		/* 127.0.0.0/8 sources may not be routed out of an interface
		 * unless route_localnet is set on it. */
		char dev[LINK_NAME_MAX];
		pm_route_dev(&c->fw.ip4.ip, dev);
		if (dev[0]) {
			char key[64 + LINK_NAME_MAX];
			snprintf(key, sizeof(key), "net/ipv4/conf/%s/route_localnet", dev);
			if (sysctl_set(key, "1", err) < 0)
				return err_append(err, "unable to enable route_localnet on %s",
						  dev);
		}
	}
	return 0;
}

static int pm_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct pm_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: missing (required by CHECK)");
	if (!c->fw.n_maps || (!ip_isset(&c->fw.ip4.ip) && !ip_isset(&c->fw.ip6.ip)))
		return 0;
	return fw_portmap_check(c->backend, &c->fw, err);
}

static int pm_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct pm_conf *c = req->priv;
	return fw_portmap_del(c->backend, &c->fw, err);
}

static int pm_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return fw_gc_valid(req->conf, req->name, fw_portmap_gc, err);
}

static int pm_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct pm_conf *c = req->priv;
	return fw_backend_status(c->backend, err);
}

const struct cni_applet portmap_applet = {
    .name = "portmap",
    .summary = "forward host ports to the container (chained)",
    .usage = "Chained after an interface plugin, with capability portMappings:\n"
	     "  {\"type\": \"portmap\", \"capabilities\": {\"portMappings\": true},\n"
	     "   \"backend\": \"nftables\"|\"iptables\", \"snat\": true, \"masqAll\": false,\n"
	     "   \"markMasqBit\": 13, \"externalSetMarkChain\": CHAIN,\n"
	     "   \"conditionsV4\": [...], \"conditionsV6\": [...]}\n"
	     "runtimeConfig.portMappings: [{\"hostPort\": 8080, \"containerPort\": 80,\n"
	     "  \"protocol\": \"tcp\"|\"udp\"|\"sctp\", \"hostIP\": IP}]\n"
	     "See cni-portmap(8).\n",
    .parse = pm_parse,
    .free = pm_free,
    .add = pm_add,
    .check = pm_check,
    .del = pm_del,
    .gc = pm_gc,
    .status = pm_status,
};
