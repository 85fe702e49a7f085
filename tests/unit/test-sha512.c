/* sha512.c against FIPS 180-4 (and its example vectors), plus lengths
 * around the padding boundaries (111/112 bytes: one or two final blocks;
 * 128, 239, 240: whole and partial blocks), checked against an independent
 * implementation (Python's hashlib). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include "sha512.h"

static void hex(const uint8_t d[SHA512_DIGEST_SIZE], char out[2 * SHA512_DIGEST_SIZE + 1])
{
	for (int i = 0; i < SHA512_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check(const void *data, size_t len, const char *want)
{
	uint8_t d[SHA512_DIGEST_SIZE];
	char got[2 * SHA512_DIGEST_SIZE + 1];
	sha512_digest(data, len, d);
	hex(d, got);
	assert_string_equal(got, want);
}

static void check_str(const char *s, const char *want)
{
	check(s, strlen(s), want);
}

static void test_fips_examples(void **state)
{
	check_str("", "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
		      "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
	check_str("abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
			 "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
	/* 448 bits: padding still fits the single block. */
	check_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c335"
		  "96fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445");
	/* 896 bits: the length no longer fits, a second block follows. */
	check_str("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
		  "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909");
}

static void test_million_a(void **state)
{
	size_t n = 1000000;
	char *s = malloc(n);
	assert_non_null(s);
	memset(s, 'a', n);
	check(s, n,
	      "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
	      "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b");
	free(s);
}

static void test_block_boundaries(void **state)
{
	static const struct {
		size_t len;
		const char *want;
	} v[] = {
	    {111, "68cffa6d0d76f309c9ce0d35280939f8e25990c43b7b086ccdf709be35b07d4d"
		  "dba599541ff2b1c19d34ea49aeafb9659adb7ac3c0b078bb30a22d57fc6687ef"},
	    {112, "d0865c524d1dddf7c23b799c413f5adcd7caefd3f66a9b49750ec81066012c25"
		  "a8bcf94ddea6dc525691673097ca40e0101e897fc97218cfdb0704084e2bef4b"},
	    {127, "e0b6a20f1c0c88970a9340152cd5a1c1ecf3d3b8de55102741879438079473540"
		  "133b812706e5dbec322c8c9523b6fc8c6d16ee626e87ad5fe3d2916afedc369"},
	    {128, "99b16f17aa0b969a5b8f08f367719d516e330ccd2660b6f0688ec031dbc783de"
		  "50a1cd185a2568dba75070a2403d17d4741d163578515dfd2ff756ddfe4d47b1"},
	    {129, "a1556e29185778aa5991e34b8884c840d589f0fbb4b8ed590e51e9ac4eb03a00"
		  "8125000db2671f8fe7f485b59a77b518670078ecb41a54b4cd02a7f1d2ca4c6d"},
	    {239, "18ee83f30261c3c645d52aee6a209105b25bba39d33845ef48984cc238e4f216"
		  "61fb7bd7dd4336f71c40fe87d95e5115d6c7be52e0d3e7e7877d24500b5b58df"},
	    {240, "9d60ee60d29ec4fa0b9690c04c1c29413bbe3ed345639182d9d53dcc05926b77"
		  "b04f4fec1562fb85182954c96b7cbb5d5e4410251ff4f352d09a2da90419fb13"},
	    {256, "e49c208e41556e859d1a52d14784a061c2d5ae2c8690a5360e9f9344f60861c1"
		  "362a9ec05a9f08a4167b3da41bdd122a387413dd06976470e4beff5053f2ac71"},
	};
	uint8_t buf[256];
	/* Bytes of every value, not only text. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		print_message("# %zu bytes\n", v[i].len);
		check(buf, v[i].len, v[i].want);
	}
}

/* The input is read, never written, and need not be aligned. */
static void test_unaligned_const(void **state)
{
	static const char text[] = "xabc";
	check(text + 1, 3,
	      "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
	      "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fips_examples),
	    cmocka_unit_test(test_million_a),
	    cmocka_unit_test(test_block_boundaries),
	    cmocka_unit_test(test_unaligned_const),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
