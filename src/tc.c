/* Traffic control (RTM_*QDISC, RTM_*TCLASS, RTM_*TFILTER) built on the
 * generic request API of netlink.c, for the bandwidth plugin.
 *
 * Rates go to the kernel with linklayer "ethernet", which tells it to
 * compute transmit times itself (psched_ratecfg_precompute) rather than
 * from a rate table: no table is sent, as the reference's netlink library
 * sends none. */
#define CNI_NETLINK_INTERNAL
#include "tc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>

#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "link.h"

#define TIME_UNITS_PER_SEC 1000000.0
/* The reference's tbf latency: the queue holds 25 ms of traffic. */
#define TBF_LATENCY_USEC 25000.0
/* The kernel keeps a tbf bucket as 32-bit nanoseconds, one tick being
 * 64 ns (PSCHED_SHIFT); a longer buffer would be cut silently. */
#define TICK_NS_SHIFT 6
/* htb: quantum = rate / r2q, which the kernel warns about outside
 * [1000, 200000]; we pass it clamped instead. */
#define HTB_R2Q 10

static double tick_in_usec(void)
{
	static double cached;
	if (cached > 0)
		return cached;
	/* As tc and the reference's netlink library read it: t2us, us2t and
	 * the clock resolution, in hex. A nanosecond clock_res means the
	 * first two are already in the same unit. */
	double v = 1000.0 / 64.0;
	unsigned t2us, us2t, res;
	FILE *f = fopen("/proc/net/psched", "re");
	if (f) {
		if (fscanf(f, "%08x%08x%08x", &t2us, &us2t, &res) == 3 && us2t && res) {
			if (res == 1000000000)
				t2us = us2t;
			v = (double)t2us / us2t * (res / TIME_UNITS_PER_SEC);
		}
		fclose(f);
	}
	cached = v;
	return v;
}

uint32_t tc_usec_to_ticks(double usec)
{
	double t = usec * tick_in_usec();
	return t >= 4294967295.0 ? UINT32_MAX : (uint32_t)t;
}

int tc_tbf_params(uint64_t rate_bits, uint64_t burst_bits, struct cni_tbf *out, const char **why)
{
	uint64_t rate = rate_bits / 8, burst = burst_bits / 8;
	*why = NULL;
	if (rate == 0)
		*why = "rate must be at least 8 bits per second";
	else if (burst == 0)
		*why = "burst must be at least 8 bits";
	else if (burst >= UINT32_MAX)
		*why = "burst cannot be more than 4GB";
	if (*why)
		return -1;
	/* The reference truncates the time to whole microseconds first. */
	double usec = (double)burst * TIME_UNITS_PER_SEC / (double)rate;
	double ticks = usec < 4294967295.0 ? (double)(uint32_t)usec * tick_in_usec() : usec;
	if (ticks * (1 << TICK_NS_SHIFT) > 4294967295.0) {
		*why = "burst takes longer than 4.29 s to send at this rate";
		return -1;
	}
	double lat = (double)rate * TBF_LATENCY_USEC / TIME_UNITS_PER_SEC;
	if (lat >= 4294967295.0) {
		*why = "rate too high: 25 ms of it exceed 4 GiB";
		return -1;
	}
	double limit = (double)(uint32_t)lat + (double)burst;
	if (limit > 4294967295.0) {
		*why = "rate too high: 25 ms of it plus the burst exceed 4 GiB";
		return -1;
	}
	out->rate = rate;
	out->buffer = (uint32_t)ticks;
	out->limit = (uint32_t)limit;
	return 0;
}

static void put_rate(struct tc_ratespec *r, uint64_t rate)
{
	r->rate = rate >= UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
	r->linklayer = TC_LINKLAYER_ETHERNET;
}

static struct nl_msg *tc_msg(int type, int flags, int ifindex, uint32_t parent, uint32_t handle,
			     uint32_t info)
{
	struct tcmsg t = {
	    .tcm_family = AF_UNSPEC,
	    .tcm_ifindex = ifindex,
	    .tcm_handle = handle,
	    .tcm_parent = parent,
	    .tcm_info = info,
	};
	return netlink_msg(type, flags, &t, sizeof(t));
}

