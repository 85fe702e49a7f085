#include "ip.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ip_parse(const char *s, struct cni_ip *out)
{
	struct cni_ip ip = {0};
	if (!s || !*s)
		return -1;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, ip.a) != 1)
			return -1;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(ip.a, mapped, 12) == 0) {
			memmove(ip.a, ip.a + 12, 4);
			memset(ip.a + 4, 0, 12);
			ip.family = AF_INET;
		} else {
			ip.family = AF_INET6;
		}
	} else {
		/* inet_pton accepts only dotted quads, like Go: no "010.1". */
		if (inet_pton(AF_INET, s, ip.a) != 1)
			return -1;
		ip.family = AF_INET;
	}
	*out = ip;
	return 0;
}

const char *ip_format(const struct cni_ip *ip, char *buf)
{
	if (!ip->family || !inet_ntop(ip->family, ip->a, buf, IP_STRLEN))
		strcpy(buf, "<nil>");
	return buf;
}

int ip_cidr_parse(const char *s, struct cni_cidr *out)
{
	if (!s)
		return -1;
	const char *slash = strchr(s, '/');
	if (!slash || slash == s || slash - s >= IP_STRLEN)
		return -1;
	char a[IP_STRLEN];
	memcpy(a, s, (size_t)(slash - s));
	a[slash - s] = 0;
	struct cni_cidr c;
	if (strchr(a, ':')) {
		/* Keep the IPv6 family for a mapped address with a /n > 32
		 * prefix; Go reads "::ffff:1.2.3.4/120" as IPv6. */
		if (inet_pton(AF_INET6, a, c.ip.a) != 1)
			return -1;
		c.ip.family = AF_INET6;
	} else if (ip_parse(a, &c.ip) < 0) {
		return -1;
	}
	const char *p = slash + 1;
	if (!*p || strlen(p) > 3)
		return -1;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -1;
	if (p[0] == '0' && p[1])
		return -1; /* no leading zeros, as Go */
	c.prefix = atoi(p);
	if (c.prefix > ip_bits(&c.ip))
		return -1;
	*out = c;
	return 0;
}

const char *ip_cidr_format(const struct cni_cidr *c, char *buf)
{
	char a[IP_STRLEN];
	snprintf(buf, CIDR_STRLEN, "%s/%d", ip_format(&c->ip, a), c->prefix);
	return buf;
}

int ip_cmp(const struct cni_ip *a, const struct cni_ip *b)
{
	if (a->family != b->family)
		return a->family == AF_INET ? -1 : (b->family == AF_INET ? 1 : a->family - b->family);
	return memcmp(a->a, b->a, (size_t)ip_len(a));
}

int ip_add(struct cni_ip *ip, int64_t off)
{
	struct cni_ip r = *ip;
	int n = ip_len(ip);
	int carry = 0;
	uint64_t mag = off < 0 ? (uint64_t)(-(off + 1)) + 1 : (uint64_t)off;
	if (off >= 0) {
		for (int i = n - 1; i >= 0; i--) {
			unsigned v = r.a[i] + (unsigned)(mag & 0xff) + (unsigned)carry;
			r.a[i] = (uint8_t)v;
			carry = v > 0xff;
			mag >>= 8;
		}
	} else {
		for (int i = n - 1; i >= 0; i--) {
			int v = (int)r.a[i] - (int)(mag & 0xff) - carry;
			carry = v < 0;
			r.a[i] = (uint8_t)(v & 0xff);
			mag >>= 8;
		}
	}
	if (carry || mag)
		return -1;
	*ip = r;
	return 0;
}

int ip_next(struct cni_ip *ip)
{
	return ip_add(ip, 1);
}

int ip_prev(struct cni_ip *ip)
{
	return ip_add(ip, -1);
}

struct cni_ip ip_cidr_mask(const struct cni_cidr *c)
{
	struct cni_ip m = {.family = c->ip.family};
	int bits = c->prefix;
	for (int i = 0; i < ip_len(&c->ip); i++) {
		int b = bits >= 8 ? 8 : (bits > 0 ? bits : 0);
		m.a[i] = (uint8_t)(b ? 0xff << (8 - b) : 0);
		bits -= 8;
	}
	return m;
}

struct cni_cidr ip_cidr_network(const struct cni_cidr *c)
{
	struct cni_cidr r = *c;
	struct cni_ip m = ip_cidr_mask(c);
	for (int i = 0; i < 16; i++)
		r.ip.a[i] &= m.a[i];
	return r;
}

struct cni_ip ip_cidr_last(const struct cni_cidr *c)
{
	struct cni_ip r = c->ip;
	struct cni_ip m = ip_cidr_mask(c);
	for (int i = 0; i < ip_len(&r); i++)
		r.a[i] |= (uint8_t)~m.a[i];
	return r;
}

bool ip_cidr_has_host_bits(const struct cni_cidr *c)
{
	struct cni_cidr n = ip_cidr_network(c);
	return !ip_eq(&n.ip, &c->ip);
}

bool ip_cidr_contains(const struct cni_cidr *c, const struct cni_ip *ip)
{
	if (c->ip.family != ip->family)
		return false;
	struct cni_ip m = ip_cidr_mask(c);
	for (int i = 0; i < ip_len(ip); i++)
		if ((ip->a[i] & m.a[i]) != (c->ip.a[i] & m.a[i]))
			return false;
	return true;
}

bool ip_cidr_overlaps(const struct cni_cidr *a, const struct cni_cidr *b)
{
	if (a->ip.family != b->ip.family)
		return false;
	return ip_cidr_contains(a, &b->ip) || ip_cidr_contains(b, &a->ip);
}

int ip_mask_to_prefix(const struct cni_ip *mask)
{
	int p = 0;
	bool zero = false;
	for (int i = 0; i < ip_len(mask); i++) {
		for (int b = 7; b >= 0; b--) {
			bool set = mask->a[i] >> b & 1;
			if (set && zero)
				return -1;
			if (set)
				p++;
			else
				zero = true;
		}
	}
	return p;
}
