#include "ipam-range.h"

#include <stdio.h>

#include "ipam-store.h"
#include "plugin.h"

/* An optional address field of a range, which must be of the subnet's
 * family and inside it. 0 absent, 1 set, -1 error. */
static int range_addr(const struct cni_json *obj, const char *key, const struct cni_cidr *subnet,
		      struct cni_ip *out, struct cni_err *err)
{
	int r = json_get_ip(obj, key, 0, out, err);
	if (r <= 0)
		return r;
	char s[CIDR_STRLEN], a[IP_STRLEN];
	if (!ip_cidr_contains(subnet, out))
		return json_err(err, json_get(obj, key), "%s is not in subnet %s",
				ip_format(out, a), ip_cidr_format(subnet, s));
	return 1;
}

int ipam_range_parse(const struct cni_json *obj, struct cni_range *out, struct cni_err *err)
{
	struct cni_range r = {0};
	char s[CIDR_STRLEN], a[IP_STRLEN], b[IP_STRLEN];

	if (!json_is(obj, JSON_OBJECT))
		return json_err(err, obj, "expected a range object {subnet, rangeStart, ...}");
	if (json_get_cidr(obj, "subnet", JSON_REQ, &r.subnet, err) < 0)
		return -1;
	const struct cni_json *sn = json_get(obj, "subnet");
	if (ip_cidr_has_host_bits(&r.subnet)) {
		struct cni_cidr net = ip_cidr_network(&r.subnet);
		return json_err(err, sn, "host bits set (the network is %s)",
				ip_cidr_format(&net, s));
	}
	/* One address for the gateway and one to hand out at the least. */
	if (r.subnet.prefix > ip_bits(&r.subnet.ip) - 2)
		return json_err(err, sn, "%s is too small to allocate from",
				ip_cidr_format(&r.subnet, s));

	int hs = range_addr(obj, "rangeStart", &r.subnet, &r.start, err);
	int he = hs < 0 ? -1 : range_addr(obj, "rangeEnd", &r.subnet, &r.end, err);
	int hg = he < 0 ? -1 : range_addr(obj, "gateway", &r.subnet, &r.gateway, err);
	if (hg < 0)
		return -1;
	if (!hs) {
		r.start = r.subnet.ip;
		ip_next(&r.start);
	}
	if (!he) {
		r.end = ip_cidr_last(&r.subnet);
		if (r.end.family == AF_INET)
			ip_prev(&r.end); /* not the broadcast address */
	}
	if (!hg) {
		r.gateway = r.subnet.ip;
		ip_next(&r.gateway);
	}
	if (ip_cmp(&r.start, &r.end) > 0)
		return json_err(err, json_get(obj, hs ? "rangeStart" : "rangeEnd"),
				"rangeStart %s is after rangeEnd %s", ip_format(&r.start, a),
				ip_format(&r.end, b));
	*out = r;
	return 0;
}

bool ipam_range_contains(const struct cni_range *r, const struct cni_ip *ip)
{
	return ip->family == r->start.family && ip_cmp(ip, &r->start) >= 0 &&
	       ip_cmp(ip, &r->end) <= 0;
}

bool ipam_range_overlaps(const struct cni_range *a, const struct cni_range *b)
{
	if (a->start.family != b->start.family)
		return false;
	return ip_cmp(&a->start, &b->end) <= 0 && ip_cmp(&b->start, &a->end) <= 0;
}

const struct cni_range *ipam_rangeset_find(const struct cni_rangeset *s, const struct cni_ip *ip)
{
	for (size_t i = 0; i < s->n; i++)
		if (ipam_range_contains(&s->r[i], ip))
			return &s->r[i];
	return NULL;
}

bool ipam_rangeset_overlaps(const struct cni_rangeset *a, const struct cni_rangeset *b)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (ipam_range_overlaps(&a->r[i], &b->r[j]))
				return true;
	return false;
}

void ipam_rangeset_clear(struct cni_rangeset *s)
{
	free(s->r);
	s->r = NULL;
	s->n = 0;
}

