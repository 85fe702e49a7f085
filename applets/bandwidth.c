/* bandwidth: limit the rate of a container's traffic with tc, on the host
 * end of its veth (a chained plugin, after ptp or bridge).
 *
 * Traffic into the container leaves the host through the host veth, so
 * ingressRate is a root tbf qdisc there. Traffic out of the container
 * arrives on the host veth's ingress, where no qdisc can queue: an ingress
 * qdisc and a u32 filter redirect every packet (mirred) to an ifb device
 * "bwp<12 hex of sha512(network name + container id)>", whose root tbf
 * shapes it to egressRate. All of it through netlink. The tbf parameters
 * are the reference's: rate and burst in bytes, the burst's transmit time
 * as the bucket, a queue of 25 ms at the rate plus the burst.
 *
 * unshapedSubnets / shapedSubnets exempt (or alone subject) traffic to and
 * from some subnets: the root qdisc is then an htb with a class 1:48 at
 * the configured rate (and the burst as its bucket) and an uncapped class
 * 1:1 (100 Gbit/s), u32 filters picking the class by the remote address:
 * the source on the host veth, the destination on the ifb.
 *
 * ADD's result is prevResult plus the ifb (no sandbox). DEL deletes the
 * ifb and, when the host veth can still be found through the container's
 * end, the qdiscs ADD put on it. CHECK compares the qdiscs (and classes)
 * with the configuration and verifies the redirect.
 *
 * Differences from the reference:
 *  - every value is checked before anything is created, code 7 naming the
 *    field: a negative number, a rate without burst or the reverse, a rate
 *    under 8 bit/s or a burst under 8 bits (zero bytes after the
 *    reference's division), a burst whose transmit time the kernel cannot
 *    hold (over 4.29 s: it would silently cut it), a malformed subnet;
 *  - the subnet options are ours in this form: the reference added them
 *    (htb, matching the destination in both directions, ceil twice the
 *    rate) and then reverted them; we match the remote side of each
 *    direction and cap at the configured rate;
 *  - DEL also removes the qdiscs from the host veth when it still exists;
 *  - CHECK fails when the root qdisc is not the expected one (the
 *    reference stops looking at the first non-tbf qdisc and passes);
 *  - all cniVersions are accepted (the reference starts at 0.3.0); before
 *    0.3.0 the result cannot name the ifb. */
#include <errno.h>
#include <linux/if_ether.h>
#include <stdio.h>

#include "applet.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "sha512.h"
#include "tc.h"

#define BW_IFB_PREFIX "bwp"
#define BW_ROOT TC_HANDLE(1, 0)
#define BW_CLASS_SHAPED TC_HANDLE(1, 48)
#define BW_CLASS_UNSHAPED TC_HANDLE(1, 1)
#define BW_UNCAPPED (100000000000ull / 8) /* 100 Gbit/s in bytes */

struct bw_dir {
	uint64_t rate, burst; /* bits per second, bits */
	bool on;
	struct cni_tbf tbf;
};

struct bw_conf {
	struct bw_dir in, eg;
	struct cni_cidr *subnets;
	size_t n_subnets;
	bool only_shaped; /* subnets are shapedSubnets, not unshapedSubnets */
	char ifb[LINK_NAME_MAX];
	struct cni_nl *host, *cont; /* kept for the undo steps */
};

static void bw_free(void *priv)
{
	struct bw_conf *c = priv;
	if (!c)
		return;
	free(c->subnets);
	netlink_close(c->host);
	netlink_close(c->cont);
	free(c);
}

static void bw_freep(struct bw_conf **c)
{
	bw_free(*c);
}

static const char *const bw_keys[] = {
    "ingressRate", "ingressBurst", "egressRate", "egressBurst", "unshapedSubnets", "shapedSubnets",
};

