/* Links over rtnetlink (RTM_NEWLINK / SETLINK / DELLINK / GETLINK), plus
 * tap devices, which the kernel only creates through /dev/net/tun. */
#define CNI_NETLINK_INTERNAL
#include "link.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

/* Our constants are the kernel's values, so they pass through as is. */
_Static_assert((int)LINK_MACVLAN_PRIVATE == (int)MACVLAN_MODE_PRIVATE &&
		   (int)LINK_MACVLAN_VEPA == (int)MACVLAN_MODE_VEPA &&
		   (int)LINK_MACVLAN_BRIDGE == (int)MACVLAN_MODE_BRIDGE &&
		   (int)LINK_MACVLAN_PASSTHRU == (int)MACVLAN_MODE_PASSTHRU &&
		   (int)LINK_MACVLAN_SOURCE == (int)MACVLAN_MODE_SOURCE,
	       "macvlan modes");
_Static_assert((int)LINK_IPVLAN_L2 == (int)IPVLAN_MODE_L2 &&
		   (int)LINK_IPVLAN_L3 == (int)IPVLAN_MODE_L3 &&
		   (int)LINK_IPVLAN_L3S == (int)IPVLAN_MODE_L3S,
	       "ipvlan modes");
_Static_assert(LINK_IPVLAN_F_PRIVATE == IPVLAN_F_PRIVATE && LINK_IPVLAN_F_VEPA == IPVLAN_F_VEPA,
	       "ipvlan flags");
_Static_assert(LINK_NAME_MAX == IFNAMSIZ, "IFNAMSIZ");

char *link_format_mac(const uint8_t *mac, size_t n, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ':';
		*p++ = hex[mac[i] >> 4];
		*p++ = hex[mac[i] & 15];
	}
	*p = 0;
	return buf;
}

