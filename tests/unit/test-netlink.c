/* netlink.c, link.c, addr.c, route.c, sysctl.c against the real kernel.
 *
 * The process first moves itself into a private network namespace, so the
 * "host" of these tests is not the machine's; each test then gets two more
 * fresh namespaces (A playing the host, B the container). Namespaces made
 * here are anonymous: they and every link in them disappear when their last
 * file descriptor is closed, which happens on every exit path, a crash
 * included. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); skips otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include <net/if.h>

#include "addr.h"
#include "link.h"
#include "netlink.h"
#include "netns.h"
#include "route.h"
#include "sysctl.h"

struct fx {
	struct cni_netns *a, *b;
	struct cni_nl *na, *nb;
	struct cni_err err;
};

/* An anonymous namespace, returned to the caller thread's own at once. */
static struct cni_netns *new_ns(void)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return NULL;
	if (unshare(CLONE_NEWNET) < 0) {
		close(self);
		return NULL;
	}
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* never run on in the wrong namespace */
	close(self);
	if (fd < 0)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct cni_err err = {0};
	struct cni_netns *ns = netns_open(path, NULL, &err);
	close(fd);
	return ns;
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	*state = f; /* teardown frees whatever was made */
	f->a = new_ns();
	f->b = new_ns();
	if (!f->a || !f->b)
		return -1;
	f->na = netlink_open(f->a, &f->err);
	f->nb = netlink_open(f->b, &f->err);
	if (!f->na || !f->nb)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (!f)
		return 0;
	netlink_close(f->na);
	netlink_close(f->nb);
	netns_close(f->a);
	netns_close(f->b);
	free(f);
	return 0;
}

#define FX() struct fx *f = *state

