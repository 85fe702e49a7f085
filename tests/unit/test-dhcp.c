/* dhcp.c: message codec, IPv4/UDP framing, option 121, the CNI result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>

#include "dhcp.h"

static const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};

static uint32_t a4(const char *s)
{
	struct in_addr a;
	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

/* A server's reply: our builder, turned into a BOOTREPLY with yiaddr. */
static void reply(struct dhcp_buf *b, uint8_t type, const char *yiaddr)
{
	struct dhcp_hdr h = {.type = type, .xid = 0x01020304, .mac = mac};
	dhcp_buf_start(b, &h);
	b->b[0] = DHCP_BOOTREPLY;
	uint32_t y = a4(yiaddr);
	memcpy(b->b + 16, &y, 4);
}

static char *encode(const struct cni_result *r)
{
	struct cni_err err = {0};
	struct cni_json *j = result_encode(r, "1.1.0", &err);
	assert_non_null(j);
	char *s = json_dump(j, false);
	json_free(j);
	return s;
}

static void test_discover_roundtrip(void **state)
{
	struct dhcp_buf b;
	struct dhcp_hdr h = {.type = DHCPDISCOVER,
			     .xid = 0xdeadbeef,
			     .secs = 3,
			     .flags = DHCP_FLAG_BROADCAST,
			     .mac = mac};
	dhcp_buf_start(&b, &h);
	const uint8_t id[] = {0, 'c', '/', 'n', '/', 'e'};
	const uint8_t prl[] = {1, 3, 6, 121};
	assert_int_equal(dhcp_buf_opt(&b, DHCP_OPT_CLIENT_ID, id, sizeof(id)), 0);
	assert_int_equal(dhcp_buf_opt(&b, DHCP_OPT_PARAM_LIST, prl, sizeof(prl)), 0);
	assert_int_equal(dhcp_buf_finish(&b), 0);
	assert_int_equal(b.len, DHCP_MIN_MSG);
	assert_int_equal(b.b[0], DHCP_BOOTREQUEST);
	assert_int_equal(b.b[DHCP_OPTIONS_OFF], DHCP_OPT_MSG_TYPE); /* 53 comes first */

	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	assert_int_equal(m.type, DHCPDISCOVER);
	assert_int_equal(m.xid, 0xdeadbeef);
	assert_int_equal(m.secs, 3);
	assert_int_equal(m.flags, DHCP_FLAG_BROADCAST);
	assert_int_equal(m.hlen, 6);
	assert_memory_equal(m.chaddr, mac, 6);
	size_t n;
	const uint8_t *v = dhcp_msg_opt(&m, DHCP_OPT_CLIENT_ID, &n);
	assert_non_null(v);
	assert_int_equal(n, sizeof(id));
	assert_memory_equal(v, id, sizeof(id));
	v = dhcp_msg_opt(&m, DHCP_OPT_PARAM_LIST, &n);
	assert_int_equal(n, 4);
	assert_memory_equal(v, prl, 4);
	assert_null(dhcp_msg_opt(&m, DHCP_OPT_ROUTER, &n));
}

static void test_long_option_split_and_joined(void **state)
{
	struct dhcp_buf b;
	struct dhcp_hdr h = {.type = DHCPREQUEST, .mac = mac};
	dhcp_buf_start(&b, &h);
	uint8_t big[600];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	assert_int_equal(dhcp_buf_opt(&b, 224, big, sizeof(big)), 0);
	assert_int_equal(dhcp_buf_opt_u32(&b, DHCP_OPT_SERVER_ID, a4("10.0.0.1")), 0);
	assert_int_equal(dhcp_buf_finish(&b), 0);
	/* 255 + 255 + 90, each with its own code and length. */
	assert_int_equal(b.b[DHCP_OPTIONS_OFF + 3], 224);
	assert_int_equal(b.b[DHCP_OPTIONS_OFF + 4], 255);

	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	size_t n;
	const uint8_t *v = dhcp_msg_opt(&m, 224, &n);
	assert_int_equal(n, sizeof(big));
	assert_memory_equal(v, big, sizeof(big));
	uint32_t sid;
	assert_int_equal(dhcp_msg_opt_u32(&m, DHCP_OPT_SERVER_ID, &sid), 0);
	assert_int_equal(sid, a4("10.0.0.1"));

	/* Nothing fits past the message size. */
	uint8_t huge[DHCP_MAX_MSG];
	memset(huge, 1, sizeof(huge));
	assert_int_equal(dhcp_buf_opt(&b, 225, huge, sizeof(huge)), -1);
	assert_int_equal(dhcp_buf_opt(&b, DHCP_OPT_END, huge, 1), -1);
}