int link_parse_mac(const char *s, uint8_t mac[6])
{
	if (!s || strlen(s) != 17)
		return -1;
	char sep = s[2];
	if (sep != ':' && sep != '-')
		return -1;
	for (int i = 0; i < 6; i++) {
		const char *p = s + 3 * i;
		int hi = hex_digit(p[0]), lo = hex_digit(p[1]);
		if (hi < 0 || lo < 0 || (i < 5 && p[2] != sep))
			return -1;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static bool name_ok(const char *name)
{
	return name && name[0] && strlen(name) < IFNAMSIZ && name_is_safe(name, IFNAMSIZ - 1);
}

static int bad_name(const char *name, struct cni_err *err)
{
	err_set(err, CNI_ERR_INTERNAL, "invalid interface name \"%.32s\"", name ? name : "");
	return -EINVAL;
}

/* The link's name for a message ("link N" if it cannot be looked up),
 * keeping the failure being reported as the socket's last. */
static void link_label(struct cni_nl *nl, int ifindex, char *buf, size_t size)
{
	char ext[256];
	strlcpy_(ext, netlink_extack(nl), sizeof(ext));
	int e = netlink_errno(nl);
	struct cni_link l;
	if (link_get_by_index(nl, ifindex, &l, NULL) == 0)
		strlcpy_(buf, l.name, size);
	else
		snprintf(buf, size, "link %d", ifindex);
	netlink_set_last(nl, e, ext);
}

int link_fail(struct cni_nl *nl, int r, int ifindex, struct cni_err *err, const char *verb,
	      const char *fmt, ...)
{
	if (!err || err_isset(err))
		return r;
	char tail[96] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(tail, sizeof(tail), fmt, ap);
		va_end(ap);
	}
	char name[LINK_NAME_MAX + 16];
	link_label(nl, ifindex, name, sizeof(name));
	return netlink_fail(nl, r, err, "failed to %s %s%s", verb, name, tail);
}

static const struct nla_policy link_policy[IFLA_MAX + 1] = {
    [IFLA_IFNAME] = {.type = NLA_STRING},    [IFLA_MTU] = {.type = NLA_U32},
    [IFLA_MASTER] = {.type = NLA_U32},	     [IFLA_LINK] = {.type = NLA_U32},
    [IFLA_LINK_NETNSID] = {.type = NLA_U32}, [IFLA_TXQLEN] = {.type = NLA_U32},
    [IFLA_OPERSTATE] = {.type = NLA_U8},     [IFLA_LINKINFO] = {.type = NLA_NESTED},
    [IFLA_AF_SPEC] = {.type = NLA_NESTED},   [IFLA_IFALIAS] = {.type = NLA_STRING},
};

static const struct nla_policy info_policy[IFLA_INFO_MAX + 1] = {
    [IFLA_INFO_KIND] = {.type = NLA_STRING},
    [IFLA_INFO_SLAVE_KIND] = {.type = NLA_STRING},
    [IFLA_INFO_DATA] = {.type = NLA_NESTED},
};

/* Unsigned attribute of any width up to 4 bytes, or def when absent or
 * malformed: IFLA_INFO_DATA members vary by kind and kernel version. */
static unsigned get_uint(const struct nlattr *a, unsigned def)
{
	if (!a)
		return def;
	switch (nla_len(a)) {
	case 1:
		return nla_get_u8((struct nlattr *)a);
	case 2:
		return nla_get_u16((struct nlattr *)a);
	case 4:
		return nla_get_u32((struct nlattr *)a);
	default:
		return def;
	}
}

static void parse_info_data(struct cni_link *l, struct nlattr *data)
{
	struct nlattr *tb[32 + 1];
	if (nla_parse_nested(tb, 32, data, NULL) < 0)
		return;
	if (streq(l->kind, "macvlan") || streq(l->kind, "macvtap")) {
		l->mode = get_uint(tb[IFLA_MACVLAN_MODE], 0);
		l->bc_queue_len = get_uint(tb[IFLA_MACVLAN_BC_QUEUE_LEN], 0);
	} else if (streq(l->kind, "ipvlan") || streq(l->kind, "ipvtap")) {
		l->mode = get_uint(tb[IFLA_IPVLAN_MODE], 0);
		l->ipvlan_flags = get_uint(tb[IFLA_IPVLAN_FLAGS], 0);
	} else if (streq(l->kind, "vlan")) {
		l->vlan_id = get_uint(tb[IFLA_VLAN_ID], 0);
	} else if (streq(l->kind, "vrf")) {
		l->vrf_table = get_uint(tb[IFLA_VRF_TABLE], 0);
	} else if (streq(l->kind, "tun")) {
		if (tb[IFLA_TUN_OWNER])
			l->tun_owner = get_uint(tb[IFLA_TUN_OWNER], 0);
		if (tb[IFLA_TUN_GROUP])
			l->tun_group = get_uint(tb[IFLA_TUN_GROUP], 0);
		l->tun_tap = get_uint(tb[IFLA_TUN_TYPE], 0) == IFF_TAP;
		l->tun_multi_queue = get_uint(tb[IFLA_TUN_MULTI_QUEUE], 0) != 0;
		l->tun_persist = get_uint(tb[IFLA_TUN_PERSIST], 0) != 0;
	}
}

/* IFLA_BR_* numbers exceed 32: a separate table for bridges. */
static void parse_bridge_data(struct cni_link *l, struct nlattr *data)
{
	struct nlattr *tb[IFLA_BR_MAX + 1];
	if (nla_parse_nested(tb, IFLA_BR_MAX, data, NULL) < 0)
		return;
	l->vlan_filtering = get_uint(tb[IFLA_BR_VLAN_FILTERING], 0) != 0;
	l->default_pvid = get_uint(tb[IFLA_BR_VLAN_DEFAULT_PVID], 0);
}

static int parse_link(const struct nlmsghdr *h, struct cni_link *l)
{
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -EPROTO;
	const struct ifinfomsg *ifi = nlmsg_data(h);
	struct nlattr *tb[IFLA_MAX + 1];
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*ifi), tb, IFLA_MAX,
			(struct nla_policy *)link_policy) < 0)
		return -EPROTO;
	memset(l, 0, sizeof(*l));
	l->ifindex = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	l->link_netnsid = -1;
	l->tun_owner = l->tun_group = -1;
	if (tb[IFLA_IFNAME])
		netlink_attr_str(l->name, sizeof(l->name), tb[IFLA_IFNAME]);
	if (tb[IFLA_IFALIAS])
		netlink_attr_str(l->alias, sizeof(l->alias), tb[IFLA_IFALIAS]);
	if (tb[IFLA_ADDRESS]) {
		size_t n = (size_t)nla_len(tb[IFLA_ADDRESS]);
		l->mac_len = (unsigned)n;
		memcpy(l->mac, nla_data(tb[IFLA_ADDRESS]), n < 6 ? n : 6);
		if (n == 6)
			link_format_mac(l->mac, 6, l->mac_str);
	}
	if (tb[IFLA_MTU])
		l->mtu = nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_MASTER])
		l->master = (int)nla_get_u32(tb[IFLA_MASTER]);
	if (tb[IFLA_LINK])
		l->parent = (int)nla_get_u32(tb[IFLA_LINK]);
	if (tb[IFLA_LINK_NETNSID])
		l->link_netnsid = (int32_t)nla_get_u32(tb[IFLA_LINK_NETNSID]);
	if (tb[IFLA_TXQLEN])
		l->txqlen = nla_get_u32(tb[IFLA_TXQLEN]);
	if (tb[IFLA_OPERSTATE])
		l->operstate = nla_get_u8(tb[IFLA_OPERSTATE]);
	if (tb[IFLA_LINKINFO]) {
		struct nlattr *info[IFLA_INFO_MAX + 1];
		if (nla_parse_nested(info, IFLA_INFO_MAX, tb[IFLA_LINKINFO],
				     (struct nla_policy *)info_policy) == 0) {
			if (info[IFLA_INFO_KIND])
				netlink_attr_str(l->kind, sizeof(l->kind), info[IFLA_INFO_KIND]);
			if (info[IFLA_INFO_SLAVE_KIND])
				netlink_attr_str(l->slave_kind, sizeof(l->slave_kind),
					 info[IFLA_INFO_SLAVE_KIND]);
			if (info[IFLA_INFO_DATA]) {
				if (streq(l->kind, "bridge"))
					parse_bridge_data(l, info[IFLA_INFO_DATA]);
				else
					parse_info_data(l, info[IFLA_INFO_DATA]);
			}
		}
	}
	return 0;
}

static int on_link(const struct nlmsghdr *h, void *arg)
{
	return parse_link(h, arg);
}

static int link_get(struct cni_nl *nl, int ifindex, const char *name, struct cni_link *out,
		    struct cni_err *err)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
	struct nl_msg *m = netlink_msg(RTM_GETLINK, 0, &ifi, sizeof(ifi));
	if (name)
		netlink_put_str(m, IFLA_IFNAME, name);
	netlink_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	int r = netlink_request(nl, m, on_link, out);
	if (r == -ENODEV)
		return r;
	if (r < 0) {
		if (name)
			return netlink_fail(nl, r, err, "failed to look up link %s", name);
		return netlink_fail(nl, r, err, "failed to look up link %d", ifindex);
	}
	return 0;
}

int link_get_by_name(struct cni_nl *nl, const char *name, struct cni_link *out, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	return link_get(nl, 0, name, out, err);
}

int link_get_by_index(struct cni_nl *nl, int ifindex, struct cni_link *out, struct cni_err *err)
{
	if (ifindex <= 0)
		return -ENODEV;
	return link_get(nl, ifindex, NULL, out, err);
}

struct link_vec {
	struct cni_link *v;
	size_t n, cap;
};

static int on_link_list(const struct nlmsghdr *h, void *arg)
{
	struct link_vec *lv = arg;
	xgrow(&lv->v, &lv->cap, lv->n, sizeof(*lv->v));
	if (parse_link(h, &lv->v[lv->n]) == 0)
		lv->n++;
	return 0;
}

