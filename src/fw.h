/* Netfilter: the rules behind portmap, firewall and the ipMasq option of
 * bridge and ptp, with two backends behind one interface.
 *
 * nftables (the default) runs in-process through libnftables, in the table
 * `inet cni`. Each attachment (network, CNI_IFNAME, CNI_CONTAINERID) owns
 * one or two chains named "<kind>-<H(net)>-<H(ifname:id)>" and the map
 * elements that jump to them; the rules of its first chain carry, in their
 * comments, the map keys the attachment holds. ADD is one transaction that
 * reads nothing first; DEL reads that one chain, then is one transaction;
 * each transaction holds only that attachment's objects. A re-ADD, a key
 * held by another attachment, CHECK and GC read the shared maps. (H: the
 * first 16 hex digits of SHA-512.)
 *
 * iptables reproduces the reference plugins' chain layout (CNI-HOSTPORT-*,
 * CNI-DN-<hash>, CNI-FORWARD, CNI-ADMIN, CNI-<hash> for ipMasq), so rules
 * made by the reference are found and removed by us and the other way
 * round. Each operation reads the table with one iptables-save and writes
 * it with one `iptables-restore --noflush -w` per address family.
 *
 * Everything works on the network namespace of the calling thread (the
 * host for these plugins); nothing here switches namespaces. Deleting is
 * idempotent: what is already gone is success. An operation that fails
 * leaves nothing of its own behind. */
#ifndef CNI_FW_H
#define CNI_FW_H

#include <stdint.h>

#include "err.h"
#include "ip.h"
#include "json.h"

enum fw_backend {
	FW_BACKEND_AUTO = 0, /* not configured: chosen by fw_backend_resolve */
	FW_BACKEND_NFTABLES,
	FW_BACKEND_IPTABLES,
	FW_BACKEND_FIREWALLD, /* firewall plugin only */
};
#define FW_ALLOW(b) (1u << (b))

/* "nftables", "iptables", "firewalld", "auto". */
const char *fw_backend_name(enum fw_backend b);

/* Read the backend name at obj.key (absent or null: FW_BACKEND_AUTO).
 * allowed is a mask of FW_ALLOW(b). A name that is not allowed, or not a
 * string, is code CNI_ERR_INVALID_CONFIG naming the path. 0 or -1. */
int fw_parse_backend(const struct cni_json *obj, const char *key, unsigned allowed,
		     enum fw_backend *out, struct cni_err *err);

/* Whether a backend can be used in the current namespace: libnftables can
 * talk to the kernel, iptables-save and iptables-restore exist and can read
 * the nat table, firewalld answers "running". */
bool fw_backend_available(enum fw_backend b);

/* Turn FW_BACKEND_AUTO into nftables, or iptables when nftables is not
 * usable, and check that the result is available. An unavailable backend
 * is code CNI_ERR_NOT_AVAILABLE (50) naming it. 0 or -1. */
int fw_backend_resolve(enum fw_backend *b, struct cni_err *err);
/* STATUS of a plugin configured with b: fw_backend_resolve, the answer
 * dropped. */
int fw_backend_status(enum fw_backend b, struct cni_err *err);

/* One attachment, as SPEC.md identifies it, plus its network. Borrowed. */
struct fw_att {
	const char *net;    /* network name */
	const char *id;	    /* CNI_CONTAINERID */
	const char *ifname; /* CNI_IFNAME */
};

/* The reference's chain name: "CNI-" + prefix + hex(sha512(net + id)),
 * cut to 28 characters (the reference's maximum), e.g. prefix "DN-" gives
 * the portmap chain and "" the ipMasq chain. buf holds 29 bytes. */
const char *fw_chain_name(const char *prefix, const char *net, const char *id, char *buf);

/* portmap ---------------------------------------------------------------*/

struct fw_portmap {
	int proto; /* IPPROTO_TCP, IPPROTO_UDP or IPPROTO_SCTP */
	uint16_t host_port, container_port;
	struct cni_ip host_ip; /* family 0 or unspecified: every local address */
};

struct fw_pm_conf {
	struct fw_att att;
	const struct fw_portmap *maps;
	size_t n_maps;
	/* Container addresses with their prefix (the prefix is the hairpin
	 * source range); family 0: none of that family. */
	struct cni_cidr ip4, ip6;
	bool snat;		   /* masquerade hairpin and localhost connections */
	bool masq_all;		   /* masquerade every port-mapped connection */
	int mark_bit;		   /* iptables: the SETMARK bit, 0..31 */
	const char *setmark_chain; /* iptables: externalSetMarkChain, NULL: ours */
	/* Extra matches for the per-mapping rule, in the backend's syntax. */
	const char *const *cond4;
	size_t n_cond4;
	const char *const *cond6;
	size_t n_cond6;
};

/* nftables if the conditions are nft syntax, iptables if the first word
 * starts with '-' or '!' (the reference's rule), AUTO when empty. */
