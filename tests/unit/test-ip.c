/* ip.c: parsing, formatting and the prefix arithmetic IPAM relies on, with
 * the edges: /0, /31, /32, /127, /128 and the ends of both address spaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ip.h"

static struct cni_ip ip(const char *s)
{
	struct cni_ip a;
	assert_int_equal(ip_parse(s, &a), 0);
	return a;
}

static struct cni_cidr cidr(const char *s)
{
	struct cni_cidr c;
	assert_int_equal(ip_cidr_parse(s, &c), 0);
	return c;
}

static void assert_ip(const struct cni_ip *a, const char *want)
{
	char b[IP_STRLEN];
	assert_string_equal(ip_format(a, b), want);
}

static void test_parse_format(void **state)
{
	struct cni_ip a;
	char b[IP_STRLEN];
	const char *round[] = {"0.0.0.0", "10.200.40.1", "255.255.255.255", "::", "::1",
			       "fd00:200:40::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
			       "2001:db8::ff00:42:8329"};
	for (size_t i = 0; i < sizeof(round) / sizeof(round[0]); i++) {
		assert_int_equal(ip_parse(round[i], &a), 0);
		assert_string_equal(ip_format(&a, b), round[i]);
	}
	/* Canonical output: lower case, longest zero run compressed. */
	a = ip("FD00:0200:0040:0000:0000:0000:0000:0001");
	assert_ip(&a, "fd00:200:40::1");
	assert_int_equal(a.family, AF_INET6);
	/* IPv4-mapped folds to IPv4, as Go's ParseIP. */
	a = ip("::ffff:10.1.2.3");
	assert_int_equal(a.family, AF_INET);
	assert_ip(&a, "10.1.2.3");
	for (int i = 4; i < 16; i++)
		assert_int_equal(a.a[i], 0);

	const char *bad[] = {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "010.1.1.1", "1.2.3.4/24",
			     " 1.2.3.4", "1.2.3.4 ", "fd00::1::2", "fd00:::1", "g::1", "x",
			     "1.2.3.-1", "12345::1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ip_parse(bad[i], &a), -1);
	assert_int_equal(ip_parse(NULL, &a), -1);

	struct cni_ip unset = {0};
	assert_string_equal(ip_format(&unset, b), "<nil>");
	assert_false(ip_isset(&unset));
	assert_int_equal(ip_len(&(struct cni_ip){.family = AF_INET}), 4);
	assert_int_equal(ip_bits(&(struct cni_ip){.family = AF_INET6}), 128);
}

static void test_cidr_parse(void **state)
{
	struct cni_cidr c;
	char b[CIDR_STRLEN];
	const char *round[] = {"0.0.0.0/0", "10.200.40.7/24", "10.200.40.0/31", "1.2.3.4/32",
			       "::/0", "fd00:200:40::5/64", "fd00::/127", "::1/128"};
	for (size_t i = 0; i < sizeof(round) / sizeof(round[0]); i++) {
		assert_int_equal(ip_cidr_parse(round[i], &c), 0);
		assert_string_equal(ip_cidr_format(&c, b), round[i]);
	}
	/* Host bits are kept as written. */
	c = cidr("10.200.40.7/24");
	assert_ip(&c.ip, "10.200.40.7");
	assert_int_equal(c.prefix, 24);

	const char *bad[] = {"10.0.0.0", "10.0.0.0/", "/24", "10.0.0.0/33", "10.0.0.0/-1",
			     "10.0.0.0/024", "10.0.0.0/2a", "fd00::/129", "fd00::/1280",
			     "10.0.0/24", "10.0.0.0/24/1", "fd00::1::/64", "10.0.0.0 /24"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ip_cidr_parse(bad[i], &c), -1);
	assert_int_equal(ip_cidr_parse(NULL, &c), -1);
}

static void test_cmp(void **state)
{
	struct cni_ip a = ip("10.0.0.1"), b = ip("10.0.0.2"), c = ip("::1"), d = ip("::2");
	assert_true(ip_cmp(&a, &b) < 0);
	assert_true(ip_cmp(&b, &a) > 0);
	assert_int_equal(ip_cmp(&a, &a), 0);
	assert_true(ip_eq(&a, &(struct cni_ip){.family = AF_INET, .a = {10, 0, 0, 1}}));
	/* v4 sorts before v6, whatever the bytes. */
	assert_true(ip_cmp(&a, &c) < 0);
	assert_true(ip_cmp(&d, &b) > 0);
	assert_true(ip_cmp(&c, &d) < 0);
	struct cni_ip hi4 = ip("255.255.255.255"), lo6 = ip("::");
	assert_true(ip_cmp(&hi4, &lo6) < 0);
}

