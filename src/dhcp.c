#include "dhcp.h"

#include <arpa/inet.h>
#include <stdio.h>

static const uint8_t magic_cookie[4] = {99, 130, 83, 99};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t get16be(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16be(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static bool opt_present(const struct dhcp_msg *m, uint8_t code)
{
	return m->opt_has[code / 8] & (1u << (code % 8));
}

/* One option instance found while scanning a field. */
struct seg {
	uint8_t code;
	uint8_t len;
	const uint8_t *val;
};

/* Scan one option area (the options field, or file/sname when overloaded)
 * appending instances to segs. A field may end without END (sname/file are
 * fixed size); running past its end is malformed. */
static int scan_area(const uint8_t *p, size_t n, struct seg *segs, size_t *nseg, size_t max)
{
	size_t i = 0;
	while (i < n) {
		uint8_t code = p[i++];
		if (code == DHCP_OPT_PAD)
			continue;
		if (code == DHCP_OPT_END)
			return 0;
		if (i >= n)
			return -1;
		uint8_t len = p[i++];
		if (len > n - i)
			return -1;
		if (*nseg >= max)
			return -1;
		segs[(*nseg)++] = (struct seg){code, len, p + i};
		i += len;
	}
	return 0;
}

int dhcp_msg_parse(const uint8_t *p, size_t n, struct dhcp_msg *m)
{
	memset(m, 0, offsetof(struct dhcp_msg, opt_data));
	m->opt_used = 0;
	if (n < DHCP_OPTIONS_OFF || n > DHCP_MAX_MSG || memcmp(p + DHCP_FIXED_LEN, magic_cookie, 4))
		return -1;
	m->op = p[0];
	m->htype = p[1];
	m->hlen = p[2];
	memcpy(&m->xid, p + 4, 4);
	m->xid = ntohl(m->xid);
	m->secs = get16be(p + 8);
	m->flags = get16be(p + 10);
	m->ciaddr = get32(p + 12);
	m->yiaddr = get32(p + 16);
	m->siaddr = get32(p + 20);
	m->giaddr = get32(p + 24);
	memcpy(m->chaddr, p + 28, 16);

	/* Every option byte costs at least two bytes of framing, so the
	 * message length bounds the number of instances. */
	struct seg segs[DHCP_MAX_MSG / 2];
	size_t nseg = 0;
	size_t max = ARRAY_SIZE(segs);
	if (scan_area(p + DHCP_OPTIONS_OFF, n - DHCP_OPTIONS_OFF, segs, &nseg, max) < 0)
		return -1;
	/* Option 52: the file (1), sname (2) or both (3) fields carry more
	 * options, read in that order after the options field. */
	uint8_t overload = 0;
	for (size_t i = 0; i < nseg; i++)
		if (segs[i].code == DHCP_OPT_OVERLOAD && segs[i].len == 1)
			overload = segs[i].val[0];
	if ((overload & 1) && scan_area(p + 108, 128, segs, &nseg, max) < 0)
		return -1;
	if ((overload & 2) && scan_area(p + 44, 64, segs, &nseg, max) < 0)
		return -1;

	/* Join the instances of each code in the order they appeared. The
	 * joined data cannot exceed the message, so opt_data always fits. */
	for (size_t i = 0; i < nseg; i++) {
		uint8_t c = segs[i].code;
		if (opt_present(m, c))
			continue;
		m->opt_has[c / 8] |= 1u << (c % 8);
		m->opt_off[c] = (uint16_t)m->opt_used;
		for (size_t k = i; k < nseg; k++) {
			if (segs[k].code != c)
				continue;
			memcpy(m->opt_data + m->opt_used, segs[k].val, segs[k].len);
			m->opt_used += segs[k].len;
		}
		m->opt_len[c] = (uint16_t)(m->opt_used - m->opt_off[c]);
	}
	size_t tl;
	const uint8_t *t = dhcp_msg_opt(m, DHCP_OPT_MSG_TYPE, &tl);
	if (t && tl == 1)
		m->type = t[0];
	return 0;
}

const uint8_t *dhcp_msg_opt(const struct dhcp_msg *m, uint8_t code, size_t *len)
{
	if (!opt_present(m, code))
		return NULL;
	if (len)
		*len = m->opt_len[code];
	return m->opt_data + m->opt_off[code];
}

int dhcp_msg_opt_u32(const struct dhcp_msg *m, uint8_t code, uint32_t *out)
{
	size_t len;
	const uint8_t *v = dhcp_msg_opt(m, code, &len);
	if (!v || len != 4)
		return -1;
	*out = get32(v);
	return 0;
}

void dhcp_buf_start(struct dhcp_buf *b, const struct dhcp_hdr *h)
{
	memset(b->b, 0, sizeof(b->b));
	b->b[0] = DHCP_BOOTREQUEST;
	b->b[1] = 1; /* Ethernet */
	b->b[2] = 6;
	uint32_t xid = htonl(h->xid);
	memcpy(b->b + 4, &xid, 4);
	put16be(b->b + 8, h->secs);
	put16be(b->b + 10, h->flags);
	memcpy(b->b + 12, &h->ciaddr, 4);
	if (h->mac)
		memcpy(b->b + 28, h->mac, 6);
	memcpy(b->b + DHCP_FIXED_LEN, magic_cookie, 4);
	b->len = DHCP_OPTIONS_OFF;
	uint8_t t = h->type;
	dhcp_buf_opt(b, DHCP_OPT_MSG_TYPE, &t, 1);
}

int dhcp_buf_opt(struct dhcp_buf *b, uint8_t code, const void *data, size_t len)
{
	const uint8_t *d = data;
	/* Keep one byte for END. */
	size_t need = len + 2 * (len / 255 + (len % 255 || !len ? 1 : 0));
	if (code == DHCP_OPT_PAD || code == DHCP_OPT_END || need > sizeof(b->b) - 1 - b->len)
		return -1;
	do {
		size_t k = len > 255 ? 255 : len;
		b->b[b->len++] = code;
		b->b[b->len++] = (uint8_t)k;
		memcpy(b->b + b->len, d, k);
		b->len += k;
		d += k;
		len -= k;
	} while (len);
	return 0;
}

int dhcp_buf_opt_u32(struct dhcp_buf *b, uint8_t code, uint32_t v_be)
{
	return dhcp_buf_opt(b, code, &v_be, 4);
}

int dhcp_buf_finish(struct dhcp_buf *b)
{
	if (b->len >= sizeof(b->b))
		return -1;
	b->b[b->len++] = DHCP_OPT_END;
	if (b->len < DHCP_MIN_MSG)
		b->len = DHCP_MIN_MSG; /* already zeroed: PAD */
	return 0;
}

/* RFC 1071 sum, folded by the caller. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)(p[n - 1] << 8);
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t udp_pseudo(const uint8_t *ip, uint16_t ulen)
{
	uint8_t ph[12];
	memcpy(ph, ip + 12, 8); /* source and destination */
	ph[8] = 0;
	ph[9] = IPPROTO_UDP;
	put16be(ph + 10, ulen);
	return csum_add(0, ph, sizeof(ph));
}

size_t dhcp_udp_wrap(uint8_t *out, size_t cap, uint32_t src, uint32_t dst, const uint8_t *payload,
		     size_t len)
{
	size_t total = DHCP_UDP_HDR + len;
	if (total > cap || total > 0xffff)
		return (size_t)-1;
	uint8_t *ip = out, *udp = out + 20;
	memset(out, 0, DHCP_UDP_HDR);
	ip[0] = 0x45;
	ip[1] = 0x10; /* low delay, as most clients send */
	put16be(ip + 2, (uint16_t)total);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put16be(ip + 10, csum_fold(csum_add(0, ip, 20)));

	uint16_t ulen = (uint16_t)(8 + len);
	put16be(udp, DHCP_CLIENT_PORT);
	put16be(udp + 2, DHCP_SERVER_PORT);
	put16be(udp + 4, ulen);
	memmove(udp + 8, payload, len);
	uint16_t c = csum_fold(csum_add(udp_pseudo(ip, ulen), udp, ulen));
	put16be(udp + 6, c ? c : 0xffff);
	return total;
}

int dhcp_udp_unwrap(const uint8_t *pkt, size_t n, bool check_udp, const uint8_t **payload,
		    size_t *len, uint32_t *src)
{
	if (n < DHCP_UDP_HDR || pkt[0] >> 4 != 4)
		return -1;
	size_t ihl = (size_t)(pkt[0] & 0xf) * 4;
	size_t total = get16be(pkt + 2);
	if (ihl < 20 || total < ihl + 8 || total > n || pkt[9] != IPPROTO_UDP)
		return -1;
	if (get16be(pkt + 6) & 0x3fff) /* MF or a fragment offset */
		return -1;
	if (csum_fold(csum_add(0, pkt, ihl)) != 0)
		return -1;
	const uint8_t *udp = pkt + ihl;
	size_t ulen = get16be(udp + 4);
	if (get16be(udp + 2) != DHCP_CLIENT_PORT || ulen < 8 || ulen > total - ihl)
		return -1;
	if (check_udp && get16be(udp + 6) != 0 &&
	    csum_fold(csum_add(udp_pseudo(pkt, (uint16_t)ulen), udp, ulen)) != 0)
		return -1;
	*payload = udp + 8;
	*len = ulen - 8;
	*src = get32(pkt + 12);
	return 0;
}

/* The names of dhcp-options(5) that make sense for a container client. */
static const struct {
	const char *name;
	uint8_t code;
} option_names[] = {
	{"subnet-mask", 1},
	{"time-offset", 2},
	{"routers", 3},
	{"domain-name-servers", 6},
	{"host-name", 12},
	{"domain-name", 15},
	{"interface-mtu", 26},
	{"broadcast-address", 28},
	{"static-routes", 33},
	{"ntp-servers", 42},
	{"vendor-encapsulated-options", 43},
	{"dhcp-requested-address", 50},
	{"dhcp-lease-time", 51},
	{"dhcp-server-identifier", 54},
	{"dhcp-renewal-time", 58},
	{"dhcp-rebinding-time", 59},
	{"vendor-class-identifier", 60},
	{"dhcp-client-identifier", 61},
	{"user-class", 77},
	{"domain-search", 119},
	{"classless-static-routes", 121},
};

int dhcp_option_code(const char *name)
{
	if (strempty(name))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(option_names); i++)
		if (streq(name, option_names[i].name))
			return option_names[i].code;
	int v = 0;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9' || p - name >= 3)
			return -1;
		v = v * 10 + (*p - '0');
	}
	/* PAD and END are framing, not options. */
	return v >= 1 && v <= 254 ? v : -1;
}