/* Assert success, printing the error when not. */
#define OK(call)                                                                                   \
	do {                                                                                       \
		err_clear(&f->err);                                                                \
		int _r = (call);                                                                   \
		if (_r != 0)                                                                       \
			print_error("# %s: %d: %s: %s\n", #call, _r, f->err.msg, f->err.details);  \
		assert_int_equal(_r, 0);                                                           \
	} while (0)

static int ifindex_of(struct cni_nl *nl, const char *name)
{
	struct cni_link l;
	if (link_get_by_name(nl, name, &l, NULL) < 0)
		return 0;
	return l.ifindex;
}

static const uint8_t mac1[6] = {0x02, 0x00, 0x0a, 0xc8, 0x0a, 0x01};
static const uint8_t mac2[6] = {0x02, 0x00, 0x0a, 0xc8, 0x0a, 0x02};

/* A veth pair with both ends in A, both up (so both have carrier). */
static void veth_pair_up(struct fx *f, const char *n0, const char *n1)
{
	struct cni_veth v = {.name = n0, .peer = n1};
	OK(link_add_veth(f->na, &v, &f->err));
	OK(link_set_up(f->na, ifindex_of(f->na, n0), &f->err));
	OK(link_set_up(f->na, ifindex_of(f->na, n1), &f->err));
}

static void test_open_host(void **state)
{
	FX();
	struct cni_nl *nl = netlink_open(NULL, &f->err);
	assert_non_null(nl);
	struct cni_link lo;
	OK(link_get_by_name(nl, "lo", &lo, &f->err));
	assert_int_equal(lo.ifindex, 1);
	assert_int_equal(netlink_errno(nl), 0);
	netlink_close(nl);
}

static void test_veth_peer_in_ns(void **state)
{
	FX();
	struct cni_veth v = {
	    .name = "tnlh0", .peer = "tnlc0", .peer_ns = f->b, .mtu = 1400, .peer_mac = mac1};
	OK(link_add_veth(f->na, &v, &f->err));

	struct cni_link h, c;
	OK(link_get_by_name(f->na, "tnlh0", &h, &f->err));
	assert_string_equal(h.kind, "veth");
	assert_int_equal(h.mtu, 1400);
	/* The peer never existed in A. */
	err_clear(&f->err);
	assert_int_equal(link_get_by_name(f->na, "tnlc0", &c, &f->err), -ENODEV);
	assert_false(err_isset(&f->err));

	OK(link_get_by_name(f->nb, "tnlc0", &c, &f->err));
	assert_string_equal(c.kind, "veth");
	assert_int_equal(c.mtu, 1400);
	assert_memory_equal(c.mac, mac1, 6);
	assert_string_equal(c.mac_str, "02:00:0a:c8:0a:01");
	assert_int_equal(c.parent, h.ifindex);
	assert_int_not_equal(c.link_netnsid, -1);

	struct cni_link byidx;
	OK(link_get_by_index(f->nb, c.ifindex, &byidx, &f->err));
	assert_string_equal(byidx.name, "tnlc0");

	/* Deleting one end removes both; deleting again is success. */
	OK(link_del(f->nb, c.ifindex, &f->err));
	assert_int_equal(link_get_by_name(f->na, "tnlh0", &h, NULL), -ENODEV);
	OK(link_del(f->nb, c.ifindex, &f->err));
	OK(link_del_by_name(f->na, "tnlh0", &f->err));
}

/* VLANs: a PVID, a range, on the port and on the bridge itself. */
static void bridge_vlans(struct fx *f, int br, int port)
{
	OK(link_bridge_vlan_add(f->na, port, 10, 0, LINK_BRVLAN_PVID | LINK_BRVLAN_UNTAGGED,
				&f->err));
	OK(link_bridge_vlan_add(f->na, port, 20, 22, 0, &f->err));
	OK(link_bridge_vlan_add(f->na, br, 10, 0, LINK_BRVLAN_SELF, &f->err));
	struct cni_brvlan *vl = NULL;
	size_t n = 0;
	OK(link_bridge_vlan_list(f->na, port, &vl, &n, &f->err));
	bool has10 = false, has21 = false;
	for (size_t i = 0; i < n; i++) {
		if (vl[i].vid == 10) {
			has10 = true;
			assert_int_equal(vl[i].flags, LINK_BRVLAN_PVID | LINK_BRVLAN_UNTAGGED);
		}
		if (vl[i].vid == 21)
			has21 = true;
	}
	free(vl);
	assert_true(has10);
	assert_true(has21);
	OK(link_bridge_vlan_list(f->na, br, &vl, &n, &f->err));
	has10 = false;
	for (size_t i = 0; i < n; i++)
		has10 |= vl[i].vid == 10;
	free(vl);
	assert_true(has10);

	OK(link_bridge_vlan_del(f->na, port, 20, 22, 0, &f->err));
	OK(link_bridge_vlan_del(f->na, port, 20, 22, 0, &f->err)); /* already gone */
	OK(link_bridge_vlan_list(f->na, port, &vl, &n, &f->err));
	for (size_t i = 0; i < n; i++)
		assert_true(vl[i].vid < 20 || vl[i].vid > 22);
	free(vl);
}

/* Without kernel VLAN filtering: a clear error on add; del and list are
 * trivially done. */
static void bridge_no_vlans(struct fx *f, int br, int port)
{
	err_clear(&f->err);
	assert_int_equal(link_bridge_vlan_add(f->na, port, 10, 0, LINK_BRVLAN_PVID, &f->err),
			 -EOPNOTSUPP);
	assert_string_equal(
	    f->err.msg,
	    "failed to add VLAN 10 to tnlv0: kernel lacks bridge VLAN filtering support");
	OK(link_bridge_vlan_del(f->na, port, 10, 0, 0, &f->err));
	struct cni_brvlan *vl = NULL;
	size_t n = 1;
	OK(link_bridge_vlan_list(f->na, port, &vl, &n, &f->err));
	assert_int_equal(n, 0);
	free(vl);
	struct cni_bridge_opts on = {.vlan_filtering = true};
	err_clear(&f->err);
	assert_int_equal(link_set_bridge(f->na, br, &on, &f->err), -EOPNOTSUPP);
	assert_non_null(strstr(f->err.msg, "kernel lacks bridge VLAN filtering support"));
}

static void test_bridge_master(void **state)
{
	FX();
	struct cni_bridge_opts bo = {.link = {.mtu = 1450}, .vlan_filtering = true};
	struct cni_link br;
	err_clear(&f->err);
	int r = link_add_bridge(f->na, "tnlbr0", &bo, &f->err);
	bool have_vlan = r == 0;
	if (!have_vlan) {
		/* This machine's kernel lacks CONFIG_BRIDGE_VLAN_FILTERING. */
		print_message("# %s: %s\n", f->err.msg, f->err.details);
		assert_int_equal(r, -EOPNOTSUPP);
		assert_string_equal(f->err.msg, "failed to create bridge tnlbr0: kernel lacks "
						"bridge VLAN filtering support");
		assert_non_null(strstr(f->err.details, "CONFIG_BRIDGE_VLAN_FILTERING"));
		assert_int_equal(link_get_by_name(f->na, "tnlbr0", &br, NULL), -ENODEV);
		bo.vlan_filtering = false;
		OK(link_add_bridge(f->na, "tnlbr0", &bo, &f->err));
	}
	OK(link_get_by_name(f->na, "tnlbr0", &br, &f->err));
	assert_string_equal(br.kind, "bridge");
	assert_int_equal(br.mtu, 1450);
	assert_true(br.vlan_filtering == have_vlan);

	struct cni_veth v = {.name = "tnlv0", .peer = "tnlv1"};
	OK(link_add_veth(f->na, &v, &f->err));
	int port = ifindex_of(f->na, "tnlv0");
	OK(link_set_mtu(f->na, port, 1450, &f->err));
	OK(link_set_mac(f->na, port, mac2, &f->err));
	OK(link_set_master(f->na, port, br.ifindex, &f->err));
	OK(link_set_up(f->na, port, &f->err));
	OK(link_set_up(f->na, br.ifindex, &f->err));
	OK(link_set_promisc(f->na, port, true, &f->err));
	OK(link_set_allmulti(f->na, port, true, &f->err));
	OK(link_set_txqlen(f->na, port, 321, &f->err));

	struct cni_link p;
	OK(link_get_by_index(f->na, port, &p, &f->err));
	assert_int_equal(p.master, br.ifindex);
	assert_string_equal(p.slave_kind, "bridge");
	assert_int_equal(p.mtu, 1450);
	assert_memory_equal(p.mac, mac2, 6);
	assert_true(p.flags & IFF_UP);
	assert_true(p.flags & IFF_PROMISC);
	assert_true(p.flags & IFF_ALLMULTI);
	assert_int_equal(p.txqlen, 321);

	struct cni_brport bp;
	OK(link_get_brport(f->na, port, &bp, &f->err));
	assert_false(bp.hairpin);
	assert_false(bp.isolated);
	assert_true(bp.learning);
	OK(link_set_brport(f->na, port, LINK_BRPORT_HAIRPIN, true, &f->err));
	OK(link_set_brport(f->na, port, LINK_BRPORT_ISOLATED, true, &f->err));
	OK(link_set_brport(f->na, port, LINK_BRPORT_LEARNING, false, &f->err));
	OK(link_set_brport(f->na, port, LINK_BRPORT_HAIRPIN, true, &f->err)); /* idempotent */
	OK(link_get_brport(f->na, port, &bp, &f->err));
	assert_true(bp.hairpin);
	assert_true(bp.isolated);
	assert_false(bp.learning);
	assert_int_equal(link_get_brport(f->na, br.ifindex, &bp, NULL), -ENODEV);
	assert_int_equal(link_get_brport(f->na, ifindex_of(f->na, "tnlv1"), &bp, NULL), -ENODEV);

	if (have_vlan)
		bridge_vlans(f, br.ifindex, port);
	else
		bridge_no_vlans(f, br.ifindex, port);

	struct cni_bridge_opts off = {.vlan_filtering = false};
	OK(link_set_bridge(f->na, br.ifindex, &off, &f->err));
	OK(link_get_by_index(f->na, br.ifindex, &br, &f->err));
	assert_false(br.vlan_filtering);

	OK(link_set_master(f->na, port, 0, &f->err));
	OK(link_get_by_index(f->na, port, &p, &f->err));
	assert_int_equal(p.master, 0);

	/* Rename (down first: the kernel may refuse for a running link). */
	OK(link_set_down(f->na, port, &f->err));
	OK(link_rename(f->na, port, "tnlren0", &f->err));
	OK(link_get_by_index(f->na, port, &p, &f->err));
	assert_string_equal(p.name, "tnlren0");
	assert_false(p.flags & IFF_UP);

	struct cni_link *all = NULL;
	size_t n = 0;
	OK(link_list(f->na, &all, &n, &f->err));
	int seen = 0;
	for (size_t i = 0; i < n; i++)
		seen += streq(all[i].name, "tnlbr0") + streq(all[i].name, "tnlren0") +
			streq(all[i].name, "tnlv1") + streq(all[i].name, "lo");
	free(all);
	assert_int_equal(seen, 4);

	OK(link_del(f->na, br.ifindex, &f->err));
	OK(link_del(f->na, port, &f->err));
}

static struct cni_cidr cidr(const char *s)
{
	struct cni_cidr c;
	assert_int_equal(ip_cidr_parse(s, &c), 0);
	return c;
}

static struct cni_ip ip(const char *s)
{
	struct cni_ip a;
	assert_int_equal(ip_parse(s, &a), 0);
	return a;
}

static const struct cni_addr *find_addr(const struct cni_addr *v, size_t n, const char *s)
{
	struct cni_cidr c = cidr(s);
	for (size_t i = 0; i < n; i++)
		if (ip_eq(&v[i].cidr.ip, &c.ip) && v[i].cidr.prefix == c.prefix)
			return &v[i];
	return NULL;
}

static void test_addr(void **state)
{
	FX();
	veth_pair_up(f, "tnla0", "tnla1");
	int idx = ifindex_of(f->na, "tnla0");
	struct cni_cidr v4 = cidr("10.200.10.1/24"), v6 = cidr("fd00:200:10::1/64");
	OK(addr_add(f->na, idx, &v4, 0, &f->err));
	OK(addr_add(f->na, idx, &v6, 0, &f->err)); /* NODAD by default */
	struct cni_cidr dad = cidr("fd00:200:10::3/64");
	OK(addr_add(f->na, idx, &dad, ADDR_ADD_DAD, &f->err));

	struct cni_addr *v = NULL;
	size_t n = 0;
	OK(addr_list(f->na, idx, 0, &v, &n, &f->err));
	const struct cni_addr *a4 = find_addr(v, n, "10.200.10.1/24");
	const struct cni_addr *a6 = find_addr(v, n, "fd00:200:10::1/64");
	assert_non_null(a4);
	assert_non_null(a6);
	assert_int_equal(a4->ifindex, idx);
	/* NODAD: usable at once, never tentative. */
	assert_true(a6->flags & ADDR_F_NODAD);
	assert_false(a6->flags & ADDR_F_TENTATIVE);
	/* With DAD the same kind of address is not usable yet (DAD takes
	 * at least a second). */
	const struct cni_addr *ad = find_addr(v, n, "fd00:200:10::3/64");
	assert_non_null(ad);
	assert_true(ad->flags & ADDR_F_TENTATIVE);
	free(v);

	OK(addr_list(f->na, 0, AF_INET, &v, &n, &f->err));
	assert_non_null(find_addr(v, n, "10.200.10.1/24"));
	assert_null(find_addr(v, n, "fd00:200:10::1/64"));
	free(v);

	/* Exclusive add; REPLACE makes it idempotent. */
	err_clear(&f->err);
	assert_int_equal(addr_add(f->na, idx, &v4, 0, &f->err), -EEXIST);
	assert_non_null(strstr(f->err.msg, "10.200.10.1/24"));
	assert_non_null(strstr(f->err.msg, "tnla0"));
	assert_non_null(strstr(f->err.details, "File exists"));
	OK(addr_add(f->na, idx, &v4, ADDR_ADD_REPLACE, &f->err));

	OK(addr_del(f->na, idx, &v4, &f->err));
	OK(addr_del(f->na, idx, &v6, &f->err));
	OK(addr_del(f->na, idx, &v6, &f->err));	 /* already gone */
	OK(addr_del(f->na, 9999, &v6, &f->err)); /* no such link */
	OK(addr_list(f->na, idx, 0, &v, &n, &f->err));
	assert_null(find_addr(v, n, "10.200.10.1/24"));
	assert_null(find_addr(v, n, "fd00:200:10::1/64"));
	free(v);
}

static const struct cni_rt *find_rt(const struct cni_rt *v, size_t n, const char *dst)
{
	struct cni_cidr c = cidr(dst);
	for (size_t i = 0; i < n; i++)
		if (ip_eq(&v[i].dst.ip, &c.ip) && v[i].dst.prefix == c.prefix)
			return &v[i];
	return NULL;
}

static void test_route(void **state)
{
	FX();
	veth_pair_up(f, "tnlr0", "tnlr1");
	int idx = ifindex_of(f->na, "tnlr0");
	struct cni_cidr a4 = cidr("10.200.10.1/24"), a6 = cidr("fd00:200:10::1/64");
	OK(addr_add(f->na, idx, &a4, 0, &f->err));
	OK(addr_add(f->na, idx, &a6, ADDR_F_NODAD, &f->err));

	struct cni_rt r4 = {.dst = cidr("10.200.10.64/26"),
			    .gw = ip("10.200.10.2"),
			    .ifindex = idx,
			    .table = 100,
			    .mtu = 1300,
			    .advmss = 1200};
	struct cni_rt r6 = {.dst = cidr("fd00:200:10:0:1::/80"),
			    .gw = ip("fd00:200:10::2"),
			    .ifindex = idx,
			    .table = 100,
			    .priority = 50};
	struct cni_rt dev = {
	    .dst = cidr("10.200.10.128/25"), .ifindex = idx, .scope = ROUTE_SCOPE_LINK};
	OK(route_add(f->na, &r4, &f->err));
	OK(route_add(f->na, &r6, &f->err));
	OK(route_add(f->na, &dev, &f->err));

	struct cni_rt *v = NULL;
	size_t n = 0;
	OK(route_list(f->na, AF_INET, 100, 0, &v, &n, &f->err));
	const struct cni_rt *g = find_rt(v, n, "10.200.10.64/26");
	assert_non_null(g);
	assert_true(ip_eq(&g->gw, &r4.gw));
	assert_int_equal(g->ifindex, idx);
	assert_int_equal(g->table, 100);
	assert_int_equal(g->mtu, 1300);
	assert_int_equal(g->advmss, 1200);
	assert_int_equal(g->proto, ROUTE_PROTO_BOOT);
	assert_null(find_rt(v, n, "10.200.10.128/25")); /* main, not 100 */
	free(v);

	OK(route_list(f->na, 0, 100, idx, &v, &n, &f->err));
	g = find_rt(v, n, "fd00:200:10:0:1::/80");
	assert_non_null(g);
	assert_true(ip_eq(&g->gw, &r6.gw));
	assert_int_equal(g->priority, 50);
	free(v);

	OK(route_list(f->na, AF_INET, ROUTE_TABLE_MAIN, idx, &v, &n, &f->err));
	g = find_rt(v, n, "10.200.10.128/25");
	assert_non_null(g);
	assert_int_equal(g->scope, ROUTE_SCOPE_LINK);
	free(v);

	/* A table that does not exist lists as empty. */
	OK(route_list(f->na, AF_INET, 4242, 0, &v, &n, &f->err));
	assert_int_equal(n, 0);
	free(v);

	err_clear(&f->err);
	assert_int_equal(route_add(f->na, &r4, &f->err), -EEXIST);
	assert_non_null(strstr(f->err.msg, "10.200.10.64/26 via 10.200.10.2 dev tnlr0 table 100"));
	OK(route_replace(f->na, &r4, &f->err));

	/* Deleting with a zero scope still finds a link-scope route. */
	struct cni_rt dev_del = {.dst = dev.dst, .ifindex = idx};
	OK(route_del(f->na, &dev_del, &f->err));
	OK(route_del(f->na, &r4, &f->err));
	OK(route_del(f->na, &r6, &f->err));
	OK(route_del(f->na, &r4, &f->err)); /* already gone */
	OK(route_del(f->na, &r6, &f->err));
	OK(route_list(f->na, 0, 100, 0, &v, &n, &f->err));
	assert_null(find_rt(v, n, "10.200.10.64/26"));
	assert_null(find_rt(v, n, "fd00:200:10:0:1::/80"));
	free(v);

	/* A gateway no prefix covers needs the kernel's reason. */
	struct cni_rt bad = {
	    .dst = cidr("10.200.10.192/26"), .gw = ip("10.200.11.1"), .ifindex = idx};
	err_clear(&f->err);
	assert_true(route_add(f->na, &bad, &f->err) < 0);
	assert_int_equal(f->err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(f->err.details, "(kernel: "));
}

static void test_rule(void **state)
{
	FX();
	struct cni_rule r = {.src = cidr("10.200.10.5/32"), .table = 100, .priority = 30000};
	struct cni_rule r6 = {.src = cidr("fd00:200:10::5/128"), .table = 100};
	OK(rule_add(f->na, &r, &f->err));
	OK(rule_add(f->na, &r6, &f->err));
	err_clear(&f->err);
	assert_int_equal(rule_add(f->na, &r, &f->err), -EEXIST);
	assert_non_null(strstr(f->err.msg, "from 10.200.10.5/32 table 100 priority 30000"));

	struct cni_rule *v = NULL;
	size_t n = 0;
	OK(rule_list(f->na, 0, 100, &v, &n, &f->err));
	assert_int_equal(n, 2);
	bool found4 = false, found6 = false;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(v[i].table, 100);
		if (v[i].family == AF_INET) {
			found4 = ip_eq(&v[i].src.ip, &r.src.ip) && v[i].src.prefix == 32 &&
				 v[i].priority == 30000;
		} else {
			found6 = ip_eq(&v[i].src.ip, &r6.src.ip) && v[i].src.prefix == 128 &&
				 v[i].priority > 0;
		}
	}
	free(v);
	assert_true(found4);
	assert_true(found6);

	OK(rule_del(f->na, &r, &f->err));
	OK(rule_del(f->na, &r6, &f->err));
	OK(rule_del(f->na, &r, &f->err)); /* already gone */
	OK(rule_list(f->na, 0, 100, &v, &n, &f->err));
	assert_int_equal(n, 0);
	free(v);
	/* The default rules are still there. */
	OK(rule_list(f->na, AF_INET, ROUTE_TABLE_MAIN, &v, &n, &f->err));
	assert_int_equal(n, 1);
	free(v);
}

