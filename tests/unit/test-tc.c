/* tc.c: the token bucket arithmetic against values worked out by hand,
 * then one case cross-checked against the reference bandwidth plugin
 * (/usr/lib/cni/bandwidth): it shapes a veth of a namespace pair made here
 * (tcfbw*, deleted on every exit path), and the kernel's copy of its tbf,
 * read with tc_qdisc_list() and with `tc -raw -j`, must equal what
 * tc_tbf_params() computes. Our own tc_qdisc_add_tbf() then installs the
 * same qdisc on a second veth, which must read back the same.
 *
 * The formulas (iproute2 tc_core.c, the reference's ifb_creator.go):
 *   tick_in_usec = t2us / us2t * clock_res / 1e6, from /proc/net/psched;
 *     every kernel since 2.6.31 says 1000, 64, 1000000: 15.625 ticks per
 *     microsecond, one tick being 64 ns (PSCHED_SHIFT 6);
 *   rate   = rate_bits / 8, burst = burst_bits / 8 (bytes, truncated);
 *   buffer = (uint32)((uint32)(burst * 1e6 / rate) * tick_in_usec);
 *   limit  = (uint32)(rate * 25000 / 1e6) + burst   (25 ms of latency). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include "json.h"
#include "link.h"
#include "netlink.h"
#include "netns.h"
#include "tc.h"

#define REF_BANDWIDTH "/usr/lib/cni/bandwidth"

/* Whether this kernel's scheduler clock is the usual 64 ns tick, which the
 * hand-made values below assume. */
static bool psched_usual(void)
{
	unsigned t2us = 0, us2t = 0, res = 0;
	FILE *f = fopen("/proc/net/psched", "re");
	if (!f)
		return false;
	int n = fscanf(f, "%x %x %x", &t2us, &us2t, &res);
	fclose(f);
	return n == 3 && t2us == 1000 && us2t == 64 && res == 1000000;
}

static void test_ticks(void **state)
{
	if (!psched_usual()) {
		print_message("# /proc/net/psched is not 1000/64/1000000: values differ\n");
		return;
	}
	assert_int_equal(tc_usec_to_ticks(1), 15);	      /* 15.625 */
	assert_int_equal(tc_usec_to_ticks(0.5), 7);	      /* 7.8125 */
	assert_int_equal(tc_usec_to_ticks(1000), 15625);      /* 1 ms */
	assert_int_equal(tc_usec_to_ticks(1e6), 15625000);    /* 1 s */
	assert_int_equal(tc_usec_to_ticks(1e12), UINT32_MAX); /* saturates */
}

static void tbf_ok(uint64_t rate_bits, uint64_t burst_bits, uint64_t rate, uint32_t buffer,
		   uint32_t limit)
{
	struct cni_tbf t = {0};
	const char *why = "unset";
	int r = tc_tbf_params(rate_bits, burst_bits, &t, &why);
	if (r < 0)
		print_error("# %llu/%llu: %s\n", (unsigned long long)rate_bits,
			    (unsigned long long)burst_bits, why);
	assert_int_equal(r, 0);
	assert_null(why);
	assert_int_equal(t.rate, rate);
	assert_int_equal(t.buffer, buffer);
	assert_int_equal(t.limit, limit);
}

static void test_tbf_by_hand(void **state)
{
	if (!psched_usual()) {
		print_message("# /proc/net/psched is not 1000/64/1000000: values differ\n");
		return;
	}
	/* 8 Mbit/s, burst 80000 bits: 1e6 B/s, 10000 B; 10000 B take
	 * 10000 us = 156250 ticks; 25 ms are 25000 B, plus the burst. */
	tbf_ok(8000000, 80000, 1000000, 156250, 35000);
	/* 1 Mbit/s, burst 1 Mbit: 125000 B/s and B: 1 s = 15625000 ticks;
	 * limit 3125 + 125000. */
	tbf_ok(1000000, 1000000, 125000, 15625000, 128125);
	/* 3 Mbit/s, burst 100000 bits: 375000 B/s, 12500 B; 12500 B take
	 * 33333.33 us, truncated to 33333 first, * 15.625 = 520828.125;
	 * limit 9375 + 12500. (The case checked against the reference.) */
	tbf_ok(3000000, 100000, 375000, 520828, 21875);
	/* Bits that are no whole byte are dropped: 1001 -> 125 B/s, 15 -> 1 B;
	 * 1 B takes 8000 us = 125000 ticks; 25 ms are 3.125 B -> 3, + 1. */
	tbf_ok(1001, 15, 125, 125000, 4);
	/* The longest bucket the kernel keeps (32-bit ns): 4294967 B at
	 * 1e6 B/s take 4294967 us = 67108859.375 ticks, 4294966976 ns. */
	tbf_ok(8000000, 8ull * 4294967, 1000000, 67108859, 25000 + 4294967);
	/* A burst sent in under a microsecond: a zero buffer, as the
	 * reference computes it (10 B at 10 GB/s: 0.001 us). */
	tbf_ok(80000000000ull, 80, 10000000000ull, 0, 250000000 + 10);
}