int link_list(struct cni_nl *nl, struct cni_link **out, size_t *n, struct cni_err *err)
{
	struct link_vec lv = {0};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		lv.n = 0;
		struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
		struct nl_msg *m = netlink_msg(RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi));
		netlink_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
		r = netlink_request(nl, m, on_link_list, &lv);
		if (r != -EINTR)
			break;
	}
	if (r < 0) {
		free(lv.v);
		return netlink_fail(nl, r, err, "failed to list links");
	}
	*out = lv.v;
	*n = lv.n;
	return 0;
}

/* What a missing feature is called and how to get it. */
struct feature {
	const char *key, *label, *config, *module;
};
static const struct feature features[] = {
    {"bridge", "bridge", "CONFIG_BRIDGE", "bridge"},
    {"bridge-vlan", "bridge VLAN filtering", "CONFIG_BRIDGE_VLAN_FILTERING", NULL},
    {"dummy", "dummy", "CONFIG_DUMMY", "dummy"},
    {"ifb", "ifb", "CONFIG_IFB", "ifb"},
    {"ipvlan", "ipvlan", "CONFIG_IPVLAN", "ipvlan"},
    {"macvlan", "macvlan", "CONFIG_MACVLAN", "macvlan"},
    {"tun", "tun/tap", "CONFIG_TUN", "tun"},
    {"veth", "veth", "CONFIG_VETH", "veth"},
    {"vlan", "vlan", "CONFIG_VLAN_8021Q", "8021q"},
    {"vrf", "vrf", "CONFIG_NET_VRF", "vrf"},
};

/* Fill err for a feature the kernel lacks: msg "failed to <action>: kernel
 * lacks <label> support" (action NULL: just the second part), details the
 * errno, the kernel's text and the config option. Returns r. */
static int lacks_error(struct cni_nl *nl, int r, const char *key, const char *action,
		       struct cni_err *err)
{
	if (!err || err_isset(err))
		return r;
	const struct feature *f = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(features); i++)
		if (streq(features[i].key, key))
			f = &features[i];
	const char *label = f ? f->label : key;
	if (action)
		err_set(err, CNI_ERR_INTERNAL, "failed to %s: kernel lacks %s support", action,
			label);
	else
		err_set(err, CNI_ERR_INTERNAL, "kernel lacks %s support", label);
	const char *ext = nl ? netlink_extack(nl) : "";
	snprintf(err->details, sizeof(err->details), "%s%s%s%s", strerror(-r),
		 ext[0] ? " (kernel: " : "", ext, ext[0] ? ")" : "");
	if (f && f->module)
		err_append(err, "the kernel needs %s (module %s)", f->config, f->module);
	else if (f)
		err_append(err, "the kernel needs %s", f->config);
	return r;
}

/* A link request for kind "." that the kernel refuses: EOPNOTSUPP with
 * "Unknown device type" (older kernels: no text) when no module provides
 * the kind, something else once the kind is known. */
static int probe_kind(struct cni_nl *nl, const char *kind)
{
	/* "." is not a valid device name: the kernel refuses it when it
	 * registers the device, after resolving (and autoloading) the kind,
	 * and any kind-specific validation before that fails harmlessly. */
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nl_msg *m = netlink_msg(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	netlink_put_str(m, IFLA_IFNAME, ".");
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, kind);
	if (streq(kind, "veth")) {
		/* The peer would be registered first under a kernel-chosen
		 * name: make it fail too. */
		struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
		struct nlattr *peer = netlink_nest(m, VETH_INFO_PEER);
		struct ifinfomsg pifi = {.ifi_family = AF_UNSPEC};
		if (nlmsg_append(m, &pifi, sizeof(pifi), NLMSG_ALIGNTO) < 0)
			abort();
		netlink_put_str(m, IFLA_IFNAME, ".");
		netlink_nest_end(m, peer);
		netlink_nest_end(m, data);
	}
	netlink_nest_end(m, info);
	int r = netlink_request(nl, m, NULL, NULL);
	const char *ext = netlink_extack(nl);
	return r == -EOPNOTSUPP && (!ext[0] || strstr(ext, "Unknown device type")) ? r : 0;
}

/* Whether a failed creation of kind failed because the kind is unknown.
 * With the kernel's "Unknown device type" that is certain; a bare
 * EOPNOTSUPP (old kernels, or an option the kind lacks) is confirmed by a
 * probe, after which the original failure is restored. */
static bool kind_missing(struct cni_nl *nl, int r, const char *kind)
{
	if (r != -EOPNOTSUPP)
		return false;
	char ext[256];
	strlcpy_(ext, netlink_extack(nl), sizeof(ext));
	if (ext[0])
		return strstr(ext, "Unknown device type") != NULL;
	bool missing = probe_kind(nl, kind) < 0;
	netlink_set_last(nl, r, ext);
	return missing;
}

bool link_kind_supported(struct cni_nl *nl, const char *kind)
{
	return link_kind_check(nl, kind, NULL) == 0;
}

int link_kind_check(struct cni_nl *nl, const char *kind, struct cni_err *err)
{
	if (streq(kind, "tap") || streq(kind, "tun")) {
		if (access("/dev/net/tun", F_OK) < 0)
			return lacks_error(NULL, -EOPNOTSUPP, "tun", NULL, err);
		return 0;
	}
	int r = probe_kind(nl, kind);
	if (r < 0)
		return lacks_error(nl, r, kind, NULL, err);
	return 0;
}

static void put_link_opts(struct nl_msg *m, const struct cni_link_opts *o)
{
	if (!o)
		return;
	if (o->mtu)
		netlink_put_u32(m, IFLA_MTU, o->mtu);
	if (o->mac)
		netlink_put(m, IFLA_ADDRESS, o->mac, 6);
	if (o->txqlen)
		netlink_put_u32(m, IFLA_TXQLEN, o->txqlen);
	if (o->ns)
		netlink_put_u32(m, IFLA_NET_NS_FD, (uint32_t)o->ns->fd);
}

static struct nl_msg *newlink_msg(const char *name, const struct cni_link_opts *o)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nl_msg *m = netlink_msg(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	netlink_put_str(m, IFLA_IFNAME, name);
	put_link_opts(m, o);
	return m;
}