static void test_neigh(void **state)
{
	FX();
	veth_pair_up(f, "tnln0", "tnln1");
	int idx = ifindex_of(f->na, "tnln0");
	struct cni_ip a = ip("10.200.10.9"), a6 = ip("fd00:200:10::9");
	OK(neigh_add(f->na, idx, &a, mac1, &f->err));
	OK(neigh_add(f->na, idx, &a, mac2, &f->err)); /* replaces */
	OK(neigh_add(f->na, idx, &a6, mac1, &f->err));
	OK(neigh_del(f->na, idx, &a, &f->err));
	OK(neigh_del(f->na, idx, &a, &f->err));
	OK(neigh_del(f->na, idx, &a6, &f->err));
}

static void test_tap(void **state)
{
	FX();
	if (access("/dev/net/tun", F_OK) < 0) {
		/* cmocka's skip() reads as "not ok": pass with a note. */
		print_message("# no /dev/net/tun: tap not tested\n");
		assert_false(link_kind_supported(f->nb, "tap"));
		return;
	}
	assert_true(link_kind_supported(f->nb, "tap"));
	OK(link_add_tap(f->b, "tnltap0", LINK_TAP_MULTI_QUEUE, 1234, 5678, &f->err));
	struct cni_link t;
	assert_int_equal(link_get_by_name(f->na, "tnltap0", &t, NULL), -ENODEV);
	OK(link_get_by_name(f->nb, "tnltap0", &t, &f->err));
	assert_string_equal(t.kind, "tun");
	assert_true(t.tun_tap);
	assert_int_equal(t.tun_owner, 1234);
	assert_int_equal(t.tun_group, 5678);
	assert_true(t.tun_multi_queue);
	assert_true(t.tun_persist);
	OK(link_set_mtu(f->nb, t.ifindex, 1400, &f->err));
	OK(link_set_mac(f->nb, t.ifindex, mac1, &f->err));

	/* Never attach to an existing tap, nor to another kind. */
	err_clear(&f->err);
	assert_int_equal(link_add_tap(f->b, "tnltap0", 0, -1, -1, &f->err), -EEXIST);
	assert_non_null(strstr(f->err.msg, "tnltap0"));
	assert_non_null(strstr(f->err.details, "File exists"));
	OK(link_add_tap(f->b, "tnltap1", 0, -1, -1, &f->err));
	OK(link_get_by_name(f->nb, "tnltap1", &t, &f->err));
	assert_int_equal(t.tun_owner, -1);
	assert_false(t.tun_multi_queue);
	OK(link_add_bridge(f->nb, "tnlbr9", NULL, &f->err));
	err_clear(&f->err);
	assert_int_equal(link_add_tap(f->b, "tnlbr9", 0, -1, -1, &f->err), -EEXIST);

	OK(link_del_by_name(f->nb, "tnltap0", &f->err));
	OK(link_del_by_name(f->nb, "tnltap1", &f->err));
	assert_int_equal(link_get_by_name(f->nb, "tnltap0", &t, NULL), -ENODEV);
}