/* A rate and its burst: both or neither, and representable. */
static int bw_get_dir(const struct cni_json *e, const char *rate_key, const char *burst_key,
		      struct bw_dir *d, struct cni_err *err)
{
	if (json_get_uint(e, rate_key, 0, UINT64_MAX, &d->rate, err) < 0 ||
	    json_get_uint(e, burst_key, 0, UINT64_MAX, &d->burst, err) < 0)
		return -1;
	if (d->rate && !d->burst)
		return json_err_key(err, e, burst_key, "must be set (and not 0) when %s is",
				    rate_key);
	if (d->burst && !d->rate)
		return json_err_key(err, e, rate_key, "must be set (and not 0) when %s is",
				    burst_key);
	if (!d->rate)
		return 0;
	const char *why;
	if (tc_tbf_params(d->rate, d->burst, &d->tbf, &why) < 0)
		return json_err_key(err, e, strstr(why, "rate") == why ? rate_key : burst_key, "%s",
				    why);
	d->on = true;
	return 0;
}

static int bw_get_subnets(struct bw_conf *c, const struct cni_json *e, const char *key,
			  struct cni_err *err)
{
	const struct cni_json *a = NULL;
	if (json_get_arr(e, key, 0, &a, err) < 0)
		return -1;
	if (!json_len(a))
		return 0;
	if (c->n_subnets)
		return json_err_key(err, e, key,
				    "unshapedSubnets and shapedSubnets cannot both be set");
	c->subnets = xcalloc(json_len(a), sizeof(*c->subnets));
	for (size_t i = 0; i < json_len(a); i++) {
		struct cni_cidr cidr;
		if (json_as_cidr(json_at(a, i), &cidr, err) < 0)
			return -1;
		c->subnets[c->n_subnets++] = ip_cidr_network(&cidr);
	}
	c->only_shaped = streq(key, "shapedSubnets");
	return 0;
}

static int bw_parse(struct cni_req *req, struct cni_err *err)
{
	_cleanup_(bw_freep) struct bw_conf *c = xcalloc(1, sizeof(*c));
	/* The limits come from the config itself when it has any of the
	 * fields, else from the "bandwidth" capability. */
	const struct cni_json *e = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(bw_keys) && !e; i++)
		if (json_get(req->conf, bw_keys[i]))
			e = req->conf;
	/* DEL deletes the ifb whatever the values: one ADD refused must not
	 * keep DEL from cleaning up (it then leaves the veth's qdiscs). */
	struct cni_err ignore = {0};
	struct cni_err *perr = req->cmd == CNI_CMD_DEL ? &ignore : err;
	if (!e && json_get_obj(req->rt, "bandwidth", 0, &e, perr) < 0 && perr == err)
		return -1;
	if (e && (bw_get_dir(e, "ingressRate", "ingressBurst", &c->in, perr) < 0 ||
		  bw_get_dir(e, "egressRate", "egressBurst", &c->eg, perr) < 0 ||
		  bw_get_subnets(c, e, "unshapedSubnets", perr) < 0 ||
		  bw_get_subnets(c, e, "shapedSubnets", perr) < 0)) {
		if (perr == err)
			return -1;
		c->in.on = c->eg.on = false;
	}

	/* The ifb's name, as the reference derives it. */
	_cleanup_free_ char *seed = xasprintf("%s%s", req->name ? req->name : "",
					      req->container_id ? req->container_id : "");
	uint8_t d[SHA512_DIGEST_SIZE];
	sha512_digest(seed, strlen(seed), d);
	char *p = c->ifb + snprintf(c->ifb, sizeof(c->ifb), "%s", BW_IFB_PREFIX);
	for (size_t i = 0; p + 2 < c->ifb + sizeof(c->ifb); i++)
		p += snprintf(p, 3, "%02x", d[i]);
	req->priv = TAKE_PTR(c);
	return 0;
}

/* The host end of the container's veth: the peer of CNI_IFNAME, which
 * must also be a host interface of prevResult (as the reference). */
