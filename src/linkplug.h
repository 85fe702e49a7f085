/* What the simple link applets (macvlan, ipvlan, vlan, dummy, tap,
 * host-device) share: one link of CNI_IFNAME in CNI_NETNS, addressed by
 * IPAM; the reference repeats this in each plugin.
 *
 * An applet's config struct starts with a struct cni_linkplug, filled by
 * linkplug_parse(); that lets linkplug_del, linkplug_status, linkplug_gc
 * and linkplug_free serve directly as its handlers (req->priv is the
 * linkplug). A typical ADD:
 *
 *	if (linkplug_open(req, lp, NULL, err) < 0 ||
 *	    link_add_dummy(lp->cnl, req->ifname, NULL, err) < 0 ||
 *	    linkplug_adopt(req, lp, "dummy", &l, err) < 0)
 *		return -1;
 *	return linkplug_add_result(req, lp, lp->cnl, &l, res, err);
 *
 * Sockets: cnl is CNI_NETNS's, hnl the host's (the calling thread's
 * namespace), both opened on first use and closed by linkplug_clear.
 * Errors: 0, or -1 with err set. */
#ifndef CNI_LINKPLUG_H
#define CNI_LINKPLUG_H

#include "applet.h"
#include "link.h"
#include "netlink.h"

enum {
	/* Config fields linkplug_parse reads. */
	LINKPLUG_MASTER = 1 << 0,	/* "master", optional */
	LINKPLUG_MASTER_REQ = 1 << 1,	/* "master", required, not empty */
	LINKPLUG_MTU = 1 << 2,		/* "mtu" */
	LINKPLUG_IN_CONTAINER = 1 << 3, /* "linkInContainer" */
	LINKPLUG_MAC = 1 << 4,		/* runtimeConfig.mac > CNI_ARGS MAC > "mac" */
	LINKPLUG_DNS = 1 << 5,		/* "dns" */
	LINKPLUG_IPAM_REQ = 1 << 6,	/* "ipam" with a type, required */
	LINKPLUG_MTU_MAX = 1 << 7,	/* "mtu" may not exceed the master's */

	/* ADD: without ipam, the addresses and routes are prevResult's
	 * (a chained ipvlan). */
	LINKPLUG_PREV_IPS = 1 << 8,
	/* ADD: set arp_notify, ndisc_notify (best effort, as the
	 * reference) before applying the addresses. */
	LINKPLUG_ARP_NOTIFY = 1 << 9,
	LINKPLUG_NDISC_NOTIFY = 1 << 10,
	/* ADD: the result keeps the IPAM plugin's DNS, not the config's
	 * (dummy, as its reference). */
	LINKPLUG_IPAM_DNS = 1 << 11,
	/* ADD: an IPAM failure says "failed to execute IPAM delegate" in
	 * details (vlan, as its reference). */
	LINKPLUG_IPAM_CONTEXT = 1 << 12,
	/* CHECK looks up an unset master too, as the default route's
	 * interface (macvlan); otherwise only a configured one (ipvlan). */
	LINKPLUG_CHECK_DEFAULT_MASTER = 1 << 13,
};

struct cni_linkplug {
	unsigned flags;		/* LINKPLUG_*, as given to linkplug_parse */
	const char *master;	/* NULL: not set */
	unsigned mtu;		/* 0: kernel default */
	bool has_mac;
	uint8_t mac[6];
	bool in_container;	/* linkInContainer: master is in CNI_NETNS */
	bool l3;		/* ipam.type given: IPAM is delegated on every verb */
	struct cni_dns dns;	/* the config's */

	/* Kept here so that the undo steps, which run after ADD returns,
	 * can still use them. */
	struct cni_nl *hnl, *cnl;
	int ifindex; /* the link linkplug_adopt took, in CNI_NETNS */
};

/* Read the fields flags names into lp (which the caller zeroed), and
 * ipam.type: code 7 naming the field, as the reference's checks but all
 * before any change. The MAC is read for ADD and CHECK only: DEL must not
 * fail on it (the reference's DEL reads neither the MAC nor CNI_ARGS).
 * Borrows strings from req->conf. */