static int tc_send(struct cni_nl *nl, struct nl_msg *m, int ifindex, const char *what,
		   struct cni_err *err)
{
	int r = netlink_request(nl, m, NULL, NULL);
	if (r < 0)
		return link_fail(nl, r, ifindex, err, what, NULL);
	return 0;
}

int tc_qdisc_add_tbf(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		     const struct cni_tbf *t, struct cni_err *err)
{
	struct tc_tbf_qopt q = {.limit = t->limit, .buffer = t->buffer};
	put_rate(&q.rate, t->rate);
	struct nl_msg *m =
	    tc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, parent, handle, 0);
	netlink_put_str(m, TCA_KIND, "tbf");
	struct nlattr *opt = netlink_nest(m, TCA_OPTIONS);
	netlink_put(m, TCA_TBF_PARMS, &q, sizeof(q));
	if (t->rate >= UINT32_MAX)
		netlink_put(m, TCA_TBF_RATE64, &t->rate, sizeof(t->rate));
	netlink_nest_end(m, opt);
	return tc_send(nl, m, ifindex, "add tbf qdisc to", err);
}

int tc_qdisc_add_htb(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		     uint32_t defcls, struct cni_err *err)
{
	/* version 3 is what every htb since 2.6 expects (HTB_VER >> 16). */
	struct tc_htb_glob g = {.version = 3, .rate2quantum = HTB_R2Q, .defcls = defcls};
	struct nl_msg *m =
	    tc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, parent, handle, 0);
	netlink_put_str(m, TCA_KIND, "htb");
	struct nlattr *opt = netlink_nest(m, TCA_OPTIONS);
	netlink_put(m, TCA_HTB_INIT, &g, sizeof(g));
	netlink_nest_end(m, opt);
	return tc_send(nl, m, ifindex, "add htb qdisc to", err);
}

int tc_qdisc_add_ingress(struct cni_nl *nl, int ifindex, struct cni_err *err)
{
	struct nl_msg *m = tc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, TC_INGRESS,
				  TC_INGRESS_HANDLE, 0);
	netlink_put_str(m, TCA_KIND, "ingress");
	return tc_send(nl, m, ifindex, "add ingress qdisc to", err);
}

int tc_qdisc_del(struct cni_nl *nl, int ifindex, uint32_t parent, uint32_t handle,
		 struct cni_err *err)
{
	struct nl_msg *m = tc_msg(RTM_DELQDISC, 0, ifindex, parent, handle, 0);
	int r = netlink_request(nl, m, NULL, NULL);
	/* ENOENT also covers a default qdisc (handle 0) in the slot, which
	 * the kernel refuses to delete; ENODEV/EINVAL with no device. */
	if (r == 0 || netlink_is_gone(r))
		return 0;
	return link_fail(nl, r, ifindex, err, "delete qdisc of", NULL);
}

struct vec {
	void *v;
	size_t n, cap, size;
	int ifindex;
};

static void *vec_push(struct vec *vv)
{
	xgrow(&vv->v, &vv->cap, vv->n, vv->size);
	void *p = (char *)vv->v + vv->n * vv->size;
	memset(p, 0, vv->size);
	vv->n++;
	return p;
}

/* The tcmsg and top-level attributes of a dump reply of type type for the
 * wanted device; NULL when it is something else. */
static const struct tcmsg *tc_parse(const struct nlmsghdr *h, int type, int ifindex,
				    struct nlattr **tb)
{
	if (h->nlmsg_type != type || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg)))
		return NULL;
	const struct tcmsg *t = nlmsg_data(h);
	if (t->tcm_ifindex != ifindex)
		return NULL;
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*t), tb, TCA_MAX, NULL) < 0)
		return NULL;
	return t;
}


static uint64_t get_rate(const struct tc_ratespec *r, const struct nlattr *r64)
{
	if (r64 && nla_len(r64) == sizeof(uint64_t))
		return nla_get_u64((struct nlattr *)r64);
	return r->rate;
}

