/* Network interfaces: look-up, creation of every kind the plugins need,
 * and changes to an existing link. All calls act in the namespace of the
 * socket they are given (see netlink.h); kinds that can be created
 * straight into another namespace take it as a struct cni_netns, so a
 * container-side device never appears in the host, not even briefly.
 *
 * Return convention: 0, or -errno with err filled (CNI_ERR_INTERNAL, msg
 * naming the object, details "<strerror> (kernel: <extack>)"). Deletions
 * treat "already gone" as success. Look-ups return -ENODEV without
 * touching err when the link does not exist, so callers can probe. */
#ifndef CNI_LINK_H
#define CNI_LINK_H

#include "err.h"
#include "netlink.h"
#include "netns.h"

#define LINK_NAME_MAX 16 /* IFNAMSIZ, with the terminating NUL */
#define LINK_MAC_STRLEN 18
#define LINK_ALIAS_MAX 256 /* IFALIASZ: at most 255 bytes, then the NUL */

struct cni_link {
	int ifindex;
	char name[LINK_NAME_MAX];
	char kind[LINK_NAME_MAX];	/* IFLA_INFO_KIND; "" for lo, physical */
	char slave_kind[LINK_NAME_MAX]; /* "bridge" when a bridge port */
	uint8_t mac[6];
	unsigned mac_len;	       /* bytes of hardware address the kernel reported */
	char mac_str[LINK_MAC_STRLEN]; /* "aa:bb:cc:dd:ee:ff", "" if none */
	unsigned mtu;
	unsigned flags; /* IFF_UP, IFF_PROMISC, ... */
	unsigned txqlen;
	int operstate; /* IF_OPER_* */
	int master;    /* ifindex of the master (bridge, vrf), 0 if none */
	int parent;    /* IFLA_LINK: lower device or veth peer ifindex, 0 */
	/* Namespace of parent, as an id local to this namespace; -1 when the
	 * parent lives in the same namespace. */
	int link_netnsid;
	char alias[LINK_ALIAS_MAX]; /* IFLA_IFALIAS, "" when unset */

	/* Kind-specific (IFLA_INFO_DATA); zero when not applicable. */
	unsigned mode;	       /* macvlan LINK_MACVLAN_*, ipvlan LINK_IPVLAN_* */
	unsigned bc_queue_len; /* macvlan: broadcast queue length; 0: unreported */
	unsigned ipvlan_flags; /* LINK_IPVLAN_F_* */
	unsigned vlan_id;
	unsigned vrf_table;
	bool vlan_filtering;	   /* bridge */
	unsigned default_pvid;	   /* bridge */
	long tun_owner, tun_group; /* tun/tap: -1 when unset */
	bool tun_multi_queue, tun_persist, tun_tap;
};

/* Lower-case "aa:bb:..." of n bytes into buf (3*n bytes). Returns buf. */
char *link_format_mac(const uint8_t *mac, size_t n, char *buf);
/* Parse "aa:bb:cc:dd:ee:ff" (either case, ':' or '-'). 0 or -1. */
int link_parse_mac(const char *s, uint8_t mac[6]);

/* Look up one link of nl's namespace. 0 and *out filled; -ENODEV (err
 * untouched) if there is none; another -errno with err set. Read-only. */
int link_get_by_name(struct cni_nl *nl, const char *name, struct cni_link *out,
		     struct cni_err *err);
int link_get_by_index(struct cni_nl *nl, int ifindex, struct cni_link *out, struct cni_err *err);
/* All links of nl's namespace as an owned array (free()). Read-only. */
int link_list(struct cni_nl *nl, struct cni_link **out, size_t *n, struct cni_err *err);

/* Whether the running kernel can create links of kind ("ipvlan", "vlan",
 * "macvlan", "bridge", "vrf", "dummy", "ifb", "veth"; "tap"/"tun" checks
 * /dev/net/tun). Probes by asking for a link named "." which the kernel
 * refuses only after it has resolved the kind, so nothing is created. An
 * inconclusive probe (e.g. EPERM) answers true and leaves the real request
 * to report the real error. */
bool link_kind_supported(struct cni_nl *nl, const char *kind);
/* Same, as an error: 0, or -EOPNOTSUPP with err msg "kernel lacks <kind>
 * support", details naming the CONFIG_ option and module. */
int link_kind_check(struct cni_nl *nl, const char *kind, struct cni_err *err);

/* Options shared by the creating calls; zero means "kernel default". */
struct cni_link_opts {
	unsigned mtu;		    /* 0: default (a lower device's MTU) */
	const uint8_t *mac;	    /* 6 bytes, NULL: kernel-chosen */
	const struct cni_netns *ns; /* create directly in ns; NULL: nl's */
	unsigned txqlen;	    /* 0: default */
};

/* Creating calls: NLM_F_EXCL, so an existing name fails with EEXIST (not
 * idempotent; callers roll back with link_del). A missing kernel feature
 * fails with -EOPNOTSUPP and msg "failed to create <kind> <name>: kernel
 * lacks <kind> support". */