void dhcp_msg_times(const struct dhcp_msg *m, uint32_t *lease, uint32_t *t1, uint32_t *t2)
{
	uint32_t l = 0, a = 0, b = 0;
	l = dhcp_msg_opt_u32(m, DHCP_OPT_LEASE_TIME, &l) == 0 ? ntohl(l) : 3600;
	if (l == UINT32_MAX) {
		*lease = *t1 = *t2 = UINT32_MAX;
		return;
	}
	uint32_t d1 = l / 2, d2 = (uint32_t)((uint64_t)l * 7 / 8);
	bool h1 = dhcp_msg_opt_u32(m, DHCP_OPT_T1, &a) == 0;
	bool h2 = dhcp_msg_opt_u32(m, DHCP_OPT_T2, &b) == 0;
	a = h1 ? ntohl(a) : d1;
	b = h2 ? ntohl(b) : d2;
	/* RFC 2131 4.4.5: T1 < T2 < lease; fix what a server got wrong. */
	if (b > l)
		b = d2;
	if (a > b)
		a = b < d1 ? b : d1;
	*lease = l;
	*t1 = a;
	*t2 = b;
}

int dhcp_classless_routes(const uint8_t *val, size_t len, struct dhcp_route *out, size_t max)
{
	size_t i = 0, n = 0;
	while (i < len) {
		int w = val[i++];
		size_t sig = ((size_t)w + 7) / 8;
		if (w > 32 || len - i < sig + 4)
			return -1;
		uint8_t d[4] = {0};
		memcpy(d, val + i, sig);
		i += sig;
		if (n < max) {
			uint32_t dst;
			memcpy(&dst, d, 4);
			/* Host bits beyond the width are ignored (RFC 3442 says
			 * they must be zero; a route with them set would be
			 * refused by the kernel). */
			uint32_t mask = w ? htonl(~0u << (32 - w)) : 0;
			out[n].dst = dst & mask;
			out[n].prefix = w;
			out[n].gw = get32(val + i);
		}
		n++;
		i += 4;
	}
	return (int)(n < max ? n : max);
}