static void test_macvlan_in_ns(void **state)
{
	FX();
	/* No dummy on this kernel: a veth end is the parent. */
	veth_pair_up(f, "tnlp0", "tnlp1");
	int parent = ifindex_of(f->na, "tnlp0");
	struct cni_link_opts o = {.mtu = 1400, .mac = mac2, .ns = f->b};
	OK(link_add_macvlan(f->na, "tnlm0", parent, LINK_MACVLAN_BRIDGE, 0, &o, &f->err));
	struct cni_link m;
	assert_int_equal(link_get_by_name(f->na, "tnlm0", &m, NULL), -ENODEV);
	OK(link_get_by_name(f->nb, "tnlm0", &m, &f->err));
	assert_string_equal(m.kind, "macvlan");
	assert_int_equal(m.mode, LINK_MACVLAN_BRIDGE);
	assert_int_equal(m.mtu, 1400);
	assert_memory_equal(m.mac, mac2, 6);
	assert_int_equal(m.parent, parent);
	assert_int_not_equal(m.link_netnsid, -1);
	/* The kernel's default, or 0 from a kernel without the setting. */
	assert_true(m.bc_queue_len == 1000 || m.bc_queue_len == 0);
	OK(link_del(f->nb, m.ifindex, &f->err));

	/* A broadcast queue length, read back (kernels since 5.11). */
	err_clear(&f->err);
	int r = link_add_macvlan(f->na, "tnlm1", parent, LINK_MACVLAN_PRIVATE, 700, &o, &f->err);
	if (r == -EOPNOTSUPP) {
		print_message("# %s: %s\n", f->err.msg, f->err.details);
		assert_string_equal(
		    f->err.msg, "failed to create macvlan tnlm1: kernel lacks macvlan bcqueuelen "
				"support");
		assert_int_equal(link_get_by_name(f->nb, "tnlm1", &m, NULL), -ENODEV);
	} else {
		assert_int_equal(r, 0);
		OK(link_get_by_name(f->nb, "tnlm1", &m, &f->err));
		assert_int_equal(m.mode, LINK_MACVLAN_PRIVATE);
		assert_int_equal(m.bc_queue_len, 700);
		OK(link_del(f->nb, m.ifindex, &f->err));
	}

	assert_int_equal(link_macvlan_mode_parse("passthru"), LINK_MACVLAN_PASSTHRU);
	assert_int_equal(link_macvlan_mode_parse("nope"), -1);
	assert_int_equal(link_ipvlan_mode_parse("l3s"), LINK_IPVLAN_L3S);
	assert_int_equal(link_ipvlan_flags_parse("private"), LINK_IPVLAN_F_PRIVATE);
}