static void tbf_bad(uint64_t rate_bits, uint64_t burst_bits, const char *want)
{
	struct cni_tbf t = {0};
	const char *why = NULL;
	assert_int_equal(tc_tbf_params(rate_bits, burst_bits, &t, &why), -1);
	assert_non_null(why);
	if (!strstr(why, want))
		print_error("# %llu/%llu: %s\n", (unsigned long long)rate_bits,
			    (unsigned long long)burst_bits, why);
	assert_non_null(strstr(why, want));
}

static void test_tbf_limits(void **state)
{
	tbf_bad(7, 8000, "rate must be at least 8 bits");
	tbf_bad(0, 8000, "rate must be at least 8 bits");
	tbf_bad(8000, 7, "burst must be at least 8 bits");
	tbf_bad(8000, 8ull * UINT32_MAX, "burst cannot be more than 4GB");
	if (!psched_usual())
		return;
	/* One byte more than the longest bucket: 4294968 us =
	 * 67108875 ticks = 4294968000 ns > 2^32 - 1. */
	tbf_bad(8000000, 8ull * 4294968, "longer than 4.29 s");
	/* 1000 B at 125 B/s: 8 s. */
	tbf_bad(1000, 8000, "longer than 4.29 s");
	/* 200 GB/s: 25 ms are 5e9 B. */
	tbf_bad(1600000000000ull, 8000000, "25 ms of it exceed 4 GiB");
	/* 171798600000 B/s: 25 ms are 4294965000 B, + 10000 B > 2^32 - 1. */
	tbf_bad(8ull * 171798600000ull, 80000, "plus the burst exceed 4 GiB");
}

/* --- The cross-check. --- */

struct fx {
	char host[32], cont[32];
	bool made;
	struct cni_netns *ns;
	struct cni_nl *nl;
	char conf[64];
};

static int run(const char *fmt, ...) _printf_(1, 2);
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Command output as an owned string, or NULL. */
static char *output(const char *cmd)
{
	FILE *p = popen(cmd, "re");
	if (!p)
		return NULL;
	char *out = NULL;
	size_t len = 0;
	int r = read_all_fd(fileno(p), 1 << 20, &out, &len);
	int st = pclose(p);
	if (r < 0 || st != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static int bw_setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	*state = f;
	snprintf(f->host, sizeof(f->host), "tcfbwh%d", (int)getpid());
	snprintf(f->cont, sizeof(f->cont), "tcfbwc%d", (int)getpid());
	snprintf(f->conf, sizeof(f->conf), "/tmp/tcfbw-%d.json", (int)getpid());
	return 0;
}

static int bw_teardown(void **state)
{
	struct fx *f = *state;
	netlink_close(f->nl);
	netns_close(f->ns);
	if (f->made) {
		/* The veths go with their namespaces. */
		run("ip netns del %s 2>/dev/null", f->host);
		run("ip netns del %s 2>/dev/null", f->cont);
	}
	unlink(f->conf);
	free(f);
	return 0;
}

/* The root tbf of dev in f->host as the kernel keeps it. */
static void kernel_tbf(struct fx *f, const char *dev, struct cni_tbf *out)
{
	struct cni_err err = {0};
	struct cni_link l;
	assert_int_equal(link_get_by_name(f->nl, dev, &l, &err), 0);
	struct cni_qdisc *q = NULL;
	size_t n = 0;
	assert_int_equal(tc_qdisc_list(f->nl, l.ifindex, &q, &n, &err), 0);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		if (streq(q[i].kind, "tbf") && q[i].parent == TC_ROOT) {
			*out = q[i].tbf;
			found = true;
		}
	free(q);
	assert_true(found);
}

/* The same through tc: rate, the raw buffer (hex) and the limit. */
static void tc_tbf(struct fx *f, const char *dev, struct cni_tbf *out)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "ip netns exec %s tc -raw -j qdisc show dev %s root", f->host,
		 dev);
	_cleanup_free_ char *text = output(cmd);
	assert_non_null(text);
	struct cni_err err = {0};
	_cleanup_(json_freep) struct cni_json *j = json_parse(text, strlen(text), &err);
	assert_non_null(j);
	const struct cni_json *o = json_get(json_at(j, 0), "options");
	assert_string_equal(json_str(json_get(json_at(j, 0), "kind")), "tbf");
	uint64_t rate = 0, limit = 0;
	assert_int_equal(json_get_uint(o, "rate", JSON_REQ, UINT64_MAX, &rate, &err), 1);
	assert_int_equal(json_get_uint(o, "limit", JSON_REQ, UINT32_MAX, &limit, &err), 1);
	const char *raw = json_str(json_get(o, "burst_raw"));
	assert_non_null(raw);
	out->rate = rate;
	out->limit = (uint32_t)limit;
	out->buffer = (uint32_t)strtoul(raw, NULL, 16);
}

