#include "result.h"

#include "plugin.h"

struct cni_result *result_new(const char *cni_version)
{
	struct cni_result *r = xcalloc(1, sizeof(*r));
	r->cni_version = xstrdup(cni_version ? cni_version : CNI_SPEC_VERSION);
	return r;
}

void dns_clear(struct cni_dns *d)
{
	strv_free_n(d->nameservers, d->n_nameservers);
	strv_free_n(d->search, d->n_search);
	strv_free_n(d->options, d->n_options);
	free(d->domain);
	memset(d, 0, sizeof(*d));
}

void dns_add(char ***list, size_t *n, const char *s)
{
	*list = xrealloc(*list, (*n + 1) * sizeof(char *));
	(*list)[(*n)++] = xstrdup(s);
}

void dns_copy(struct cni_dns *dst, const struct cni_dns *src)
{
	dns_clear(dst);
	for (size_t i = 0; i < src->n_nameservers; i++)
		dns_add(&dst->nameservers, &dst->n_nameservers, src->nameservers[i]);
	for (size_t i = 0; i < src->n_search; i++)
		dns_add(&dst->search, &dst->n_search, src->search[i]);
	for (size_t i = 0; i < src->n_options; i++)
		dns_add(&dst->options, &dst->n_options, src->options[i]);
	dst->domain = src->domain ? xstrdup(src->domain) : NULL;
}

static void iface_clear(struct cni_iface *i)
{
	free(i->name);
	free(i->mac);
	free(i->sandbox);
	free(i->socket_path);
	free(i->pci_id);
}

void result_free(struct cni_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_ifaces; i++)
		iface_clear(&r->ifaces[i]);
	free(r->ifaces);
	free(r->ips);
	free(r->routes);
	dns_clear(&r->dns);
	free(r->cni_version);
	free(r);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct cni_result *result_clone(const struct cni_result *r)
{
	struct cni_result *c = result_new(r->cni_version);
	for (size_t i = 0; i < r->n_ifaces; i++) {
		const struct cni_iface *s = &r->ifaces[i];
		int k = result_add_iface(c, s->name, s->mac, s->sandbox);
		c->ifaces[k].socket_path = dup_or_null(s->socket_path);
		c->ifaces[k].pci_id = dup_or_null(s->pci_id);
		c->ifaces[k].mtu = s->mtu;
	}
	for (size_t i = 0; i < r->n_ips; i++) {
		xgrow(&c->ips, &c->cap_ips, c->n_ips, sizeof(*c->ips));
		c->ips[c->n_ips++] = r->ips[i];
	}
	for (size_t i = 0; i < r->n_routes; i++) {
		xgrow(&c->routes, &c->cap_routes, c->n_routes, sizeof(*c->routes));
		c->routes[c->n_routes++] = r->routes[i];
	}
	dns_copy(&c->dns, &r->dns);
	return c;
}

int result_add_iface(struct cni_result *r, const char *name, const char *mac, const char *sandbox)
{
	xgrow(&r->ifaces, &r->cap_ifaces, r->n_ifaces, sizeof(*r->ifaces));
	struct cni_iface *i = &r->ifaces[r->n_ifaces];
	memset(i, 0, sizeof(*i));
	i->name = xstrdup(name);
	i->mac = dup_or_null(mac && *mac ? mac : NULL);
	i->sandbox = dup_or_null(sandbox && *sandbox ? sandbox : NULL);
	return (int)r->n_ifaces++;
}

int result_add_ip(struct cni_result *r, const struct cni_cidr *addr, const struct cni_ip *gw,
		  int iface)
{
	xgrow(&r->ips, &r->cap_ips, r->n_ips, sizeof(*r->ips));
	struct cni_ipconf *c = &r->ips[r->n_ips];
	memset(c, 0, sizeof(*c));
	c->address = *addr;
	if (gw)
		c->gateway = *gw;
	c->iface = iface;
	return (int)r->n_ips++;
}

int result_add_route(struct cni_result *r, const struct cni_cidr *dst, const struct cni_ip *gw)
{
	xgrow(&r->routes, &r->cap_routes, r->n_routes, sizeof(*r->routes));
	struct cni_route *rt = &r->routes[r->n_routes];
	memset(rt, 0, sizeof(*rt));
	rt->dst = *dst;
	if (gw)
		rt->gw = *gw;
	rt->scope = -1;
	return (int)r->n_routes++;
}