static void test_alias(void **state)
{
	FX();
	struct cni_veth v = {.name = "tnlal0", .peer = "tnlal1"};
	OK(link_add_veth(f->na, &v, &f->err));
	int idx = ifindex_of(f->na, "tnlal0");
	struct cni_link l;
	OK(link_get_by_index(f->na, idx, &l, &f->err));
	assert_string_equal(l.alias, "");

	OK(link_set_alias(f->na, idx, "tnlal0-was-here", &f->err));
	OK(link_get_by_name(f->na, "tnlal0", &l, &f->err));
	assert_string_equal(l.alias, "tnlal0-was-here");
	OK(link_set_alias(f->na, idx, "tnlal0-was-here", &f->err)); /* idempotent */

	/* Dumps carry it too; the other end has none. */
	struct cni_link *all = NULL;
	size_t n = 0;
	int seen = 0;
	OK(link_list(f->na, &all, &n, &f->err));
	for (size_t i = 0; i < n; i++) {
		if (streq(all[i].name, "tnlal0"))
			seen += streq(all[i].alias, "tnlal0-was-here");
		if (streq(all[i].name, "tnlal1"))
			seen += streq(all[i].alias, "");
	}
	free(all);
	assert_int_equal(seen, 2);

	/* It moves with the link (host-device keeps the host name there). */
	OK(link_set_netns(f->na, idx, f->b, "eth3", &f->err));
	OK(link_get_by_name(f->nb, "eth3", &l, &f->err));
	assert_string_equal(l.alias, "tnlal0-was-here");

	/* The longest the kernel keeps, then one byte more. */
	char longest[LINK_ALIAS_MAX + 1];
	memset(longest, 'a', sizeof(longest));
	longest[LINK_ALIAS_MAX - 1] = 0;
	OK(link_set_alias(f->nb, l.ifindex, longest, &f->err));
	struct cni_link got;
	OK(link_get_by_index(f->nb, l.ifindex, &got, &f->err));
	assert_string_equal(got.alias, longest);
	longest[LINK_ALIAS_MAX - 1] = 'a';
	longest[LINK_ALIAS_MAX] = 0;
	err_clear(&f->err);
	assert_int_equal(link_set_alias(f->nb, l.ifindex, longest, &f->err), -EINVAL);
	assert_true(err_isset(&f->err));
	OK(link_get_by_index(f->nb, l.ifindex, &got, &f->err));
	assert_int_equal(strlen(got.alias), LINK_ALIAS_MAX - 1);

	/* "" clears, also when already clear. */
	OK(link_set_alias(f->nb, l.ifindex, "", &f->err));
	OK(link_get_by_index(f->nb, l.ifindex, &got, &f->err));
	assert_string_equal(got.alias, "");
	OK(link_set_alias(f->nb, l.ifindex, "", &f->err));

	err_clear(&f->err);
	assert_int_equal(link_set_alias(f->nb, 9999, "x", &f->err), -ENODEV);
	assert_string_equal(f->err.msg, "failed to set the alias of link 9999 to \"x\"");
}

