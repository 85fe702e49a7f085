/* The container interface of an interface plugin (bridge, ptp, macvlan,
 * ipvlan, host-device, vlan...): create a veth pair, apply an IPAM result
 * to a link, CHECK a link against a prevResult, and take a link down on
 * DEL. What the reference does in ip.SetupVeth, ipam.ConfigureIface,
 * ip.ValidateExpected* and ip.DelLinkByNameAddr, over our netlink core.
 *
 * Sockets: `nl` is always a socket of the namespace the link lives in (see
 * netlink.h); `ns` is that same namespace (NULL: the host), needed only for
 * the sysctls under /proc/sys/net. Nothing here switches the calling
 * thread's namespace except through netns_run().
 *
 * Errors: 0, or -1 with err set. Kernel failures are CNI_ERR_INTERNAL with
 * the errno and extack in details; a CHECK mismatch is CNI_ERR_INTERNAL
 * naming the first difference found.
 *
 * Typical ADD of a plugin that moves or creates one link in the container:
 *
 *	int idx = result_add_iface(res, ifname, mac, req->netns_path);
 *	for (size_t i = 0; i < res->n_ips; i++)
 *		res->ips[i].iface = idx;
 *	iface_configure(cont_nl, ns, link.ifindex, res, idx, 0, err);
 *
 * and DEL:
 *
 *	iface_del(cont_nl, req->ifname, &nets, &n, err);   // gone is success
 */
#ifndef CNI_IFACE_H
#define CNI_IFACE_H

#include "applet.h"
#include "err.h"
#include "fw.h"
#include "link.h"
#include "netlink.h"
#include "netns.h"
#include "result.h"

/* Host-side veth names: "veth" and 8 random hex digits, as the reference. */
#define IFACE_VETH_PREFIX "veth"

struct cni_veth_pair {
	struct cni_link host; /* the end left in the host namespace */
	struct cni_link cont; /* the end created in the container */
};

/* Create a veth pair: a randomly named end ("veth" + 8 hex) in host_nl's
 * namespace and an end called ifname created directly inside ns (cont_nl
 * is a socket of ns). mtu 0 keeps the kernel default; mac (6 bytes, may be
 * NULL) is the container end's address. A random name already taken on
 * the host is retried with a fresh one; an ifname already present in the
 * container fails with 'container veth name "eth0" already exists'. On
 * success both ends are down and *out describes them; on failure nothing
 * is left behind. Not idempotent: the caller owns the pair (deleting
 * either end deletes both). */
int iface_add_veth(struct cni_nl *host_nl, struct cni_nl *cont_nl, const struct cni_netns *ns,
		   const char *ifname, unsigned mtu, const uint8_t *mac, struct cni_veth_pair *out,
		   struct cni_err *err);

enum {
	/* Do duplicate address detection on IPv6 addresses and wait (up to
	 * five seconds, as the reference) until they are no longer
	 * tentative. By default IPv6 addresses are added with IFA_F_NODAD:
	 * usable at once, so a dual-stack ADD never waits for DAD. */
	IFACE_DAD = 1 << 0,
	/* Leave the link down (addresses and routes are still applied when
	 * the kernel allows it; routes through a down link are refused). */
	IFACE_NO_UP = 1 << 1,
};

/* Apply res to link ifindex of nl's namespace, as ipam.ConfigureIface:
 *  - the addresses of res->ips whose .iface is iface_idx (entries with
 *    another index are an error, entries with -1 are skipped);
 *  - with any IPv6 address: disable_ipv6=0 on lo and the link,
 *    keep_addr_on_down=1 on the link (sysctls of ns);
 *  - the link up;
 *  - every route of res through the link; a route without a gateway uses
 *    the first gateway of its family among the applied addresses, if any.
 * res->ifaces[iface_idx] must exist. Not idempotent (an address or route
 * already present is EEXIST): call it on a fresh link and roll back by
 * deleting the link. */
int iface_configure(struct cni_nl *nl, const struct cni_netns *ns, int ifindex,
		    const struct cni_result *res, int iface_idx, unsigned flags,
		    struct cni_err *err);

/* CHECK, part 1: find the container interface of prevResult prev, i.e.
 * the entry named ifname whose sandbox is netns. Returns its index, or -1
 * with "Sandbox in prevResult ... doesn't match configured netns" when
 * there is none (the reference's wording). */