int result_find_iface(const struct cni_result *r, const char *name, const char *sandbox)
{
	for (size_t i = 0; i < r->n_ifaces; i++) {
		const char *sb = r->ifaces[i].sandbox ? r->ifaces[i].sandbox : "";
		if (streq(r->ifaces[i].name, name) && streq(sb, sandbox ? sandbox : ""))
			return (int)i;
	}
	return -1;
}

/* Decoding. */

static int derr(struct cni_err *err, const struct cni_json *node, const char *what)
{
	char p[160];
	json_path(node, p, sizeof(p));
	return err_set(err, CNI_ERR_DECODE, "%s: %s", *p ? p : "result", what);
}

static int strlist(const struct cni_json *obj, const char *key, char ***out, size_t *n,
		   struct cni_err *err)
{
	const struct cni_json *a = json_get(obj, key);
	if (!a)
		return 0;
	if (a->type != JSON_ARRAY)
		return json_err(err, a, "expected a list of strings");
	for (size_t i = 0; i < a->arr.n; i++) {
		if (a->arr.v[i]->type != JSON_STRING)
			return json_err(err, a->arr.v[i], "expected string");
		dns_add(out, n, a->arr.v[i]->str);
	}
	return 0;
}

int dns_parse(const struct cni_json *obj, struct cni_dns *out, struct cni_err *err)
{
	if (!obj)
		return 0;
	if (obj->type != JSON_OBJECT)
		return json_err(err, obj, "expected object");
	const char *domain = NULL;
	if (strlist(obj, "nameservers", &out->nameservers, &out->n_nameservers, err) < 0 ||
	    strlist(obj, "search", &out->search, &out->n_search, err) < 0 ||
	    strlist(obj, "options", &out->options, &out->n_options, err) < 0 ||
	    json_get_str(obj, "domain", 0, &domain, err) < 0)
		return -1;
	if (domain) {
		free(out->domain);
		out->domain = xstrdup(domain);
	}
	return 0;
}

static int get_uint_field(const struct cni_json *o, const char *key, unsigned *out,
			  struct cni_err *err)
{
	uint64_t v = 0;
	int r = json_get_uint(o, key, 0, UINT32_MAX, &v, err);
	if (r > 0)
		*out = (unsigned)v;
	return r < 0 ? -1 : 0;
}

static int decode_route(const struct cni_json *o, struct cni_result *r, struct cni_err *err)
{
	struct cni_cidr dst;
	struct cni_ip gw = {0};
	if (!json_is(o, JSON_OBJECT))
		return derr(err, o, "expected a route object");
	if (json_get_cidr(o, "dst", JSON_REQ, &dst, err) < 0 ||
	    json_get_ip(o, "gw", 0, &gw, err) < 0)
		return -1;
	int k = result_add_route(r, &dst, gw.family ? &gw : NULL);
	struct cni_route *rt = &r->routes[k];
	int64_t scope = -1;
	if (get_uint_field(o, "mtu", &rt->mtu, err) < 0 ||
	    get_uint_field(o, "advmss", &rt->advmss, err) < 0 ||
	    get_uint_field(o, "priority", &rt->priority, err) < 0 ||
	    get_uint_field(o, "table", &rt->table, err) < 0 ||
	    json_get_int(o, "scope", 0, 0, 255, &scope, err) < 0)
		return -1;
	rt->scope = (int)scope;
	return 0;
}

static int decode_legacy_ip(const struct cni_json *o, struct cni_result *r, struct cni_err *err)
{
	struct cni_cidr addr;
	struct cni_ip gw = {0};
	const struct cni_json *routes = NULL;
	if (json_get_cidr(o, "ip", JSON_REQ, &addr, err) < 0 ||
	    json_get_ip(o, "gateway", 0, &gw, err) < 0 ||
	    json_get_arr(o, "routes", 0, &routes, err) < 0)
		return -1;
	result_add_ip(r, &addr, gw.family ? &gw : NULL, -1);
	for (size_t i = 0; i < json_len(routes); i++)
		if (decode_route(json_at(routes, i), r, err) < 0)
			return -1;
	return 0;
}

