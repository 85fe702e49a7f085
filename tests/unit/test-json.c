/* json.c: parsing limits, typed getters and the paths they report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "json.h"

static struct cni_json *parse(const char *s)
{
	struct cni_err err = {0};
	struct cni_json *j = json_parse(s, strlen(s), &err);
	assert_non_null(j);
	return j;
}

static void test_roundtrip(void **state)
{
	const char *in = "{\"a\":1,\"b\":[true,false,null,\"x\\\"y\"],\"c\":{\"d\":1.5e3}}";
	struct cni_json *j = parse(in);
	char *out = json_dump(j, false);
	assert_string_equal(out, in);
	free(out);
	json_free(j);
}

static void test_decode_errors(void **state)
{
	struct cni_err err = {0};
	assert_null(json_parse("{\"a\":", 5, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
	assert_non_null(strstr(err.msg, "invalid JSON"));
	err_clear(&err);
	assert_null(json_parse("", 0, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
	err_clear(&err);
	assert_null(json_parse("{} x", 4, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
	/* An embedded NUL in a string is refused rather than truncated. */
	err_clear(&err);
	assert_null(json_parse("\"a\\u0000b\"", 10, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
}

static void test_depth_limit(void **state)
{
	size_t n = 100000;
	char *s = malloc(2 * n + 1);
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = 0;
	struct cni_err err = {0};
	assert_null(json_parse(s, 2 * n, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
	assert_non_null(strstr(err.msg, "deeper"));
	free(s);
	/* Just inside the limit parses. */
	n = JSON_MAX_DEPTH;
	s = malloc(2 * n + 1);
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = 0;
	struct cni_json *j = json_parse(s, 2 * n, &err);
	assert_non_null(j);
	json_free(j);
	free(s);
}

static void test_size_limit(void **state)
{
	struct cni_err err = {0};
	size_t n = JSON_MAX_BYTES + 1;
	char *s = malloc(n);
	memset(s, ' ', n);
	assert_null(json_parse(s, n, &err));
	assert_int_equal(err.code, CNI_ERR_DECODE);
	free(s);
}

static void test_paths(void **state)
{
	struct cni_json *j = parse("{\"ipam\":{\"ranges\":[[{\"subnet\":\"x\"},{\"subnet\":\"10.0.0.0/8\"}],"
				   "[{\"subnet\":\"bad\"}]]}}");
	const struct cni_json *ipam, *ranges;
	struct cni_err err = {0};
	assert_int_equal(json_get_obj(j, "ipam", 0, &ipam, &err), 1);
	assert_int_equal(json_get_arr(ipam, "ranges", 0, &ranges, &err), 1);
	struct cni_cidr c;
	const struct cni_json *set = json_at(ranges, 1);
	assert_int_equal(json_get_cidr(json_at(set, 0), "subnet", 0, &c, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_string_equal(err.msg, "ipam.ranges[1][0].subnet: not a CIDR: \"bad\"");
	err_clear(&err);
	assert_int_equal(json_get_cidr(json_at(json_at(ranges, 0), 1), "subnet", 0, &c, &err), 1);
	assert_int_equal(c.prefix, 8);
	assert_int_equal(json_get_str(ipam, "type", JSON_REQ, &(const char *){NULL}, &err), -1);
	assert_string_equal(err.msg, "ipam.type: missing (required string)");
	json_free(j);
}

static void test_getters(void **state)
{
	struct cni_json *j = parse("{\"s\":\"v\",\"e\":\"\",\"b\":true,\"i\":-5,\"u\":70000,\"f\":2.5,"
				   "\"n\":null,\"big\":1e3,\"l\":[\"a\",\"b\"],\"bad\":[1]}");
	struct cni_err err = {0};
	const char *s = "default";
	assert_int_equal(json_get_str(j, "missing", 0, &s, &err), 0);
	assert_string_equal(s, "default");
	assert_int_equal(json_get_str(j, "n", 0, &s, &err), 0); /* null = absent */
	assert_int_equal(json_get_str(j, "s", 0, &s, &err), 1);
	assert_string_equal(s, "v");
	assert_int_equal(json_get_str(j, "e", JSON_NONEMPTY, &s, &err), -1);
	assert_string_equal(err.msg, "e: must not be empty");
	err_clear(&err);
	bool b = false;
	assert_int_equal(json_get_bool(j, "b", 0, &b, &err), 1);
	assert_true(b);
	assert_int_equal(json_get_bool(j, "s", 0, &b, &err), -1);
	assert_string_equal(err.msg, "s: expected boolean, got string");
	err_clear(&err);
	int64_t i;
	assert_int_equal(json_get_int(j, "i", 0, -10, 10, &i, &err), 1);
	assert_int_equal(i, -5);
	assert_int_equal(json_get_int(j, "u", 0, 0, 65535, &i, &err), -1);
	assert_non_null(strstr(err.msg, "out of range"));
	err_clear(&err);
	assert_int_equal(json_get_int(j, "f", 0, 0, 10, &i, &err), -1);
	err_clear(&err);
	assert_int_equal(json_get_int(j, "big", 0, 0, 10000, &i, &err), 1);
	assert_int_equal(i, 1000);
	uint64_t u;
	assert_int_equal(json_get_uint(j, "i", 0, 100, &u, &err), -1);
	assert_non_null(strstr(err.msg, "negative"));
	err_clear(&err);
	double d;
	assert_int_equal(json_get_double(j, "f", 0, &d, &err), 1);
	assert_true(d == 2.5);
	const char **v = NULL;
	size_t n;
	assert_int_equal(json_get_strv(j, "l", 0, &v, &n, &err), 1);
	assert_int_equal(n, 2);
	assert_string_equal(v[1], "b");
	assert_null(v[2]);
	free(v);
	assert_int_equal(json_get_strv(j, "bad", 0, &v, &n, &err), -1);
	assert_string_equal(err.msg, "bad[0]: expected string");
	json_free(j);
}

static void test_build_and_edit(void **state)
{
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "a", json_new_int(1));
	json_set(o, "b", json_new_str("x"));
	json_set(o, "a", json_new_bool(false)); /* replace keeps position */
	struct cni_json *arr = json_set(o, "c", json_new(JSON_ARRAY));
	json_push(arr, json_new_uint(7));
	char *s = json_dump(o, false);
	assert_string_equal(s, "{\"a\":false,\"b\":\"x\",\"c\":[7]}");
	free(s);
	struct cni_json *b = json_take(o, "b");
	assert_string_equal(json_str(b), "x");
	assert_null(b->parent);
	json_free(b);
	/* Paths follow the new positions after a removal. */
	char p[64];
	assert_string_equal(json_path(json_at(json_get(o, "c"), 0), p, sizeof(p)), "c[0]");
	struct cni_json *c = json_clone(o);
	json_del(o, "c");
	s = json_dump(c, false);
	assert_string_equal(s, "{\"a\":false,\"c\":[7]}");
	free(s);
	json_free(c);
	json_free(o);
}

static void test_duplicate_keys_last_wins(void **state)
{
	struct cni_json *j = parse("{\"a\":1,\"a\":2}");
	int64_t v;
	struct cni_err err = {0};
	assert_int_equal(json_get_int(j, "a", 0, 0, 10, &v, &err), 1);
	assert_int_equal(v, 2);
	assert_true(json_has_duplicate_keys(j));
	json_free(j);

	/* Reported per object; the last value in the first one's place. */
	j = parse("{\"s\":{\"x\":\"1\",\"y\":\"2\",\"x\":\"3\"},\"t\":{\"x\":1},"
		  "\"u\":[{\"k\":1,\"k\":1}]}");
	assert_false(json_has_duplicate_keys(j));
	assert_true(json_has_duplicate_keys(json_get(j, "s")));
	assert_false(json_has_duplicate_keys(json_get(j, "t")));
	assert_true(json_has_duplicate_keys(json_at(json_get(j, "u"), 0)));
	assert_false(json_has_duplicate_keys(json_get(j, "u")));
	char *out = json_dump(json_get(j, "s"), false);
	assert_string_equal(out, "{\"x\":\"3\",\"y\":\"2\"}");
	free(out);
	/* A clone, or a tree built in code, has none. */
	struct cni_json *c = json_clone(json_get(j, "s"));
	assert_false(json_has_duplicate_keys(c));
	json_free(c);
	struct cni_json *b = json_new(JSON_OBJECT);
	json_set(b, "x", json_new_int(1));
	json_set(b, "x", json_new_int(2));
	assert_false(json_has_duplicate_keys(b));
	json_free(b);
	assert_false(json_has_duplicate_keys(NULL));
	json_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),   cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_depth_limit), cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_paths),	    cmocka_unit_test(test_getters),
		cmocka_unit_test(test_build_and_edit),
		cmocka_unit_test(test_duplicate_keys_last_wins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