static int on_qdisc(const struct nlmsghdr *h, void *arg)
{
	struct vec *vv = arg;
	struct nlattr *tb[TCA_MAX + 1];
	const struct tcmsg *t = tc_parse(h, RTM_NEWQDISC, vv->ifindex, tb);
	if (!t)
		return 0;
	struct cni_qdisc *q = vec_push(vv);
	q->handle = t->tcm_handle;
	q->parent = t->tcm_parent;
	netlink_attr_str(q->kind, sizeof(q->kind), tb[TCA_KIND]);
	if (!tb[TCA_OPTIONS])
		return 0;
	if (streq(q->kind, "tbf")) {
		struct nlattr *o[TCA_TBF_MAX + 1];
		if (nla_parse_nested(o, TCA_TBF_MAX, tb[TCA_OPTIONS], NULL) < 0 ||
		    !o[TCA_TBF_PARMS] ||
		    nla_len(o[TCA_TBF_PARMS]) < (int)sizeof(struct tc_tbf_qopt))
			return 0;
		const struct tc_tbf_qopt *p = nla_data(o[TCA_TBF_PARMS]);
		q->tbf.rate = get_rate(&p->rate, o[TCA_TBF_RATE64]);
		q->tbf.buffer = p->buffer;
		q->tbf.limit = p->limit;
	} else if (streq(q->kind, "htb")) {
		struct nlattr *o[TCA_HTB_MAX + 1];
		if (nla_parse_nested(o, TCA_HTB_MAX, tb[TCA_OPTIONS], NULL) < 0 ||
		    !o[TCA_HTB_INIT] || nla_len(o[TCA_HTB_INIT]) < (int)sizeof(struct tc_htb_glob))
			return 0;
		const struct tc_htb_glob *g = nla_data(o[TCA_HTB_INIT]);
		q->htb_defcls = g->defcls;
	}
	return 0;
}

/* A dump request for one device; parent 0 for "all". */
static int tc_dump(struct cni_nl *nl, int type, int ifindex, uint32_t parent,
		   int (*fn)(const struct nlmsghdr *, void *), struct vec *vv, const char *what,
		   struct cni_err *err)
{
	int r;
	for (int tries = 0; tries < 5; tries++) {
		vv->n = 0;
		struct nl_msg *m = tc_msg(type, NLM_F_DUMP, ifindex, parent, 0, 0);
		r = netlink_request(nl, m, fn, vv);
		if (r != -EINTR)
			break;
	}
	if (r < 0) {
		free(vv->v);
		vv->v = NULL;
		return link_fail(nl, r, ifindex, err, what, NULL);
	}
	return 0;
}

int tc_qdisc_list(struct cni_nl *nl, int ifindex, struct cni_qdisc **out, size_t *n,
		  struct cni_err *err)
{
	/* The kernel dumps the qdiscs of every device; on_qdisc keeps ours. */
	struct vec vv = {.size = sizeof(struct cni_qdisc), .ifindex = ifindex};
	int r = tc_dump(nl, RTM_GETQDISC, ifindex, 0, on_qdisc, &vv, "list qdiscs of", err);
	if (r < 0)
		return r;
	*out = vv.v;
	*n = vv.n;
	return 0;
}

int tc_class_add_htb(struct cni_nl *nl, int ifindex, const struct cni_htb_class *c,
		     struct cni_err *err)
{
	struct tc_htb_opt o = {.buffer = c->buffer, .cbuffer = c->cbuffer};
	put_rate(&o.rate, c->rate);
	put_rate(&o.ceil, c->ceil);
	uint64_t q = c->rate / HTB_R2Q;
	o.quantum = q < 1000 ? 1000 : q > 200000 ? 200000 : (uint32_t)q;
	struct nl_msg *m =
	    tc_msg(RTM_NEWTCLASS, NLM_F_CREATE | NLM_F_EXCL, ifindex, c->parent, c->handle, 0);
	netlink_put_str(m, TCA_KIND, "htb");
	struct nlattr *opt = netlink_nest(m, TCA_OPTIONS);
	netlink_put(m, TCA_HTB_PARMS, &o, sizeof(o));
	if (c->rate >= UINT32_MAX)
		netlink_put(m, TCA_HTB_RATE64, &c->rate, sizeof(c->rate));
	if (c->ceil >= UINT32_MAX)
		netlink_put(m, TCA_HTB_CEIL64, &c->ceil, sizeof(c->ceil));
	netlink_nest_end(m, opt);
	return tc_send(nl, m, ifindex, "add htb class to", err);
}

