/* Traffic control over rtnetlink: the few qdiscs, classes and filters the
 * bandwidth plugin needs (tbf, htb, ingress, u32 with a mirred redirect),
 * their dumps for CHECK, and the token bucket arithmetic of the reference.
 *
 * Everything acts in the namespace of the socket it is given. Return
 * convention as in link.h: 0, or -errno with err filled (CNI_ERR_INTERNAL,
 * msg naming the object, details "<strerror> (kernel: <extack>)").
 * Creating calls are exclusive (an existing qdisc or class fails with
 * EEXIST); deletions treat "already gone" as success. */
#ifndef CNI_TC_H
#define CNI_TC_H

#include "err.h"
#include "ip.h"
#include "netlink.h"

/* Handles are "major:minor" in one 32-bit value, as the kernel keeps
 * them; TC_ROOT and TC_INGRESS are the parents of a device's root and
 * ingress qdiscs. */
#define TC_HANDLE(maj, min) ((uint32_t)(maj) << 16 | (uint32_t)(min))
#define TC_ROOT 0xffffffffu
#define TC_INGRESS 0xfffffff1u
#define TC_INGRESS_HANDLE TC_HANDLE(0xffff, 0)

/* A token bucket as the kernel takes it. */
struct cni_tbf {
	uint64_t rate;	 /* bytes per second */
	uint32_t buffer; /* bucket size as transmit time, in scheduler ticks */
	uint32_t limit;	 /* bytes that may wait in the queue */
};

/* The parameters the reference derives from a rate in bits per second and
 * a burst in bits: rate and burst in bytes, the burst's transmit time as
 * buffer, and a queue limit of 25 ms at the rate plus the burst. Returns 0,
 * or -1 with *why naming the problem when the pair cannot be represented
 * (rate or burst under one byte, a burst longer than the kernel's 32-bit
 * nanosecond bucket, a limit over 4 GiB). Pure; reads /proc/net/psched
 * once for the tick length. */
int tc_tbf_params(uint64_t rate_bits, uint64_t burst_bits, struct cni_tbf *out, const char **why);

/* Scheduler ticks for a duration in microseconds (tc's time2tick). */
uint32_t tc_usec_to_ticks(double usec);

/* One htb class; rates in bytes per second, buffers in ticks. */
struct cni_htb_class {
	uint32_t handle; /* classid, e.g. TC_HANDLE(1, 48) */
	uint32_t parent;
	uint64_t rate, ceil;
	uint32_t buffer, cbuffer;
};

/* A qdisc from a dump. */
struct cni_qdisc {
	char kind[16];
	uint32_t handle, parent;
	struct cni_tbf tbf;  /* kind "tbf" */
	uint32_t htb_defcls; /* kind "htb": minor of the default class */
};

/* Add a tbf qdisc at parent (TC_ROOT or a class) with the given handle. */
int tc_qdisc_add_tbf(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		     const struct cni_tbf *t, struct cni_err *err);
/* Add an htb qdisc; unclassified traffic goes to class handle:defcls. */
int tc_qdisc_add_htb(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		     uint32_t defcls, struct cni_err *err);
/* Add the ingress qdisc (handle ffff:). */
int tc_qdisc_add_ingress(struct cni_nl *nl, int ifindex, struct cni_err *err);
/* Delete the qdisc at parent (TC_ROOT, TC_INGRESS) if its handle is
 * handle, with its classes and filters. A device or qdisc that is gone, or
 * a kernel default qdisc in its place, is success; a qdisc with another
 * handle (not ours) fails with -EINVAL. */
int tc_qdisc_del(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		 struct cni_err *err);
/* The qdiscs of one device, as an owned array (free()). Read-only. */
int tc_qdisc_list(struct cni_nl *nl, int ifindex, struct cni_qdisc **out, size_t *n,
		  struct cni_err *err);

int tc_class_add_htb(struct cni_nl *nl, int ifindex, const struct cni_htb_class *c,
		     struct cni_err *err);
/* The htb classes of one device, as an owned array (free()). Read-only. */
int tc_class_list_htb(struct cni_nl *nl, int ifindex, struct cni_htb_class **out, size_t *n,
		      struct cni_err *err);

/* A u32 filter: every packet of protocol (ETH_P_*, host order), or those
 * whose source or destination address is in match. A match filter with
 * neither classid nor redirect ends classification there: the packet goes
 * on unshaped and unredirected. */
struct cni_u32 {
	uint32_t parent; /* the qdisc's handle */
	unsigned prio;	 /* 1..65535, lower first */
	uint16_t protocol;
	const struct cni_cidr *match; /* NULL: everything */
	bool match_src;		      /* compare the source, else the destination */
	uint32_t classid;	      /* flowid; 0: none */
	int redirect;		      /* mirred egress redirect to this ifindex; 0: none */
};
int tc_filter_add_u32(struct cni_nl *nl, int ifindex, const struct cni_u32 *f, struct cni_err *err);

/* A filter from a dump: what CHECK needs to see a redirect. */
struct cni_tc_filter {
	char kind[16];
	unsigned prio;
	uint16_t protocol;
	uint32_t classid;
	int redirect; /* ifindex of a mirred egress redirect, 0: none */
};
/* The filters attached to qdisc parent (its handle) of one device, as an
 * owned array (free()). Read-only. */
int tc_filter_list(struct cni_nl *nl, int ifindex, uint32_t parent, struct cni_tc_filter **out,
		   size_t *n, struct cni_err *err);

#endif