static void test_overload(void **state)
{
	/* Option 52 = 3: more options in file (first), then sname. */
	struct dhcp_buf b;
	reply(&b, DHCPACK, "10.1.0.9");
	uint8_t ov = 3;
	dhcp_buf_opt(&b, DHCP_OPT_OVERLOAD, &ov, 1);
	dhcp_buf_opt(&b, 200, "ab", 2);
	dhcp_buf_finish(&b);
	uint8_t *file = b.b + 108, *sname = b.b + 44;
	const uint8_t ffile[] = {DHCP_OPT_SUBNET_MASK, 4, 255, 255, 0, 0, 200, 1, 'c',
				 DHCP_OPT_END};
	const uint8_t fsname[] = {DHCP_OPT_PAD, 200, 1, 'd', DHCP_OPT_END};
	memcpy(file, ffile, sizeof(ffile));
	memcpy(sname, fsname, sizeof(fsname));

	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	assert_int_equal(m.op, DHCP_BOOTREPLY);
	assert_int_equal(m.type, DHCPACK);
	assert_int_equal(m.yiaddr, a4("10.1.0.9"));
	uint32_t mask;
	assert_int_equal(dhcp_msg_opt_u32(&m, DHCP_OPT_SUBNET_MASK, &mask), 0);
	assert_int_equal(mask, a4("255.255.0.0"));
	size_t n;
	const uint8_t *v = dhcp_msg_opt(&m, 200, &n);
	assert_int_equal(n, 4);
	assert_memory_equal(v, "abcd", 4);

	/* An option in the file field running past its end. */
	memset(file, 0, 128);
	file[126] = 201;
	file[127] = 5;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), -1);
}

static void test_malformed(void **state)
{
	struct dhcp_buf b;
	struct dhcp_hdr h = {.type = DHCPOFFER, .mac = mac};
	dhcp_buf_start(&b, &h);
	dhcp_buf_finish(&b);
	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, DHCP_OPTIONS_OFF - 1, &m), -1);
	assert_int_equal(dhcp_msg_parse(b.b, DHCP_MAX_MSG + 1, &m), -1);
	b.b[DHCP_FIXED_LEN] = 0;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), -1);
	b.b[DHCP_FIXED_LEN] = 99;
	/* A length byte pointing past the end of the message. */
	size_t n = DHCP_OPTIONS_OFF + 3;
	b.b[DHCP_OPTIONS_OFF + 3] = 6;
	b.b[DHCP_OPTIONS_OFF + 4] = 200;
	assert_int_equal(dhcp_msg_parse(b.b, n + 10, &m), -1);
	/* A missing END is fine at the end of the options field. */
	assert_int_equal(dhcp_msg_parse(b.b, n, &m), 0);
	assert_int_equal(m.type, DHCPOFFER);
}

