/* result.c: one model, every spec version's shape, round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plugin.h"
#include "result.h"

static struct cni_result *sample(void)
{
	struct cni_result *r = result_new("1.1.0");
	struct cni_cidr a4, a6, d4, d6;
	struct cni_ip g4, g6;
	ip_cidr_parse("10.200.0.5/24", &a4);
	ip_cidr_parse("fd00:200::5/64", &a6);
	ip_cidr_parse("0.0.0.0/0", &d4);
	ip_cidr_parse("::/0", &d6);
	ip_parse("10.200.0.1", &g4);
	ip_parse("fd00:200::1", &g6);
	result_add_iface(r, "cni0", "aa:bb:cc:dd:ee:01", NULL);
	int c = result_add_iface(r, "eth0", "aa:bb:cc:dd:ee:02", "/run/netns/x");
	r->ifaces[c].mtu = 1400;
	result_add_ip(r, &a4, &g4, c);
	result_add_ip(r, &a6, &g6, c);
	int k = result_add_route(r, &d4, &g4);
	r->routes[k].priority = 100;
	r->routes[k].scope = 0;
	result_add_route(r, &d6, NULL);
	dns_add(&r->dns.nameservers, &r->dns.n_nameservers, "10.200.0.1");
	r->dns.domain = xstrdup("example.test");
	return r;
}

static char *encode(const struct cni_result *r, const char *v)
{
	struct cni_err err = {0};
	struct cni_json *j = result_encode(r, v, &err);
	assert_non_null(j);
	char *s = json_dump(j, false);
	json_free(j);
	return s;
}

static void test_encode_110(void **state)
{
	struct cni_result *r = sample();
	char *s = encode(r, "1.1.0");
	assert_string_equal(
		s, "{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"cni0\",\"mac\":\"aa:bb:cc:dd:ee:01\"},"
		   "{\"name\":\"eth0\",\"mac\":\"aa:bb:cc:dd:ee:02\",\"mtu\":1400,\"sandbox\":\"/run/netns/x\"}],"
		   "\"ips\":[{\"interface\":1,\"address\":\"10.200.0.5/24\",\"gateway\":\"10.200.0.1\"},"
		   "{\"interface\":1,\"address\":\"fd00:200::5/64\",\"gateway\":\"fd00:200::1\"}],"
		   "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.200.0.1\",\"priority\":100,\"scope\":0},"
		   "{\"dst\":\"::/0\"}],\"dns\":{\"nameservers\":[\"10.200.0.1\"],\"domain\":\"example.test\"}}");
	free(s);
	result_free(r);
}

static void test_encode_100_drops_11_fields(void **state)
{
	struct cni_result *r = sample();
	char *s = encode(r, "1.0.0");
	assert_null(strstr(s, "\"mtu\""));
	assert_null(strstr(s, "priority"));
	assert_null(strstr(s, "\"version\""));
	free(s);
	result_free(r);
}

static void test_encode_040_has_version(void **state)
{
	struct cni_result *r = sample();
	char *s = encode(r, "0.4.0");
	assert_non_null(strstr(s, "{\"version\":\"4\",\"interface\":1,\"address\":\"10.200.0.5/24\""));
	assert_non_null(strstr(s, "{\"version\":\"6\",\"interface\":1"));
	free(s);
	result_free(r);
}

static void test_encode_020(void **state)
{
	struct cni_result *r = sample();
	char *s = encode(r, "0.2.0");
	assert_string_equal(
		s, "{\"cniVersion\":\"0.2.0\",\"ip4\":{\"ip\":\"10.200.0.5/24\",\"gateway\":\"10.200.0.1\","
		   "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.200.0.1\"}]},"
		   "\"ip6\":{\"ip\":\"fd00:200::5/64\",\"gateway\":\"fd00:200::1\",\"routes\":[{\"dst\":\"::/0\"}]},"
		   "\"dns\":{\"nameservers\":[\"10.200.0.1\"],\"domain\":\"example.test\"}}");
	free(s);
	result_free(r);
}

/* encode(v) then decode(v) then encode(v) is stable for every version. */
static void test_roundtrip_every_version(void **state)
{
	struct cni_result *r = sample();
	for (size_t i = 0; cni_versions[i]; i++) {
		const char *v = cni_versions[i];
		char *s1 = encode(r, v);
		struct cni_err err = {0};
		struct cni_json *j = json_parse(s1, strlen(s1), &err);
		assert_non_null(j);
		struct cni_result *d = result_decode(j, v, &err);
		assert_non_null(d);
		assert_string_equal(d->cni_version, v);
		char *s2 = encode(d, v);
		assert_string_equal(s1, s2);
		if (version_cmp(v, "0.3.0") >= 0) {
			assert_int_equal(d->n_ifaces, 2);
			assert_int_equal(d->ips[0].iface, 1);
		}
		assert_int_equal(d->n_ips, 2);
		assert_true(ip_eq(&d->ips[0].gateway, &r->ips[0].gateway));
		free(s1);
		free(s2);
		json_free(j);
		result_free(d);
	}
	result_free(r);
}

static void test_decode_errors(void **state)
{
	const char *bad[] = {
		"[]",
		"{\"ips\":[{\"address\":\"10.0.0.1\"}]}",
		"{\"ips\":{}}",
		"{\"interfaces\":[{\"mac\":\"x\"}]}",
		"{\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"nope\"}]}",
		"{\"dns\":{\"nameservers\":[1]}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cni_err err = {0};
		struct cni_json *j = json_parse(bad[i], strlen(bad[i]), &err);
		assert_non_null(j);
		assert_null(result_decode(j, "1.0.0", &err));
		assert_int_equal(err.code, CNI_ERR_DECODE);
		json_free(j);
	}
	struct cni_err err = {0};
	const char *s = "{\"ips\":[{\"address\":\"10.0.0.1\"}]}";
	struct cni_json *j = json_parse(s, strlen(s), &err);
	result_decode(j, "1.0.0", &err);
	assert_string_equal(err.msg, "ips[0].address: not a CIDR: \"10.0.0.1\"");
	json_free(j);
}

static void test_legacy_decode(void **state)
{
	const char *s = "{\"cniVersion\":\"0.2.0\",\"ip4\":{\"ip\":\"10.1.2.3/16\",\"gateway\":\"10.1.0.1\","
			"\"routes\":[{\"dst\":\"0.0.0.0/0\"}]},\"dns\":{}}";
	struct cni_err err = {0};
	struct cni_json *j = json_parse(s, strlen(s), &err);
	struct cni_result *r = result_decode(j, "0.2.0", &err);
	assert_non_null(r);
	assert_int_equal(r->n_ips, 1);
	assert_int_equal(r->ips[0].iface, -1);
	assert_int_equal(r->n_routes, 1);
	/* Upgraded to 1.0.0 it has an ips list and no interfaces. */
	char *out = encode(r, "1.0.0");
	assert_string_equal(out, "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.1.2.3/16\","
				 "\"gateway\":\"10.1.0.1\"}],\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":{}}");
	free(out);
	result_free(r);
	json_free(j);
}

static void test_unknown_version(void **state)
{
	struct cni_result *r = sample();
	struct cni_err err = {0};
	assert_null(result_encode(r, "9.9.9", &err));
	assert_int_equal(err.code, CNI_ERR_INCOMPATIBLE_VERSION);
	result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_110),
		cmocka_unit_test(test_encode_100_drops_11_fields),
		cmocka_unit_test(test_encode_040_has_version),
		cmocka_unit_test(test_encode_020),
		cmocka_unit_test(test_roundtrip_every_version),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_legacy_decode),
		cmocka_unit_test(test_unknown_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
