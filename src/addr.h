/* Interface addresses (RTM_NEWADDR / DELADDR / GETADDR) in the namespace
 * of the given socket. Return convention as in link.h: 0, or -errno with
 * err filled, the kernel's text in details. */
#ifndef CNI_ADDR_H
#define CNI_ADDR_H

#include "err.h"
#include "ip.h"
#include "netlink.h"

/* Address flags: the kernel's IFA_F_* values. */
enum {
	ADDR_F_SECONDARY = 0x01,
	ADDR_F_NODAD = 0x02, /* IPv6: usable at once, no duplicate detection */
	ADDR_F_OPTIMISTIC = 0x04,
	ADDR_F_DADFAILED = 0x08,
	ADDR_F_HOMEADDRESS = 0x10,
	ADDR_F_DEPRECATED = 0x20,
	ADDR_F_TENTATIVE = 0x40, /* IPv6: DAD still running, not yet usable */
	ADDR_F_PERMANENT = 0x80,
	ADDR_F_MANAGETEMPADDR = 0x100,
	ADDR_F_NOPREFIXROUTE = 0x200, /* no route for the prefix is added */
};

/* Request flags of addr_add (not kernel flags). */
enum {
	/* Succeed if the address is already there (updating its flags)
	 * instead of failing with EEXIST. */
	ADDR_ADD_REPLACE = 1 << 16,
	/* IPv6: run duplicate address detection (the address stays
	 * tentative, unusable, for a second or more). */
	ADDR_ADD_DAD = 1 << 17,
};

struct cni_addr {
	struct cni_cidr cidr; /* the address with its prefix length */
	int ifindex;
	unsigned flags; /* ADDR_F_* */
	int scope;	/* RT_SCOPE_*: 0 universe, 253 link, 254 host */
};

/* Add cidr to the link in nl's namespace. IPv6 addresses get
 * ADDR_F_NODAD unless flags has ADDR_ADD_DAD: a CNI ADD must not wait for
 * (nor race) duplicate detection on an address IPAM handed out. IPv4 ones
 * get the prefix's broadcast address, as `ip addr add ... brd +`. Other
 * flags: ADDR_F_NOPREFIXROUTE, ADDR_ADD_REPLACE. Without ADDR_ADD_REPLACE
 * an existing address fails with EEXIST. */
int addr_add(struct cni_nl *nl, int ifindex, const struct cni_cidr *cidr, unsigned flags,
	     struct cni_err *err);
/* Remove cidr from the link; missing address or link is success. */
int addr_del(struct cni_nl *nl, int ifindex, const struct cni_cidr *cidr, struct cni_err *err);
/* Addresses of one link (ifindex > 0) or all (0), of family AF_INET,
 * AF_INET6 or 0 for both, as an owned array (free()). Read-only. */
int addr_list(struct cni_nl *nl, int ifindex, int family, struct cni_addr **out, size_t *n,
	      struct cni_err *err);

#endif
