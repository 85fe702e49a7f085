/* firewall: let the container's traffic through the host's FORWARD
 * filtering (chained plugin), and optionally isolate bridges.
 *
 * ADD accepts forwarded traffic from every address of prevResult and the
 * replies to it (conntrack RELATED,ESTABLISHED), ahead of the host's own
 * FORWARD rules and policy, then applies ingressPolicy to the bridge named
 * by the first interface of prevResult. The result is prevResult. CHECK
 * verifies the rules; DEL removes them (isolation rules are per bridge and
 * stay, as in the reference); GC removes nftables chains of attachments no
 * longer valid.
 *
 * Backends: "iptables" (the reference's CNI-FORWARD / CNI-ADMIN chains,
 * CNI-ISOLATION-STAGE-1/2), "firewalld" (sources in a zone, through
 * firewall-cmd; code 50 when firewalld does not run) and "nftables" (our
 * table inet cni, chains fw_forward / fw_admin / fw-<tag>). Without
 * "backend": firewalld when it runs (as the reference), else iptables when
 * the host has an iptables FORWARD chain, else nftables. The iptables
 * preference is ours: an accept in one netfilter table does not override a
 * drop in another, so the rules must live where the FORWARD policy is.
 *
 * Differences from the reference: an unknown ingressPolicy or backend is
 * code 7 at parse time (the reference fails later, code 999); "nftables"
 * is a backend; GC exists for the nftables backend. */
#include <stdio.h>

#include "applet.h"
#include "fw.h"
#include "plugin.h"

struct fwp_conf {
	enum fw_backend backend;
	struct fw_filter_conf fw;
	struct cni_cidr *ips;
};

static void fwp_free(void *priv)
{
	struct fwp_conf *c = priv;
	if (!c)
		return;
	free(c->ips);
	free(c);
}

static void fwp_freep(struct fwp_conf **c)
{
	fwp_free(*c);
}

static bool fwp_chain_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 28 || s[0] == '-' || s[0] == '!')
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s == '"' || *s == '\'' || *s == '\\' || *s == 0x7f)
			return false;
	return true;
}

static int fwp_parse(struct cni_req *req, struct cni_err *err)
{
	const struct cni_json *conf = req->conf;
	_cleanup_(fwp_freep) struct fwp_conf *c = xcalloc(1, sizeof(*c));
	c->fw.att = (struct fw_att){req->name, req->container_id, req->ifname};
	c->fw.zone = "trusted";
	if (fw_parse_backend(conf, "backend",
			     FW_ALLOW(FW_BACKEND_IPTABLES) | FW_ALLOW(FW_BACKEND_NFTABLES) |
				 FW_ALLOW(FW_BACKEND_FIREWALLD),
			     &c->backend, err) < 0)
		return -1;
	const char *admin = NULL, *zone = NULL, *policy = NULL;
	if (json_get_str(conf, "iptablesAdminChainName", 0, &admin, err) < 0 ||
	    json_get_str(conf, "firewalldZone", 0, &zone, err) < 0 ||
	    json_get_str(conf, "ingressPolicy", 0, &policy, err) < 0)
		return -1;
	if (!strempty(admin)) {
		if (!fwp_chain_name_ok(admin))
			return json_err_key(err, conf, "iptablesAdminChainName",
					    "not a valid iptables chain name");
		c->fw.admin_chain = admin;
	}
	if (!strempty(zone)) {
		if (!name_is_safe(zone, 64) || strpbrk(zone, " \t"))
			return json_err_key(err, conf, "firewalldZone", "not a valid zone name");
		c->fw.zone = zone;
	}
	if (strempty(policy) || streq(policy, "open"))
		c->fw.ingress = FW_INGRESS_OPEN;
	else if (streq(policy, "same-bridge"))
		c->fw.ingress = FW_INGRESS_SAME_BRIDGE;
	else if (streq(policy, "isolated"))
		c->fw.ingress = FW_INGRESS_ISOLATED;
	else
		return json_err_key(err, conf, "ingressPolicy",
				    "unknown ingress policy \"%s\" (open, same-bridge, isolated)",
				    policy);

	const struct cni_result *r = req->prev;
	c->ips = xcalloc(r && r->n_ips ? r->n_ips : 1, sizeof(*c->ips));
	for (size_t i = 0; r && i < r->n_ips; i++)
		c->ips[c->fw.n_ips++] = r->ips[i].address;
	c->fw.ips = c->ips;
	if (r && r->n_ifaces)
		c->fw.bridge = r->ifaces[0].name;
	req->priv = TAKE_PTR(c);
	return 0;
}

static int fwp_need_prev(const struct cni_req *req, struct cni_err *err)
{
	if (!req->prev)
		return err_set(
		    err, CNI_ERR_INVALID_CONFIG,
		    "prevResult: missing (firewall must be chained after an interface plugin)");
	return 0;
}

static void fwp_undo(struct cni_req *req, void *arg)
{
	struct fwp_conf *c = arg;
	struct cni_err ignored = {0};
	fw_filter_del(c->backend, &c->fw, &ignored);
}

static int fwp_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct fwp_conf *c = req->priv;
	if (fwp_need_prev(req, err) < 0)
		return -1;
	if (c->fw.ingress != FW_INGRESS_OPEN && strempty(c->fw.bridge))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ingressPolicy: needs the bridge as first interface of prevResult "
			       "(chain \"firewall\" after \"bridge\")");
	/* The name goes into rules: no quotes, backslashes or spaces. */
	if (c->fw.ingress != FW_INGRESS_OPEN &&
	    (!name_is_safe(c->fw.bridge, 15) || strpbrk(c->fw.bridge, "\"\\ \t")))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult.interfaces[0].name: not a valid interface name");
	if (fw_filter_add(c->backend, &c->fw, err) < 0)
		return -1;
	req_push_undo(req, fwp_undo, c, NULL);
	return 0;
}

static int fwp_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct fwp_conf *c = req->priv;
	if (fwp_need_prev(req, err) < 0)
		return -1;
	return fw_filter_check(c->backend, &c->fw, err);
}

static int fwp_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct fwp_conf *c = req->priv;
	return fw_filter_del(c->backend, &c->fw, err);
}

static int fwp_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return fw_gc_valid(req->conf, req->name, fw_filter_gc, err);
}

static int fwp_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct fwp_conf *c = req->priv;
	return fw_backend_status(c->backend, err);
}

const struct cni_applet firewall_applet = {
    .name = "firewall",
    .summary = "allow the container's traffic through the host firewall (chained)",
    .usage = "Chained after an interface plugin:\n"
	     "  {\"type\": \"firewall\", \"backend\": \"iptables\"|\"nftables\"|\"firewalld\",\n"
	     "   \"iptablesAdminChainName\": \"CNI-ADMIN\", \"firewalldZone\": \"trusted\",\n"
	     "   \"ingressPolicy\": \"open\"|\"same-bridge\"|\"isolated\"}\n"
	     "See cni-firewall(8).\n",
    .parse = fwp_parse,
    .free = fwp_free,
    .add = fwp_add,
    .check = fwp_check,
    .del = fwp_del,
    .gc = fwp_gc,
    .status = fwp_status,
};