struct cni_result *result_decode(const struct cni_json *j, const char *version,
				 struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = NULL;
	const struct cni_json *ifs = NULL, *ips = NULL, *routes = NULL, *o = NULL;
	struct cni_err e = {0};

	if (!json_is(j, JSON_OBJECT)) {
		derr(err, j, "expected a result object");
		return NULL;
	}
	const char *rv = json_str(json_get(j, "cniVersion"));
	r = result_new(rv && *rv ? rv : version);
	if (version_cmp(r->cni_version, "0.3.0") < 0) {
		if (json_get_obj(j, "ip4", 0, &o, &e) < 0 || (o && decode_legacy_ip(o, r, &e) < 0))
			goto fail;
		o = NULL;
		if (json_get_obj(j, "ip6", 0, &o, &e) < 0 || (o && decode_legacy_ip(o, r, &e) < 0))
			goto fail;
	} else {
		if (json_get_arr(j, "interfaces", 0, &ifs, &e) < 0 ||
		    json_get_arr(j, "ips", 0, &ips, &e) < 0 ||
		    json_get_arr(j, "routes", 0, &routes, &e) < 0)
			goto fail;
		for (size_t i = 0; i < json_len(ifs); i++) {
			const struct cni_json *f = json_at(ifs, i);
			const char *name = NULL, *mac = NULL, *sb = NULL, *sp = NULL, *pci = NULL;
			if (!json_is(f, JSON_OBJECT)) {
				derr(&e, f, "expected an interface object");
				goto fail;
			}
			if (json_get_str(f, "name", JSON_REQ, &name, &e) < 0 ||
			    json_get_str(f, "mac", 0, &mac, &e) < 0 ||
			    json_get_str(f, "sandbox", 0, &sb, &e) < 0 ||
			    json_get_str(f, "socketPath", 0, &sp, &e) < 0 ||
			    json_get_str(f, "pciID", 0, &pci, &e) < 0)
				goto fail;
			int k = result_add_iface(r, name, mac, sb);
			r->ifaces[k].socket_path = dup_or_null(sp);
			r->ifaces[k].pci_id = dup_or_null(pci);
			if (get_uint_field(f, "mtu", &r->ifaces[k].mtu, &e) < 0)
				goto fail;
		}
		for (size_t i = 0; i < json_len(ips); i++) {
			const struct cni_json *c = json_at(ips, i);
			struct cni_cidr addr;
			struct cni_ip gw = {0};
			int64_t iface = -1;
			if (!json_is(c, JSON_OBJECT)) {
				derr(&e, c, "expected an IP configuration object");
				goto fail;
			}
			if (json_get_cidr(c, "address", JSON_REQ, &addr, &e) < 0 ||
			    json_get_ip(c, "gateway", 0, &gw, &e) < 0 ||
			    json_get_int(c, "interface", 0, 0, INT32_MAX, &iface, &e) < 0)
				goto fail;
			result_add_ip(r, &addr, gw.family ? &gw : NULL, (int)iface);
		}
		for (size_t i = 0; i < json_len(routes); i++)
			if (decode_route(json_at(routes, i), r, &e) < 0)
				goto fail;
	}
	o = NULL;
	if (json_get_obj(j, "dns", 0, &o, &e) < 0 || dns_parse(o, &r->dns, &e) < 0)
		goto fail;
	return TAKE_PTR(r);
fail:
	/* Whatever the getter said, a malformed result is a decode error. */
	err_set(err, CNI_ERR_DECODE, "%s", e.msg);
	if (e.details[0])
		err_append(err, "%s", e.details);
	return NULL;
}

/* Encoding. */

static void put_str(struct cni_json *o, const char *k, const char *v)
{
	if (v && *v)
		json_set(o, k, json_new_str(v));
}

static void put_uint(struct cni_json *o, const char *k, unsigned v)
{
	if (v)
		json_set(o, k, json_new_uint(v));
}

static void put_strv(struct cni_json *o, const char *k, char **v, size_t n)
{
	if (!n)
		return;
	struct cni_json *a = json_set(o, k, json_new(JSON_ARRAY));
	for (size_t i = 0; i < n; i++)
		json_push(a, json_new_str(v[i]));
}

static struct cni_json *encode_dns(const struct cni_dns *d)
{
	struct cni_json *o = json_new(JSON_OBJECT);
	put_strv(o, "nameservers", d->nameservers, d->n_nameservers);
	put_str(o, "domain", d->domain);
	put_strv(o, "search", d->search, d->n_search);
	put_strv(o, "options", d->options, d->n_options);
	return o;
}