static int bw_host_veth(struct cni_req *req, struct bw_conf *c, struct cni_link *host,
			struct cni_err *err)
{
	bool gone = false;
	struct cni_netns *ns = req_netns(req, &gone, err);
	if (!ns)
		return -1;
	if (!c->cont && !(c->cont = netlink_open(ns, err)))
		return -1;
	if (!c->host && !(c->host = netlink_open(NULL, err)))
		return -1;
	struct cni_link l;
	int r = link_get_by_name(c->cont, req->ifname, &l, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "container interface %s not found",
			       req->ifname);
	if (r < 0)
		return -1;
	if (!streq(l.kind, "veth") || l.parent <= 0)
		return err_set(err, CNI_ERR_INTERNAL, "container interface %s has no veth peer",
			       req->ifname);
	r = link_get_by_index(c->host, l.parent, host, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "veth peer with index %d is not in host ns",
			       l.parent);
	if (r < 0)
		return -1;
	if (!req->prev || result_find_iface(req->prev, host->name, NULL) < 0)
		return err_set(err, CNI_ERR_INTERNAL,
			       "no veth peer of container interface found in host ns (%s is not a "
			       "host interface of prevResult)",
			       host->name);
	return 0;
}

/* The root qdisc shaping one direction on ifindex: a tbf, or with subnets
 * an htb whose filters pick the shaped or the uncapped class. */
static int bw_shape(struct bw_conf *c, int ifindex, const struct bw_dir *d, bool match_src,
		    struct cni_err *err)
{
	if (!c->n_subnets)
		return tc_qdisc_add_tbf(c->host, ifindex, TC_ROOT, BW_ROOT, &d->tbf, err);
	uint32_t def = c->only_shaped ? BW_CLASS_UNSHAPED : BW_CLASS_SHAPED;
	if (tc_qdisc_add_htb(c->host, ifindex, TC_ROOT, BW_ROOT, def & 0xffff, err) < 0)
		return -1;
	struct cni_htb_class shaped = {
	    .handle = BW_CLASS_SHAPED,
	    .parent = BW_ROOT,
	    .rate = d->tbf.rate,
	    .ceil = d->tbf.rate,
	    .buffer = d->tbf.buffer,
	    .cbuffer = d->tbf.buffer,
	};
	/* A millisecond of bucket is plenty at this rate. */
	uint32_t ms = tc_usec_to_ticks(1000);
	struct cni_htb_class uncapped = {
	    .handle = BW_CLASS_UNSHAPED,
	    .parent = BW_ROOT,
	    .rate = BW_UNCAPPED,
	    .ceil = BW_UNCAPPED,
	    .buffer = ms,
	    .cbuffer = ms,
	};
	if (tc_class_add_htb(c->host, ifindex, &shaped, err) < 0 ||
	    tc_class_add_htb(c->host, ifindex, &uncapped, err) < 0)
		return -1;
	for (size_t i = 0; i < c->n_subnets; i++) {
		bool v4 = c->subnets[i].ip.family == AF_INET;
		/* One protocol per filter priority, as the kernel wants. */
		struct cni_u32 f = {
		    .parent = BW_ROOT,
		    .prio = v4 ? 16 : 15,
		    .protocol = v4 ? ETH_P_IP : ETH_P_IPV6,
		    .match = &c->subnets[i],
		    .match_src = match_src,
		    .classid = c->only_shaped ? BW_CLASS_SHAPED : BW_CLASS_UNSHAPED,
		};
		if (tc_filter_add_u32(c->host, ifindex, &f, err) < 0)
			return -1;
	}
	return 0;
}

enum bw_undo_what { BW_U_ROOT, BW_U_INGRESS, BW_U_IFB };
struct bw_undo {
	enum bw_undo_what what;
	int ifindex;
};

static void bw_undo(struct cni_req *req, void *arg)
{
	struct bw_conf *c = req->priv;
	struct bw_undo *u = arg;
	struct cni_err e = {0};
	if (u->what == BW_U_ROOT)
		tc_qdisc_del(c->host, u->ifindex, TC_ROOT, BW_ROOT, &e);
	else if (u->what == BW_U_INGRESS)
		tc_qdisc_del(c->host, u->ifindex, TC_INGRESS, TC_INGRESS_HANDLE, &e);
	else
		link_del(c->host, u->ifindex, &e);
	if (err_isset(&e))
		fprintf(stderr, "bandwidth: undo: %s: %s\n", e.msg, e.details);
}

static void bw_push(struct cni_req *req, enum bw_undo_what what, int ifindex)
{
	struct bw_undo *u = xcalloc(1, sizeof(*u));
	u->what = what;
	u->ifindex = ifindex;
	req_push_undo(req, bw_undo, u, free);
}