static void ip4(struct cni_ip *ip, uint32_t a)
{
	memset(ip, 0, sizeof(*ip));
	ip->family = AF_INET;
	memcpy(ip->a, &a, 4);
}

/* gw is always set, 0.0.0.0 included: an absent gw would mean "via the
 * default gateway" to the interface plugin (SPEC.md, routes). */
static void add_route(struct cni_result *r, uint32_t dst, int prefix, uint32_t gw, int scope,
		      unsigned priority)
{
	struct cni_cidr c = {.prefix = prefix};
	struct cni_ip g;
	ip4(&c.ip, dst);
	ip4(&g, gw);
	int k = result_add_route(r, &c, &g);
	r->routes[k].scope = scope;
	r->routes[k].priority = priority;
}

/* Option 33: (destination, router) pairs, the destination's mask implied
 * by its class; class D and E destinations have none and are skipped. */
static void static_routes(const uint8_t *v, size_t len, struct cni_result *r, unsigned priority)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint8_t first = v[i];
		int prefix = first < 128 ? 8 : first < 192 ? 16 : first < 224 ? 24 : -1;
		if (prefix < 0)
			continue;
		uint32_t dst = get32(v + i) & htonl(~0u << (32 - prefix));
		add_route(r, dst, prefix, get32(v + i + 4), -1, priority);
	}
}