int ipam_rangeset_parse(const struct cni_json *arr, struct cni_rangeset *out, struct cni_err *err)
{
	char x[IP_STRLEN * 2 + 2], y[IP_STRLEN * 2 + 2];

	if (!json_is(arr, JSON_ARRAY))
		return json_err(err, arr, "expected a range set (a list of range objects)");
	if (!json_len(arr))
		return json_err(err, arr, "empty range set");
	struct cni_rangeset s = {.r = xcalloc(json_len(arr), sizeof(*s.r))};
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct cni_json *o = json_at(arr, i);
		struct cni_range *r = &s.r[s.n];
		if (ipam_range_parse(o, r, err) < 0)
			goto fail;
		if (s.n && r->start.family != s.r[0].start.family) {
			json_err(err, o, "mixed address families in one range set");
			goto fail;
		}
		for (size_t j = 0; j < s.n; j++) {
			if (!ipam_range_overlaps(&s.r[j], r))
				continue;
			struct cni_rangeset one = {&s.r[j], 1}, two = {r, 1};
			json_err(err, o, "range %s overlaps %s",
				 ipam_rangeset_format(&two, x, sizeof(x)),
				 ipam_rangeset_format(&one, y, sizeof(y)));
			goto fail;
		}
		s.n++;
	}
	*out = s;
	return 0;
fail:
	free(s.r);
	return -1;
}

/* b - a for a <= b of one family, saturating at UINT64_MAX. */
static uint64_t ip_distance(const struct cni_ip *a, const struct cni_ip *b)
{
	uint8_t d[16];
	int borrow = 0, n = ip_len(a);
	for (int i = n - 1; i >= 0; i--) {
		int v = (int)b->a[i] - (int)a->a[i] - borrow;
		borrow = v < 0;
		d[i] = (uint8_t)(v & 0xff);
	}
	uint64_t r = 0;
	for (int i = 0; i < n; i++) {
		if (i < n - 8 && d[i])
			return UINT64_MAX;
		r = r << 8 | d[i];
	}
	return r;
}

uint64_t ipam_range_size(const struct cni_range *r)
{
	uint64_t d = ip_distance(&r->start, &r->end);
	if (d == UINT64_MAX)
		return d;
	d++;
	if (ipam_range_contains(r, &r->gateway))
		d--;
	return d;
}

const char *ipam_rangeset_format(const struct cni_rangeset *s, char *buf, size_t size)
{
	char a[IP_STRLEN], b[IP_STRLEN];
	size_t n = 0;
	if (size)
		buf[0] = 0;
	for (size_t i = 0; i < s->n && n < size; i++) {
		int w = snprintf(buf + n, size - n, "%s%s-%s", i ? "," : "",
				 ip_format(&s->r[i].start, a), ip_format(&s->r[i].end, b));
		if (w < 0)
			break;
		n += (size_t)w;
	}
	return buf;
}

void ipam_iter_init(struct cni_range_iter *it, const struct cni_rangeset *s,
		    const struct cni_ip *last)
{
	memset(it, 0, sizeof(*it));
	it->set = s;
	/* A last address that no longer lies in the set (the ranges changed)
	 * only costs the round-robin position, as in the reference. */
	if (last && ipam_rangeset_find(s, last))
		it->last = *last;
}

/* One step forward, wrapping from a range's end to the next range's start
 * (never past the end of the address space: cur < end before ip_next). */
static void iter_step(struct cni_range_iter *it)
{
	const struct cni_range *r = &it->set->r[it->idx];
	if (ip_eq(&it->cur, &r->end)) {
		it->idx = (it->idx + 1) % it->set->n;
		it->cur = it->set->r[it->idx].start;
	} else {
		ip_next(&it->cur);
	}
}

bool ipam_iter_next(struct cni_range_iter *it, struct cni_ip *ip, const struct cni_range **r)
{
	if (!it->set || !it->set->n)
		return false;
	for (;;) {
		if (!it->started) {
			it->started = true;
			if (ip_isset(&it->last)) {
				for (it->idx = 0;
				     !ipam_range_contains(&it->set->r[it->idx], &it->last);
				     it->idx++)
					;
				it->cur = it->last;
				iter_step(it);
			} else {
				it->idx = 0;
				it->cur = it->set->r[0].start;
			}
			it->first = it->cur;
		} else {
			iter_step(it);
			if (ip_eq(&it->cur, &it->first)) {
				it->set = NULL; /* over, and stays over */
				return false;
			}
		}
		const struct cni_range *cr = &it->set->r[it->idx];
		if (!ip_eq(&it->cur, &cr->gateway)) {
			*ip = it->cur;
			if (r)
				*r = cr;
			return true;
		}
	}
}

int ipam_alloc(struct cni_store *s, const struct cni_store_scan *sc, const struct cni_rangeset *set,
	       size_t idx, const char *id, const char *ifname, const struct cni_ip *want,
	       struct cni_ipconf *out, struct cni_err *err)
{
	const struct cni_range *r = NULL;
	struct cni_ip ip = {0};
	char a[IP_STRLEN], rs[256];

