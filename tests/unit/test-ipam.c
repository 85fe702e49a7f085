/* ipam-range.c and ipam-store.c: ranges and their defaults, the
 * round-robin walk (wrap-around, gateways, the ends of the address space),
 * host-local config parsing, and the on-disk store with files it did not
 * write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "ipam-range.h"
#include "ipam-store.h"
#include "plugin.h"

static struct cni_json *parse(const char *s)
{
	struct cni_err err = {0};
	struct cni_json *j = json_parse(s, strlen(s), &err);
	assert_non_null(j);
	return j;
}

static struct cni_ip ip(const char *s)
{
	struct cni_ip a;
	assert_int_equal(ip_parse(s, &a), 0);
	return a;
}

static void assert_ip(const struct cni_ip *a, const char *want)
{
	char b[IP_STRLEN];
	assert_string_equal(ip_format(a, b), want);
}

static int range(const char *json, struct cni_range *r, struct cni_err *err)
{
	struct cni_json *j = parse(json);
	int rc = ipam_range_parse(j, r, err);
	json_free(j);
	return rc;
}

static void test_range_defaults(void **state)
{
	struct {
		const char *json, *start, *end, *gw;
		uint64_t size;
	} cases[] = {
		{"{\"subnet\":\"10.200.40.0/24\"}", "10.200.40.1", "10.200.40.254", "10.200.40.1",
		 253},
		{"{\"subnet\":\"10.200.40.0/30\"}", "10.200.40.1", "10.200.40.2", "10.200.40.1", 1},
		{"{\"subnet\":\"10.200.40.0/29\",\"rangeStart\":\"10.200.40.3\",\"rangeEnd\":"
		 "\"10.200.40.7\",\"gateway\":\"10.200.40.6\"}",
		 "10.200.40.3", "10.200.40.7", "10.200.40.6", 4},
		/* The last subnet of the space: no wrap to 0.0.0.0. */
		{"{\"subnet\":\"255.255.255.0/24\"}", "255.255.255.1", "255.255.255.254",
		 "255.255.255.1", 253},
		{"{\"subnet\":\"fd00:200:40::/64\"}", "fd00:200:40::1",
		 "fd00:200:40:0:ffff:ffff:ffff:ffff", "fd00:200:40::1", UINT64_MAX - 1},
		{"{\"subnet\":\"fd00:200:40::/126\"}", "fd00:200:40::1", "fd00:200:40::3",
		 "fd00:200:40::1", 2},
		{"{\"subnet\":\"fd00::/48\"}", "fd00::1", "fd00::ffff:ffff:ffff:ffff:ffff",
		 "fd00::1", UINT64_MAX},
		{"{\"subnet\":\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120\"}",
		 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff01",
		 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff01", 254},
		/* A gateway outside [start, end] costs no address. */
		{"{\"subnet\":\"10.200.41.0/24\",\"rangeStart\":\"10.200.41.10\","
		 "\"rangeEnd\":\"10.200.41.19\"}",
		 "10.200.41.10", "10.200.41.19", "10.200.41.1", 10},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cni_range r;
		struct cni_err err = {0};
		assert_int_equal(range(cases[i].json, &r, &err), 0);
		assert_ip(&r.start, cases[i].start);
		assert_ip(&r.end, cases[i].end);
		assert_ip(&r.gateway, cases[i].gw);
		assert_true(ipam_range_size(&r) == cases[i].size);
		assert_true(ipam_range_contains(&r, &r.start));
		assert_true(ipam_range_contains(&r, &r.end));
	}
}

