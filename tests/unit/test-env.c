/* env.c: CNI_* variables, CNI_ARGS and name validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plugin.h"

static void clear_env(void)
{
	const char *v[] = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS",
			   "CNI_PATH"};
	for (size_t i = 0; i < 6; i++)
		unsetenv(v[i]);
}

static void test_args_parse(void **state)
{
	struct cni_args a = {0};
	struct cni_err err = {0};
	assert_int_equal(args_parse("IP=10.0.0.1;K8S_POD_NAME=x;IgnoreUnknown=1", &a, &err), 0);
	assert_int_equal(a.n, 3);
	assert_string_equal(args_get(&a, "IP"), "10.0.0.1");
	assert_null(args_get(&a, "nope"));
	const char *known[] = {"IP", NULL};
	assert_int_equal(args_check_known(&a, known, &err), 0); /* IgnoreUnknown */
	args_free(&a);

	assert_int_equal(args_parse("IP=1;FOO=2", &a, &err), 0);
	assert_int_equal(args_check_known(&a, known, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "FOO"));
	args_free(&a);

	const char *bad[] = {"noequals", "a=b=c", "a=1;;b=2", "a=1;"};
	for (size_t i = 0; i < 4; i++) {
		err_clear(&err);
		assert_int_equal(args_parse(bad[i], &a, &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_ENV);
		assert_non_null(strstr(err.msg, "CNI_ARGS"));
		assert_int_equal(a.n, 0);
	}
	/* An empty value is allowed, as in the reference. */
	assert_int_equal(args_parse("A=", &a, &err), 0);
	assert_string_equal(args_get(&a, "A"), "");
	args_free(&a);
}

static void test_ifname(void **state)
{
	struct cni_err err = {0};
	assert_int_equal(env_check_ifname("eth0", "CNI_IFNAME", &err), 0);
	assert_int_equal(env_check_ifname("123456789012345", "CNI_IFNAME", &err), 0);
	const char *bad[] = {"", "1234567890123456", ".", "..", "a/b", "a:b", "a b", "a\tb"};
	for (size_t i = 0; i < 8; i++) {
		err_clear(&err);
		assert_int_equal(env_check_ifname(bad[i], "CNI_IFNAME", &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_ENV);
		assert_non_null(strstr(err.msg, "CNI_IFNAME"));
	}
}

static void test_container_id(void **state)
{
	struct cni_err err = {0};
	assert_int_equal(env_check_container_id("abc-1_2.3", "CNI_CONTAINERID", &err), 0);
	const char *bad[] = {"", "-abc", ".x", "a/b", "a b", "a;b", "../x"};
	for (size_t i = 0; i < 7; i++) {
		err_clear(&err);
		assert_int_equal(env_check_container_id(bad[i], "CNI_CONTAINERID", &err), -1);
		assert_int_equal(err.code, CNI_ERR_INVALID_ENV);
	}
	err_clear(&err);
	assert_int_equal(env_check_netname("../etc", "name", &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
}

static void test_env_required(void **state)
{
	struct cni_req req = {0};
	struct cni_err err = {0};
	clear_env();
	assert_int_equal(env_load(&req, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_ENV);
	assert_non_null(strstr(err.msg, "CNI_COMMAND"));

	setenv("CNI_COMMAND", "ADD", 1);
	setenv("CNI_IFNAME", "eth0", 1);
	err_clear(&err);
	assert_int_equal(env_load(&req, &err), -1);
	assert_string_equal(err.msg, "required env variables [CNI_CONTAINERID,CNI_NETNS] missing");

	/* DEL does not need CNI_NETNS. */
	setenv("CNI_COMMAND", "DEL", 1);
	setenv("CNI_CONTAINERID", "c1", 1);
	err_clear(&err);
	assert_int_equal(env_load(&req, &err), 0);
	assert_int_equal(req.cmd, CNI_CMD_DEL);
	args_free(&req.args);

	/* STATUS needs nothing; GC needs CNI_PATH. */
	clear_env();
	setenv("CNI_COMMAND", "STATUS", 1);
	memset(&req, 0, sizeof(req));
	assert_int_equal(env_load(&req, &err), 0);
	setenv("CNI_COMMAND", "GC", 1);
	assert_int_equal(env_load(&req, &err), -1);
	assert_non_null(strstr(err.msg, "CNI_PATH"));

	clear_env();
	setenv("CNI_COMMAND", "add", 1);
	err_clear(&err);
	assert_int_equal(env_load(&req, &err), -1);
	assert_non_null(strstr(err.msg, "unknown command"));
	clear_env();
}

static void test_err_first_wins(void **state)
{
	struct cni_err err = {0};
	err_set(&err, CNI_ERR_INVALID_CONFIG, "inner");
	err_set(&err, CNI_ERR_INTERNAL, "outer");
	err_append(&err, "context %d", 1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_string_equal(err.msg, "inner");
	assert_string_equal(err.details, "context 1");
	err_append(&err, "more");
	assert_string_equal(err.details, "context 1; more");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args_parse),   cmocka_unit_test(test_ifname),
		cmocka_unit_test(test_container_id), cmocka_unit_test(test_env_required),
		cmocka_unit_test(test_err_first_wins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