	/* The spec forbids two ADDs of one attachment without a DEL between:
	 * a second reservation would leak when the first DEL runs. */
	for (size_t i = 0; i < sc->n; i++) {
		if (store_entry_owned(&sc->e[i], id, ifname) &&
		    ipam_rangeset_find(set, &sc->e[i].ip)) {
			err_set(
			    err, CNI_ERR_INTERNAL,
			    "%s is already allocated to %.64s, duplicate allocation is not allowed",
			    ip_format(&sc->e[i].ip, a), id);
			return err_append(err, "range set %zu, ifname %s", idx, ifname);
		}
	}
	if (want) {
		ip = *want;
		r = ipam_rangeset_find(set, &ip);
		if (!r)
			return err_set(err, CNI_ERR_INTERNAL,
				       "requested IP %s is not in range set %zu", ip_format(&ip, a),
				       idx);
		if (ip_eq(&ip, &r->gateway))
			return err_set(err, CNI_ERR_INTERNAL,
				       "requested IP %s is the gateway of range set %zu",
				       ip_format(&ip, a), idx);
		int k = store_scan_find(sc, &ip) ? 0 : store_reserve(s, &ip, id, ifname, err);
		if (k < 0)
			return -1;
		if (k == 0) {
			err_set(err, CNI_ERR_INTERNAL,
				"requested IP address %s is not available in range set %zu",
				ip_format(&ip, a), idx);
			return err_append(err, "%s", ipam_rangeset_format(set, rs, sizeof(rs)));
		}
	} else {
		struct cni_range_iter it;
		struct cni_ip last;
		int k = 0;
		ipam_iter_init(&it, set, store_get_last(s, idx, &last) > 0 ? &last : NULL);
		while (k == 0 && ipam_iter_next(&it, &ip, &r)) {
			if (store_scan_find(sc, &ip))
				continue;
			k = store_reserve(s, &ip, id, ifname, err);
		}
		if (k < 0)
			return -1;
		if (k == 0) {
			err_set(err, CNI_ERR_INTERNAL, "no IP addresses available in range set %zu",
				idx);
			return err_append(err, "%s", ipam_rangeset_format(set, rs, sizeof(rs)));
		}
	}
	out->address.ip = ip;
	out->address.prefix = r->subnet.prefix;
	out->gateway = r->gateway;
	out->iface = -1;
	if (store_set_last(s, idx, &ip, err) < 0) {
		store_unreserve(s, &ip, NULL);
		return -1;
	}
	return 0;
}

int ipam_routes_parse(const struct cni_json *ipam, struct cni_route **out, size_t *n,
		      struct cni_err *err)
{
	const struct cni_json *routes = NULL;
	*out = NULL;
	*n = 0;
	if (json_get_arr(ipam, "routes", 0, &routes, err) < 0)
		return -1;
	if (!json_len(routes))
		return 0;
	struct cni_route *v = xcalloc(json_len(routes), sizeof(*v));
	for (size_t i = 0; i < json_len(routes); i++) {
		const struct cni_json *o = json_at(routes, i);
		struct cni_route *rt = &v[i];
		uint64_t u[4] = {0};
		static const char *const keys[] = {"mtu", "advmss", "priority", "table"};
		int64_t scope = -1;
		if (!json_is(o, JSON_OBJECT)) {
			json_err(err, o, "expected a route object {dst, gw}");
			goto fail;
		}
		if (json_get_cidr(o, "dst", JSON_REQ, &rt->dst, err) < 0 ||
		    json_get_ip(o, "gw", 0, &rt->gw, err) < 0 ||
		    json_get_int(o, "scope", 0, 0, 255, &scope, err) < 0)
			goto fail;
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
			if (json_get_uint(o, keys[k], 0, UINT32_MAX, &u[k], err) < 0)
				goto fail;
		rt->mtu = (unsigned)u[0];
		rt->advmss = (unsigned)u[1];
		rt->priority = (unsigned)u[2];
		rt->table = (unsigned)u[3];
		rt->scope = (int)scope;
	}
	*out = v;
	*n = json_len(routes);
	return 0;
fail:
	free(v);
	return -1;
}