int linkplug_parse(struct cni_req *req, struct cni_linkplug *lp, unsigned flags,
		   struct cni_err *err);
/* Release what lp owns (DNS, sockets); lp itself is the caller's. */
void linkplug_clear(struct cni_linkplug *lp);
/* .free of an applet whose config owns nothing beyond its linkplug. */
void linkplug_free(void *priv);

/* Open CNI_NETNS's socket (once). On DEL a namespace that is gone is
 * success with *gone = true (gone may be NULL for the other verbs). */
int linkplug_open(struct cni_req *req, struct cni_linkplug *lp, bool *gone, struct cni_err *err);

/* ADD of a link on a master (macvlan, ipvlan, vlan): look the master up
 * where it lives, in CNI_NETNS with linkInContainer, else in the host;
 * name NULL: the interface of the first default route of the main table
 * there, IPv4 first, as the reference picks it. A missing master, or one
 * with an MTU below "mtu" (LINKPLUG_MTU_MAX), is code 7. Fills *m and *o,
 * the options to create the link there straight into CNI_NETNS with the
 * config's MTU and MAC, and returns the socket to create it with
 * (borrowed), or NULL with err. Changes nothing. */
struct cni_nl *linkplug_add_master(struct cni_req *req, struct cni_linkplug *lp, const char *name,
				   struct cni_link *m, struct cni_link_opts *o, struct cni_err *err);

/* ADD, right after creating CNI_IFNAME in CNI_NETNS: look it up into *l
 * and push its deletion as an undo step. kind names it in the error when
 * it is gone already ("macvlan eth0 vanished from /run/netns/x"). */
int linkplug_adopt(struct cni_req *req, struct cni_linkplug *lp, const char *kind,
		   struct cni_link *l, struct cni_err *err);

/* ADD, the common tail. The addresses and routes: with ipam, IPAM ADD's
 * (its release pushed as an undo step; an empty allocation is an error);
 * without, prevResult's with LINKPLUG_PREV_IPS, else none. They are
 * applied to l through nl (a socket of CNI_NETNS) as iface_configure does,
 * which brings l up, after the notify sysctls the flags ask for; to a NULL
 * l (a device without a netdev) nothing is applied. res is replaced, even
 * when chained, by CNI_IFNAME as the only interface (l's MAC, sandbox
 * CNI_NETNS), the addresses all on it, the routes, and the config's DNS
 * (the IPAM plugin's with LINKPLUG_IPAM_DNS). */
int linkplug_add_result(struct cni_req *req, struct cni_linkplug *lp, struct cni_nl *nl,
			const struct cni_link *l, struct cni_result *res, struct cni_err *err);

/* DEL of a link made in CNI_NETNS: with ipam, release the allocation
 * first (also when the namespace is gone), then delete CNI_IFNAME. A
 * missing namespace or link is success. A handler (req->priv is the
 * linkplug). */
int linkplug_del(struct cni_req *req, struct cni_result *res, struct cni_err *err);

/* CHECK up to the link: with ipam, IPAM CHECK; prevResult required; its
 * interface CNI_IFNAME in CNI_NETNS; the master when configured (see
 * LINKPLUG_CHECK_DEFAULT_MASTER); the live link of kind (NULL: any) with
 * prevResult's MAC, into *l (may be NULL). The caller then compares what
 * is its own and ends with iface_check_ips(). Read-only. */
int linkplug_check(struct cni_req *req, struct cni_linkplug *lp, const char *kind,
		   struct cni_link *l, struct cni_err *err);

/* With ipam, run IPAM for cmd and drop its result; without, success. */
int linkplug_ipam(struct cni_req *req, const struct cni_linkplug *lp, enum cni_cmd cmd,
		  struct cni_err *err);
/* STATUS and GC: delegated to IPAM (the reference has no GC). Handlers. */
int linkplug_status(struct cni_req *req, struct cni_result *res, struct cni_err *err);
int linkplug_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err);

#endif