static void test_next_prev(void **state)
{
	struct cni_ip a = ip("10.0.0.255");
	assert_int_equal(ip_next(&a), 0);
	assert_ip(&a, "10.0.1.0");
	assert_int_equal(ip_prev(&a), 0);
	assert_ip(&a, "10.0.0.255");

	a = ip("10.255.255.255");
	assert_int_equal(ip_next(&a), 0);
	assert_ip(&a, "11.0.0.0");

	/* The ends of the IPv4 space: no wrap, value unchanged. */
	a = ip("255.255.255.254");
	assert_int_equal(ip_next(&a), 0);
	assert_ip(&a, "255.255.255.255");
	assert_int_equal(ip_next(&a), -1);
	assert_ip(&a, "255.255.255.255");
	a = ip("0.0.0.0");
	assert_int_equal(ip_prev(&a), -1);
	assert_ip(&a, "0.0.0.0");
	/* An IPv4 address never carries into the bytes past the fourth. */
	for (int i = 4; i < 16; i++)
		assert_int_equal(a.a[i], 0);

	/* IPv6: carry through the 64-bit middle, and the ends. */
	a = ip("fd00::ffff:ffff:ffff:ffff");
	assert_int_equal(ip_next(&a), 0);
	assert_ip(&a, "fd00:0:0:1::");
	assert_int_equal(ip_prev(&a), 0);
	assert_ip(&a, "fd00::ffff:ffff:ffff:ffff");
	a = ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe");
	assert_int_equal(ip_next(&a), 0);
	assert_int_equal(ip_next(&a), -1);
	assert_ip(&a, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
	a = ip("::");
	assert_int_equal(ip_prev(&a), -1);
	assert_ip(&a, "::");
	a = ip("::1");
	assert_int_equal(ip_prev(&a), 0);
	assert_ip(&a, "::");
}

static void test_add(void **state)
{
	struct cni_ip a = ip("10.0.0.1");
	assert_int_equal(ip_add(&a, 0), 0);
	assert_ip(&a, "10.0.0.1");
	assert_int_equal(ip_add(&a, 65536), 0);
	assert_ip(&a, "10.1.0.1");
	assert_int_equal(ip_add(&a, -65537), 0);
	assert_ip(&a, "10.0.0.0");
	assert_int_equal(ip_add(&a, -167772160), 0);
	assert_ip(&a, "0.0.0.0");
	assert_int_equal(ip_add(&a, -1), -1);
	/* Past the end of the 32-bit space, even with a 64-bit offset. */
	a = ip("0.0.0.0");
	assert_int_equal(ip_add(&a, 4294967295LL), 0);
	assert_ip(&a, "255.255.255.255");
	a = ip("0.0.0.0");
	assert_int_equal(ip_add(&a, 4294967296LL), -1);
	assert_ip(&a, "0.0.0.0");
	a = ip("1.0.0.0");
	assert_int_equal(ip_add(&a, INT64_MIN), -1);

	a = ip("fd00::");
	assert_int_equal(ip_add(&a, INT64_MAX), 0);
	assert_ip(&a, "fd00::7fff:ffff:ffff:ffff");
	assert_int_equal(ip_add(&a, 1), 0);
	assert_ip(&a, "fd00::8000:0:0:0");
	assert_int_equal(ip_add(&a, INT64_MIN), 0);
	assert_ip(&a, "fd00::");
	a = ip("::5");
	assert_int_equal(ip_add(&a, -6), -1);
	assert_ip(&a, "::5");
}

static void test_network_last(void **state)
{
	struct cni_cidr c = cidr("10.200.40.77/24"), n;
	struct cni_ip l;
	n = ip_cidr_network(&c);
	assert_ip(&n.ip, "10.200.40.0");
	assert_int_equal(n.prefix, 24);
	l = ip_cidr_last(&c);
	assert_ip(&l, "10.200.40.255");
	assert_true(ip_cidr_has_host_bits(&c));
	assert_false(ip_cidr_has_host_bits(&n));

	struct {
		const char *in, *net, *last;
	} cases[] = {
		{"10.200.40.1/31", "10.200.40.0", "10.200.40.1"},
		{"10.200.40.1/32", "10.200.40.1", "10.200.40.1"},
		{"10.200.40.1/0", "0.0.0.0", "255.255.255.255"},
		{"255.255.255.255/30", "255.255.255.252", "255.255.255.255"},
		{"10.200.40.130/25", "10.200.40.128", "10.200.40.255"},
		{"10.200.47.3/21", "10.200.40.0", "10.200.47.255"},
		{"fd00:200:40::7/64", "fd00:200:40::", "fd00:200:40:0:ffff:ffff:ffff:ffff"},
		{"fd00::3/127", "fd00::2", "fd00::3"},
		{"fd00::3/128", "fd00::3", "fd00::3"},
		{"fd00::3/0", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/120",
		 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00",
		 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"fd00:0:0:0:8000::1/65", "fd00::8000:0:0:0", "fd00::ffff:ffff:ffff:ffff"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = cidr(cases[i].in);
		n = ip_cidr_network(&c);
		l = ip_cidr_last(&c);
		assert_ip(&n.ip, cases[i].net);
		assert_ip(&l, cases[i].last);
		assert_true(ip_cidr_contains(&c, &n.ip));
		assert_true(ip_cidr_contains(&c, &l));
	}
	c = cidr("10.200.40.1/32");
	assert_false(ip_cidr_has_host_bits(&c));
	c = cidr("fd00::3/127");
	assert_true(ip_cidr_has_host_bits(&c));
}

static void test_contains_overlaps(void **state)
{
	struct cni_cidr c = cidr("10.200.40.0/24");
	struct cni_ip in = ip("10.200.40.255"), out = ip("10.200.41.0"), six = ip("::a0c8:2800");
	assert_true(ip_cidr_contains(&c, &in));
	assert_false(ip_cidr_contains(&c, &out));
	assert_false(ip_cidr_contains(&c, &six)); /* same bytes, other family */
	struct cni_cidr all = cidr("0.0.0.0/0");
	assert_true(ip_cidr_contains(&all, &out));
	assert_false(ip_cidr_contains(&all, &six));
	struct cni_cidr host = cidr("10.200.40.5/32");
	struct cni_ip h = ip("10.200.40.5"), h1 = ip("10.200.40.4");
	assert_true(ip_cidr_contains(&host, &h));
	assert_false(ip_cidr_contains(&host, &h1));
	struct cni_cidr six128 = cidr("fd00::1/128");
	struct cni_ip s1 = ip("fd00::1"), s0 = ip("fd00::");
	assert_true(ip_cidr_contains(&six128, &s1));
	assert_false(ip_cidr_contains(&six128, &s0));

	struct cni_cidr a = cidr("10.200.40.0/24"), b = cidr("10.200.40.128/25"),
			d = cidr("10.200.41.0/24"), e = cidr("10.200.0.0/16"), f = cidr("::/0");
	assert_true(ip_cidr_overlaps(&a, &b));
	assert_true(ip_cidr_overlaps(&b, &a));
	assert_false(ip_cidr_overlaps(&a, &d));
	assert_true(ip_cidr_overlaps(&e, &d));
	assert_false(ip_cidr_overlaps(&a, &f));
	struct cni_cidr g = cidr("10.200.40.0/31"), h2 = cidr("10.200.40.2/31");
	assert_false(ip_cidr_overlaps(&g, &h2));
}

static void test_mask(void **state)
{
	struct {
		const char *cidr, *mask;
		int prefix;
	} cases[] = {
		{"10.0.0.0/0", "0.0.0.0", 0},	     {"10.0.0.0/8", "255.0.0.0", 8},
		{"10.0.0.0/23", "255.255.254.0", 23}, {"10.0.0.0/31", "255.255.255.254", 31},
		{"10.0.0.0/32", "255.255.255.255", 32}, {"fd00::/64", "ffff:ffff:ffff:ffff::", 64},
		{"fd00::/127", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 127},
		{"fd00::/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 128},
		{"::/0", "::", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cni_cidr c = cidr(cases[i].cidr);
		struct cni_ip m = ip_cidr_mask(&c);
		if (c.ip.family == AF_INET6 && cases[i].prefix == 0) {
			assert_int_equal(m.family, AF_INET6);
			for (int k = 0; k < 16; k++)
				assert_int_equal(m.a[k], 0);
		} else {
			assert_ip(&m, cases[i].mask);
		}
		assert_int_equal(ip_mask_to_prefix(&m), cases[i].prefix);
	}
	struct cni_ip holes = ip("255.0.255.0"), tail = ip("255.255.255.253");
	assert_int_equal(ip_mask_to_prefix(&holes), -1);
	assert_int_equal(ip_mask_to_prefix(&tail), -1);
	struct cni_ip six = ip("ffff::1");
	assert_int_equal(ip_mask_to_prefix(&six), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),  cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_cmp),	      cmocka_unit_test(test_next_prev),
		cmocka_unit_test(test_add),	      cmocka_unit_test(test_network_last),
		cmocka_unit_test(test_contains_overlaps), cmocka_unit_test(test_mask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