static void test_udp_framing(void **state)
{
	uint8_t payload[DHCP_MIN_MSG];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	uint8_t pkt[DHCP_MAX_MSG + DHCP_UDP_HDR];
	size_t n = dhcp_udp_wrap(pkt, sizeof(pkt), 0, INADDR_BROADCAST, payload, sizeof(payload));
	assert_int_equal(n, sizeof(payload) + DHCP_UDP_HDR);
	assert_int_equal(pkt[0], 0x45);
	assert_int_equal(pkt[9], IPPROTO_UDP);
	assert_int_equal(dhcp_udp_wrap(pkt, 100, 0, 0, payload, sizeof(payload)), (size_t)-1);

	/* Our datagram goes to port 67; turn it around to test the reader. */
	pkt[20] = 0;
	pkt[21] = 67;
	pkt[22] = 0;
	pkt[23] = 68;
	const uint8_t *p;
	size_t len;
	uint32_t src = 1;
	/* The UDP checksum now covers swapped ports: same sum, still valid. */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, true, &p, &len, &src), 0);
	assert_int_equal(len, sizeof(payload));
	assert_memory_equal(p, payload, sizeof(payload));
	assert_int_equal(src, 0);

	pkt[28 + 5] ^= 0xff; /* payload corruption: UDP checksum fails */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, true, &p, &len, &src), -1);
	assert_int_equal(dhcp_udp_unwrap(pkt, n, false, &p, &len, &src), 0);
	pkt[26] = pkt[27] = 0; /* no UDP checksum at all */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, true, &p, &len, &src), 0);
	pkt[8] ^= 1; /* TTL: IP header checksum fails */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, false, &p, &len, &src), -1);
	pkt[8] ^= 1;
	pkt[6] |= 0x20; /* more fragments */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, false, &p, &len, &src), -1);
	pkt[6] &= ~0x20;
	pkt[23] = 69; /* another port */
	assert_int_equal(dhcp_udp_unwrap(pkt, n, false, &p, &len, &src), -1);
	pkt[23] = 68;
	assert_int_equal(dhcp_udp_unwrap(pkt, n - 1, false, &p, &len, &src), -1);
	assert_int_equal(dhcp_udp_unwrap(pkt, 20, false, &p, &len, &src), -1);
}

static void test_classless_routes(void **state)
{
	const uint8_t v[] = {
		0,  10, 0, 0, 1,	   /* default via 10.0.0.1 */
		24, 192, 168, 5, 0, 0, 0, 0,	   /* 192.168.5.0/24 on-link */
		32, 10, 9, 8, 7, 10, 0, 0, 2,	   /* host route */
		9,  172, 255, 10, 0, 0, 3,	   /* 172.128.0.0/9: host bits dropped */
	};
	struct dhcp_route r[8];
	assert_int_equal(dhcp_classless_routes(v, sizeof(v), r, 8), 4);
	assert_int_equal(r[0].prefix, 0);
	assert_int_equal(r[0].dst, 0);
	assert_int_equal(r[0].gw, a4("10.0.0.1"));
	assert_int_equal(r[1].prefix, 24);
	assert_int_equal(r[1].dst, a4("192.168.5.0"));
	assert_int_equal(r[1].gw, 0);
	assert_int_equal(r[2].prefix, 32);
	assert_int_equal(r[2].dst, a4("10.9.8.7"));
	assert_int_equal(r[3].prefix, 9);
	assert_int_equal(r[3].dst, a4("172.128.0.0"));
	assert_int_equal(dhcp_classless_routes(v, sizeof(v), r, 2), 2);
	assert_int_equal(dhcp_classless_routes(v, 0, r, 8), 0);

	const uint8_t wide[] = {33, 1, 2, 3, 4, 5, 0, 0, 0, 1};
	assert_int_equal(dhcp_classless_routes(wide, sizeof(wide), r, 8), -1);
	assert_int_equal(dhcp_classless_routes(v, sizeof(v) - 1, r, 8), -1);
	assert_int_equal(dhcp_classless_routes(v, 3, r, 8), -1);
}