static void test_range_errors(void **state)
{
	struct {
		const char *json, *want;
	} cases[] = {
		{"[]", "expected a range object"},
		{"{}", "subnet: missing"},
		{"{\"subnet\":\"10.200.40.0\"}", "subnet: not a CIDR"},
		{"{\"subnet\":\"10.200.40.0/33\"}", "subnet: not a CIDR"},
		{"{\"subnet\":42}", "subnet: expected"},
		{"{\"subnet\":\"10.200.40.1/24\"}",
		 "subnet: host bits set (the network is 10.200.40.0/24)"},
		{"{\"subnet\":\"10.200.40.0/31\"}", "subnet: 10.200.40.0/31 is too small"},
		{"{\"subnet\":\"10.200.40.0/32\"}", "subnet: 10.200.40.0/32 is too small"},
		{"{\"subnet\":\"fd00::/127\"}", "subnet: fd00::/127 is too small"},
		{"{\"subnet\":\"fd00::/128\"}", "subnet: fd00::/128 is too small"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeStart\":\"10.200.42.1\"}",
		 "rangeStart: 10.200.42.1 is not in subnet 10.200.40.0/24"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeEnd\":\"10.200.41.0\"}",
		 "rangeEnd: 10.200.41.0 is not in subnet"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeStart\":\"fd00::1\"}",
		 "rangeStart: fd00::1 is not in subnet"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeStart\":\"10.200.40.x\"}",
		 "rangeStart: not an IP address"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeStart\":\"10.200.40.9\",\"rangeEnd\":"
		 "\"10.200.40.3\"}",
		 "rangeStart: rangeStart 10.200.40.9 is after rangeEnd 10.200.40.3"},
		{"{\"subnet\":\"10.200.40.0/24\",\"rangeEnd\":\"10.200.40.0\"}",
		 "rangeEnd: rangeStart 10.200.40.1 is after rangeEnd 10.200.40.0"},
		{"{\"subnet\":\"10.200.40.0/24\",\"gateway\":\"10.9.9.9\"}",
		 "gateway: 10.9.9.9 is not in subnet 10.200.40.0/24"},
		{"{\"subnet\":\"fd00:200:40::/64\",\"gateway\":\"10.200.40.1\"}",
		 "gateway: 10.200.40.1 is "},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cni_range r;
		struct cni_err err = {0};
		assert_int_equal(range(cases[i].json, &r, &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, err.msg,
				 cases[i].want);
	}
}

static int rangeset(const char *json, struct cni_rangeset *s, struct cni_err *err)
{
	struct cni_json *j = parse(json);
	/* Wrap so that paths look as they do in a config. */
	struct cni_json *root = json_new(JSON_OBJECT);
	json_set(root, "set", j);
	int rc = ipam_rangeset_parse(json_get(root, "set"), s, err);
	json_free(root);
	return rc;
}

static void test_rangeset(void **state)
{
	struct cni_rangeset s;
	struct cni_err err = {0};
	char buf[256];

	assert_int_equal(rangeset("[{\"subnet\":\"10.200.40.0/30\"},{\"subnet\":\"10.200.41.0/24\","
				  "\"rangeStart\":\"10.200.41.100\"}]",
				  &s, &err),
			 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(ipam_rangeset_family(&s), AF_INET);
	assert_string_equal(ipam_rangeset_format(&s, buf, sizeof(buf)),
			    "10.200.40.1-10.200.40.2,10.200.41.100-10.200.41.254");
	struct cni_ip a = ip("10.200.41.100"), b = ip("10.200.41.99"), c = ip("10.200.40.2"),
		      d = ip("fd00::1");
	assert_ptr_equal(ipam_rangeset_find(&s, &a), &s.r[1]);
	assert_null(ipam_rangeset_find(&s, &b));
	assert_ptr_equal(ipam_rangeset_find(&s, &c), &s.r[0]);
	assert_null(ipam_rangeset_find(&s, &d));

	struct cni_rangeset t;
	assert_int_equal(rangeset("[{\"subnet\":\"10.200.41.0/25\"}]", &t, &err), 0);
	assert_true(ipam_rangeset_overlaps(&s, &t));
	ipam_rangeset_clear(&t);
	assert_int_equal(rangeset("[{\"subnet\":\"10.200.41.0/25\",\"rangeEnd\":\"10.200.41.99\"}]",
				  &t, &err),
			 0);
	assert_false(ipam_rangeset_overlaps(&s, &t));
	ipam_rangeset_clear(&t);
	assert_int_equal(rangeset("[{\"subnet\":\"fd00:200:40::/64\"}]", &t, &err), 0);
	assert_false(ipam_rangeset_overlaps(&s, &t));
	ipam_rangeset_clear(&t);
	ipam_rangeset_clear(&s);
	assert_null(s.r);

	struct {
		const char *json, *want;
	} bad[] = {
		{"[]", "set: empty range set"},
		{"{}", "set: expected a range set"},
		{"[{\"subnet\":\"10.200.40.0/24\"},{\"subnet\":\"fd00::/64\"}]",
		 "set[1]: mixed address families"},
		{"[{\"subnet\":\"10.200.40.0/24\"},{\"subnet\":\"10.200.40.0/25\"}]",
		 "set[1]: range 10.200.40.1-10.200.40.126 overlaps 10.200.40.1-10.200.40.254"},
		{"[{\"subnet\":\"10.200.40.0/24\"},{\"subnet\":\"10.200.40.1/24\"}]",
		 "set[1].subnet: host bits"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&err);
		assert_int_equal(rangeset(bad[i].json, &s, &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, err.msg,
				 bad[i].want);
	}
}

/* Walk the whole set from last (may be NULL) and compare with want,
 * a space-separated list. */
static void walk(const char *set, const char *last, const char *want)
{
	struct cni_rangeset s;
	struct cni_err err = {0};
	struct cni_range_iter it;
	struct cni_ip a, l;
	char got[1024] = "", b[IP_STRLEN];
	assert_int_equal(rangeset(set, &s, &err), 0);
	if (last)
		l = ip(last);
	ipam_iter_init(&it, &s, last ? &l : NULL);
	const struct cni_range *r;
	for (int n = 0; ipam_iter_next(&it, &a, &r); n++) {
		assert_true(n < 100);
		assert_true(ipam_range_contains(r, &a));
		size_t k = strlen(got);
		snprintf(got + k, sizeof(got) - k, "%s%s", k ? " " : "", ip_format(&a, b));
	}
	assert_false(ipam_iter_next(&it, &a, &r)); /* stays over */
	assert_string_equal(got, want);
	ipam_rangeset_clear(&s);
}

static void test_iter(void **state)
{
	const char *s29 = "[{\"subnet\":\"10.200.40.0/29\"}]";
	walk(s29, NULL, "10.200.40.2 10.200.40.3 10.200.40.4 10.200.40.5 10.200.40.6");
	/* Round-robin: after the last reserved, wrapping, the last one at the end. */
	walk(s29, "10.200.40.4", "10.200.40.5 10.200.40.6 10.200.40.2 10.200.40.3 10.200.40.4");
	walk(s29, "10.200.40.6", "10.200.40.2 10.200.40.3 10.200.40.4 10.200.40.5 10.200.40.6");
	/* A cursor outside the set (ranges changed) starts over. */
	walk(s29, "10.200.49.4", "10.200.40.2 10.200.40.3 10.200.40.4 10.200.40.5 10.200.40.6");
	walk(s29, "fd00::4", "10.200.40.2 10.200.40.3 10.200.40.4 10.200.40.5 10.200.40.6");
	/* The gateway in the middle of the range is skipped. */
	walk("[{\"subnet\":\"10.200.40.0/29\",\"gateway\":\"10.200.40.4\"}]", "10.200.40.3",
	     "10.200.40.5 10.200.40.6 10.200.40.1 10.200.40.2 10.200.40.3");
	/* The cursor on the gateway itself (written by an older config). */
	walk("[{\"subnet\":\"10.200.40.0/29\",\"gateway\":\"10.200.40.4\"}]", "10.200.40.4",
	     "10.200.40.5 10.200.40.6 10.200.40.1 10.200.40.2 10.200.40.3");
	/* Several ranges: from one range's end to the next one's start. */
	const char *two = "[{\"subnet\":\"10.200.40.0/30\"},{\"subnet\":\"10.200.41.0/29\","
			  "\"rangeStart\":\"10.200.41.5\"}]";
	walk(two, NULL, "10.200.40.2 10.200.41.5 10.200.41.6");
	walk(two, "10.200.41.5", "10.200.41.6 10.200.40.2 10.200.41.5");
	walk(two, "10.200.41.6", "10.200.40.2 10.200.41.5 10.200.41.6");
	/* Only a gateway: nothing to give, and the walk still ends. */
	walk("[{\"subnet\":\"10.200.40.0/30\",\"rangeStart\":\"10.200.40.1\",\"rangeEnd\":"
	     "\"10.200.40.1\"}]",
	     NULL, "");
	walk("[{\"subnet\":\"10.200.40.0/30\",\"rangeEnd\":\"10.200.40.1\"},{\"subnet\":"
	     "\"10.200.41.0/30\",\"rangeEnd\":\"10.200.41.1\"}]",
	     "10.200.41.1", "");
	/* The ends of both address spaces. */
	walk("[{\"subnet\":\"255.255.255.248/29\",\"rangeEnd\":\"255.255.255.255\"}]",
	     "255.255.255.255",
	     "255.255.255.250 255.255.255.251 255.255.255.252 255.255.255.253 255.255.255.254 "
	     "255.255.255.255");
	walk("[{\"subnet\":\"0.0.0.0/30\",\"rangeStart\":\"0.0.0.0\"}]", "0.0.0.2",
	     "0.0.0.0 0.0.0.2");
	walk("[{\"subnet\":\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126\"}]",
	     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
	walk("[{\"subnet\":\"fd00:200:40::/126\"}]", NULL, "fd00:200:40::2 fd00:200:40::3");
	/* A huge range walks lazily: the first few come at once. */
	struct cni_rangeset s;
	struct cni_err err = {0};
	struct cni_range_iter it;
	struct cni_ip a, last = ip("fd00:200:40:0:ffff:ffff:ffff:fffe");
	assert_int_equal(rangeset("[{\"subnet\":\"fd00:200:40::/64\"}]", &s, &err), 0);
	ipam_iter_init(&it, &s, &last);
	assert_true(ipam_iter_next(&it, &a, NULL));
	assert_ip(&a, "fd00:200:40:0:ffff:ffff:ffff:ffff");
	assert_true(ipam_iter_next(&it, &a, NULL));
	assert_ip(&a, "fd00:200:40::2");
	ipam_rangeset_clear(&s);
}

static void test_resolv_conf(void **state)
{
	struct cni_dns d = {0};
	ipam_resolv_conf_parse("# comment\n"
			       "; also a comment\n"
			       "nameserver 10.200.40.53\n"
			       "  nameserver\tfd00:200:40::53  \n"
			       "nameserver\n"
			       "domain example.com\n"
			       "domain example.org\n"
			       "search a.example b.example\r\n"
			       "options ndots:5 edns0\n"
			       "sortlist 10.0.0.0\n"
			       "search c.example",
			       &d);
	assert_int_equal(d.n_nameservers, 2);
	assert_string_equal(d.nameservers[0], "10.200.40.53");
	assert_string_equal(d.nameservers[1], "fd00:200:40::53");
	assert_string_equal(d.domain, "example.org");
	assert_int_equal(d.n_search, 3);
	assert_string_equal(d.search[1], "b.example");
	assert_string_equal(d.search[2], "c.example");
	assert_int_equal(d.n_options, 2);
	assert_string_equal(d.options[0], "ndots:5");
	dns_clear(&d);
	ipam_resolv_conf_parse("", &d);
	assert_int_equal(d.n_nameservers, 0);
	assert_null(d.domain);
}

static void test_data_dir(void **state)
{
	const char *good[] = {"/", "/var/lib/cni/networks", "/tmp/x..y", "/tmp/.hidden", "/a//b/"};
	const char *bad[] = {"", "relative", "./x", "/tmp/../etc", "/tmp/..", "/tmp/./x", "/a/\nb"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct cni_err err = {0};
		assert_int_equal(ipam_check_data_dir(good[i], "ipam.dataDir", &err), 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cni_err err = {0};
		assert_int_equal(ipam_check_data_dir(bad[i], "ipam.dataDir", &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
		assert_non_null(strstr(err.msg, "ipam.dataDir"));
	}
}

/* A request as the driver builds it from config text and CNI_ARGS. */
static struct cni_ipam_conf *conf(const char *json, const char *args, struct cni_err *err)
{
	struct cni_req req = {.cmd = CNI_CMD_ADD};
	struct cni_ipam_conf *c = NULL;
	if (args_parse(args, &req.args, err) == 0 && req_init_conf(&req, parse(json), err) == 0)
		c = ipam_conf_parse(&req, err);
	/* The config borrows strings from the request: copy what we check. */
	if (c) {
		static char dir[256];
		snprintf(dir, sizeof(dir), "%s", c->data_dir);
		c->data_dir = dir;
		c->network = "net";
		c->resolv_conf = c->resolv_conf ? "set" : NULL;
	}
	req_free(&req);
	return c;
}

#define NET(ipam)                                                                                  \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"type\":\"bridge\",\"ipam\":" ipam "}"
#define R24 "\"ranges\":[[{\"subnet\":\"10.200.40.0/24\"}]]"

static void test_conf(void **state)
{
	struct cni_err err = {0};
	char b[IP_STRLEN];

	struct cni_ipam_conf *c =
		conf("{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"type\":\"bridge\","
		     "\"runtimeConfig\":{\"ipRanges\":[[{\"subnet\":\"10.200.43.0/24\"}]],"
		     "\"ips\":[\"10.200.44.9/24\",\"10.200.43.7\"]},"
		     "\"args\":{\"cni\":{\"ips\":[\"10.200.43.7/24\",\"fd00:200:40::7\"]}},"
		     "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"10.200.44.0/24\","
		     "\"rangeStart\":\"10.200.44.5\","
		     "\"ranges\":[[{\"subnet\":\"fd00:200:40::/64\"}]],"
		     "\"routes\":[{\"dst\":\"0.0.0.0/0\"},{\"dst\":\"10.200.45.0/24\",\"gw\":"
		     "\"10.200.44.1\",\"mtu\":1400,\"table\":7,\"scope\":253}],"
		     "\"resolvConf\":\"/etc/resolv.conf\"}}",
		     "IP=10.200.44.100", &err);
	assert_non_null(c);
	assert_string_equal(c->data_dir, IPAM_DEFAULT_DATA_DIR);
	assert_non_null(c->resolv_conf);
	/* ipRanges, then the legacy top-level range, then "ranges". */
	assert_int_equal(c->n_sets, 3);
	assert_ip(&c->sets[0].r[0].start, "10.200.43.1");
	assert_ip(&c->sets[1].r[0].start, "10.200.44.5");
	assert_ip(&c->sets[2].r[0].start, "fd00:200:40::1");
	/* args first, then runtimeConfig, duplicates dropped, CNI_ARGS ignored. */
	assert_int_equal(c->n_want, 3);
	assert_string_equal(ip_format(&c->want[0], b), "10.200.43.7");
	assert_string_equal(ip_format(&c->want[1], b), "fd00:200:40::7");
	assert_string_equal(ip_format(&c->want[2], b), "10.200.44.9");
	assert_int_equal(c->n_routes, 2);
	assert_false(ip_isset(&c->routes[0].gw));
	assert_int_equal(c->routes[0].scope, -1);
	assert_ip(&c->routes[1].gw, "10.200.44.1");
	assert_int_equal(c->routes[1].mtu, 1400);
	assert_int_equal(c->routes[1].table, 7);
	assert_int_equal(c->routes[1].scope, 253);
	ipam_conf_free(c);

	/* CNI_ARGS IP= when nothing else asks; IgnoreUnknown lets others by. */
	c = conf(NET("{\"ranges\":[[{\"subnet\":\"10.200.40.0/24\"}]],\"dataDir\":\"/tmp/d\"}"),
		 "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.200.40.9/24", &err);
	assert_non_null(c);
	assert_string_equal(c->data_dir, "/tmp/d");
	assert_int_equal(c->n_want, 1);
	assert_ip(&c->want[0], "10.200.40.9");
	assert_int_equal(c->n_routes, 0);
	assert_null(c->resolv_conf);
	ipam_conf_free(c);

	/* Two v4 sets need 0.3.0 or later. */
	c = conf("{\"cniVersion\":\"0.3.0\",\"name\":\"net\",\"ipam\":{\"ranges\":[[{\"subnet\":"
		 "\"10.200.40.0/24\"}],[{\"subnet\":\"10.200.41.0/24\"}]]}}",
		 NULL, &err);
	assert_non_null(c);
	ipam_conf_free(c);

	struct {
		const char *json, *args;
		int code;
		const char *want;
	} bad[] = {
		{"{\"cniVersion\":\"1.0.0\",\"name\":\"net\"}", NULL, 7, "ipam: missing"},
		{NET("{\"type\":\"host-local\"}"), NULL, 7, "ipam.ranges: no IP ranges specified"},
		{NET("{\"ranges\":[]}"), NULL, 7, "ipam.ranges: no IP ranges"},
		{NET("{\"ranges\":[[]]}"), NULL, 7, "ipam.ranges[0]: empty range set"},
		{NET("{\"ranges\":{}}"), NULL, 7, "ipam.ranges: expected"},
		{NET("{\"ranges\":[[{\"subnet\":\"10.200.40.0/24\"}],"
		     "[{\"subnet\":\"10.200.40.128/25\"}]]}"),
		 NULL, 7, "ipam.ranges[1]: overlaps range set ipam.ranges[0]"},
		{NET("{\"subnet\":\"10.200.40.0/24\"," R24 "}"),
		 NULL, 7, "ipam.ranges[0]: overlaps range set ipam.subnet"},
		{NET("{\"subnet\":\"10.200.40.0/24\",\"rangeEnd\":\"10.200.41.1\"}"), NULL, 7,
		 "ipam.rangeEnd: 10.200.41.1 is not in subnet"},
		{NET("{\"ranges\":[[{\"subnet\":\"10.200.40.0/24\","
		     "\"gateway\":\"10.200.41.1\"}]]}"),
		 NULL, 7, "ipam.ranges[0][0].gateway: 10.200.41.1 is not in subnet"},
		{NET("{" R24 ",\"dataDir\":\"/tmp/../etc\"}"),
		 NULL, 7, "ipam.dataDir:"},
		{NET("{" R24 ",\"dataDir\":\"var/lib\"}"), NULL,
		 7, "ipam.dataDir: \"var/lib\" is not an absolute path"},
		{NET("{" R24 ",\"dataDir\":7}"), NULL, 7,
		 "ipam.dataDir: expected string"},
		{NET("{" R24 ",\"routes\":[{\"gw\":\"1.2.3.4\"}]}"),
		 NULL, 7, "ipam.routes[0].dst: missing"},
		{NET("{" R24 ",\"routes\":[{\"dst\":\"x\"}]}"),
		 NULL, 7, "ipam.routes[0].dst: not a CIDR"},
		{NET("{" R24 "}"), "FOO=1", 7,
		 "CNI_ARGS: unknown args [FOO]"},
		{NET("{" R24 "}"), "IP=10.200.40.x", 4,
		 "CNI_ARGS: IP"},
		{"{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"args\":{\"cni\":{\"ips\":[\"x\"]}},"
		 "\"ipam\":{\"ranges\":[[{\"subnet\":\"10.200.40.0/24\"}]]}}",
		 NULL, 7, "args.cni.ips[0]: expected an IP address"},
		{"{\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"runtimeConfig\":{\"ipRanges\":[[{"
		 "\"subnet\":\"10.200.40.0/33\"}]]},\"ipam\":{}}",
		 NULL, 7, "runtimeConfig.ipRanges[0][0].subnet: not a CIDR"},
		{"{\"cniVersion\":\"0.2.0\",\"name\":\"net\",\"ipam\":{\"ranges\":[[{\"subnet\":"
		 "\"10.200.40.0/24\"}],[{\"subnet\":\"10.200.41.0/24\"}]]}}",
		 NULL, 1, "does not support more than one address per family"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&err);
		assert_null(conf(bad[i].json, bad[i].args, &err));
		if (err.code != bad[i].code || !strstr(err.msg, bad[i].want))
			fail_msg("case %zu: %d \"%s\", want %d \"%s\"", i, err.code, err.msg,
				 bad[i].code, bad[i].want);
	}
}

/* The store, in a fresh directory per test. */
static char tmpdir[64];

static int store_setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cni-test-ipam.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int store_teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *data)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/net/%s", tmpdir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
}

static bool exists(const char *name)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof(p), "%s/net/%s", tmpdir, name);
	return lstat(p, &st) == 0;
}

static char *slurp(const char *name)
{
	char p[256], *out = NULL;
	snprintf(p, sizeof(p), "%s/net/%s", tmpdir, name);
	assert_int_equal(read_file(p, 4096, &out, NULL), 0);
	return out;
}

static struct cni_store *open_locked(void)
{
	struct cni_err err = {0};
	struct cni_store *s = store_open(tmpdir, "net", true, NULL, &err);
	assert_non_null(s);
	assert_int_equal(store_lock(s, &err), 0);
	return s;
}

static void test_store_basic(void **state)
{
	struct cni_err err = {0};
	bool absent = false;
	assert_null(store_open(tmpdir, "net", false, &absent, &err));
	assert_true(absent);
	assert_false(err_isset(&err));
	const char *badnames[] = {"..", ".", "a/b", ""};
	for (size_t i = 0; i < 4; i++) {
		err_clear(&err);
		assert_null(store_open(tmpdir, badnames[i], true, NULL, &err));
		assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	}

	struct cni_store *s = open_locked();
	assert_true(exists("lock"));
	struct cni_ip a = ip("10.200.40.2"), six = ip("fd00:200:40::2"), got;
	assert_int_equal(store_reserve(s, &a, "c1", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &a, "c2", "eth0", &err), 0);
	assert_int_equal(store_reserve(s, &six, "c1", "eth1", &err), 1);
	char *d = slurp("10.200.40.2");
	assert_string_equal(d, "c1\r\neth0"); /* the reference's bytes exactly */
	free(d);
	assert_true(exists("fd00:200:40::2"));

	assert_int_equal(store_get_last(s, 0, &got), 0);
	assert_int_equal(store_set_last(s, 0, &a, &err), 0);
	assert_int_equal(store_get_last(s, 0, &got), 1);
	assert_true(ip_eq(&got, &a));
	d = slurp("last_reserved_ip.0");
	assert_string_equal(d, "10.200.40.2");
	free(d);

	struct cni_store_scan sc;
	assert_int_equal(store_scan(s, &sc, &err), 0);
	assert_int_equal(sc.n, 2);
	const struct cni_store_entry *e = store_scan_find(&sc, &six);
	assert_non_null(e);
	assert_string_equal(e->id, "c1");
	assert_string_equal(e->ifname, "eth1");
	assert_true(e->regular);
	assert_true(store_entry_owned(e, "c1", "eth1"));
	assert_false(store_entry_owned(e, "c1", "eth0"));
	assert_false(store_entry_owned(e, "c2", "eth1"));
	store_scan_clear(&sc);

	assert_int_equal(store_release(s, "c1", "eth0", &err), 1);
	assert_false(exists("10.200.40.2"));
	assert_true(exists("fd00:200:40::2"));
	assert_int_equal(store_release(s, "c1", "eth0", &err), 0); /* idempotent */
	assert_int_equal(store_unreserve(s, &six, &err), 0);
	assert_int_equal(store_unreserve(s, &six, &err), 0);
	assert_false(exists("fd00:200:40::2"));
	store_close(s);

	/* Without create, an existing store opens. */
	s = store_open(tmpdir, "net", false, &absent, &err);
	assert_non_null(s);
	assert_false(absent);
	store_close(s);
}

static bool keep_none(void *arg, const char *id, const char *ifname)
{
	return false;
}

static void test_store_foreign(void **state)
{
	struct cni_err err = {0};
	char p[256];
	struct cni_store *s = open_locked();

	put("10.200.40.5", "");				/* crash of a non-atomic writer */
	put("10.200.40.6", "\x01\x02garbage\xff");	/* corrupted */
	put("10.200.40.10", "legacy-id\n");		/* before ifnames were recorded */
	put("10.200.40.11", "  c9\r\neth0\n");		/* extra whitespace */
	put("FD00:200:40::9", "other\r\neth0");		/* not our spelling */
	put("README", "c9\r\neth0");			/* not an address: not ours */
	put("last_reserved_ip.0", "not an address");
	put(".cni-tmp-0123456789ab", "c9\r\neth0");	/* a crash's leftover */
	snprintf(p, sizeof(p), "%s/net/10.200.40.7", tmpdir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/net/10.200.40.8", tmpdir);
	assert_int_equal(symlink("/etc/passwd", p), 0);

	struct cni_store_scan sc;
	assert_int_equal(store_scan(s, &sc, &err), 0);
	assert_false(exists(".cni-tmp-0123456789ab"));
	assert_true(exists("README"));
	assert_int_equal(sc.n, 7);
	const char *order[] = {"10.200.40.5", "10.200.40.6",  "10.200.40.7",   "10.200.40.8",
			       "10.200.40.10", "10.200.40.11", "fd00:200:40::9"};
	for (size_t i = 0; i < sc.n; i++)
		assert_ip(&sc.e[i].ip, order[i]);
	assert_string_equal(sc.e[0].id, "");
	assert_null(sc.e[0].ifname);
	assert_null(sc.e[2].id); /* a directory */
	assert_false(sc.e[2].regular);
	assert_null(sc.e[3].id); /* a symlink is never followed */
	assert_false(sc.e[3].regular);
	assert_string_equal(sc.e[4].id, "legacy-id");
	assert_null(sc.e[4].ifname);
	assert_true(store_entry_owned(&sc.e[4], "legacy-id", "eth3"));
	assert_string_equal(sc.e[5].id, "c9");
	assert_string_equal(sc.e[5].ifname, "eth0");
	assert_string_equal(sc.e[6].name, "FD00:200:40::9");

	/* The cursor is garbage: allocation starts at the range start and
	 * skips every address with a file, whatever it holds. */
	struct cni_rangeset set;
	assert_int_equal(rangeset("[{\"subnet\":\"10.200.40.0/28\","
				  "\"rangeStart\":\"10.200.40.5\"}]",
				  &set, &err),
			 0);
	struct cni_ip last;
	assert_int_equal(store_get_last(s, 0, &last), 0);
	struct cni_ipconf out;
	assert_int_equal(ipam_alloc(s, &sc, &set, 0, "new", "eth0", NULL, &out, &err), 0);
	assert_ip(&out.address.ip, "10.200.40.9");
	assert_int_equal(out.address.prefix, 28);
	assert_ip(&out.gateway, "10.200.40.1");
	ipam_rangeset_clear(&set);
	/* The other spelling of fd00:200:40::9 holds it too. */
	assert_int_equal(rangeset("[{\"subnet\":\"fd00:200:40::/124\",\"rangeStart\":"
				  "\"fd00:200:40::9\",\"rangeEnd\":\"fd00:200:40::a\"}]",
				  &set, &err),
			 0);
	struct cni_ip want = ip("fd00:200:40::9");
	assert_int_equal(ipam_alloc(s, &sc, &set, 1, "new", "eth1", &want, &out, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "not available"));
	err_clear(&err);
	assert_int_equal(ipam_alloc(s, &sc, &set, 1, "new", "eth1", NULL, &out, &err), 0);
	assert_ip(&out.address.ip, "fd00:200:40::a");
	ipam_rangeset_clear(&set);
	store_scan_clear(&sc);

	/* DEL: no exact owner, so the reference's fallback to records
	 * without an ifname; nothing else is touched. */
	assert_int_equal(store_release(s, "legacy-id", "eth0", &err), 1);
	assert_false(exists("10.200.40.10"));
	assert_int_equal(store_release(s, "c9", "eth0", &err), 1);
	assert_false(exists("10.200.40.11"));
	assert_true(exists("README"));

	/* GC keeping nothing: every regular reservation goes; directories,
	 * symlinks, foreign names and bookkeeping stay. */
	assert_int_equal(store_gc(s, keep_none, NULL, &err), 5);
	assert_false(exists("10.200.40.5"));
	assert_false(exists("10.200.40.6"));
	assert_false(exists("10.200.40.9"));
	assert_false(exists("FD00:200:40::9"));
	assert_false(exists("fd00:200:40::a"));
	assert_true(exists("10.200.40.7"));
	assert_true(exists("10.200.40.8"));
	assert_true(exists("README"));
	assert_true(exists("lock"));
	assert_true(exists("last_reserved_ip.1"));
	assert_non_null(realpath("/etc/passwd", p)); /* the symlink's target untouched */
	store_close(s);
}

static bool keep_c1(void *arg, const char *id, const char *ifname)
{
	int *calls = arg;
	(*calls)++;
	return streq(id, "c1") && (!ifname || streq(ifname, "eth0"));
}

static void test_store_gc(void **state)
{
	struct cni_err err = {0};
	char p[256];
	struct cni_store *s = open_locked();
	struct cni_ip a = ip("10.200.40.2"), b = ip("10.200.40.3"), c = ip("10.200.40.4");
	assert_int_equal(store_reserve(s, &a, "c1", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &b, "c1", "eth1", &err), 1);
	assert_int_equal(store_reserve(s, &c, "c2", "eth0", &err), 1);
	assert_int_equal(store_set_last(s, 0, &c, &err), 0);
	put("10.200.40.5", "c1");
	put("10.200.40.6", "");
	put("notes.txt", "c2\r\neth0");
	snprintf(p, sizeof(p), "%s/net/10.200.40.7", tmpdir);
	assert_int_equal(mkdir(p, 0700), 0);

	int calls = 0;
	assert_int_equal(store_gc(s, keep_c1, &calls, &err), 3);
	assert_int_equal(calls, 5);
	assert_true(exists("10.200.40.2"));
	assert_false(exists("10.200.40.3"));
	assert_false(exists("10.200.40.4"));
	assert_true(exists("10.200.40.5"));
	assert_false(exists("10.200.40.6"));
	assert_true(exists("10.200.40.7"));
	assert_true(exists("notes.txt"));
	assert_true(exists("lock"));
	assert_true(exists("last_reserved_ip.0"));
	assert_int_equal(store_gc(s, keep_none, NULL, &err), 2);
	assert_false(exists("10.200.40.2"));
	assert_true(exists("lock"));
	/* A released address is reservable again. */
	assert_int_equal(store_reserve(s, &b, "c3", "eth0", &err), 1);
	store_close(s);
}

/* Allocate for id with a fresh scan, as each ADD does. */
static const char *alloc(struct cni_store *s, const struct cni_rangeset *set, const char *id,
			 const char *want, struct cni_err *err)
{
	static char buf[IP_STRLEN];
	struct cni_store_scan sc;
	struct cni_ipconf out;
	struct cni_ip w;
	if (want)
		w = ip(want);
	assert_int_equal(store_scan(s, &sc, err), 0);
	int r = ipam_alloc(s, &sc, set, 0, id, "eth0", want ? &w : NULL, &out, err);
	store_scan_clear(&sc);
	return r < 0 ? NULL : ip_format(&out.address.ip, buf);
}

static void test_alloc_round_robin(void **state)
{
	struct cni_err err = {0};
	struct cni_rangeset set;
	struct cni_store *s = open_locked();
	assert_int_equal(rangeset("[{\"subnet\":\"10.200.40.0/29\"}]", &set, &err), 0);

	assert_string_equal(alloc(s, &set, "c1", NULL, &err), "10.200.40.2");
	assert_string_equal(alloc(s, &set, "c2", NULL, &err), "10.200.40.3");
	assert_string_equal(alloc(s, &set, "c3", NULL, &err), "10.200.40.4");
	/* A freed address is not reused before the range wraps. */
	assert_int_equal(store_release(s, "c2", "eth0", &err), 1);
	assert_string_equal(alloc(s, &set, "c4", NULL, &err), "10.200.40.5");
	assert_string_equal(alloc(s, &set, "c5", NULL, &err), "10.200.40.6");
	assert_string_equal(alloc(s, &set, "c6", NULL, &err), "10.200.40.3");
	/* Full: .1 is the gateway, .7 the broadcast. */
	assert_null(alloc(s, &set, "c7", NULL, &err));
	assert_int_equal(err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "no IP addresses available in range set 0"));
	assert_string_equal(err.details, "10.200.40.1-10.200.40.6");
	err_clear(&err);
	/* The same attachment twice. */
	assert_int_equal(store_release(s, "c1", "eth0", &err), 1);
	assert_null(alloc(s, &set, "c3", NULL, &err));
	assert_non_null(strstr(err.msg, "10.200.40.4 is already allocated to c3"));
	err_clear(&err);
	/* Requests: the gateway, a taken one, one outside, a free one. */
	assert_null(alloc(s, &set, "c8", "10.200.40.1", &err));
	assert_non_null(strstr(err.msg, "gateway"));
	err_clear(&err);
	assert_null(alloc(s, &set, "c8", "10.200.40.5", &err));
	assert_non_null(strstr(err.msg, "requested IP address 10.200.40.5 is not available"));
	err_clear(&err);
	assert_null(alloc(s, &set, "c8", "10.200.40.7", &err));
	assert_non_null(strstr(err.msg, "not in range set 0"));
	err_clear(&err);
	assert_string_equal(alloc(s, &set, "c8", "10.200.40.2", &err), "10.200.40.2");
	struct cni_ip last;
	assert_int_equal(store_get_last(s, 0, &last), 1);
	assert_ip(&last, "10.200.40.2");
	ipam_rangeset_clear(&set);

	/* The end of the IPv4 space: wraps to the start, never to 0.0.0.0. */
	assert_int_equal(rangeset("[{\"subnet\":\"255.255.255.252/30\",\"rangeEnd\":"
				  "\"255.255.255.255\"}]",
				  &set, &err),
			 0);
	assert_string_equal(alloc(s, &set, "e1", NULL, &err), "255.255.255.254");
	assert_string_equal(alloc(s, &set, "e2", NULL, &err), "255.255.255.255");
	assert_int_equal(store_release(s, "e1", "eth0", &err), 1);
	assert_string_equal(alloc(s, &set, "e3", NULL, &err), "255.255.255.254");
	assert_null(alloc(s, &set, "e4", NULL, &err));
	ipam_rangeset_clear(&set);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_defaults),
		cmocka_unit_test(test_range_errors),
		cmocka_unit_test(test_rangeset),
		cmocka_unit_test(test_iter),
		cmocka_unit_test(test_resolv_conf),
		cmocka_unit_test(test_data_dir),
		cmocka_unit_test(test_conf),
		cmocka_unit_test_setup_teardown(test_store_basic, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_store_foreign, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_store_gc, store_setup, store_teardown),
		cmocka_unit_test_setup_teardown(test_alloc_round_robin, store_setup,
						store_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