static int link_create(struct cni_nl *nl, struct nl_msg *m, const char *kind, const char *name,
		       struct cni_err *err)
{
	int r = netlink_request(nl, m, NULL, NULL);
	if (r == 0)
		return 0;
	char action[64];
	snprintf(action, sizeof(action), "create %s %s", kind, name);
	if (kind_missing(nl, r, kind))
		return lacks_error(nl, r, kind, action, err);
	return netlink_fail(nl, r, err, "failed to %s", action);
}

int link_add_veth(struct cni_nl *nl, const struct cni_veth *v, struct cni_err *err)
{
	if (!name_ok(v->name))
		return bad_name(v->name, err);
	if (!name_ok(v->peer))
		return bad_name(v->peer, err);
	struct cni_link_opts o = {.mtu = v->mtu, .mac = v->mac};
	struct nl_msg *m = newlink_msg(v->name, &o);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "veth");
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	/* VETH_INFO_PEER is an ifinfomsg followed by the peer's own link
	 * attributes, its namespace among them. */
	struct nlattr *peer = netlink_nest(m, VETH_INFO_PEER);
	struct ifinfomsg pifi = {.ifi_family = AF_UNSPEC};
	if (nlmsg_append(m, &pifi, sizeof(pifi), NLMSG_ALIGNTO) < 0)
		abort();
	netlink_put_str(m, IFLA_IFNAME, v->peer);
	struct cni_link_opts po = {.mtu = v->mtu, .mac = v->peer_mac, .ns = v->peer_ns};
	put_link_opts(m, &po);
	netlink_nest_end(m, peer);
	netlink_nest_end(m, data);
	netlink_nest_end(m, info);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r == 0)
		return 0;
	if (kind_missing(nl, r, "veth")) {
		char action[64];
		snprintf(action, sizeof(action), "create veth %s", v->name);
		return lacks_error(nl, r, "veth", action, err);
	}
	return netlink_fail(nl, r, err, "failed to create veth %s (peer %s%s%s)", v->name, v->peer,
			    v->peer_ns ? " in " : "", v->peer_ns ? v->peer_ns->path : "");
}

/* filtering: whether to send vlan_filtering at all. A kernel without
 * CONFIG_BRIDGE_VLAN_FILTERING refuses the attribute, even to say "off". */
static void put_bridge_data(struct nl_msg *m, const struct cni_bridge_opts *o, bool filtering)
{
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	if (filtering)
		netlink_put_u8(m, IFLA_BR_VLAN_FILTERING, o->vlan_filtering ? 1 : 0);
	if (filtering && o->default_pvid)
		netlink_put_u16(m, IFLA_BR_VLAN_DEFAULT_PVID, (uint16_t)o->default_pvid);
	if (o->mcast_snooping)
		netlink_put_u8(m, IFLA_BR_MCAST_SNOOPING, o->mcast_snooping > 0 ? 1 : 0);
	netlink_nest_end(m, data);
}

int link_add_bridge(struct cni_nl *nl, const char *name, const struct cni_bridge_opts *o,
		    struct cni_err *err)
{
	static const struct cni_bridge_opts defaults = {0};
	if (!o)
		o = &defaults;
	if (!name_ok(name))
		return bad_name(name, err);
	struct nl_msg *m = newlink_msg(name, &o->link);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "bridge");
	put_bridge_data(m, o, o->vlan_filtering || o->default_pvid);
	netlink_nest_end(m, info);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r == 0)
		return 0;
	char action[64];
	snprintf(action, sizeof(action), "create bridge %s", name);
	if (kind_missing(nl, r, "bridge"))
		return lacks_error(nl, r, "bridge", action, err);
	/* The kernel removes the half-made bridge itself. */
	if (r == -EOPNOTSUPP && (o->vlan_filtering || o->default_pvid))
		return lacks_error(nl, r, "bridge-vlan", action, err);
	return netlink_fail(nl, r, err, "failed to %s", action);
}

static int set_bridge(struct cni_nl *nl, int ifindex, const struct cni_bridge_opts *o,
		      bool filtering)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
	struct nl_msg *m = netlink_msg(RTM_NEWLINK, 0, &ifi, sizeof(ifi));
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "bridge");
	put_bridge_data(m, o, filtering);
	netlink_nest_end(m, info);
	return netlink_request(nl, m, NULL, NULL);
}

int link_set_bridge(struct cni_nl *nl, int ifindex, const struct cni_bridge_opts *o,
		    struct cni_err *err)
{
	int r = set_bridge(nl, ifindex, o, true);
	/* Without VLAN filtering in the kernel, "off" is already true. */
	if (r == -EOPNOTSUPP && !o->vlan_filtering && !o->default_pvid)
		r = o->mcast_snooping ? set_bridge(nl, ifindex, o, false) : 0;
	if (r == -EOPNOTSUPP && (o->vlan_filtering || o->default_pvid)) {
		char name[LINK_NAME_MAX + 16], action[64];
		link_label(nl, ifindex, name, sizeof(name));
		snprintf(action, sizeof(action), "configure bridge %s", name);
		return lacks_error(nl, r, "bridge-vlan", action, err);
	}
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "configure bridge", NULL);
	return 0;
}