void ipam_resolv_conf_parse(const char *text, struct cni_dns *d)
{
	const char *p = text;
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		_cleanup_free_ char *line = xstrndup(p, len);
		p = eol ? eol + 1 : NULL;

		char *f[64];
		size_t nf = 0;
		for (char *save = NULL, *t = strtok_r(line, " \t\r\f\v", &save);
		     t && nf < ARRAY_SIZE(f); t = strtok_r(NULL, " \t\r\f\v", &save))
			f[nf++] = t;
		if (nf < 2 || f[0][0] == '#' || f[0][0] == ';')
			continue;
		if (streq(f[0], "nameserver")) {
			dns_add(&d->nameservers, &d->n_nameservers, f[1]);
		} else if (streq(f[0], "domain")) {
			free(d->domain);
			d->domain = xstrdup(f[1]);
		} else if (streq(f[0], "search")) {
			for (size_t i = 1; i < nf; i++)
				dns_add(&d->search, &d->n_search, f[i]);
		} else if (streq(f[0], "options")) {
			for (size_t i = 1; i < nf; i++)
				dns_add(&d->options, &d->n_options, f[i]);
		}
	}
}

int ipam_check_data_dir(const char *dir, const char *field, struct cni_err *err)
{
	if (dir[0] != '/')
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: \"%.64s\" is not an absolute path",
			       field, dir);
	if (strlen(dir) > 1024)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: path longer than 1024 bytes",
			       field);
	for (const char *p = dir; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: control character in path",
				       field);
		if (*p != '/')
			continue;
		size_t n = strcspn(p + 1, "/");
		if ((n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "%s: \"%.64s\" has a \".\" or \"..\" component", field, dir);
	}
	return 0;
}

/* "ip" or "ip/prefix" (CONVENTIONS.md "ips"); the prefix is not used:
 * the range decides it, as in the reference. */
static int parse_want(const char *s, struct cni_ip *out)
{
	struct cni_cidr c;
	if (s && strchr(s, '/')) {
		if (ip_cidr_parse(s, &c) < 0)
			return -1;
		*out = c.ip;
		return 0;
	}
	return ip_parse(s, out);
}

static void want_add(struct cni_ipam_conf *c, size_t *cap, const struct cni_ip *ip)
{
	for (size_t i = 0; i < c->n_want; i++)
		if (ip_eq(&c->want[i], ip))
			return;
	xgrow(&c->want, cap, c->n_want, sizeof(*c->want));
	c->want[c->n_want++] = *ip;
}

static int want_list(struct cni_ipam_conf *c, size_t *cap, const struct cni_json *obj,
		     struct cni_err *err)
{
	const struct cni_json *a = NULL;
	if (json_get_arr(obj, "ips", 0, &a, err) < 0)
		return -1;
	for (size_t i = 0; i < json_len(a); i++) {
		struct cni_ip ip;
		const struct cni_json *s = json_at(a, i);
		if (!json_is(s, JSON_STRING) || parse_want(s->str, &ip) < 0)
			return json_err(err, s, "expected an IP address (\"ip\" or \"ip/prefix\")");
		want_add(c, cap, &ip);
	}
	return 0;
}

static int want_parse(struct cni_ipam_conf *c, const struct cni_req *req, struct cni_err *err)
{
	size_t cap = 0;
	static const char *const known[] = {"IP", NULL};

	/* The reference loads CNI_ARGS into a struct with only IP (and
	 * IgnoreUnknown): any other key fails unless IgnoreUnknown is set. */
	if (args_check_known(&req->args, known, err) < 0)
		return -1;
	const struct cni_json *args = json_get(req->conf, "args");
	const struct cni_json *cni = json_get(args, "cni");
	if (cni && !json_is(cni, JSON_OBJECT))
		return json_err(err, cni, "expected an object");
	if (want_list(c, &cap, cni, err) < 0 || want_list(c, &cap, req->rt, err) < 0)
		return -1;
	if (c->n_want)
		return 0; /* CONVENTIONS.md: with args "ips", ignore CNI_ARGS IP */
	const char *ip = args_get(&req->args, "IP");
	if (!strempty(ip)) {
		struct cni_ip a;
		if (parse_want(ip, &a) < 0)
			return err_set(err, CNI_ERR_INVALID_ENV,
				       "CNI_ARGS: IP: \"%.64s\" is not an IP address", ip);
		want_add(c, &cap, &a);
	}
	return 0;
}