static void test_result_with_121(void **state)
{
	struct dhcp_buf b;
	reply(&b, DHCPACK, "10.200.90.57");
	dhcp_buf_opt_u32(&b, DHCP_OPT_SUBNET_MASK, a4("255.255.255.0"));
	uint8_t routers[] = {10, 200, 90, 1, 10, 200, 90, 2};
	dhcp_buf_opt(&b, DHCP_OPT_ROUTER, routers, sizeof(routers));
	uint8_t dns[] = {10, 200, 90, 1, 9, 9, 9, 9};
	dhcp_buf_opt(&b, DHCP_OPT_DNS, dns, sizeof(dns));
	dhcp_buf_opt(&b, DHCP_OPT_DOMAIN_NAME, "dh.test\0", 8);
	const uint8_t cl[] = {0, 10, 200, 90, 254, 16, 10, 201, 0, 0, 0, 0};
	dhcp_buf_opt(&b, DHCP_OPT_CLASSLESS_ROUTES, cl, sizeof(cl));
	const uint8_t st[] = {10, 5, 0, 0, 10, 200, 90, 3};
	dhcp_buf_opt(&b, DHCP_OPT_STATIC_ROUTES, st, sizeof(st));
	dhcp_buf_finish(&b);

	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	struct cni_result *r = result_new("1.1.0");
	struct cni_err err = {0};
	assert_int_equal(dhcp_msg_result(&m, 50, r, &err), 0);
	char *s = encode(r);
	/* Option 121 replaces 33 and the router's default route. */
	assert_string_equal(
		s, "{\"cniVersion\":\"1.1.0\","
		   "\"ips\":[{\"address\":\"10.200.90.57/24\",\"gateway\":\"10.200.90.1\"}],"
		   "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.200.90.254\",\"priority\":50},"
		   "{\"dst\":\"10.201.0.0/16\",\"gw\":\"0.0.0.0\",\"priority\":50,\"scope\":253}],"
		   "\"dns\":{\"nameservers\":[\"10.200.90.1\",\"9.9.9.9\"],"
		   "\"domain\":\"dh.test\"}}");
	free(s);
	result_free(r);
}

static void test_result_static_and_router(void **state)
{
	struct dhcp_buf b;
	reply(&b, DHCPACK, "10.200.90.58");
	dhcp_buf_opt_u32(&b, DHCP_OPT_SUBNET_MASK, a4("255.255.255.128"));
	dhcp_buf_opt_u32(&b, DHCP_OPT_ROUTER, a4("10.200.90.1"));
	/* Class A, class C with host bits, class D (skipped). */
	const uint8_t st[] = {10,  5,	7, 1, 10, 200, 90, 3, 192, 168, 1,  9,
			      10, 200, 90, 4, 224, 0,	 0, 1, 10, 200, 90, 5};
	dhcp_buf_opt(&b, DHCP_OPT_STATIC_ROUTES, st, sizeof(st));
	dhcp_buf_opt(&b, DHCP_OPT_DOMAIN_NAME, "bad name", 8);
	dhcp_buf_finish(&b);

	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	struct cni_result *r = result_new("1.1.0");
	struct cni_err err = {0};
	assert_int_equal(dhcp_msg_result(&m, 0, r, &err), 0);
	char *s = encode(r);
	assert_string_equal(
		s, "{\"cniVersion\":\"1.1.0\","
		   "\"ips\":[{\"address\":\"10.200.90.58/25\",\"gateway\":\"10.200.90.1\"}],"
		   "\"routes\":[{\"dst\":\"10.0.0.0/8\",\"gw\":\"10.200.90.3\"},"
		   "{\"dst\":\"192.168.1.0/24\",\"gw\":\"10.200.90.4\"},"
		   "{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.200.90.1\"}],"
		   "\"dns\":{}}");
	free(s);
	result_free(r);
}