int link_macvlan_mode_parse(const char *s)
{
	static const struct {
		const char *name;
		int mode;
	} t[] = {
	    {"bridge", LINK_MACVLAN_BRIDGE}, {"private", LINK_MACVLAN_PRIVATE},
	    {"vepa", LINK_MACVLAN_VEPA},     {"passthru", LINK_MACVLAN_PASSTHRU},
	    {"source", LINK_MACVLAN_SOURCE},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (streq(s, t[i].name))
			return t[i].mode;
	return -1;
}

int link_ipvlan_mode_parse(const char *s)
{
	if (streq(s, "l2"))
		return LINK_IPVLAN_L2;
	if (streq(s, "l3"))
		return LINK_IPVLAN_L3;
	if (streq(s, "l3s"))
		return LINK_IPVLAN_L3S;
	return -1;
}

int link_ipvlan_flags_parse(const char *s)
{
	if (streq(s, "bridge"))
		return LINK_IPVLAN_F_BRIDGE;
	if (streq(s, "private"))
		return LINK_IPVLAN_F_PRIVATE;
	if (streq(s, "vepa"))
		return LINK_IPVLAN_F_VEPA;
	return -1;
}

/* Whether the macvlan just created as name (in o->ns when set, else in
 * nl's namespace) reports the broadcast queue length: a kernel that does
 * not know IFLA_MACVLAN_BC_QUEUE_LEN skips it when creating the link and
 * leaves it out of dumps. If not, the link is deleted again and err says
 * why. */
static int macvlan_check_bcq(struct cni_nl *nl, const char *name, const struct cni_link_opts *o,
			     struct cni_err *err)
{
	struct cni_nl *own = NULL;
	struct cni_nl *where = nl;
	struct cni_link l;
	int r;
	if (o && o->ns && !(where = own = netlink_open(o->ns, err)))
		return -EIO;
	r = link_get_by_name(where, name, &l, err);
	if (r == -ENODEV)
		r = netlink_fail(where, r, err, "macvlan %s vanished after its creation", name);
	if (r == 0 && !l.bc_queue_len) {
		struct cni_err ignore = {0};
		link_del(where, l.ifindex, &ignore);
		char action[64];
		snprintf(action, sizeof(action), "create macvlan %s", name);
		r = -EOPNOTSUPP;
		err_set(err, CNI_ERR_INTERNAL,
			"failed to %s: kernel lacks macvlan bcqueuelen support", action);
		err_append(err, "IFLA_MACVLAN_BC_QUEUE_LEN needs Linux 5.11 or later");
	}
	netlink_close(own);
	return r;
}

int link_add_macvlan(struct cni_nl *nl, const char *name, int parent, unsigned mode,
		     unsigned bc_queue_len, const struct cni_link_opts *o, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	/* IFLA_LINK is resolved in the socket's namespace even when the
	 * new link is created in o->ns. */
	struct nl_msg *m = newlink_msg(name, o);
	netlink_put_u32(m, IFLA_LINK, (uint32_t)parent);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "macvlan");
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	netlink_put_u32(m, IFLA_MACVLAN_MODE, mode);
	if (bc_queue_len)
		netlink_put_u32(m, IFLA_MACVLAN_BC_QUEUE_LEN, bc_queue_len);
	netlink_nest_end(m, data);
	netlink_nest_end(m, info);
	int r = link_create(nl, m, "macvlan", name, err);
	if (r < 0 || !bc_queue_len)
		return r;
	return macvlan_check_bcq(nl, name, o, err);
}

int link_add_ipvlan(struct cni_nl *nl, const char *name, int parent, unsigned mode, unsigned flags,
		    const struct cni_link_opts *o, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct nl_msg *m = newlink_msg(name, o);
	netlink_put_u32(m, IFLA_LINK, (uint32_t)parent);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "ipvlan");
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	netlink_put_u16(m, IFLA_IPVLAN_MODE, (uint16_t)mode);
	netlink_put_u16(m, IFLA_IPVLAN_FLAGS, (uint16_t)flags);
	netlink_nest_end(m, data);
	netlink_nest_end(m, info);
	return link_create(nl, m, "ipvlan", name, err);
}

int link_add_vlan(struct cni_nl *nl, const char *name, int parent, unsigned vid,
		  const struct cni_link_opts *o, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	/* The kernel takes 0..4094 (4095 is reserved); so does the
	 * reference plugin. */
	if (vid > 4094) {
		err_set(err, CNI_ERR_INTERNAL, "failed to create vlan %s: invalid VLAN id %u", name,
			vid);
		return -EINVAL;
	}
	struct nl_msg *m = newlink_msg(name, o);
	netlink_put_u32(m, IFLA_LINK, (uint32_t)parent);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "vlan");
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	netlink_put_u16(m, IFLA_VLAN_ID, (uint16_t)vid);
	netlink_nest_end(m, data);
	netlink_nest_end(m, info);
	return link_create(nl, m, "vlan", name, err);
}

static int add_simple(struct cni_nl *nl, const char *kind, const char *name,
		      const struct cni_link_opts *o, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct nl_msg *m = newlink_msg(name, o);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, kind);
	netlink_nest_end(m, info);
	return link_create(nl, m, kind, name, err);
}

int link_add_dummy(struct cni_nl *nl, const char *name, const struct cni_link_opts *o,
		   struct cni_err *err)
{
	return add_simple(nl, "dummy", name, o, err);
}

int link_add_ifb(struct cni_nl *nl, const char *name, const struct cni_link_opts *o,
		 struct cni_err *err)
{
	return add_simple(nl, "ifb", name, o, err);
}

int link_add_vrf(struct cni_nl *nl, const char *name, unsigned table, const struct cni_link_opts *o,
		 struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct nl_msg *m = newlink_msg(name, o);
	struct nlattr *info = netlink_nest(m, IFLA_LINKINFO);
	netlink_put_str(m, IFLA_INFO_KIND, "vrf");
	struct nlattr *data = netlink_nest(m, IFLA_INFO_DATA);
	netlink_put_u32(m, IFLA_VRF_TABLE, table);
	netlink_nest_end(m, data);
	netlink_nest_end(m, info);
	return link_create(nl, m, "vrf", name, err);
}

struct tap_ctx {
	const char *name;
	unsigned flags;
	long owner, group;
	const char *step;
	int error;
};

static int tap_fail(struct tap_ctx *c, const char *step, int fd)
{
	c->step = step;
	c->error = errno ? errno : EIO;
	if (fd >= 0)
		close(fd); /* a tap that is not yet persistent goes with it */
	return -1;
}

/* Runs inside the target namespace: /dev/net/tun creates the device in
 * the namespace of the thread that opens it. */
