/* base64.c: the RFC 4648 section 10 vectors both ways, every byte value,
 * and the input Go's StdEncoding (which wrote the caches we read) refuses:
 * missing or misplaced padding, other alphabets, white space. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include "base64.h"

static void test_rfc4648_vectors(void **state)
{
	static const char *const v[][2] = {
	    {"", ""},
	    {"f", "Zg=="},
	    {"fo", "Zm8="},
	    {"foo", "Zm9v"},
	    {"foob", "Zm9vYg=="},
	    {"fooba", "Zm9vYmE="},
	    {"foobar", "Zm9vYmFy"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		char *enc = base64_encode(v[i][0], strlen(v[i][0]));
		assert_string_equal(enc, v[i][1]);
		free(enc);
		char *dec = NULL;
		size_t len = 99;
		assert_int_equal(base64_decode(v[i][1], &dec, &len), 0);
		assert_int_equal(len, strlen(v[i][0]));
		assert_memory_equal(dec, v[i][0], len);
		assert_int_equal(dec[len], 0); /* terminated */
		free(dec);
	}
}

/* Every byte value, NUL and 0xff included, at each of the three offsets
 * within a group. */
static void test_binary_roundtrip(void **state)
{
	uint8_t buf[258];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(255 - i);
	for (size_t n = sizeof(buf) - 2; n <= sizeof(buf); n++) {
		char *enc = base64_encode(buf, n);
		assert_int_equal(strlen(enc), (n + 2) / 3 * 4);
		char *dec = NULL;
		size_t len = 0;
		assert_int_equal(base64_decode(enc, &dec, &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(dec, buf, n);
		free(dec);
		free(enc);
	}
	/* The alphabet's two last letters. */
	static const uint8_t hi[] = {0xfb, 0xff, 0xbf};
	char *enc = base64_encode(hi, sizeof(hi));
	assert_string_equal(enc, "+/+/");
	free(enc);
}

static void test_invalid(void **state)
{
	static const char *const bad[] = {
	    "Zg",	   /* padding required */
	    "Zg=",	   /* length not a multiple of 4 */
	    "Zm9vY",	   /* same */
	    "Z===",	   /* at most two '=' */
	    "====",	   /* only padding */
	    "=Zm9",	   /* padding first */
	    "Zg==Zm9v",	   /* padding in the middle */
	    "Z=g=",	   /* data after padding */
	    "Zm9-",	   /* URL alphabet */
	    "Zm9_",	   /* same */
	    "Zm9v\n",	   /* white space */
	    "Zm 9",	   /* same */
	    "Zm9vYmFy\r",  /* same */
	    "Zm9*",	   /* not base64 at all */
	    "Zm9\xc3\xa9", /* nor is UTF-8 */
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *dec = (char *)0x1;
		size_t len = 7;
		print_message("# bad[%zu]\n", i);
		assert_int_equal(base64_decode(bad[i], &dec, &len), -1);
		/* Nothing handed out on failure. */
		assert_ptr_equal(dec, (char *)0x1);
		assert_int_equal(len, 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc4648_vectors),
	    cmocka_unit_test(test_binary_roundtrip),
	    cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