static int on_class(const struct nlmsghdr *h, void *arg)
{
	struct vec *vv = arg;
	struct nlattr *tb[TCA_MAX + 1];
	const struct tcmsg *t = tc_parse(h, RTM_NEWTCLASS, vv->ifindex, tb);
	char kind[16];
	if (!t)
		return 0;
	netlink_attr_str(kind, sizeof(kind), tb[TCA_KIND]);
	struct nlattr *o[TCA_HTB_MAX + 1];
	if (!streq(kind, "htb") || !tb[TCA_OPTIONS] ||
	    nla_parse_nested(o, TCA_HTB_MAX, tb[TCA_OPTIONS], NULL) < 0 || !o[TCA_HTB_PARMS] ||
	    nla_len(o[TCA_HTB_PARMS]) < (int)sizeof(struct tc_htb_opt))
		return 0;
	const struct tc_htb_opt *p = nla_data(o[TCA_HTB_PARMS]);
	struct cni_htb_class *c = vec_push(vv);
	c->handle = t->tcm_handle;
	c->parent = t->tcm_parent;
	c->rate = get_rate(&p->rate, o[TCA_HTB_RATE64]);
	c->ceil = get_rate(&p->ceil, o[TCA_HTB_CEIL64]);
	c->buffer = p->buffer;
	c->cbuffer = p->cbuffer;
	return 0;
}

int tc_class_list_htb(struct cni_nl *nl, int ifindex, struct cni_htb_class **out, size_t *n,
		      struct cni_err *err)
{
	struct vec vv = {.size = sizeof(struct cni_htb_class), .ifindex = ifindex};
	int r = tc_dump(nl, RTM_GETTCLASS, ifindex, 0, on_class, &vv, "list classes of", err);
	if (r < 0)
		return r;
	*out = vv.v;
	*n = vv.n;
	return 0;
}

/* u32 keys for "address in match": offsets are from the network header,
 * where IPv4 keeps its source at 12 and destination at 16, IPv6 at 8 and
 * 24. Words the prefix does not cover are left out; a /0 still needs one
 * key, which then matches everything. */
static size_t u32_keys(const struct cni_u32 *f, struct tc_u32_key *keys)
{
	size_t n = 0;
	if (!f->match) {
		keys[n++] = (struct tc_u32_key){0};
		return n;
	}
	const struct cni_cidr *c = f->match;
	bool v4 = c->ip.family == AF_INET;
	int off = v4 ? (f->match_src ? 12 : 16) : (f->match_src ? 8 : 24);
	int words = v4 ? 1 : 4;
	for (int w = 0; w < words; w++) {
		int bits = c->prefix - 32 * w;
		if (bits <= 0)
			break;
		uint32_t mask = bits >= 32 ? UINT32_MAX : ~(UINT32_MAX >> bits);
		uint32_t val;
		memcpy(&val, c->ip.a + 4 * w, 4);
		keys[n++] = (struct tc_u32_key){
		    .mask = htonl(mask),
		    .val = val & htonl(mask),
		    .off = off + 4 * w,
		};
	}
	if (n == 0)
		keys[n++] = (struct tc_u32_key){0};
	return n;
}