static void test_set_netns(void **state)
{
	FX();
	struct cni_veth v = {.name = "tnlmv0", .peer = "tnlmv1"};
	OK(link_add_veth(f->na, &v, &f->err));
	int idx = ifindex_of(f->na, "tnlmv1");
	OK(link_set_netns(f->na, idx, f->b, "eth7", &f->err));
	struct cni_link l;
	assert_int_equal(link_get_by_name(f->na, "tnlmv1", &l, NULL), -ENODEV);
	OK(link_get_by_name(f->nb, "eth7", &l, &f->err));
	assert_string_equal(l.kind, "veth");
	OK(link_set_netns(f->nb, l.ifindex, f->a, NULL, &f->err));
	OK(link_get_by_name(f->na, "eth7", &l, &f->err));
}

static void test_errors(void **state)
{
	FX();
	struct cni_veth v = {.name = "tnld0", .peer = "tnld1"};
	OK(link_add_veth(f->na, &v, &f->err));

	/* Duplicate name: EEXIST, code 999, object named, kernel's text. */
	err_clear(&f->err);
	assert_int_equal(link_add_veth(f->na, &v, &f->err), -EEXIST);
	assert_int_equal(f->err.code, CNI_ERR_INTERNAL);
	assert_string_equal(f->err.msg, "failed to create veth tnld0 (peer tnld1)");
	assert_non_null(strstr(f->err.details, "File exists"));
	assert_int_equal(netlink_errno(f->na), EEXIST);

	/* An extack message reaches details. */
	int idx = ifindex_of(f->na, "tnld0");
	err_clear(&f->err);
	assert_int_equal(link_set_mtu(f->na, idx, 70000, &f->err), -EINVAL);
	assert_string_equal(f->err.msg, "failed to set MTU of tnld0 to 70000");
	assert_true(netlink_extack(f->na)[0] != 0);
	char want[300];
	snprintf(want, sizeof(want), "Invalid argument (kernel: %s)", netlink_extack(f->na));
	assert_string_equal(f->err.details, want);

	/* The socket keeps working after a failure. */
	OK(link_set_mtu(f->na, idx, 1280, &f->err));
	assert_int_equal(netlink_errno(f->na), 0);
	assert_string_equal(netlink_extack(f->na), "");

	/* Missing link: probes leave err alone; changes name the index. */
	struct cni_link l;
	err_clear(&f->err);
	assert_int_equal(link_get_by_name(f->na, "tnlnone", &l, &f->err), -ENODEV);
	assert_int_equal(link_get_by_index(f->na, 9999, &l, &f->err), -ENODEV);
	assert_false(err_isset(&f->err));
	assert_int_equal(link_set_up(f->na, 9999, &f->err), -ENODEV);
	assert_string_equal(f->err.msg, "failed to set up link 9999");
	assert_true(netlink_is_gone(-ENODEV));
	OK(link_del(f->na, 9999, &f->err));
	OK(link_del_by_name(f->na, "tnlnone", &f->err));

	/* Invalid names never reach the kernel. */
	err_clear(&f->err);
	assert_int_equal(link_get_by_name(f->na, "a-name-that-is-too-long", &l, &f->err), -EINVAL);
	assert_true(err_isset(&f->err));
	struct cni_veth bad = {.name = "tnl/x", .peer = "tnlok"};
	err_clear(&f->err);
	assert_int_equal(link_add_veth(f->na, &bad, &f->err), -EINVAL);

	/* The first error wins: a second failure does not overwrite it. */
	err_clear(&f->err);
	assert_int_equal(link_add_veth(f->na, &v, &f->err), -EEXIST);
	assert_int_equal(link_set_up(f->na, 9999, &f->err), -ENODEV);
	assert_string_equal(f->err.msg, "failed to create veth tnld0 (peer tnld1)");
}