static int tap_in_ns(void *arg)
{
	struct tap_ctx *c = arg;
	errno = 0;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return tap_fail(c, "open /dev/net/tun", -1);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strlcpy_(ifr.ifr_name, c->name, sizeof(ifr.ifr_name));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (c->flags & LINK_TAP_MULTI_QUEUE)
		ifr.ifr_flags |= IFF_MULTI_QUEUE;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		/* A non-tun device of that name: EINVAL; say what it is. */
		if (errno == EINVAL && if_nametoindex(c->name))
			errno = EEXIST;
		return tap_fail(c, "TUNSETIFF", fd);
	}
	/* TUNSETIFF attaches to an existing persistent tap of the same name
	 * instead of failing: a new device is never persistent yet. */
	struct ifreq got;
	memset(&got, 0, sizeof(got));
	if (ioctl(fd, TUNGETIFF, &got) < 0)
		return tap_fail(c, "TUNGETIFF", fd);
	if (got.ifr_flags & IFF_PERSIST) {
		errno = EEXIST;
		return tap_fail(c, "TUNSETIFF", fd);
	}
	if (c->owner >= 0 && ioctl(fd, TUNSETOWNER, (unsigned long)c->owner) < 0)
		return tap_fail(c, "TUNSETOWNER", fd);
	if (c->group >= 0 && ioctl(fd, TUNSETGROUP, (unsigned long)c->group) < 0)
		return tap_fail(c, "TUNSETGROUP", fd);
	if (ioctl(fd, TUNSETPERSIST, 1UL) < 0)
		return tap_fail(c, "TUNSETPERSIST", fd);
	close(fd);
	return 0;
}

int link_add_tap(const struct cni_netns *ns, const char *name, unsigned flags, long owner,
		 long group, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct tap_ctx c = {.name = name, .flags = flags, .owner = owner, .group = group};
	if (netns_run(ns, tap_in_ns, &c) < 0) {
		int e = c.error ? c.error : (errno ? errno : EIO);
		if (e == ENOENT && streq(c.step, "open /dev/net/tun")) {
			char action[64];
			snprintf(action, sizeof(action), "create tap %s", name);
			return lacks_error(NULL, -EOPNOTSUPP, "tun", action, err);
		}
		err_errno(err, CNI_ERR_INTERNAL, e, "failed to create tap %s", name);
		if (c.step)
			err_append(err, "%s", c.step);
		return -e;
	}
	return 0;
}

/* RTM_NEWLINK on an existing link: flags under mask, plus whatever the
 * caller adds. */
static struct nl_msg *setlink_msg(int ifindex, unsigned flags, unsigned change)
{
	struct ifinfomsg ifi = {
	    .ifi_family = AF_UNSPEC,
	    .ifi_index = ifindex,
	    .ifi_flags = flags,
	    .ifi_change = change,
	};
	return netlink_msg(RTM_NEWLINK, 0, &ifi, sizeof(ifi));
}

static int set_flag(struct cni_nl *nl, int ifindex, unsigned flag, bool on, const char *verb,
		    struct cni_err *err)
{
	struct nl_msg *m = setlink_msg(ifindex, on ? flag : 0, flag);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, verb, NULL);
	return 0;
}

int link_set_up(struct cni_nl *nl, int ifindex, struct cni_err *err)
{
	return set_flag(nl, ifindex, IFF_UP, true, "set up", err);
}

int link_set_down(struct cni_nl *nl, int ifindex, struct cni_err *err)
{
	return set_flag(nl, ifindex, IFF_UP, false, "set down", err);
}

int link_set_promisc(struct cni_nl *nl, int ifindex, bool on, struct cni_err *err)
{
	return set_flag(nl, ifindex, IFF_PROMISC, on, on ? "set promisc on" : "set promisc off",
			err);
}

int link_set_allmulti(struct cni_nl *nl, int ifindex, bool on, struct cni_err *err)
{
	return set_flag(nl, ifindex, IFF_ALLMULTI, on,
			on ? "set allmulticast on" : "set allmulticast off", err);
}

static int set_u32(struct cni_nl *nl, int ifindex, int attr, uint32_t v, const char *verb,
		   struct cni_err *err)
{
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	netlink_put_u32(m, attr, v);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, verb, " to %u", v);
	return 0;
}

int link_set_mtu(struct cni_nl *nl, int ifindex, unsigned mtu, struct cni_err *err)
{
	return set_u32(nl, ifindex, IFLA_MTU, mtu, "set MTU of", err);
}

int link_set_txqlen(struct cni_nl *nl, int ifindex, unsigned txqlen, struct cni_err *err)
{
	return set_u32(nl, ifindex, IFLA_TXQLEN, txqlen, "set txqueuelen of", err);
}

int link_set_master(struct cni_nl *nl, int ifindex, int master, struct cni_err *err)
{
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	netlink_put_u32(m, IFLA_MASTER, (uint32_t)master);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0) {
		if (master)
			return link_fail(nl, r, ifindex, err, "attach", " to master %d", master);
		return link_fail(nl, r, ifindex, err, "detach", " from its master");
	}
	return 0;
}

int link_set_mac(struct cni_nl *nl, int ifindex, const uint8_t mac[6], struct cni_err *err)
{
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	netlink_put(m, IFLA_ADDRESS, mac, 6);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0) {
		char s[LINK_MAC_STRLEN];
		return link_fail(nl, r, ifindex, err, "set MAC of", " to %s",
				 link_format_mac(mac, 6, s));
	}
	return 0;
}

int link_set_alias(struct cni_nl *nl, int ifindex, const char *alias, struct cni_err *err)
{
	size_t len = strlen(alias);
	if (len >= LINK_ALIAS_MAX) {
		err_set(err, CNI_ERR_INTERNAL,
			"failed to set alias of link %d: %zu bytes (limit %d)", ifindex, len,
			LINK_ALIAS_MAX - 1);
		return -EINVAL;
	}
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	/* Without the NUL: the kernel stores the attribute's length as is,
	 * and an empty attribute clears the alias. */
	netlink_put(m, IFLA_IFALIAS, alias, len);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0) {
		if (!len)
			return link_fail(nl, r, ifindex, err, "clear the alias of", NULL);
		return link_fail(nl, r, ifindex, err, "set the alias of", " to \"%.40s\"", alias);
	}
	return 0;
}

int link_rename(struct cni_nl *nl, int ifindex, const char *name, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	netlink_put_str(m, IFLA_IFNAME, name);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "rename", " to %s", name);
	return 0;
}