static int bw_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct bw_conf *c = req->priv;
	if (!c->in.on && !c->eg.on)
		return 0; /* no limits: prevResult passes through */
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: missing (bandwidth must be chained after an interface "
			       "plugin)");
	struct cni_link host;
	if (bw_host_veth(req, c, &host, err) < 0)
		return -1;

	if (c->in.on) {
		if (bw_shape(c, host.ifindex, &c->in, true, err) < 0) {
			tc_qdisc_del(c->host, host.ifindex, TC_ROOT, BW_ROOT, NULL);
			return -1;
		}
		bw_push(req, BW_U_ROOT, host.ifindex);
	}
	if (c->eg.on) {
		struct cni_link_opts o = {.mtu = host.mtu};
		if (link_add_ifb(c->host, c->ifb, &o, err) < 0)
			return -1;
		struct cni_link ifb;
		if (link_get_by_name(c->host, c->ifb, &ifb, err) < 0) {
			link_del_by_name(c->host, c->ifb, NULL);
			return err_isset(err)
				   ? -1
				   : err_set(err, CNI_ERR_INTERNAL, "ifb %s vanished", c->ifb);
		}
		bw_push(req, BW_U_IFB, ifb.ifindex);
		if (link_set_up(c->host, ifb.ifindex, err) < 0)
			return -1;
		result_add_iface(res, c->ifb, ifb.mac_str, NULL);

		if (tc_qdisc_add_ingress(c->host, host.ifindex, err) < 0)
			return -1;
		bw_push(req, BW_U_INGRESS, host.ifindex);
		struct cni_u32 redirect = {
		    .parent = TC_INGRESS_HANDLE,
		    .prio = 1,
		    .protocol = ETH_P_ALL,
		    .classid = TC_HANDLE(1, 1),
		    .redirect = ifb.ifindex,
		};
		if (tc_filter_add_u32(c->host, host.ifindex, &redirect, err) < 0)
			return -1;
		/* Shaping lives on the ifb, which goes with its undo step. */
		if (bw_shape(c, ifb.ifindex, &c->eg, false, err) < 0)
			return -1;
	}
	return 0;
}

/* Whether the ingress of ifindex redirects to the ifb ifb_index. */
static bool bw_redirects_to(struct bw_conf *c, int ifindex, int ifb_index)
{
	_cleanup_free_ struct cni_tc_filter *f = NULL;
	size_t n = 0;
	if (!ifb_index || tc_filter_list(c->host, ifindex, TC_INGRESS_HANDLE, &f, &n, NULL) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (f[i].redirect == ifb_index)
			return true;
	return false;
}

static int bw_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct bw_conf *c = req->priv;
	if (!c->host && !(c->host = netlink_open(NULL, err)))
		return -1;
	struct cni_link ifb = {0};
	if (link_get_by_name(c->host, c->ifb, &ifb, err) < 0 && err_isset(err))
		return -1;
	/* The qdiscs on the host veth go with it when the interface plugin
	 * deletes the pair; when it stays (or DEL runs first, as it does in
	 * a chain), take them off if the veth can still be found: the root
	 * one when ingress was limited, the ingress one when it redirects to
	 * our ifb (or egress was limited), so that no filter is left sending
	 * packets to a device that no longer exists. */
	struct cni_err ignore = {0};
	struct cni_link host;
	if (req->prev && !strempty(req->netns_path) && bw_host_veth(req, c, &host, &ignore) == 0) {
		if (c->in.on)
			tc_qdisc_del(c->host, host.ifindex, TC_ROOT, BW_ROOT, &ignore);
		if (c->eg.on || bw_redirects_to(c, host.ifindex, ifb.ifindex))
			tc_qdisc_del(c->host, host.ifindex, TC_INGRESS, TC_INGRESS_HANDLE, &ignore);
	}
	return link_del_by_name(c->host, c->ifb, err) < 0 ? -1 : 0;
}

static int bw_mismatch(struct cni_err *err, const char *dev, const char *what, uint64_t got,
		       uint64_t want)
{
	return err_set(err, CNI_ERR_INTERNAL, "%s: %s is %llu, configured %llu", dev, what,
		       (unsigned long long)got, (unsigned long long)want);
}