enum fw_backend fw_conditions_backend(const char *const *cond, size_t n);
/* Check conditions before anything is installed: forbidden characters,
 * then a dry run of a rule using them (nft) or `iptables-restore --test`.
 * Code CNI_ERR_INVALID_CONFIG naming field. family: AF_INET or AF_INET6. */
int fw_check_conditions(enum fw_backend b, int family, const char *const *cond, size_t n,
			const char *field, struct cni_err *err);

/* Install the mappings of one attachment, replacing what it had. A host
 * port another attachment holds is taken over (last ADD wins, as the
 * reference documents), and that attachment's DEL no longer removes it. */
int fw_portmap_add(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err);
/* Verify the attachment's rules exist (code CNI_ERR_INTERNAL if not). */
int fw_portmap_check(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err);
/* Remove the attachment's rules in every backend present: a config that
 * changed backend between ADD and DEL still cleans up. Failures of the
 * backend in effect (b, AUTO resolved) are errors, the other's are logged
 * to stderr. Only c->att is used. */
int fw_portmap_del(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err);
/* Remove the rules of network net that belong to no attachment in valid[]
 * (cni.dev/valid-attachments), in every available backend. */
int fw_portmap_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err);

/* Delete the conntrack entries of family (AF_INET, AF_INET6) whose
 * original direction is UDP to one of ports, so that a new mapping is not
 * bypassed by an entry made before it (the reference does this on ADD).
 * Current namespace. 0 or -1 (code CNI_ERR_INTERNAL). */
int fw_conntrack_flush_udp(int family, const uint16_t *ports, size_t n, struct cni_err *err);

/* ipMasq (bridge, ptp) --------------------------------------------------*/

/* Masquerade traffic from each address of nets (container addresses with
 * their prefix) to anything outside that prefix, multicast excepted.
 * backend AUTO picks nftables. ifname may be NULL (the iptables layout
 * ignores it, as the reference does). */
int fw_masq_add(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		size_t n, enum fw_backend b, struct cni_err *err);
int fw_masq_check(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		  size_t n, enum fw_backend b, struct cni_err *err);
/* Undo fw_masq_add in both backends (whichever are present; nftables
 * failures are errors, iptables ones logged). nets is not needed and may
 * be empty: everything of the attachment goes. */
int fw_masq_del(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		size_t n, struct cni_err *err);
int fw_masq_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err);

/* macspoofchk (bridge): frames entering the bridge from host port hostif
 * must carry source MAC mac (the container's), else they are dropped.
 * Always nftables (bridge family, table "bridge cni"). Current namespace.
 * del takes hostif/mac from prevResult; with NULLs it finds the
 * attachment's entry by its comment. Missing entries are success. */
int fw_spoofchk_add(const struct fw_att *a, const char *hostif, const char *mac,
		    struct cni_err *err);
int fw_spoofchk_check(const char *hostif, const char *mac, struct cni_err *err);
int fw_spoofchk_del(const struct fw_att *a, const char *hostif, const char *mac,
		    struct cni_err *err);

/* firewall --------------------------------------------------------------*/

enum fw_ingress {
	FW_INGRESS_OPEN = 0,
	FW_INGRESS_SAME_BRIDGE,
	FW_INGRESS_ISOLATED,
};

struct fw_filter_conf {
	struct fw_att att;
	const struct cni_cidr *ips; /* the container's addresses */
	size_t n_ips;
	const char *admin_chain; /* iptables: default "CNI-ADMIN" */
	const char *zone;	 /* firewalld: default "trusted" */
	enum fw_ingress ingress;
	const char *bridge; /* for ingress policies: the first interface */
};

/* Accept forwarded traffic from the container's addresses and replies to
 * them, ahead of the host's FORWARD policy; set up the ingress policy. */
int fw_filter_add(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err);
int fw_filter_check(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err);
/* Remove the rules for c->ips (iptables and firewalld key them by address
 * alone, as the reference does) and the attachment's nftables chain. The
 * per-bridge isolation rules stay: other containers may use the bridge. */
int fw_filter_del(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err);
/* nftables only: the iptables rules carry no owner. */
int fw_filter_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err);

/* Read cni.dev/valid-attachments of a GC config into an owned array of
 * borrowed strings (free the array only). Code 7 naming the path. */
int fw_parse_attachments(const struct cni_json *conf, const char *net, struct fw_att **out,
			 size_t *n, struct cni_err *err);
/* GC of a chained plugin: gc (fw_masq_gc, fw_portmap_gc, fw_filter_gc) of
 * net, keeping the attachments conf's cni.dev/valid-attachments lists. */
int fw_gc_valid(const struct cni_json *conf, const char *net,
		int (*gc)(const char *net, const struct fw_att *valid, size_t n_valid,
			  struct cni_err *err),
		struct cni_err *err);

#ifdef CNI_FW_INTERNAL
/* Shared by fw.c, fw-nft.c and fw-ipt.c only. */

