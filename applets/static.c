/* static: IPAM that reports the addresses it is given.
 *
 * ADD returns ipam.addresses (each "address" in CIDR form, host bits kept,
 * with its optional "gateway"), ipam.routes and ipam.dns. Addresses may
 * instead come from the request, in the reference's priority order:
 * runtimeConfig.ips (capability "ips"), else args.cni.ips, each replacing
 * the configured list; else CNI_ARGS IP= (comma-separated CIDRs, added to
 * the configured list) with GATEWAY= (comma-separated; each applies to the
 * addresses whose subnet holds it). Nothing is reserved, so DEL, GC and
 * STATUS have nothing to do. CHECK verifies that prevResult holds every
 * address, with its gateway when one is configured.
 *
 * Differences from the reference: a gateway of the other address family is
 * refused (code 7), and CHECK fails for an address missing from prevResult
 * where the reference skips it. */
#include <linux/capability.h>

#include "applet.h"
#include "ipam-range.h"
#include "plugin.h"

struct st_addr {
	struct cni_cidr addr;
	struct cni_ip gw; /* family 0: none */
};

struct st_conf {
	struct st_addr *a;
	size_t n, cap;
	struct cni_route *routes;
	size_t n_routes;
	struct cni_dns dns;
};

static void st_free(void *priv)
{
	struct st_conf *c = priv;
	if (!c)
		return;
	free(c->a);
	free(c->routes);
	dns_clear(&c->dns);
	free(c);
}

static void st_freep(struct st_conf **c)
{
	st_free(*c);
}

static void st_push(struct st_conf *c, const struct cni_cidr *addr, const struct cni_ip *gw)
{
	xgrow(&c->a, &c->cap, c->n, sizeof(*c->a));
	c->a[c->n].addr = *addr;
	c->a[c->n].gw = gw ? *gw : (struct cni_ip){0};
	c->n++;
}

static int st_gw_family(const struct cni_json *o, const struct st_addr *a, struct cni_err *err)
{
	if (ip_isset(&a->gw) && a->gw.family != a->addr.ip.family)
		return json_err(err, json_get(o, "gateway"), "not of the address's family");
	return 0;
}

static int st_config_addrs(const struct cni_json *ipam, struct st_conf *c, struct cni_err *err)
{
	const struct cni_json *arr = NULL;
	if (json_get_arr(ipam, "addresses", 0, &arr, err) < 0)
		return -1;
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct cni_json *o = json_at(arr, i);
		struct st_addr a = {0};
		if (!json_is(o, JSON_OBJECT))
			return json_err(err, o, "expected an address object {address, gateway}");
		if (json_get_cidr(o, "address", JSON_REQ, &a.addr, err) < 0 ||
		    json_get_ip(o, "gateway", 0, &a.gw, err) < 0 || st_gw_family(o, &a, err) < 0)
			return -1;
		st_push(c, &a.addr, &a.gw);
	}
	return 0;
}

/* args.cni.ips or runtimeConfig.ips: 1 when present (the list replaces
 * every other source), 0 absent. Prefixes are required here. */
static int st_ips(const struct cni_json *obj, struct st_conf *c, struct cni_err *err)
{
	const struct cni_json *arr = NULL;
	if (json_get_arr(obj, "ips", 0, &arr, err) < 0)
		return -1;
	if (!json_len(arr))
		return 0;
	c->n = 0;
	for (size_t i = 0; i < json_len(arr); i++) {
		struct cni_cidr a;
		if (json_as_cidr(json_at(arr, i), &a, err) < 0)
			return -1;
		st_push(c, &a, NULL);
	}
	return 1;
}

/* One item of a comma-separated CNI_ARGS value at p: the text up to the
 * next comma (*len bytes) copied into item, blanks around it dropped.
 * NULL when it does not fit in size bytes: too long for an address. */
static const char *st_arg_item(const char *p, char *item, size_t size, size_t *len)
{
	*len = strcspn(p, ",");
	if (*len >= size)
		return NULL;
	snprintf(item, size, "%.*s", (int)*len, p);
	char *t = item + strspn(item, " \t");
	t[strcspn(t, " \t")] = 0;
	return t;
}