int link_set_netns(struct cni_nl *nl, int ifindex, const struct cni_netns *ns, const char *new_name,
		   struct cni_err *err)
{
	if (new_name && !name_ok(new_name))
		return bad_name(new_name, err);
	struct nl_msg *m = setlink_msg(ifindex, 0, 0);
	netlink_put_u32(m, IFLA_NET_NS_FD, (uint32_t)ns->fd);
	/* With a namespace, IFLA_IFNAME names the link in its new home. */
	if (new_name)
		netlink_put_str(m, IFLA_IFNAME, new_name);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "move", " to namespace %s%s%s", ns->path,
				 new_name ? " as " : "", new_name ? new_name : "");
	return 0;
}

int link_del(struct cni_nl *nl, int ifindex, struct cni_err *err)
{
	if (ifindex <= 0)
		return 0;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
	struct nl_msg *m = netlink_msg(RTM_DELLINK, 0, &ifi, sizeof(ifi));
	int r = netlink_request(nl, m, NULL, NULL);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "delete", NULL);
	return 0;
}

int link_del_by_name(struct cni_nl *nl, const char *name, struct cni_err *err)
{
	if (!name_ok(name))
		return bad_name(name, err);
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nl_msg *m = netlink_msg(RTM_DELLINK, 0, &ifi, sizeof(ifi));
	netlink_put_str(m, IFLA_IFNAME, name);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return netlink_fail(nl, r, err, "failed to delete %s", name);
	return 0;
}

int link_set_brport(struct cni_nl *nl, int ifindex, enum link_brport_flag what, bool on,
		    struct cni_err *err)
{
	static const struct {
		int attr;
		const char *name;
	} t[] = {
	    [LINK_BRPORT_HAIRPIN] = {IFLA_BRPORT_MODE, "hairpin"},
	    [LINK_BRPORT_ISOLATED] = {IFLA_BRPORT_ISOLATED, "isolated"},
	    [LINK_BRPORT_LEARNING] = {IFLA_BRPORT_LEARNING, "learning"},
	    [LINK_BRPORT_FLOOD] = {IFLA_BRPORT_UNICAST_FLOOD, "flood"},
	    [LINK_BRPORT_NEIGH_SUPPRESS] = {IFLA_BRPORT_NEIGH_SUPPRESS, "neigh_suppress"},
	};
	if ((unsigned)what >= ARRAY_SIZE(t)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid bridge port setting %d", (int)what);
		return -EINVAL;
	}
	/* AF_BRIDGE setlink goes to the port's master; IFLA_PROTINFO must
	 * be flagged nested or it is read as a bare STP state. */
	struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE, .ifi_index = ifindex};
	struct nl_msg *m = netlink_msg(RTM_SETLINK, 0, &ifi, sizeof(ifi));
	struct nlattr *pi = netlink_nest(m, IFLA_PROTINFO);
	netlink_put_u8(m, t[what].attr, on ? 1 : 0);
	netlink_nest_end(m, pi);
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "set bridge port", " %s %s", t[what].name,
				 on ? "on" : "off");
	return 0;
}

struct brport_ctx {
	int ifindex;
	bool found;
	struct cni_brport *out;
};

static int on_brport(const struct nlmsghdr *h, void *arg)
{
	struct brport_ctx *c = arg;
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return 0;
	const struct ifinfomsg *ifi = nlmsg_data(h);
	if (ifi->ifi_index != c->ifindex || c->found)
		return 0;
	struct nlattr *pi = nlmsg_find_attr((struct nlmsghdr *)h, sizeof(*ifi), IFLA_PROTINFO);
	/* The bridge itself is dumped too, without port attributes. */
	if (!pi || !(pi->nla_type & NLA_F_NESTED))
		return 0;
	struct nlattr *tb[IFLA_BRPORT_MAX + 1];
	if (nla_parse_nested(tb, IFLA_BRPORT_MAX, pi, NULL) < 0)
		return -EPROTO;
	c->found = true;
	c->out->hairpin = get_uint(tb[IFLA_BRPORT_MODE], 0) != 0;
	c->out->isolated = get_uint(tb[IFLA_BRPORT_ISOLATED], 0) != 0;
	c->out->learning = get_uint(tb[IFLA_BRPORT_LEARNING], 0) != 0;
	c->out->flood = get_uint(tb[IFLA_BRPORT_UNICAST_FLOOD], 0) != 0;
	c->out->neigh_suppress = get_uint(tb[IFLA_BRPORT_NEIGH_SUPPRESS], 0) != 0;
	return 0;
}

int link_get_brport(struct cni_nl *nl, int ifindex, struct cni_brport *out, struct cni_err *err)
{
	struct brport_ctx c = {.ifindex = ifindex, .out = out};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		c.found = false;
		memset(out, 0, sizeof(*out));
		/* AF_BRIDGE links have no single-link GET: dump and pick. */
		struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE};
		struct nl_msg *m = netlink_msg(RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi));
		r = netlink_request(nl, m, on_brport, &c);
		if (r != -EINTR)
			break;
	}
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "read bridge port settings of", NULL);
	return c.found ? 0 : -ENODEV;
}

static int bridge_vlan(struct cni_nl *nl, int type, int ifindex, unsigned vid, unsigned vid_end,
		       unsigned flags)
{
	struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE, .ifi_index = ifindex};
	struct nl_msg *m = netlink_msg(type, 0, &ifi, sizeof(ifi));
	struct nlattr *spec = netlink_nest(m, IFLA_AF_SPEC);
	if (flags & LINK_BRVLAN_SELF)
		netlink_put_u16(m, IFLA_BRIDGE_FLAGS, BRIDGE_FLAGS_SELF);
	struct bridge_vlan_info vi = {.vid = (uint16_t)vid};
	if (flags & LINK_BRVLAN_PVID)
		vi.flags |= BRIDGE_VLAN_INFO_PVID;
	if (flags & LINK_BRVLAN_UNTAGGED)
		vi.flags |= BRIDGE_VLAN_INFO_UNTAGGED;
	if (vid_end && vid_end != vid) {
		struct bridge_vlan_info end = vi;
		vi.flags |= BRIDGE_VLAN_INFO_RANGE_BEGIN;
		end.flags |= BRIDGE_VLAN_INFO_RANGE_END;
		end.vid = (uint16_t)vid_end;
		netlink_put(m, IFLA_BRIDGE_VLAN_INFO, &vi, sizeof(vi));
		netlink_put(m, IFLA_BRIDGE_VLAN_INFO, &end, sizeof(end));
	} else {
		netlink_put(m, IFLA_BRIDGE_VLAN_INFO, &vi, sizeof(vi));
	}
	netlink_nest_end(m, spec);
	return netlink_request(nl, m, NULL, NULL);
}

