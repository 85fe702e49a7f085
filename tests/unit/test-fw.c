/* fw.c: the reference's chain-name hash (vectors from its own tests), our
 * nftables owner tags, backend names and selection rules, condition
 * screening and valid-attachments parsing. No kernel is touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define CNI_FW_INTERNAL
#include "fw.h"

static const char long_id[] = "icee6giejonei6sohng6ahngee7laquohquee9shiGo7fohferakah3Feiyoolu2pe"
			      "i7ciPhoh7shaoX6vai3vuf0ahfaeng8yohb9ceu0daez5hashee8ooYai5wa3y";

static void test_chain_name(void **state)
{
	char b[29];
	/* pkg/utils/utils_test.go and portmap_iptables_test.go */
	assert_string_equal(fw_chain_name("", "test", "1234", b), "CNI-2bbe0c48b91a7d1b8a6753a8");
	assert_string_equal(fw_chain_name("", "testalongnamethatdoesnotmakesense", "1234", b),
			    "CNI-374f33fe84ab0ed84dcdebe3");
	assert_string_equal(fw_chain_name("PREFIX-", "test", "1234", b),
			    "CNI-PREFIX-2bbe0c48b91a7d1b8");
	assert_string_equal(fw_chain_name("DN-", "testNetName", long_id, b),
			    "CNI-DN-bfd599665540dd91d5d28");
	assert_string_equal(fw_chain_name("DN-", "test", long_id, b),
			    "CNI-DN-67e92b96e692a494b6b85");
	assert_int_equal(strlen(fw_chain_name("SN-", "n", "", b)), 28);
}

static void test_tag(void **state)
{
	char a[FW_TAG_LEN + 1], b[FW_TAG_LEN + 1], n[17];
	struct fw_att x = {"net", "id1", "eth0"}, y = {"net", "id1", "eth1"};
	fw_tag(&x, a);
	fw_tag(&y, b);
	assert_int_equal(strlen(a), FW_TAG_LEN);
	assert_int_equal(a[16], '-');
	assert_string_not_equal(a, b);
	fw_tag_net("net", n);
	assert_memory_equal(a, n, 16);
	assert_memory_equal(b, n, 16);
	/* stable: hex(sha512("net")) starts with these 16 characters */
	char h[17];
	assert_string_equal(fw_hash("net", 16, h), n);
}

static void test_conditions_backend(void **state)
{
	const char *ipt[] = {"!", "-d", "192.0.2.0/24"}, *ipt2[] = {"-s", "1.2.3.4"};
	const char *nft[] = {"ip", "daddr", "!=", "192.0.2.0/24"}, *empty[] = {""};
	assert_int_equal(fw_conditions_backend(ipt, 3), FW_BACKEND_IPTABLES);
	assert_int_equal(fw_conditions_backend(ipt2, 2), FW_BACKEND_IPTABLES);
	assert_int_equal(fw_conditions_backend(nft, 4), FW_BACKEND_NFTABLES);
	assert_int_equal(fw_conditions_backend(empty, 1), FW_BACKEND_AUTO);
	assert_int_equal(fw_conditions_backend(NULL, 0), FW_BACKEND_AUTO);
}

static void test_check_conditions_chars(void **state)
{
	struct cni_err err = {0};
	const char *bad[] = {"ip", "daddr", "1.2.3.4;", "flush", "ruleset"};
	assert_int_equal(
	    fw_check_conditions(FW_BACKEND_NFTABLES, AF_INET, bad, 5, "conditionsV4", &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "conditionsV4[2]"));
	err_clear(&err);
	const char *nl[] = {"-d", "1.2.3.4\n-A"};
	assert_int_equal(
	    fw_check_conditions(FW_BACKEND_IPTABLES, AF_INET, nl, 2, "conditionsV6", &err), -1);
	assert_non_null(strstr(err.msg, "conditionsV6[1]"));
	err_clear(&err);
	assert_int_equal(fw_check_conditions(FW_BACKEND_IPTABLES, AF_INET, NULL, 0, "x", &err), 0);
}

static void test_parse_backend(void **state)
{
	struct cni_err err = {0};
	const char *txt = "{\"backend\":\"iptables\",\"b2\":\"firewalld\",\"b3\":\"pf\",\"b4\":1}";
	struct cni_json *j = json_parse(txt, strlen(txt), &err);
	assert_non_null(j);
	unsigned pm = FW_ALLOW(FW_BACKEND_NFTABLES) | FW_ALLOW(FW_BACKEND_IPTABLES);
	enum fw_backend b;
	assert_int_equal(fw_parse_backend(j, "backend", pm, &b, &err), 0);
	assert_int_equal(b, FW_BACKEND_IPTABLES);
	assert_int_equal(fw_parse_backend(j, "absent", pm, &b, &err), 0);
	assert_int_equal(b, FW_BACKEND_AUTO);
	assert_int_equal(fw_parse_backend(j, "b2", pm, &b, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "b2"));
	err_clear(&err);
	assert_int_equal(fw_parse_backend(j, "b2", pm | FW_ALLOW(FW_BACKEND_FIREWALLD), &b, &err),
			 0);
	assert_int_equal(b, FW_BACKEND_FIREWALLD);
	assert_int_equal(fw_parse_backend(j, "b3", pm, &b, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	err_clear(&err);
	assert_int_equal(fw_parse_backend(j, "b4", pm, &b, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_string_equal(fw_backend_name(FW_BACKEND_NFTABLES), "nftables");
	json_free(j);
}

static void test_attachments(void **state)
{
	struct cni_err err = {0};
	const char *txt =
	    "{\"cni.dev/valid-attachments\":[{\"containerID\":\"a\",\"ifname\":\"eth0\"},"
	    "{\"containerID\":\"b\",\"ifname\":\"net1\"}]}";
	struct cni_json *j = json_parse(txt, strlen(txt), &err);
	struct fw_att *v = NULL;
	size_t n = 0;
	assert_int_equal(fw_parse_attachments(j, "mynet", &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[1].id, "b");
	assert_string_equal(v[1].ifname, "net1");
	assert_string_equal(v[0].net, "mynet");
	free(v);
	json_free(j);
	txt = "{\"cni.dev/valid-attachments\":[{\"ifname\":\"eth0\"}]}";
	j = json_parse(txt, strlen(txt), &err);
	assert_int_equal(fw_parse_attachments(j, "mynet", &v, &n, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	json_free(j);
}

static void test_buf(void **state)
{
	struct strbuf b = {0};
	for (int i = 0; i < 1000; i++)
		strbuf_add(&b, "%d,", i);
	assert_int_equal(b.len, strlen(b.s));
	assert_memory_equal(b.s, "0,1,2,", 6);
	strbuf_free(&b);
	assert_null(b.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chain_name),
	    cmocka_unit_test(test_tag),
	    cmocka_unit_test(test_conditions_backend),
	    cmocka_unit_test(test_check_conditions_chars),
	    cmocka_unit_test(test_parse_backend),
	    cmocka_unit_test(test_attachments),
	    cmocka_unit_test(test_buf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