/* A veth pair: name in nl's namespace, peer created directly inside
 * peer_ns (NULL: nl's namespace) by file descriptor, never moved. */
struct cni_veth {
	const char *name;
	const char *peer;
	const struct cni_netns *peer_ns;
	unsigned mtu;		 /* both ends; 0: default */
	const uint8_t *mac;	 /* name's MAC, NULL: random */
	const uint8_t *peer_mac; /* peer's MAC, NULL: random */
};
int link_add_veth(struct cni_nl *nl, const struct cni_veth *v, struct cni_err *err);

struct cni_bridge_opts {
	struct cni_link_opts link;
	bool vlan_filtering;
	unsigned default_pvid; /* 0: kernel default (1); needs vlan_filtering */
	int mcast_snooping;    /* 0: kernel default (on), 1: on, -1: off */
};
/* o may be NULL (all defaults). vlan_filtering or default_pvid on a kernel
 * without CONFIG_BRIDGE_VLAN_FILTERING fails with -EOPNOTSUPP, "kernel
 * lacks bridge VLAN filtering support", and leaves no bridge behind. */
int link_add_bridge(struct cni_nl *nl, const char *name, const struct cni_bridge_opts *o,
		    struct cni_err *err);
/* Apply vlan_filtering (always), default_pvid and mcast_snooping (when
 * set) to an existing bridge; link opts are ignored. Idempotent; turning
 * filtering off succeeds on a kernel that has none. */
int link_set_bridge(struct cni_nl *nl, int ifindex, const struct cni_bridge_opts *o,
		    struct cni_err *err);

/* Kernel values (MACVLAN_MODE_*). */
enum {
	LINK_MACVLAN_PRIVATE = 1,
	LINK_MACVLAN_VEPA = 2,
	LINK_MACVLAN_BRIDGE = 4,
	LINK_MACVLAN_PASSTHRU = 8,
	LINK_MACVLAN_SOURCE = 16,
};
/* "bridge", "private", "vepa", "passthru", "source" -> mode; -1 if not. */
int link_macvlan_mode_parse(const char *s);
/* parent is an ifindex in nl's namespace; with o->ns the macvlan appears
 * only in that namespace (IFLA_LINK resolved in nl's, IFLA_NET_NS_FD).
 * bc_queue_len: length of the queue of broadcast and multicast frames
 * waiting for delivery to the macvlans of parent (0: kernel default). A
 * kernel older than 5.11 ignores it silently; that is detected after the
 * creation, which is then undone and fails with -EOPNOTSUPP, msg "failed
 * to create macvlan <name>: kernel lacks macvlan bcqueuelen support". */
int link_add_macvlan(struct cni_nl *nl, const char *name, int parent, unsigned mode,
		     unsigned bc_queue_len, const struct cni_link_opts *o, struct cni_err *err);

enum { LINK_IPVLAN_L2 = 0, LINK_IPVLAN_L3 = 1, LINK_IPVLAN_L3S = 2 };
enum { LINK_IPVLAN_F_BRIDGE = 0, LINK_IPVLAN_F_PRIVATE = 1, LINK_IPVLAN_F_VEPA = 2 };
/* "l2", "l3", "l3s" -> mode; "bridge", "private", "vepa" -> flags; -1. */
int link_ipvlan_mode_parse(const char *s);
int link_ipvlan_flags_parse(const char *s);
int link_add_ipvlan(struct cni_nl *nl, const char *name, int parent, unsigned mode, unsigned flags,
		    const struct cni_link_opts *o, struct cni_err *err);

/* 802.1Q vlan id on parent: 0..4094, as the kernel and the reference
 * plugin accept (id 0 carries only priority tags). */
int link_add_vlan(struct cni_nl *nl, const char *name, int parent, unsigned vid,
		  const struct cni_link_opts *o, struct cni_err *err);
int link_add_dummy(struct cni_nl *nl, const char *name, const struct cni_link_opts *o,
		   struct cni_err *err);
int link_add_ifb(struct cni_nl *nl, const char *name, const struct cni_link_opts *o,
		 struct cni_err *err);
int link_add_vrf(struct cni_nl *nl, const char *name, unsigned table, const struct cni_link_opts *o,
		 struct cni_err *err);

enum { LINK_TAP_MULTI_QUEUE = 1 << 0 };
/* A persistent tap device (IFF_TAP | IFF_NO_PI, LINK_TAP_MULTI_QUEUE adds
 * IFF_MULTI_QUEUE) created through /dev/net/tun inside ns (NULL: host),
 * owned by owner / group (-1: unset). Fails with EEXIST if ns already has
 * a link of that name. Configure MTU/MAC afterwards with a socket of ns. */
int link_add_tap(const struct cni_netns *ns, const char *name, unsigned flags, long owner,
		 long group, struct cni_err *err);