static struct cni_json *encode_route(const struct cni_route *rt, bool v11)
{
	char b[CIDR_STRLEN];
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "dst", json_new_str(ip_cidr_format(&rt->dst, b)));
	if (rt->gw.family)
		json_set(o, "gw", json_new_str(ip_format(&rt->gw, b)));
	if (v11) {
		put_uint(o, "mtu", rt->mtu);
		put_uint(o, "advmss", rt->advmss);
		put_uint(o, "priority", rt->priority);
		put_uint(o, "table", rt->table);
		if (rt->scope >= 0)
			json_set(o, "scope", json_new_uint((unsigned)rt->scope));
	}
	return o;
}

static struct cni_json *encode_legacy(const struct cni_result *r, int family)
{
	const struct cni_ipconf *c = NULL;
	char b[CIDR_STRLEN];
	for (size_t i = 0; i < r->n_ips && !c; i++)
		if (r->ips[i].address.ip.family == family)
			c = &r->ips[i];
	if (!c)
		return NULL;
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "ip", json_new_str(ip_cidr_format(&c->address, b)));
	if (c->gateway.family)
		json_set(o, "gateway", json_new_str(ip_format(&c->gateway, b)));
	struct cni_json *routes = NULL;
	for (size_t i = 0; i < r->n_routes; i++) {
		if (r->routes[i].dst.ip.family != family)
			continue;
		if (!routes)
			routes = json_set(o, "routes", json_new(JSON_ARRAY));
		json_push(routes, encode_route(&r->routes[i], false));
	}
	return o;
}

struct cni_json *result_encode(const struct cni_result *r, const char *version,
			       struct cni_err *err)
{
	char b[CIDR_STRLEN];
	if (!version)
		version = r->cni_version;
	if (!version_supported(version)) {
		err_set(err, CNI_ERR_INCOMPATIBLE_VERSION, "cannot encode a result as version \"%s\"",
			version);
		return NULL;
	}
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "cniVersion", json_new_str(version));
	if (version_cmp(version, "0.3.0") < 0) {
		/* The 0.2.0 shape holds one address per family: keep the first
		 * of each, as the reference's converter does. */
		struct cni_json *v4 = encode_legacy(r, AF_INET), *v6 = encode_legacy(r, AF_INET6);
		if (v4)
			json_set(o, "ip4", v4);
		if (v6)
			json_set(o, "ip6", v6);
		json_set(o, "dns", encode_dns(&r->dns));
		return o;
	}
	bool v1 = version_cmp(version, "1.0.0") >= 0;
	bool v11 = version_cmp(version, "1.1.0") >= 0;
	if (r->n_ifaces) {
		struct cni_json *a = json_set(o, "interfaces", json_new(JSON_ARRAY));
		for (size_t i = 0; i < r->n_ifaces; i++) {
			const struct cni_iface *f = &r->ifaces[i];
			struct cni_json *fo = json_push(a, json_new(JSON_OBJECT));
			json_set(fo, "name", json_new_str(f->name));
			put_str(fo, "mac", f->mac);
			if (v11)
				put_uint(fo, "mtu", f->mtu);
			put_str(fo, "sandbox", f->sandbox);
			if (v11) {
				put_str(fo, "socketPath", f->socket_path);
				put_str(fo, "pciID", f->pci_id);
			}
		}
	}
	if (r->n_ips) {
		struct cni_json *a = json_set(o, "ips", json_new(JSON_ARRAY));
		for (size_t i = 0; i < r->n_ips; i++) {
			const struct cni_ipconf *c = &r->ips[i];
			struct cni_json *co = json_push(a, json_new(JSON_OBJECT));
			if (!v1)
				json_set(co, "version",
					 json_new_str(c->address.ip.family == AF_INET ? "4" : "6"));
			if (c->iface >= 0)
				json_set(co, "interface", json_new_uint((unsigned)c->iface));
			json_set(co, "address", json_new_str(ip_cidr_format(&c->address, b)));
			if (c->gateway.family)
				json_set(co, "gateway", json_new_str(ip_format(&c->gateway, b)));
		}
	}
	if (r->n_routes) {
		struct cni_json *a = json_set(o, "routes", json_new(JSON_ARRAY));
		for (size_t i = 0; i < r->n_routes; i++)
			json_push(a, encode_route(&r->routes[i], v11));
	}
	json_set(o, "dns", encode_dns(&r->dns));
	return o;
}