static int st_cni_args(const struct cni_req *req, struct st_conf *c, struct cni_err *err)
{
	const char *ips = args_get(&req->args, "IP"), *gws = args_get(&req->args, "GATEWAY");
	char item[IP_STRLEN + 8];
	size_t len = 0;

	for (const char *p = ips; !strempty(p); p = p[len] ? p + len + 1 : NULL) {
		const char *t = st_arg_item(p, item, sizeof(item), &len);
		struct cni_cidr a;
		if (!t || ip_cidr_parse(t, &a) < 0)
			return err_set(err, CNI_ERR_INVALID_ENV,
				       "CNI_ARGS: IP: \"%.*s\" is not in CIDR notation",
				       (int)(len > 60 ? 60 : len), p);
		st_push(c, &a, NULL);
	}
	for (const char *p = gws; !strempty(p); p = p[len] ? p + len + 1 : NULL) {
		const char *t = st_arg_item(p, item, sizeof(item), &len);
		struct cni_ip gw;
		if (!t || ip_parse(t, &gw) < 0)
			return err_set(err, CNI_ERR_INVALID_ENV,
				       "CNI_ARGS: GATEWAY: \"%.*s\" is not an IP address",
				       (int)(len > 60 ? 60 : len), p);
		for (size_t i = 0; i < c->n; i++)
			if (ip_cidr_contains(&c->a[i].addr, &gw))
				c->a[i].gw = gw;
	}
	return 0;
}

static int st_parse(struct cni_req *req, struct cni_err *err)
{
	static const char *const known[] = {"IP", "GATEWAY", NULL};
	_cleanup_(st_freep) struct st_conf *c = xcalloc(1, sizeof(*c));
	const struct cni_json *ipam = req->ipam;

	if (!ipam)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "ipam: missing (required object)");
	if (args_check_known(&req->args, known, err) < 0 || st_config_addrs(ipam, c, err) < 0 ||
	    ipam_routes_parse(ipam, &c->routes, &c->n_routes, err) < 0 ||
	    dns_parse(json_get(ipam, "dns"), &c->dns, err) < 0)
		return -1;

	const struct cni_json *cni = json_get(json_get(req->conf, "args"), "cni");
	if (cni && !json_is(cni, JSON_OBJECT))
		return json_err(err, cni, "expected an object");
	int r = st_ips(req->rt, c, err);
	if (r == 0)
		r = st_ips(cni, c, err);
	if (r == 0)
		r = st_cni_args(req, c, err);
	if (r < 0)
		return -1;

	int n4 = 0, n6 = 0;
	for (size_t i = 0; i < c->n; i++)
		c->a[i].addr.ip.family == AF_INET ? n4++ : n6++;
	if (ipam_check_per_family(req->version, n4, n6, err) < 0)
		return -1;
	req->priv = TAKE_PTR(c);
	return 0;
}

static int st_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct st_conf *c = req->priv;
	for (size_t i = 0; i < c->n; i++)
		result_add_ip(res, &c->a[i].addr, &c->a[i].gw, -1);
	for (size_t i = 0; i < c->n_routes; i++) {
		xgrow(&res->routes, &res->cap_routes, res->n_routes, sizeof(*res->routes));
		res->routes[res->n_routes++] = c->routes[i];
	}
	dns_copy(&res->dns, &c->dns);
	return 0;
}

static int st_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct st_conf *c = req->priv;
	char a[CIDR_STRLEN], g[IP_STRLEN];
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: missing (required by CHECK)");
	for (size_t i = 0; i < c->n; i++) {
		const struct cni_ipconf *found = NULL;
		for (size_t k = 0; k < req->prev->n_ips && !found; k++)
			if (ip_eq(&req->prev->ips[k].address.ip, &c->a[i].addr.ip))
				found = &req->prev->ips[k];
		if (!found)
			return err_set(err, CNI_ERR_INTERNAL, "%s not found in prevResult",
				       ip_cidr_format(&c->a[i].addr, a));
		if (ip_isset(&c->a[i].gw) && !ip_eq(&c->a[i].gw, &found->gateway))
			return err_set(
			    err, CNI_ERR_INTERNAL, "%s has gateway %s in prevResult, want %s",
			    ip_cidr_format(&c->a[i].addr, a), ip_format(&found->gateway, g),
			    ip_format(&c->a[i].gw, (char[IP_STRLEN]){0}));
	}
	return 0;
}

const struct cni_applet static_applet = {
	.name = "static",
	.summary = "IPAM: report fixed addresses, routes and DNS",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": ..., \"ipam\": {\n"
		 "  \"type\": \"static\",\n"
		 "  \"addresses\": [{\"address\": CIDR, \"gateway\": IP}, ...],\n"
		 "  \"routes\": [{\"dst\": CIDR, \"gw\": IP}],\n"
		 "  \"dns\": {\"nameservers\": [...], \"domain\": D, \"search\": [...]}}}\n"
		 "Addresses may also come from runtimeConfig.ips, args.cni.ips or\n"
		 "CNI_ARGS IP=CIDR[,CIDR];GATEWAY=IP[,IP].\n",
	.flags = APPLET_IPAM,
	/* Needs none; 0 would mean the network set. */
	.caps = 1ull << CAP_DAC_OVERRIDE,
	.parse = st_parse,
	.free = st_free,
	.add = st_add,
	.check = st_check,
};