static void test_reference_bandwidth(void **state)
{
	struct fx *f = *state;
	if (access(REF_BANDWIDTH, X_OK) < 0) {
		print_message("# %s not installed: no cross-check\n", REF_BANDWIDTH);
		return;
	}
	if (run("ip netns add %s 2>/dev/null", f->host) != 0) {
		print_message("# cannot create namespaces (needs root): no cross-check\n");
		return;
	}
	f->made = true;
	assert_int_equal(run("ip netns add %s", f->cont), 0);
	assert_int_equal(run("ip -n %s link add tcfbw0 type veth peer name eth0 netns %s && "
			     "ip -n %s link add tcfbw1 type veth peer name eth1 netns %s && "
			     "ip -n %s link set tcfbw0 up && ip -n %s link set eth0 up",
			     f->host, f->cont, f->host, f->cont, f->host, f->cont),
			 0);

	/* Container ingress is shaped on the host end of its veth. */
	const uint64_t rate_bits = 3000000, burst_bits = 100000;
	FILE *c = fopen(f->conf, "we");
	assert_non_null(c);
	fprintf(c,
		"{\"cniVersion\":\"1.0.0\",\"name\":\"tcfbw\",\"type\":\"bandwidth\","
		"\"ingressRate\":%llu,\"ingressBurst\":%llu,\"prevResult\":{\"cniVersion\":"
		"\"1.0.0\",\"interfaces\":[{\"name\":\"tcfbw0\"},{\"name\":\"eth0\",\"sandbox\":"
		"\"/run/netns/%s\"}]}}",
		(unsigned long long)rate_bits, (unsigned long long)burst_bits, f->cont);
	fclose(c);
	int r = run("ip netns exec %s env CNI_COMMAND=ADD CNI_CONTAINERID=tcfbw "
		    "CNI_NETNS=/run/netns/%s CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni " REF_BANDWIDTH
		    " <%s >/dev/null",
		    f->host, f->cont, f->conf);
	assert_int_equal(r, 0);

	char path[64];
	snprintf(path, sizeof(path), "/run/netns/%s", f->host);
	struct cni_err err = {0};
	f->ns = netns_open(path, NULL, &err);
	assert_non_null(f->ns);
	f->nl = netlink_open(f->ns, &err);
	assert_non_null(f->nl);

	struct cni_tbf ours, theirs, shown;
	const char *why = NULL;
	assert_int_equal(tc_tbf_params(rate_bits, burst_bits, &ours, &why), 0);
	kernel_tbf(f, "tcfbw0", &theirs);
	tc_tbf(f, "tcfbw0", &shown);
	print_message("# reference: rate %llu buffer %u limit %u; ours: %llu %u %u\n",
		      (unsigned long long)theirs.rate, theirs.buffer, theirs.limit,
		      (unsigned long long)ours.rate, ours.buffer, ours.limit);
	assert_int_equal(theirs.rate, ours.rate);
	assert_int_equal(theirs.buffer, ours.buffer);
	assert_int_equal(theirs.limit, ours.limit);
	assert_int_equal(shown.rate, ours.rate);
	assert_int_equal(shown.buffer, ours.buffer);
	assert_int_equal(shown.limit, ours.limit);

	/* Ours on the other veth reads back the same. */
	struct cni_link l;
	assert_int_equal(link_get_by_name(f->nl, "tcfbw1", &l, &err), 0);
	assert_int_equal(tc_qdisc_add_tbf(f->nl, l.ifindex, TC_ROOT, TC_HANDLE(1, 0), &ours, &err),
			 0);
	kernel_tbf(f, "tcfbw1", &theirs);
	tc_tbf(f, "tcfbw1", &shown);
	assert_memory_equal(&theirs, &ours, sizeof(ours));
	assert_memory_equal(&shown, &ours, sizeof(ours));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ticks),
	    cmocka_unit_test(test_tbf_by_hand),
	    cmocka_unit_test(test_tbf_limits),
	    cmocka_unit_test_setup_teardown(test_reference_bandwidth, bw_setup, bw_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