static void check_kind(struct fx *f, const char *kind, int r)
{
	if (r == 0)
		return;
	print_message("# %s: %s: %s\n", kind, f->err.msg, f->err.details);
	assert_int_equal(r, -EOPNOTSUPP);
	char want[64];
	snprintf(want, sizeof(want), "kernel lacks %s support", kind);
	assert_non_null(strstr(f->err.msg, want));
	assert_non_null(strstr(f->err.details, "CONFIG_"));
}

static void test_kinds(void **state)
{
	FX();
	assert_true(link_kind_supported(f->na, "veth"));
	assert_true(link_kind_supported(f->na, "bridge"));
	assert_true(link_kind_supported(f->na, "macvlan"));
	assert_false(link_kind_supported(f->na, "tnl-no-such-kind"));
	err_clear(&f->err);
	assert_int_equal(link_kind_check(f->na, "tnl-no-such-kind", &f->err), -EOPNOTSUPP);
	assert_string_equal(f->err.msg, "kernel lacks tnl-no-such-kind support");

	veth_pair_up(f, "tnlk0", "tnlk1");
	int parent = ifindex_of(f->na, "tnlk0");
	const char *kinds[] = {"ipvlan", "vlan", "dummy", "vrf", "ifb"};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		const char *k = kinds[i];
		bool sup = link_kind_supported(f->na, k);
		print_message("# kind %s: %s\n", k, sup ? "supported" : "missing");
		char name[16];
		snprintf(name, sizeof(name), "tnlk%s", k);
		err_clear(&f->err);
		int r;
		if (streq(k, "ipvlan"))
			r = link_add_ipvlan(f->na, name, parent, LINK_IPVLAN_L2, 0, NULL, &f->err);
		else if (streq(k, "vlan"))
			r = link_add_vlan(f->na, name, parent, 42, NULL, &f->err);
		else if (streq(k, "dummy"))
			r = link_add_dummy(f->na, name, NULL, &f->err);
		else if (streq(k, "vrf"))
			r = link_add_vrf(f->na, name, 100, NULL, &f->err);
		else
			r = link_add_ifb(f->na, name, NULL, &f->err);
		if (sup) {
			if (r != 0)
				print_error("# %s: %s: %s\n", k, f->err.msg, f->err.details);
			assert_int_equal(r, 0);
			struct cni_link l;
			OK(link_get_by_name(f->na, name, &l, &f->err));
			assert_string_equal(l.kind, k);
			if (streq(k, "vlan")) {
				assert_int_equal(l.vlan_id, 42);
				/* Priority tagging only: id 0 is valid. */
				OK(link_add_vlan(f->na, "tnlkvlan0", parent, 0, NULL, &f->err));
				struct cni_link v0;
				OK(link_get_by_name(f->na, "tnlkvlan0", &v0, &f->err));
				assert_int_equal(v0.vlan_id, 0);
				OK(link_del(f->na, v0.ifindex, &f->err));
			}
			if (streq(k, "vrf"))
				assert_int_equal(l.vrf_table, 100);
			OK(link_del(f->na, l.ifindex, &f->err));
		} else {
			check_kind(f, k, r);
			assert_int_not_equal(r, 0);
			err_clear(&f->err);
			assert_int_equal(link_kind_check(f->na, k, &f->err), -EOPNOTSUPP);
		}
	}
	/* 4095 is reserved: refused before the kernel, supported or not. */
	err_clear(&f->err);
	assert_int_equal(link_add_vlan(f->na, "tnlkv4095", parent, 4095, NULL, &f->err), -EINVAL);
	assert_non_null(strstr(f->err.msg, "invalid VLAN id 4095"));
	/* The probe leaves nothing behind. */
	struct cni_link *all = NULL;
	size_t n = 0;
	OK(link_list(f->na, &all, &n, &f->err));
	assert_int_equal(n, 3); /* lo, tnlk0, tnlk1 */
	free(all);
}