static void test_result_needs_mask(void **state)
{
	struct dhcp_buf b;
	reply(&b, DHCPACK, "10.200.90.59");
	dhcp_buf_finish(&b);
	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	struct cni_result *r = result_new("1.1.0");
	struct cni_err err = {0};
	assert_int_equal(dhcp_msg_result(&m, 0, r, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "Subnet Mask"));
	result_free(r);

	/* A mask that is not contiguous. */
	reply(&b, DHCPACK, "10.200.90.59");
	dhcp_buf_opt_u32(&b, DHCP_OPT_SUBNET_MASK, a4("255.0.255.0"));
	dhcp_buf_finish(&b);
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	r = result_new("1.1.0");
	err_clear(&err);
	assert_int_equal(dhcp_msg_result(&m, 0, r, &err), -1);
	result_free(r);
}

static void times_of(uint32_t lease, uint32_t t1, uint32_t t2, uint32_t *ol, uint32_t *o1,
		     uint32_t *o2)
{
	struct dhcp_buf b;
	reply(&b, DHCPACK, "10.0.0.2");
	if (lease)
		dhcp_buf_opt_u32(&b, DHCP_OPT_LEASE_TIME, htonl(lease));
	if (t1)
		dhcp_buf_opt_u32(&b, DHCP_OPT_T1, htonl(t1));
	if (t2)
		dhcp_buf_opt_u32(&b, DHCP_OPT_T2, htonl(t2));
	dhcp_buf_finish(&b);
	struct dhcp_msg m;
	assert_int_equal(dhcp_msg_parse(b.b, b.len, &m), 0);
	dhcp_msg_times(&m, ol, o1, o2);
}

static void test_times(void **state)
{
	uint32_t l, t1, t2;
	times_of(0, 0, 0, &l, &t1, &t2);
	assert_int_equal(l, 3600);
	assert_int_equal(t1, 1800);
	assert_int_equal(t2, 3150);
	times_of(120, 10, 15, &l, &t1, &t2);
	assert_int_equal(l, 120);
	assert_int_equal(t1, 10);
	assert_int_equal(t2, 15);
	times_of(120, 0, 300, &l, &t1, &t2); /* T2 past the lease */
	assert_int_equal(t1, 60);
	assert_int_equal(t2, 105);
	times_of(100, 90, 80, &l, &t1, &t2); /* T1 after T2 */
	assert_int_equal(t2, 80);
	assert_int_equal(t1, 50);
	times_of(UINT32_MAX, 0, 0, &l, &t1, &t2);
	assert_int_equal(l, UINT32_MAX);
	assert_int_equal(t1, UINT32_MAX);
}

static void test_option_names(void **state)
{
	assert_int_equal(dhcp_option_code("subnet-mask"), 1);
	assert_int_equal(dhcp_option_code("routers"), 3);
	assert_int_equal(dhcp_option_code("host-name"), 12);
	assert_int_equal(dhcp_option_code("dhcp-client-identifier"), 61);
	assert_int_equal(dhcp_option_code("classless-static-routes"), 121);
	assert_int_equal(dhcp_option_code("121"), 121);
	assert_int_equal(dhcp_option_code("1"), 1);
	assert_int_equal(dhcp_option_code("254"), 254);
	assert_int_equal(dhcp_option_code("0"), -1);
	assert_int_equal(dhcp_option_code("255"), -1);
	assert_int_equal(dhcp_option_code("256"), -1);
	assert_int_equal(dhcp_option_code("0012"), -1);
	assert_int_equal(dhcp_option_code("-1"), -1);
	assert_int_equal(dhcp_option_code("routerz"), -1);
	assert_int_equal(dhcp_option_code(""), -1);
	assert_int_equal(dhcp_option_code(NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discover_roundtrip),
		cmocka_unit_test(test_long_option_split_and_joined),
		cmocka_unit_test(test_overload),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_udp_framing),
		cmocka_unit_test(test_classless_routes),
		cmocka_unit_test(test_result_with_121),
		cmocka_unit_test(test_result_static_and_router),
		cmocka_unit_test(test_result_needs_mask),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_option_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
