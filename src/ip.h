/* Addresses: IPv4 and IPv6 values, CIDR prefixes and the arithmetic IPAM
 * needs. Pure functions, no allocation, no kernel. An IPv4 address is kept
 * in the first 4 bytes of a[]; the rest are zero. */
#ifndef CNI_IP_H
#define CNI_IP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define IP_STRLEN 46	 /* INET6_ADDRSTRLEN */
#define CIDR_STRLEN 50 /* address + "/128" */

struct cni_ip {
	int family; /* AF_INET, AF_INET6, or 0 for "unset" */
	uint8_t a[16];
};

/* A prefix with the address as written: "10.1.2.3/24" keeps .3 (an
 * interface address), ip_cidr_network() clears the host bits. */
struct cni_cidr {
	struct cni_ip ip;
	int prefix;
};

static inline int ip_len(const struct cni_ip *ip)
{
	return ip->family == AF_INET ? 4 : 16;
}
static inline int ip_bits(const struct cni_ip *ip)
{
	return ip->family == AF_INET ? 32 : 128;
}
static inline bool ip_isset(const struct cni_ip *ip)
{
	return ip->family != 0;
}

/* Parse "1.2.3.4" or "fd00::1"; an IPv4-mapped IPv6 form ("::ffff:1.2.3.4")
 * is folded to IPv4 as Go's net.ParseIP does. Returns 0 or -1. */
int ip_parse(const char *s, struct cni_ip *out);
/* Canonical text (inet_ntop); buf must hold IP_STRLEN. Returns buf. */
const char *ip_format(const struct cni_ip *ip, char *buf);
/* Parse "a/n" with 0 <= n <= bits. Host bits are kept. 0 or -1. */
int ip_cidr_parse(const char *s, struct cni_cidr *out);
/* "addr/prefix"; buf must hold CIDR_STRLEN. Returns buf. */
const char *ip_cidr_format(const struct cni_cidr *c, char *buf);

/* <0, 0, >0; different families order v4 before v6. */
int ip_cmp(const struct cni_ip *a, const struct cni_ip *b);
static inline bool ip_eq(const struct cni_ip *a, const struct cni_ip *b)
{
	return ip_cmp(a, b) == 0;
}
/* a+1 / a-1; returns -1 (and leaves *ip) on overflow past the end of the
 * address space. */
int ip_next(struct cni_ip *ip);
int ip_prev(struct cni_ip *ip);
/* Add a signed offset; -1 on wrap. */
int ip_add(struct cni_ip *ip, int64_t off);

/* The prefix with host bits cleared. */
struct cni_cidr ip_cidr_network(const struct cni_cidr *c);
/* The last address of the prefix (IPv4 broadcast). */
struct cni_ip ip_cidr_last(const struct cni_cidr *c);
/* Whether host bits are set ("10.0.0.1/24" is not a network). */
bool ip_cidr_has_host_bits(const struct cni_cidr *c);
bool ip_cidr_contains(const struct cni_cidr *c, const struct cni_ip *ip);
/* Whether two prefixes share any address. */
bool ip_cidr_overlaps(const struct cni_cidr *a, const struct cni_cidr *b);
/* Netmask as an address (255.255.255.0). */
struct cni_ip ip_cidr_mask(const struct cni_cidr *c);
/* Convert a netmask address to a prefix length; -1 if not contiguous. */
int ip_mask_to_prefix(const struct cni_ip *mask);

#endif