int dhcp_msg_result(const struct dhcp_msg *m, unsigned priority, struct cni_result *r,
		    struct cni_err *err)
{
	uint32_t mask;
	if (dhcp_msg_opt_u32(m, DHCP_OPT_SUBNET_MASK, &mask) < 0)
		return err_set(err, CNI_ERR_INTERNAL,
			       "DHCP option Subnet Mask not found in DHCPACK");
	struct cni_cidr addr;
	struct cni_ip mip;
	ip4(&addr.ip, m->yiaddr);
	ip4(&mip, mask);
	addr.prefix = ip_mask_to_prefix(&mip);
	if (addr.prefix < 0 || m->yiaddr == 0)
		return err_set(err, CNI_ERR_INTERNAL, "DHCPACK has no usable address or mask");

	size_t rl = 0;
	const uint8_t *routers = dhcp_msg_opt(m, DHCP_OPT_ROUTER, &rl);
	struct cni_ip gw = {0};
	if (routers && rl >= 4)
		ip4(&gw, get32(routers));
	result_add_ip(r, &addr, gw.family ? &gw : NULL, -1);

	/* RFC 3442: with option 121 the client ignores option 33 and the
	 * router option for routing. */
	size_t cl = 0;
	const uint8_t *cv = dhcp_msg_opt(m, DHCP_OPT_CLASSLESS_ROUTES, &cl);
	struct dhcp_route rts[DHCP_MAX_MSG / 5];
	int n = cv ? dhcp_classless_routes(cv, cl, rts, ARRAY_SIZE(rts)) : -1;
	if (n > 0) {
		for (int i = 0; i < n; i++)
			add_route(r, rts[i].dst, rts[i].prefix, rts[i].gw,
				  rts[i].gw ? -1 : 253 /* RT_SCOPE_LINK */, priority);
	} else {
		size_t sl = 0;
		const uint8_t *sv = dhcp_msg_opt(m, DHCP_OPT_STATIC_ROUTES, &sl);
		if (sv)
			static_routes(sv, sl, r, priority);
		if (gw.family)
			add_route(r, 0, 0, get32(routers), -1, priority);
	}

	size_t dl = 0;
	const uint8_t *dns = dhcp_msg_opt(m, DHCP_OPT_DNS, &dl);
	for (size_t i = 0; dns && i + 4 <= dl; i += 4) {
		char b[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, dns + i, b, sizeof(b));
		dns_add(&r->dns.nameservers, &r->dns.n_nameservers, b);
	}
	size_t nl = 0;
	const uint8_t *dom = dhcp_msg_opt(m, DHCP_OPT_DOMAIN_NAME, &nl);
	/* Servers sometimes count a trailing NUL; anything else that is not
	 * printable makes the name unusable for resolv.conf. */
	while (dom && nl && dom[nl - 1] == 0)
		nl--;
	bool ok = dom && nl;
	for (size_t i = 0; ok && i < nl; i++)
		ok = dom[i] > ' ' && dom[i] < 0x7f;
	if (ok) {
		free(r->dns.domain);
		r->dns.domain = xstrndup((const char *)dom, nl);
	}
	return 0;
}