static bool vid_range_ok(unsigned vid, unsigned vid_end)
{
	return vid >= 1 && vid <= 4094 && (!vid_end || (vid_end >= vid && vid_end <= 4094));
}

int link_bridge_vlan_add(struct cni_nl *nl, int ifindex, unsigned vid, unsigned vid_end,
			 unsigned flags, struct cni_err *err)
{
	if (!vid_range_ok(vid, vid_end)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid VLAN range %u-%u", vid, vid_end);
		return -EINVAL;
	}
	int r = bridge_vlan(nl, RTM_SETLINK, ifindex, vid, vid_end, flags);
	if (r == -EOPNOTSUPP) {
		/* Also the answer for a link that is no bridge port. */
		char ext[256];
		strlcpy_(ext, netlink_extack(nl), sizeof(ext));
		struct cni_link l;
		bool bridged = link_get_by_index(nl, ifindex, &l, NULL) == 0 &&
			       (streq(l.slave_kind, "bridge") ||
				((flags & LINK_BRVLAN_SELF) && streq(l.kind, "bridge")));
		netlink_set_last(nl, r, ext);
		if (bridged) {
			char action[80];
			snprintf(action, sizeof(action), "add VLAN %u to %s", vid, l.name);
			return lacks_error(nl, r, "bridge-vlan", action, err);
		}
		return link_fail(nl, r, ifindex, err, "add VLAN to", " (vid %u): not a bridge port",
				 vid);
	}
	if (r < 0) {
		if (vid_end && vid_end != vid)
			return link_fail(nl, r, ifindex, err, "add VLANs to", " (vid %u-%u)", vid,
					 vid_end);
		return link_fail(nl, r, ifindex, err, "add VLAN to", " (vid %u)", vid);
	}
	return 0;
}

int link_bridge_vlan_del(struct cni_nl *nl, int ifindex, unsigned vid, unsigned vid_end,
			 unsigned flags, struct cni_err *err)
{
	if (!vid_range_ok(vid, vid_end)) {
		err_set(err, CNI_ERR_INTERNAL, "invalid VLAN range %u-%u", vid, vid_end);
		return -EINVAL;
	}
	int r = bridge_vlan(nl, RTM_DELLINK, ifindex, vid, vid_end, flags & LINK_BRVLAN_SELF);
	/* ENOENT: vid not configured; ENODEV: no such link; EOPNOTSUPP: not
	 * a bridge port (any more), or no VLAN support so no VLANs. */
	if (r == -ENOENT || r == -ENODEV || r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return link_fail(nl, r, ifindex, err, "delete VLAN from", " (vid %u)", vid);
	return 0;
}

struct brvlan_ctx {
	int ifindex;
	struct cni_brvlan *v;
	size_t n, cap;
	unsigned range_start;
};

static void brvlan_push(struct brvlan_ctx *c, unsigned vid, unsigned flags)
{
	xgrow(&c->v, &c->cap, c->n, sizeof(*c->v));
	c->v[c->n].vid = vid;
	c->v[c->n].flags = flags;
	c->n++;
}

static int on_brvlan(const struct nlmsghdr *h, void *arg)
{
	struct brvlan_ctx *c = arg;
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return 0;
	const struct ifinfomsg *ifi = nlmsg_data(h);
	if (ifi->ifi_index != c->ifindex)
		return 0;
	struct nlattr *spec = nlmsg_find_attr((struct nlmsghdr *)h, sizeof(*ifi), IFLA_AF_SPEC);
	if (!spec)
		return 0;
	struct nlattr *a;
	int rem;
	nla_for_each_nested(a, spec, rem)
	{
		if (nla_type(a) != IFLA_BRIDGE_VLAN_INFO ||
		    nla_len(a) < (int)sizeof(struct bridge_vlan_info))
			continue;
		struct bridge_vlan_info vi;
		memcpy(&vi, nla_data(a), sizeof(vi));
		unsigned fl = ((vi.flags & BRIDGE_VLAN_INFO_PVID) ? LINK_BRVLAN_PVID : 0) |
			      ((vi.flags & BRIDGE_VLAN_INFO_UNTAGGED) ? LINK_BRVLAN_UNTAGGED : 0);
		if (vi.flags & BRIDGE_VLAN_INFO_RANGE_BEGIN) {
			c->range_start = vi.vid;
			continue;
		}
		if ((vi.flags & BRIDGE_VLAN_INFO_RANGE_END) && c->range_start) {
			for (unsigned v = c->range_start; v <= vi.vid; v++)
				brvlan_push(c, v, fl);
			c->range_start = 0;
			continue;
		}
		brvlan_push(c, vi.vid, fl);
	}
	return 0;
}

int link_bridge_vlan_list(struct cni_nl *nl, int ifindex, struct cni_brvlan **out, size_t *n,
			  struct cni_err *err)
{
	struct brvlan_ctx c = {.ifindex = ifindex};
	int r;
	for (int tries = 0; tries < 5; tries++) {
		c.n = 0;
		c.range_start = 0;
		struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE};
		struct nl_msg *m = netlink_msg(RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi));
		netlink_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN);
		r = netlink_request(nl, m, on_brvlan, &c);
		if (r != -EINTR)
			break;
	}
	if (r < 0) {
		free(c.v);
		return link_fail(nl, r, ifindex, err, "list VLANs of", NULL);
	}
	*out = c.v;
	*n = c.n;
	return 0;
}
