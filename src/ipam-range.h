/* Address ranges for IPAM: a range is a subnet with the first and last
 * address that may be handed out and a gateway that never is; a range set
 * is a list of disjoint ranges of one family from which exactly one
 * address is allocated. Also the host-local configuration (ranges, legacy
 * top-level subnet, ipRanges capability, requested addresses, routes,
 * dataDir, resolvConf) and the route and resolv.conf parsers that static
 * shares.
 *
 * Defaults follow the reference allocator: rangeStart is network+1,
 * rangeEnd the last address (IPv4: the one before broadcast), gateway
 * network+1. A subnet must leave room for at least two addresses, so /31,
 * /32, /127 and /128 are refused as the reference refuses them. */
#ifndef CNI_IPAM_RANGE_H
#define CNI_IPAM_RANGE_H

#include "applet.h"
#include "ipam-store.h"

#define IPAM_DEFAULT_DATA_DIR "/var/lib/cni/networks"

struct cni_range {
	struct cni_cidr subnet;	  /* host bits clear */
	struct cni_ip start, end; /* inclusive, inside subnet, start <= end */
	struct cni_ip gateway;	  /* inside subnet; never allocated */
};

struct cni_rangeset {
	struct cni_range *r;
	size_t n;
};

/* Parse one range object ({subnet, rangeStart, rangeEnd, gateway}) and fill
 * the defaults. Errors are CNI_ERR_INVALID_CONFIG naming the field's JSON
 * path. */
int ipam_range_parse(const struct cni_json *obj, struct cni_range *out, struct cni_err *err);
/* Parse an array of range objects into *out (owned: ipam_rangeset_clear).
 * Refuses an empty set, mixed families and overlapping ranges. */
int ipam_rangeset_parse(const struct cni_json *arr, struct cni_rangeset *out, struct cni_err *err);
void ipam_rangeset_clear(struct cni_rangeset *s);

/* Whether ip lies in [start, end] (the gateway counts: it is in the range,
 * it is just never handed out). */
bool ipam_range_contains(const struct cni_range *r, const struct cni_ip *ip);
bool ipam_range_overlaps(const struct cni_range *a, const struct cni_range *b);
/* The range of s holding ip, or NULL. */
const struct cni_range *ipam_rangeset_find(const struct cni_rangeset *s, const struct cni_ip *ip);
bool ipam_rangeset_overlaps(const struct cni_rangeset *a, const struct cni_rangeset *b);
static inline int ipam_rangeset_family(const struct cni_rangeset *s)
{
	return s->n ? s->r[0].start.family : 0;
}
/* Number of allocatable addresses (gateway excluded), saturating at
 * UINT64_MAX: enough to tell whether a store of files can fill it. */
uint64_t ipam_range_size(const struct cni_range *r);
/* "start-end,start-end" into buf (truncated to size). Returns buf. */
const char *ipam_rangeset_format(const struct cni_rangeset *s, char *buf, size_t size);

/* Round-robin walk over a range set: from the address after `last` when
 * last lies in the set, else from the first range's start; every address
 * of the set except the gateways is returned once (last itself at the
 * end), then the walk stops. */
struct cni_range_iter {
	const struct cni_rangeset *set;
	size_t idx;
	struct cni_ip cur, first;
	struct cni_ip last; /* family 0: none */
	bool started;
};
void ipam_iter_init(struct cni_range_iter *it, const struct cni_rangeset *s,
		    const struct cni_ip *last);
/* The next candidate and its range; false when the walk is over. */
bool ipam_iter_next(struct cni_range_iter *it, struct cni_ip *ip, const struct cni_range **r);

/* Reserve one address of range set `set` (number idx: its round-robin
 * cursor is last_reserved_ip.<idx>) for (id, ifname) in the locked store
 * s, whose reservations sc holds: *want when given (it must lie in the set
 * and not be its gateway), else the next free address after the cursor.
 * Fails when the attachment already holds an address of the set, when
 * *want is taken, or when the set is full (code 999, as the reference).
 * Fills *out (the range's prefix and gateway) and moves the cursor. */
int ipam_alloc(struct cni_store *s, const struct cni_store_scan *sc, const struct cni_rangeset *set,
	       size_t idx, const char *id, const char *ifname, const struct cni_ip *want,
	       struct cni_ipconf *out, struct cni_err *err);

/* Routes of an ipam object ("routes": [{dst, gw, mtu, advmss, priority,
 * table, scope}]). *out is owned (free). Code 7 naming the path. */
int ipam_routes_parse(const struct cni_json *ipam, struct cni_route **out, size_t *n,
		      struct cni_err *err);

/* Parse resolv.conf text into d (nameserver, domain, search, options, the
 * last domain winning; comments and unknown keywords skipped) as the
 * reference's parser does. Never fails. */
void ipam_resolv_conf_parse(const char *text, struct cni_dns *d);

/* host-local configuration. Strings are borrowed from the request. */
struct cni_ipam_conf {
	const char *network;	 /* the network name: one directory in data_dir */
	const char *data_dir;	 /* absolute, no ".." component */
	const char *resolv_conf; /* NULL: none */
	struct cni_rangeset *sets;
	size_t n_sets;
	struct cni_ip *want; /* requested addresses, first wins, no duplicates */
	size_t n_want;
	struct cni_route *routes;
	size_t n_routes;
};

/* Results before 0.3.0 hold one address per family (ip4, ip6): more
 * (n4, n6 addresses) is CNI_ERR_INCOMPATIBLE_VERSION there. 0 or -1. */
int ipam_check_per_family(const char *version, int n4, int n6, struct cni_err *err);

/* Build the host-local configuration from a request: range sets in the
 * reference's order (runtimeConfig.ipRanges, then the legacy top-level
 * subnet, then ipam.ranges), requested addresses from args.cni.ips and
 * runtimeConfig.ips, or else CNI_ARGS IP= (CONVENTIONS.md: args win).
 * Returns an owned config or NULL with err set. */
struct cni_ipam_conf *ipam_conf_parse(const struct cni_req *req, struct cni_err *err);
void ipam_conf_free(struct cni_ipam_conf *c);
static inline void ipam_conf_freep(struct cni_ipam_conf **c)
{
	ipam_conf_free(*c);
}

/* A dataDir is absolute, has no "." or ".." component and no control
 * character, so nothing under it can escape it. Code 7 naming field. */
int ipam_check_data_dir(const char *dir, const char *field, struct cni_err *err);

#endif