int ipam_check_per_family(const char *version, int n4, int n6, struct cni_err *err)
{
	if ((n4 > 1 || n6 > 1) && version_cmp(version, "0.3.0") < 0)
		return err_set(err, CNI_ERR_INCOMPATIBLE_VERSION,
			       "cniVersion %s does not support more than one address per family",
			       version);
	return 0;
}

struct cni_ipam_conf *ipam_conf_parse(const struct cni_req *req, struct cni_err *err)
{
	_cleanup_(ipam_conf_freep) struct cni_ipam_conf *c = xcalloc(1, sizeof(*c));
	const struct cni_json *ipam = req->ipam;
	_cleanup_free_ const struct cni_json **nodes = NULL; /* each set's JSON, for errors */
	size_t ncap = 0;

	if (!ipam) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "ipam: missing (required object)");
		return NULL;
	}
	if (env_check_netname(req->name, "name", err) < 0)
		return NULL;
	c->network = req->name;
	c->data_dir = IPAM_DEFAULT_DATA_DIR;
	const char *s = NULL;
	if (json_get_str(ipam, "dataDir", 0, &s, err) < 0)
		return NULL;
	if (!strempty(s)) {
		char p[64];
		if (ipam_check_data_dir(s, json_path_key(ipam, "dataDir", p, sizeof(p)), err) < 0)
			return NULL;
		c->data_dir = s;
	}
	s = NULL;
	if (json_get_str(ipam, "resolvConf", 0, &s, err) < 0)
		return NULL;
	c->resolv_conf = strempty(s) ? NULL : s;
	if (ipam_routes_parse(ipam, &c->routes, &c->n_routes, err) < 0)
		return NULL;

	const struct cni_json *rtranges = NULL, *ranges = NULL;
	if (json_get_arr(req->rt, "ipRanges", 0, &rtranges, err) < 0 ||
	    json_get_arr(ipam, "ranges", 0, &ranges, err) < 0)
		return NULL;
	/* The reference's order: capability first, then the deprecated
	 * top-level range, then "ranges"; set i keeps last_reserved_ip.i. */
	size_t nn = 0;
	for (size_t k = 0; k < json_len(rtranges); k++) {
		xgrow(&nodes, &ncap, nn, sizeof(*nodes));
		nodes[nn++] = json_at(rtranges, k);
	}
	if (json_get(ipam, "subnet")) {
		xgrow(&nodes, &ncap, nn, sizeof(*nodes));
		nodes[nn++] = ipam;
	}
	for (size_t k = 0; k < json_len(ranges); k++) {
		xgrow(&nodes, &ncap, nn, sizeof(*nodes));
		nodes[nn++] = json_at(ranges, k);
	}
	c->sets = xcalloc(nn ? nn : 1, sizeof(*c->sets));
	for (size_t k = 0; k < nn; k++) {
		/* Counted first, so that ipam_conf_free releases a half-parsed set. */
		struct cni_rangeset *set = &c->sets[c->n_sets++];
		if (nodes[k] == ipam) {
			set->r = xcalloc(1, sizeof(*set->r));
			set->n = 1;
			if (ipam_range_parse(ipam, set->r, err) < 0)
				return NULL;
		} else if (ipam_rangeset_parse(nodes[k], set, err) < 0) {
			return NULL;
		}
	}
	if (!c->n_sets) {
		json_err_key(err, ipam, "ranges", "no IP ranges specified");
		return NULL;
	}
	for (size_t i = 0; i < c->n_sets; i++) {
		for (size_t j = i + 1; j < c->n_sets; j++) {
			if (!ipam_rangeset_overlaps(&c->sets[i], &c->sets[j]))
				continue;
			char p[96];
			json_path(nodes[i], p, sizeof(p));
			if (nodes[j] == ipam)
				json_err_key(err, ipam, "subnet", "overlaps range set %s", p);
			else
				json_err(err, nodes[j], "overlaps range set %s",
					 nodes[i] == ipam ? "ipam.subnet" : p);
			return NULL;
		}
	}
	int n4 = 0, n6 = 0;
	for (size_t i = 0; i < c->n_sets; i++)
		ipam_rangeset_family(&c->sets[i]) == AF_INET ? n4++ : n6++;
	if (ipam_check_per_family(req->version, n4, n6, err) < 0)
		return NULL;
	if (want_parse(c, req, err) < 0)
		return NULL;
	return TAKE_PTR(c);
}

void ipam_conf_free(struct cni_ipam_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_sets; i++)
		ipam_rangeset_clear(&c->sets[i]);
	free(c->sets);
	free(c->want);
	free(c->routes);
	free(c);
}