int tc_filter_add_u32(struct cni_nl *nl, int ifindex, const struct cni_u32 *f, struct cni_err *err)
{
	union {
		struct tc_u32_sel sel;
		char buf[sizeof(struct tc_u32_sel) + 4 * sizeof(struct tc_u32_key)];
	} s;
	memset(&s, 0, sizeof(s));
	size_t nkeys = u32_keys(f, s.sel.keys);
	s.sel.nkeys = (unsigned char)nkeys;
	s.sel.flags = TC_U32_TERMINAL;

	uint32_t info = TC_HANDLE(f->prio, htons(f->protocol));
	struct nl_msg *m =
	    tc_msg(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, ifindex, f->parent, 0, info);
	netlink_put_str(m, TCA_KIND, "u32");
	struct nlattr *opt = netlink_nest(m, TCA_OPTIONS);
	netlink_put(m, TCA_U32_SEL, &s.sel, sizeof(s.sel) + nkeys * sizeof(struct tc_u32_key));
	if (f->classid)
		netlink_put_u32(m, TCA_U32_CLASSID, f->classid);
	if (f->redirect) {
		struct tc_mirred mir = {
		    .action = TC_ACT_STOLEN,
		    .eaction = TCA_EGRESS_REDIR,
		    .ifindex = (uint32_t)f->redirect,
		};
		struct nlattr *acts = netlink_nest(m, TCA_U32_ACT);
		struct nlattr *act = netlink_nest(m, 1); /* the first action */
		netlink_put_str(m, TCA_ACT_KIND, "mirred");
		struct nlattr *aopt = netlink_nest(m, TCA_ACT_OPTIONS);
		netlink_put(m, TCA_MIRRED_PARMS, &mir, sizeof(mir));
		netlink_nest_end(m, aopt);
		netlink_nest_end(m, act);
		netlink_nest_end(m, acts);
	}
	netlink_nest_end(m, opt);
	return tc_send(nl, m, ifindex, "add u32 filter to", err);
}

/* The ifindex of the first mirred egress redirect in an action list. */
static int mirred_target(struct nlattr *acts)
{
	int rem = nla_len(acts);
	for (struct nlattr *a = nla_data(acts); nla_ok(a, rem); a = nla_next(a, &rem)) {
		struct nlattr *at[TCA_ACT_MAX + 1];
		char kind[16];
		if (nla_parse_nested(at, TCA_ACT_MAX, a, NULL) < 0)
			continue;
		netlink_attr_str(kind, sizeof(kind), at[TCA_ACT_KIND]);
		if (!streq(kind, "mirred") || !at[TCA_ACT_OPTIONS])
			continue;
		struct nlattr *mo[TCA_MIRRED_MAX + 1];
		if (nla_parse_nested(mo, TCA_MIRRED_MAX, at[TCA_ACT_OPTIONS], NULL) < 0 ||
		    !mo[TCA_MIRRED_PARMS] ||
		    nla_len(mo[TCA_MIRRED_PARMS]) < (int)sizeof(struct tc_mirred))
			continue;
		const struct tc_mirred *p = nla_data(mo[TCA_MIRRED_PARMS]);
		if (p->eaction == TCA_EGRESS_REDIR)
			return (int)p->ifindex;
	}
	return 0;
}

static int on_filter(const struct nlmsghdr *h, void *arg)
{
	struct vec *vv = arg;
	struct nlattr *tb[TCA_MAX + 1];
	const struct tcmsg *t = tc_parse(h, RTM_NEWTFILTER, vv->ifindex, tb);
	if (!t)
		return 0;
	struct cni_tc_filter *f = vec_push(vv);
	netlink_attr_str(f->kind, sizeof(f->kind), tb[TCA_KIND]);
	f->prio = t->tcm_info >> 16;
	f->protocol = ntohs((uint16_t)(t->tcm_info & 0xffff));
	struct nlattr *o[TCA_U32_MAX + 1];
	if (!streq(f->kind, "u32") || !tb[TCA_OPTIONS] ||
	    nla_parse_nested(o, TCA_U32_MAX, tb[TCA_OPTIONS], NULL) < 0)
		return 0;
	if (o[TCA_U32_CLASSID] && nla_len(o[TCA_U32_CLASSID]) == 4)
		f->classid = nla_get_u32(o[TCA_U32_CLASSID]);
	if (o[TCA_U32_ACT])
		f->redirect = mirred_target(o[TCA_U32_ACT]);
	return 0;
}

int tc_filter_list(struct cni_nl *nl, int ifindex, uint32_t parent, struct cni_tc_filter **out,
		   size_t *n, struct cni_err *err)
{
	struct vec vv = {.size = sizeof(struct cni_tc_filter), .ifindex = ifindex};
	int r =
	    tc_dump(nl, RTM_GETTFILTER, ifindex, parent, on_filter, &vv, "list filters of", err);
	if (r < 0)
		return r;
	*out = vv.v;
	*n = vv.n;
	return 0;
}