/* hex(sha512(s)) cut to n characters (n <= 128); buf holds n+1. */
const char *fw_hash(const char *s, size_t n, char *buf);
/* "<H16(net)>-<H16(ifname:id)>": the nftables owner tag (33 bytes + NUL). */
#define FW_TAG_LEN 33
void fw_tag(const struct fw_att *a, char *buf);
/* The network half of the tag (16 hex + NUL). */
void fw_tag_net(const char *net, char *buf);

/* Serialise read-modify-write sequences of the iptables backend with other
 * cni processes in the same network namespace (an abstract unix socket
 * name; -1 if it could not be taken, then we go on unlocked). */
int fw_lock(void);
void fw_unlock(int fd);

/* A portmap protocol's name in rules: "tcp", "udp" or "sctp". */
const char *fw_proto_name(int proto);
/* Whether ip is the family's any-address (0.0.0.0, ::). */
bool fw_ip_unspecified(const struct cni_ip *ip);

/* Find a tool in PATH, then /usr/sbin, /sbin, /usr/bin, /bin. Owned. */
char *fw_find_tool(const char *name);
/* Run argv (argv[0] an absolute path) with in on stdin; *out (may be NULL)
 * gets stdout, *errout (may be NULL) stderr. Returns the exit status, or
 * -errno if it could not run. */
int fw_exec(char *const argv[], const char *in, char **out, char **errout);

bool fw_nft_available(void);
/* Raw nftables reads. family is the table's: AF_INET ("ip"), AF_INET6
 * ("ip6") or AF_BRIDGE ("bridge"), which netfilter numbers alike. */
/* Whether chain exists in table. */
bool fw_nft_chain_exists(int family, const char *table, const char *chain);
/* Whether a rule of chain in table may carry bytes (an address, n bytes)
 * in its expressions; true also when it cannot tell. */
bool fw_nft_chain_has_bytes(int family, const char *table, const char *chain, const void *bytes,
			    size_t n);
/* Whether the iptables-nft FORWARD chain of table "filter" of family may
 * drop what an accept in our own table lets through: its policy is not
 * accept, or it has a rule other than a jump to a CNI-* chain (the
 * reference's firewall and isolation chains, which apply under either
 * backend). 1 yes, 0 no, -1 no such chain. */
int fw_nft_forward_may_drop(int family);
bool fw_ipt_available(int family);
/* Whether iptables-save and iptables-restore (ip6tables-* for AF_INET6)
 * are installed; no probe. */
bool fw_ipt_tools(int family);

int fw_nft_check_conditions(int family, const char *const *cond, size_t n, const char *field,
			    struct cni_err *err);
int fw_ipt_check_conditions(int family, const char *const *cond, size_t n, const char *field,
			    struct cni_err *err);

int fw_nft_portmap_add(const struct fw_pm_conf *c, struct cni_err *err);
int fw_nft_portmap_check(const struct fw_pm_conf *c, struct cni_err *err);
int fw_nft_portmap_del(const struct fw_att *a, struct cni_err *err);
int fw_nft_portmap_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err);
int fw_ipt_portmap_add(int family, const struct fw_pm_conf *c, struct cni_err *err);
int fw_ipt_portmap_check(int family, const struct fw_pm_conf *c, struct cni_err *err);
int fw_ipt_portmap_del(int family, const struct fw_att *a, struct cni_err *err);
int fw_ipt_portmap_gc(int family, const char *net, const struct fw_att *valid, size_t n,
		      struct cni_err *err);

int fw_nft_masq_add(const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		    struct cni_err *err);
int fw_nft_masq_check(const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		      struct cni_err *err);
int fw_nft_masq_del(const struct fw_att *a, struct cni_err *err);
int fw_nft_masq_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err);
int fw_ipt_masq_add(int family, const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		    struct cni_err *err);
int fw_ipt_masq_check(int family, const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		      struct cni_err *err);
int fw_ipt_masq_del(int family, const struct fw_att *a, struct cni_err *err);
int fw_ipt_masq_gc(int family, const char *net, const struct fw_att *valid, size_t n,
		   struct cni_err *err);

int fw_nft_filter_add(const struct fw_filter_conf *c, struct cni_err *err);
int fw_nft_filter_check(const struct fw_filter_conf *c, struct cni_err *err);
int fw_nft_filter_del(const struct fw_att *a, struct cni_err *err);
int fw_nft_filter_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err);
int fw_ipt_filter_add(int family, const struct fw_filter_conf *c, struct cni_err *err);
int fw_ipt_filter_check(int family, const struct fw_filter_conf *c, struct cni_err *err);
int fw_ipt_filter_del(int family, const struct fw_filter_conf *c, struct cni_err *err);
/* Whether iptables' filter FORWARD chain may drop what an nftables accept
 * lets through (then the firewall's rules belong in iptables). */
bool fw_ipt_forward_may_drop(void);
#endif

#endif