int iface_check_find(const struct cni_result *prev, const char *ifname, const char *netns,
		     struct cni_err *err);

/* CHECK, part 2: the link named want->name exists in nl's namespace, is of
 * kind (NULL: any; "veth", "macvlan", ...) and has want->mac when prevResult
 * recorded one. *out (may be NULL) gets the link. Read-only. */
int iface_check_link(struct cni_nl *nl, const struct cni_iface *want, const char *kind,
		     struct cni_link *out, struct cni_err *err);

/* CHECK, part 3, as ip.ValidateExpectedInterfaceIPs and
 * ValidateExpectedRoute: every address of prev->ips is on link ifname
 * (name in nl's namespace) with a route to its prefix in the main table,
 * and every route of prev->routes is in the main table (matching its
 * gateway when it has one). Reports the first difference. Read-only. */
int iface_check_ips(struct cni_nl *nl, const char *ifname, const struct cni_result *prev,
		    struct cni_err *err);

/* DEL: delete link ifname of nl's namespace and return, in *nets (owned,
 * may be NULL when not wanted), its global unicast addresses with their
 * prefix, as ip.DelLinkByNameAddr (ipMasq teardown needs them). A missing
 * link is success with *n = 0. Idempotent. */
int iface_del(struct cni_nl *nl, const char *ifname, struct cni_cidr **nets, size_t *n,
	      struct cni_err *err);

/* Enable forwarding in the host for the families of res->ips (IPv4:
 * net.ipv4.ip_forward, IPv6: net.ipv6.conf.all.forwarding), as the
 * reference's ip.EnableForward. 0 or -1 with err. */
int iface_enable_forward(const struct cni_result *res, struct cni_err *err);
/* One family (AF_INET or AF_INET6). */
int iface_enable_forward_family(int family, struct cni_err *err);

/* Make an IPAM result the start of an interface plugin's result: drop the
 * interfaces it may list (an IPAM plugin should list none; ours are
 * indexed from 0). */
void iface_result_from_ipam(struct cni_result *r);
/* Hand r over as the request's result: res (the driver's object, which
 * must keep its identity) takes r's contents in version, and r is left
 * with res's old contents, for the caller to free. */
void iface_result_set(struct cni_result *res, struct cni_result *r, const char *version);

/* Whether a DNS block carries anything (the reference's dnsConfSet): a
 * plugin's own "dns" replaces the IPAM plugin's only then. */
bool iface_dns_set(const struct cni_dns *d);

/* The request steps shared by the veth plugins (bridge, ptp). */

/* A socket in the request's container namespace, opened once into *nl
 * (the applet's config keeps it for its undo steps and closes it). -1
 * with err; on DEL a namespace already gone is -1 with *gone set and no
 * error (gone may be NULL when not DEL). */
int iface_open_cont(struct cni_req *req, struct cni_nl **nl, bool *gone, struct cni_err *err);

/* Push an undo step deleting link ifindex through nl (borrowed: it must
 * stay open until the undo steps have run). */
void iface_push_undo_link(struct cni_req *req, struct cni_nl *nl, int ifindex);

/* IPAM ADD: its result in *r (owned), its release pushed as an undo
 * step; a result without addresses is an error. */
int iface_ipam_add(struct cni_req *req, struct cni_result **r, struct cni_err *err);
/* IPAM DEL, CHECK, STATUS or GC, its result dropped. */
int iface_ipam_run(struct cni_req *req, enum cni_cmd cmd, struct cni_err *err);

/* ipMasq for the addresses of r, the request's attachment, removed again
 * if the ADD fails. */
int iface_masq_add(struct cni_req *req, const struct cni_result *r, enum fw_backend b,
		   struct cni_err *err);
/* CHECK the ipMasq rules of prev's addresses. Read-only. */
int iface_masq_check(struct cni_req *req, const struct cni_result *prev, enum fw_backend b,
		     struct cni_err *err);

/* Finish an ADD: the plugin's own dns replaces r's when set, then r
 * becomes the result (iface_result_set). */
void iface_result_finish(struct cni_result *res, struct cni_result *r, const struct cni_dns *dns,
			 const char *version);

#endif