/* The root qdisc of ifindex against one direction's configuration. */
static int bw_check_root(struct bw_conf *c, const struct cni_link *dev, const struct bw_dir *d,
			 struct cni_err *err)
{
	_cleanup_free_ struct cni_qdisc *q = NULL;
	size_t n = 0;
	if (tc_qdisc_list(c->host, dev->ifindex, &q, &n, err) < 0)
		return -1;
	const struct cni_qdisc *root = NULL;
	for (size_t i = 0; i < n && !root; i++)
		if (q[i].parent == TC_ROOT)
			root = &q[i];
	const char *kind = c->n_subnets ? "htb" : "tbf";
	if (!root || !streq(root->kind, kind) || root->handle != BW_ROOT)
		return err_set(err, CNI_ERR_INTERNAL, "%s: no %s qdisc 1: at the root (found %s)",
			       dev->name, kind, root ? root->kind : "none");
	if (!c->n_subnets) {
		if (root->tbf.rate != d->tbf.rate)
			return bw_mismatch(err, dev->name, "tbf rate", root->tbf.rate, d->tbf.rate);
		if (root->tbf.limit != d->tbf.limit)
			return bw_mismatch(err, dev->name, "tbf limit", root->tbf.limit,
					   d->tbf.limit);
		if (root->tbf.buffer != d->tbf.buffer)
			return bw_mismatch(err, dev->name, "tbf buffer", root->tbf.buffer,
					   d->tbf.buffer);
		return 0;
	}
	uint32_t def = (c->only_shaped ? BW_CLASS_UNSHAPED : BW_CLASS_SHAPED) & 0xffff;
	if (root->htb_defcls != def)
		return bw_mismatch(err, dev->name, "htb default class", root->htb_defcls, def);
	_cleanup_free_ struct cni_htb_class *cl = NULL;
	if (tc_class_list_htb(c->host, dev->ifindex, &cl, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (cl[i].handle != BW_CLASS_SHAPED)
			continue;
		if (cl[i].rate != d->tbf.rate)
			return bw_mismatch(err, dev->name, "htb class 1:48 rate", cl[i].rate,
					   d->tbf.rate);
		if (cl[i].buffer != d->tbf.buffer)
			return bw_mismatch(err, dev->name, "htb class 1:48 buffer", cl[i].buffer,
					   d->tbf.buffer);
		return 0;
	}
	return err_set(err, CNI_ERR_INTERNAL, "%s: htb class 1:48 not found", dev->name);
}

static int bw_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct bw_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	struct cni_link host;
	if (bw_host_veth(req, c, &host, err) < 0)
		return -1;
	if (c->in.on && bw_check_root(c, &host, &c->in, err) < 0)
		return -1;
	if (!c->eg.on)
		return 0;
	struct cni_link ifb;
	int r = link_get_by_name(c->host, c->ifb, &ifb, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "ifb device %s not found", c->ifb);
	if (r < 0 || bw_check_root(c, &ifb, &c->eg, err) < 0)
		return -1;
	_cleanup_free_ struct cni_tc_filter *f = NULL;
	size_t n = 0;
	if (tc_filter_list(c->host, host.ifindex, TC_INGRESS_HANDLE, &f, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (f[i].redirect == ifb.ifindex)
			return 0;
	return err_set(err, CNI_ERR_INTERNAL, "%s: no ingress redirect to %s", host.name, c->ifb);
}

const struct cni_applet bandwidth_applet = {
    .name = "bandwidth",
    .summary = "limit a container's traffic rate with tc",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"bandwidth\",\n"
	     "         \"ingressRate\": BITS_PER_S, \"ingressBurst\": BITS,\n"
	     "         \"egressRate\": BITS_PER_S, \"egressBurst\": BITS,\n"
	     "         \"unshapedSubnets\": [CIDR...] | \"shapedSubnets\": [CIDR...]}\n"
	     "or the \"bandwidth\" capability (runtimeConfig.bandwidth). Chained after\n"
	     "ptp or bridge; shapes the host end of the container's veth (netlink).\n",
    .parse = bw_parse,
    .free = bw_free,
    .add = bw_add,
    .del = bw_del,
    .check = bw_check,
};