/* Changes to an existing link of nl's namespace; all idempotent. */
int link_set_up(struct cni_nl *nl, int ifindex, struct cni_err *err);
int link_set_down(struct cni_nl *nl, int ifindex, struct cni_err *err);
int link_set_mtu(struct cni_nl *nl, int ifindex, unsigned mtu, struct cni_err *err);
int link_set_mac(struct cni_nl *nl, int ifindex, const uint8_t mac[6], struct cni_err *err);
/* master 0 detaches (nomaster). */
int link_set_master(struct cni_nl *nl, int ifindex, int master, struct cni_err *err);
int link_set_promisc(struct cni_nl *nl, int ifindex, bool on, struct cni_err *err);
int link_set_allmulti(struct cni_nl *nl, int ifindex, bool on, struct cni_err *err);
int link_set_txqlen(struct cni_nl *nl, int ifindex, unsigned txqlen, struct cni_err *err);
/* Set the interface alias (ifalias, at most 255 bytes); "" clears it. An
 * alias too long fails with -EINVAL before reaching the kernel. */
int link_set_alias(struct cni_nl *nl, int ifindex, const char *alias, struct cni_err *err);
/* Rename; the kernel may refuse while the link is up (EBUSY). */
int link_rename(struct cni_nl *nl, int ifindex, const char *name, struct cni_err *err);
/* Move the link into ns, renaming it there to new_name in the same step
 * (NULL: keep the name). Its ifindex may change: look it up again with a
 * socket of ns. Not idempotent (the link is gone from nl's namespace). */
int link_set_netns(struct cni_nl *nl, int ifindex, const struct cni_netns *ns, const char *new_name,
		   struct cni_err *err);

/* Delete; a missing link is success (0). Deleting one end of a veth
 * deletes both. */
int link_del(struct cni_nl *nl, int ifindex, struct cni_err *err);
int link_del_by_name(struct cni_nl *nl, const char *name, struct cni_err *err);

/* Bridge port settings of a link enslaved to a bridge (IFLA_BRPORT_*).
 * Idempotent. */
enum link_brport_flag {
	LINK_BRPORT_HAIRPIN,  /* reflect frames back out of the port */
	LINK_BRPORT_ISOLATED, /* no forwarding to other isolated ports */
	LINK_BRPORT_LEARNING,
	LINK_BRPORT_FLOOD, /* unknown unicast flooding */
	LINK_BRPORT_NEIGH_SUPPRESS,
};
int link_set_brport(struct cni_nl *nl, int ifindex, enum link_brport_flag what, bool on,
		    struct cni_err *err);

struct cni_brport {
	bool hairpin, isolated, learning, flood, neigh_suppress;
};
/* Read a bridge port's settings; -ENODEV (err untouched) when the link is
 * not a bridge port. Read-only. */
int link_get_brport(struct cni_nl *nl, int ifindex, struct cni_brport *out, struct cni_err *err);

/* Bridge VLAN membership (vlan_filtering bridges). */
enum {
	LINK_BRVLAN_PVID = 1 << 0,     /* ingress untagged frames get this vid */
	LINK_BRVLAN_UNTAGGED = 1 << 1, /* egress untagged */
	/* ifindex is the bridge itself ("self"), not one of its ports. */
	LINK_BRVLAN_SELF = 1 << 2,
};
/* Add vids vid..vid_end (vid_end 0: just vid). Re-adding updates flags.
 * A kernel without VLAN filtering gives -EOPNOTSUPP "kernel lacks bridge
 * VLAN filtering support"; a link that is no bridge port, -EOPNOTSUPP "not
 * a bridge port". */
int link_bridge_vlan_add(struct cni_nl *nl, int ifindex, unsigned vid, unsigned vid_end,
			 unsigned flags, struct cni_err *err);
/* Remove; a vid not present, a link no longer a port, or a kernel without
 * VLAN support is success. flags: only LINK_BRVLAN_SELF. */
int link_bridge_vlan_del(struct cni_nl *nl, int ifindex, unsigned vid, unsigned vid_end,
			 unsigned flags, struct cni_err *err);
struct cni_brvlan {
	unsigned vid;
	unsigned flags; /* LINK_BRVLAN_PVID | LINK_BRVLAN_UNTAGGED */
};
/* VLANs of one port or bridge, ranges expanded, as an owned array (empty
 * when the kernel has no VLAN filtering). Read-only. */
int link_bridge_vlan_list(struct cni_nl *nl, int ifindex, struct cni_brvlan **out, size_t *n,
			  struct cni_err *err);

#ifdef CNI_NETLINK_INTERNAL
/* For addr.c, route.c: netlink_fail with msg "failed to <verb> <name><tail>"
 * where name is the link's name if it can still be looked up ("link N"
 * otherwise); the failure being reported is kept. Returns r. */
int link_fail(struct cni_nl *nl, int r, int ifindex, struct cni_err *err, const char *verb,
	      const char *fmt, ...) _printf_(6, 7);
#endif

#endif
