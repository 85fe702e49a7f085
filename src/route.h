/* Routes, policy routing rules and neighbour entries over rtnetlink, in the
 * namespace of the given socket. Return convention as in link.h: 0, or
 * -errno with err filled, the kernel's text in details. Deletions treat
 * "already gone" as success. */
#ifndef CNI_ROUTE_H
#define CNI_ROUTE_H

#include "err.h"
#include "ip.h"
#include "netlink.h"

/* The kernel's values (RT_TABLE_*, RT_SCOPE_*, RTPROT_*, RTN_*). */
enum {
	ROUTE_TABLE_MAIN = 254,
	ROUTE_TABLE_LOCAL = 255,
	ROUTE_SCOPE_UNIVERSE = 0,
	ROUTE_SCOPE_LINK = 253,
	ROUTE_SCOPE_HOST = 254,
	ROUTE_PROTO_KERNEL = 2,
	ROUTE_PROTO_BOOT = 3,
	ROUTE_PROTO_STATIC = 4,
	ROUTE_TYPE_UNICAST = 1,
	ROUTE_TYPE_LOCAL = 2,
	ROUTE_TYPE_BLACKHOLE = 6,
	ROUTE_TYPE_UNREACHABLE = 7,
};

enum {
	/* The gateway is on the link even if no prefix says so. */
	ROUTE_F_ONLINK = 1 << 0,
};

struct cni_rt {
	struct cni_cidr dst;  /* family required; prefix 0: default route */
	struct cni_ip gw;     /* family 0: none (a device route) */
	struct cni_ip src;    /* preferred source (RTA_PREFSRC), family 0: none */
	int ifindex;	      /* 0: none (kernel resolves via gw) */
	int scope;	      /* ROUTE_SCOPE_*; 0 is universe */
	unsigned table;	      /* 0: main on add/del */
	unsigned priority;    /* metric; 0: kernel default */
	unsigned mtu, advmss; /* 0: unset */
	int proto;	      /* 0: ROUTE_PROTO_BOOT on add, any on del */
	int type;	      /* 0: ROUTE_TYPE_UNICAST on add, any on del */
	unsigned flags;	      /* ROUTE_F_* */
};

/* Add rt; an identical route already present fails with EEXIST. */
int route_add(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err);
/* Add rt or replace the route with the same destination, table and
 * metric (IPv4: also tos). Idempotent. */
int route_replace(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err);
/* Delete the route matching dst, table, and whichever of gw, ifindex,
 * priority, proto, type are set (scope is not matched). A missing route
 * or link is success. */
int route_del(struct cni_nl *nl, const struct cni_rt *rt, struct cni_err *err);
/* Routes of family (AF_INET, AF_INET6, 0 both) in table (0: every table)
 * through ifindex (0: any), as an owned array (free()). Cached clones are
 * left out; of a multipath route only the first hop is reported. */
int route_list(struct cni_nl *nl, int family, unsigned table, int ifindex, struct cni_rt **out,
	       size_t *n, struct cni_err *err);

/* A policy routing rule "from src to dst [iif] [oif] [fwmark] lookup table". */
struct cni_rule {
	int family;		 /* 0: that of src or dst */
	struct cni_cidr src;	 /* family 0: any */
	struct cni_cidr dst;	 /* family 0: any */
	unsigned table;		 /* required on add */
	unsigned priority;	 /* 0: kernel picks on add, any on del */
	char iif[16], oif[16];	 /* "": any */
	unsigned fwmark, fwmask; /* fwmark 0: any */
	bool invert;		 /* "not from ..." */
};
/* Add; an identical rule fails with EEXIST. */
int rule_add(struct cni_nl *nl, const struct cni_rule *rule, struct cni_err *err);
/* Delete the first rule matching the fields that are set; none is
 * success. */
int rule_del(struct cni_nl *nl, const struct cni_rule *rule, struct cni_err *err);
/* Rules of family (0: both) pointing at table (0: any), in priority order,
 * as an owned array (free()). */
int rule_list(struct cni_nl *nl, int family, unsigned table, struct cni_rule **out, size_t *n,
	      struct cni_err *err);

/* A permanent neighbour (ARP / NDP) entry ip -> mac on the link; replaces
 * an existing entry. */
int neigh_add(struct cni_nl *nl, int ifindex, const struct cni_ip *ip, const uint8_t mac[6],
	      struct cni_err *err);
/* Delete; a missing entry or link is success. */
int neigh_del(struct cni_nl *nl, int ifindex, const struct cni_ip *ip, struct cni_err *err);

#endif