static void test_sysctl(void **state)
{
	FX();
	/* New namespaces inherit ip_forward from the machine's: flip B's
	 * and check that A's stays. */
	char buf[64], was[64];
	OK(sysctl_get_in(f->a, "net/ipv4/ip_forward", was, sizeof(was), &f->err));
	const char *flip = streq(was, "1") ? "0" : "1";
	OK(sysctl_set_in(f->b, "net.ipv4.ip_forward", flip, &f->err));
	OK(sysctl_get_in(f->b, "net.ipv4.ip_forward", buf, sizeof(buf), &f->err));
	assert_string_equal(buf, flip);
	OK(sysctl_get_in(f->a, "net/ipv4/ip_forward", buf, sizeof(buf), &f->err));
	assert_string_equal(buf, was);

	/* A dotted interface name needs the slashed form. */
	struct cni_veth v = {.name = "tnl.5", .peer = "tnl.6"};
	OK(link_add_veth(f->nb, &v, &f->err));
	OK(sysctl_set_in(f->b, "net/ipv4/conf/tnl.5/forwarding", "1", &f->err));
	OK(sysctl_get_in(f->b, "net/ipv4/conf/tnl.5/forwarding", buf, sizeof(buf), &f->err));
	assert_string_equal(buf, "1");
	err_clear(&f->err);
	assert_int_equal(
	    sysctl_get_in(f->b, "net.ipv4.conf.tnl.5.forwarding", buf, sizeof(buf), &f->err),
	    -ENOENT);
	assert_int_equal(f->err.code, CNI_ERR_INTERNAL);

	const char *bad[] = {"kernel.hostname",
			     "net/../kernel/hostname",
			     "/proc/sys/net/x",
			     "net..ipv4",
			     "net.ipv4.",
			     "",
			     "net",
			     "net/ipv4//x",
			     "net/./ipv4",
			     "net/ipv4/conf/\n/x",
			     "/net/ipv4/ip_forward"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err_clear(&f->err);
		assert_int_equal(sysctl_set(bad[i], "1", &f->err), -EINVAL);
		assert_int_equal(f->err.code, CNI_ERR_INVALID_CONFIG);
	}
	char path[300];
	OK(sysctl_path("net.ipv6.conf.all.disable_ipv6", path, sizeof(path), &f->err));
	assert_string_equal(path, "/proc/sys/net/ipv6/conf/all/disable_ipv6");
}

int main(void)
{
	/* Our own "host" namespace: nothing here touches the machine's. */
	if (unshare(CLONE_NEWNET) < 0) {
		/* cmocka reports a skip as "not ok": plan nothing instead. */
		printf("1..0 # SKIP cannot create network namespaces (%s): needs root\n",
		       strerror(errno));
		return 0;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_host, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_veth_peer_in_ns, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bridge_master, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_addr, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_route, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_neigh, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_macvlan_in_ns, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_alias, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_set_netns, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_kinds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sysctl, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
