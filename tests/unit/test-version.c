/* version.c: comparison, support, and which commands each version allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plugin.h"

static void test_cmp(void **state)
{
	assert_int_equal(version_cmp("0.3.1", "0.4.0"), -1);
	assert_int_equal(version_cmp("1.0.0", "0.4.0"), 1);
	assert_int_equal(version_cmp("1.1.0", "1.1.0"), 0);
	assert_int_equal(version_cmp("0.10.0", "0.9.0"), 1);
	assert_int_equal(version_cmp("1.0", "1.0.0"), -2);
	assert_int_equal(version_cmp("1.0.0-rc1", "1.0.0"), -2);
	assert_int_equal(version_cmp("a.b.c", "1.0.0"), -2);
	assert_int_equal(version_cmp(NULL, "1.0.0"), -2);
}

static void test_supported(void **state)
{
	const char *ok[] = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
	for (size_t i = 0; i < 7; i++)
		assert_true(version_supported(ok[i]));
	assert_false(version_supported("0.5.0"));
	assert_false(version_supported("2.0.0"));
	assert_false(version_supported(""));
}

static void test_allows(void **state)
{
	struct cni_err err = {0};
	assert_int_equal(version_allows("0.3.1", CNI_CMD_CHECK, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INCOMPATIBLE_VERSION);
	err_clear(&err);
	assert_int_equal(version_allows("0.4.0", CNI_CMD_CHECK, &err), 0);
	assert_int_equal(version_allows("1.0.0", CNI_CMD_GC, &err), -1);
	err_clear(&err);
	assert_int_equal(version_allows("1.0.0", CNI_CMD_STATUS, &err), -1);
	err_clear(&err);
	assert_int_equal(version_allows("1.1.0", CNI_CMD_GC, &err), 0);
	assert_int_equal(version_allows("0.1.0", CNI_CMD_ADD, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmp),
		cmocka_unit_test(test_supported),
		cmocka_unit_test(test_allows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
