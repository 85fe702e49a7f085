/* cache.c: the result cache in a temporary directory of its own. Round
 * trips, what a write leaves on disk (one file, mode 0600, no temp file,
 * never through a symlink), a file libcni 1.1.2 wrote
 * (tests/fixtures/runtime/), legacy and malformed files, listing, removal,
 * CNI_ARGS conversion and the GC lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include "cache.h"

#define FIXTURE "libcni-1.1.2-fixnet-fixture1-eth0.json"

struct fx {
	char dir[64];
	struct cni_err err;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	*state = f;
	strlcpy_(f->dir, "/tmp/cni-test-cache.XXXXXX", sizeof(f->dir));
	return mkdtemp(f->dir) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->dir[0] && strcmp(f->dir, "/tmp/cni-test-cache.XXXXXX"))
		nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

#define FX() struct fx *f = *state

static void put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* Write text as <dir>/results/<name>. */
static char *put_entry(struct fx *f, const char *name, const char *text)
{
	char *results = xasprintf("%s/results", f->dir);
	mkdir(results, 0700);
	char *path = xasprintf("%s/%s", results, name);
	put_file(path, text);
	free(results);
	return path;
}

/* Names in <dir>/results, space separated, sorted. */
static char *results_ls(struct fx *f)
{
	char *results = xasprintf("%s/results", f->dir);
	struct dirent **v = NULL;
	int n = scandir(results, &v, NULL, alphasort);
	free(results);
	char *s = xstrdup("");
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.') {
			char *t = xasprintf("%s%s%s", s, *s ? " " : "", v[i]->d_name);
			free(s);
			s = t;
		}
		free(v[i]);
	}
	free(v);
	return s;
}

static struct cni_json *parse(const char *s)
{
	struct cni_err err = {0};
	struct cni_json *j = json_parse(s, strlen(s), &err);
	assert_non_null(j);
	return j;
}

static struct cni_cache_entry *sample(void)
{
	struct cni_cache_entry *e = xcalloc(1, sizeof(*e));
	e->network = xstrdup("tcfnet");
	e->container_id = xstrdup("ctr1");
	e->ifname = xstrdup("eth0");
	e->netns = xstrdup("/run/netns/tcf1");
	e->config = xstrdup("{\"cniVersion\":\"1.0.0\",\"name\":\"tcfnet\",\"plugins\":[]}\n");
	e->config_len = strlen(e->config);
	e->cni_args = cache_args_json("IgnoreUnknown=1;K8S_POD_NAME=p1");
	e->cap_args = parse("{\"mac\":\"02:00:00:00:00:01\"}");
	e->result = parse("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.200.120.5/24\"}]}");
	return e;
}

static void test_roundtrip(void **state)
{
	FX();
	mode_t old = umask(0); /* the modes must not depend on the umask */
	struct cni_cache_entry *e = sample();
	int r = cache_write(f->dir, e, &f->err);
	umask(old);
	assert_int_equal(r, 0);

	/* One file where libcni puts it, nothing else: no temp file left. */
	char *ls = results_ls(f);
	assert_string_equal(ls, "tcfnet-ctr1-eth0");
	free(ls);
	char *path = cache_file_path(f->dir, "tcfnet", "ctr1", "eth0");
	char *want = xasprintf("%s/results/tcfnet-ctr1-eth0", f->dir);
	assert_string_equal(path, want);
	free(want);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	char *results = xasprintf("%s/results", f->dir);
	assert_int_equal(stat(results, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	free(results);

	struct cni_cache_entry *g = NULL;
	assert_int_equal(cache_read(f->dir, "tcfnet", "ctr1", "eth0", &g, &f->err), 1);
	assert_string_equal(g->network, "tcfnet");
	assert_string_equal(g->container_id, "ctr1");
	assert_string_equal(g->ifname, "eth0");
	assert_string_equal(g->netns, "/run/netns/tcf1");
	assert_string_equal(g->path, path);
	assert_int_equal(g->config_len, e->config_len);
	assert_memory_equal(g->config, e->config, e->config_len);
	char *a = cache_args_string(g->cni_args);
	assert_string_equal(a, "IgnoreUnknown=1;K8S_POD_NAME=p1");
	free(a);
	assert_string_equal(json_str(json_get(g->cap_args, "mac")), "02:00:00:00:00:01");
	assert_string_equal(json_str(json_get(g->result, "cniVersion")), "1.0.0");
	/* Written and read back, the same bytes. */
	char *d1 = cache_entry_dump(e), *d2 = cache_entry_dump(g);
	assert_string_equal(d1, d2);
	free(d1);
	free(d2);
	cache_entry_free(g);

	/* A second write replaces the entry, still leaving one file. */
	json_free(e->result);
	e->result = parse("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.200.120.6/24\"}]}");
	assert_int_equal(cache_write(f->dir, e, &f->err), 0);
	ls = results_ls(f);
	assert_string_equal(ls, "tcfnet-ctr1-eth0");
	free(ls);
	assert_int_equal(cache_read(f->dir, "tcfnet", "ctr1", "eth0", &g, &f->err), 1);
	const struct cni_json *ip = json_at(json_get(g->result, "ips"), 0);
	assert_string_equal(json_str(json_get(ip, "address")), "10.200.120.6/24");
	cache_entry_free(g);

	/* Remove; removing again is success; reading now finds nothing. */
	assert_int_equal(cache_remove(f->dir, "tcfnet", "ctr1", "eth0", &f->err), 0);
	assert_int_equal(cache_remove(f->dir, "tcfnet", "ctr1", "eth0", &f->err), 0);
	g = (struct cni_cache_entry *)0x1;
	assert_int_equal(cache_read(f->dir, "tcfnet", "ctr1", "eth0", &g, &f->err), 0);
	assert_null(g);
	assert_false(err_isset(&f->err));
	free(path);
	cache_entry_free(e);
}

/* Omitted as libcni omits them: netns, empty cniArgs and capabilityArgs. */
static void test_dump_omissions(void **state)
{
	struct cni_cache_entry e = {
	    .network = "n", .container_id = "c", .ifname = "eth0", .config = "{}", .config_len = 2};
	e.cap_args = json_new(JSON_OBJECT);
	char *s = cache_entry_dump(&e);
	assert_string_equal(s, "{\"kind\":\"cniCacheV1\",\"containerId\":\"c\",\"config\":\"e30=\","
			       "\"ifName\":\"eth0\",\"networkName\":\"n\"}");
	free(s);
	json_free(e.cap_args);
}

/* A symlink where the entry goes is never followed (nor replaced). */
static void test_symlink_refused(void **state)
{
	FX();
	char *target = xasprintf("%s/target", f->dir);
	put_file(target, "precious");
	char *results = xasprintf("%s/results", f->dir);
	assert_int_equal(mkdir(results, 0700), 0);
	char *path = cache_file_path(f->dir, "tcfnet", "ctr1", "eth0");
	assert_int_equal(symlink(target, path), 0);

	struct cni_cache_entry *e = sample();
	assert_int_equal(cache_write(f->dir, e, &f->err), -1);
	assert_int_equal(f->err.code, CNI_ERR_IO);
	assert_non_null(strstr(f->err.msg, path));
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(read_file(target, 1024, &text, &len), 0);
	assert_string_equal(text, "precious");
	free(text);
	char *ls = results_ls(f);
	assert_string_equal(ls, "tcfnet-ctr1-eth0"); /* the link, no temp file */
	free(ls);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* No results directory can be made: an I/O error, not a crash. */
	unlink(path);
	rmdir(results);
	put_file(results, "not a directory");
	err_clear(&f->err);
	assert_int_equal(cache_write(f->dir, e, &f->err), -1);
	assert_int_equal(f->err.code, CNI_ERR_IO);
	cache_entry_free(e);
	free(path);
	free(results);
	free(target);
}

static void test_libcni_fixture(void **state)
{
	FX();
	const char *tests = getenv("CNI_TESTS");
	if (!tests) {
		print_message("# CNI_TESTS not set: run through meson\n");
		return;
	}
	char *src = xasprintf("%s/fixtures/runtime/" FIXTURE, tests);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(read_file(src, 1 << 20, &text, &len), 0);
	free(src);
	free(put_entry(f, "fixnet-fixture1-eth0", text));

	struct cni_cache_entry *e = NULL;
	assert_int_equal(cache_read(f->dir, "fixnet", "fixture1", "eth0", &e, &f->err), 1);
	assert_string_equal(e->network, "fixnet");
	assert_string_equal(e->container_id, "fixture1");
	assert_string_equal(e->ifname, "eth0");
	assert_null(e->netns); /* libcni before 1.2 did not record it */
	const char *conf = "{\"cniVersion\":\"1.0.0\",\"name\":\"fixnet\",\"plugins\":[{\"type\":"
			   "\"loopback\"}]}\n";
	assert_int_equal(e->config_len, strlen(conf));
	assert_string_equal(e->config, conf);
	char *args = cache_args_string(e->cni_args);
	assert_string_equal(args, "IgnoreUnknown=1;K8S_POD_NAME=fixpod");
	free(args);
	const struct cni_json *pm = json_at(json_get(e->cap_args, "portMappings"), 0);
	int64_t port = 0;
	assert_int_equal(json_get_int(pm, "hostPort", 0, 0, 65535, &port, &f->err), 1);
	assert_int_equal(port, 8080);
	assert_string_equal(json_str(json_get(e->result, "cniVersion")), "1.0.0");
	assert_int_equal(json_len(json_get(e->result, "ips")), 2);

	/* Dumped again, the very bytes libcni wrote. */
	char *dump = cache_entry_dump(e);
	assert_string_equal(dump, text);
	free(dump);
	cache_entry_free(e);
	free(text);
}

/* libcni before cniCacheV1 kept the bare result. */
static void test_legacy_result(void **state)
{
	FX();
	free(put_entry(f, "old-c9-eth1",
		       "{\"cniVersion\":\"0.4.0\",\"ips\":[{\"version\":\"4\","
		       "\"address\":\"10.200.120.9/24\"}]}"));
	struct cni_cache_entry *e = NULL;
	assert_int_equal(cache_read(f->dir, "old", "c9", "eth1", &e, &f->err), 1);
	assert_string_equal(e->network, "old");
	assert_string_equal(e->container_id, "c9");
	assert_string_equal(e->ifname, "eth1");
	assert_null(e->config);
	assert_string_equal(json_str(json_get(e->result, "cniVersion")), "0.4.0");
	cache_entry_free(e);
}

static void test_malformed(void **state)
{
	FX();
	static const struct {
		const char *text, *msg;
	} v[] = {
	    {"", "empty JSON input"},
	    {"{\"kind\":\"cniCacheV1\",", "invalid JSON"},
	    {"[1,2]", "not a JSON object"},
	    {"{\"kind\":\"cniCacheV2\"}", "unknown kind \"cniCacheV2\""},
	    {"{\"kind\":7}", "unknown kind \"\""},
	    {"{\"containerId\":\"x\"}", "unknown kind \"\""}, /* neither kind nor result */
	    {"{\"kind\":\"cniCacheV1\",\"config\":\"e30\"}", "config is not base64"},
	    {"{\"kind\":\"cniCacheV1\",\"config\":\"e3 0=\"}", "config is not base64"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		print_message("# case %zu\n", i);
		char *path = put_entry(f, "bad-c-eth0", v[i].text);
		struct cni_cache_entry *e = (struct cni_cache_entry *)0x1;
		err_clear(&f->err);
		assert_int_equal(cache_read_file(path, &e, &f->err), -1);
		assert_int_equal(f->err.code, CNI_ERR_DECODE);
		/* The file is named, and what is wrong with it. */
		char all[sizeof(f->err.msg) + sizeof(f->err.details) + 1];
		snprintf(all, sizeof(all), "%s %s", f->err.msg, f->err.details);
		assert_non_null(strstr(all, path));
		assert_non_null(strstr(all, v[i].msg));
		free(path);
	}
	/* A directory in its place: an I/O error naming it. */
	char *path = cache_file_path(f->dir, "dir", "c", "eth0");
	assert_int_equal(mkdir(path, 0700), 0);
	struct cni_cache_entry *e = NULL;
	err_clear(&f->err);
	assert_int_equal(cache_read_file(path, &e, &f->err), -1);
	assert_int_equal(f->err.code, CNI_ERR_IO);
	assert_non_null(strstr(f->err.msg, path));
	rmdir(path);
	free(path);
	/* Missing: 0, no error. */
	err_clear(&f->err);
	assert_int_equal(cache_read(f->dir, "none", "c", "eth0", &e, &f->err), 0);
	assert_false(err_isset(&f->err));
}

static void test_list(void **state)
{
	FX();
	struct cni_cache_entry **v = NULL;
	size_t n = 9;
	/* No results directory yet: empty. */
	assert_int_equal(cache_list(f->dir, NULL, &v, &n, &f->err), 0);
	assert_int_equal(n, 0);
	cache_list_free(v, n);

	struct cni_cache_entry *e = sample();
	assert_int_equal(cache_write(f->dir, e, &f->err), 0);
	free(e->container_id);
	e->container_id = xstrdup("ctr0");
	assert_int_equal(cache_write(f->dir, e, &f->err), 0);
	free(e->network);
	e->network = xstrdup("tcfother");
	assert_int_equal(cache_write(f->dir, e, &f->err), 0);
	cache_entry_free(e);
	/* What is skipped: garbage, a bare legacy result (it does not name
	 * its attachment), a temp file of an interrupted write, a directory. */
	free(put_entry(f, "tcfnet-garbage-eth0", "not json"));
	free(put_entry(f, "tcfnet-old-eth0", "{\"cniVersion\":\"0.4.0\"}"));
	free(put_entry(f, "tcfnet-ctr9-eth0.tmp1234abcd", "{\"kind\":\"cniCacheV1\"}"));
	char *sub = xasprintf("%s/results/tcfnet-sub-eth0", f->dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	free(sub);

	assert_int_equal(cache_list(f->dir, "tcfnet", &v, &n, &f->err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0]->container_id, "ctr0"); /* file name order */
	assert_string_equal(v[1]->container_id, "ctr1");
	cache_list_free(v, n);
	assert_int_equal(cache_list(f->dir, NULL, &v, &n, &f->err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[2]->network, "tcfother");
	cache_list_free(v, n);
}

static void test_args(void **state)
{
	assert_null(cache_args_json(NULL));
	assert_null(cache_args_json(""));
	struct cni_json *a = cache_args_json("A=1;B=x=y;;C;D=");
	char *s = json_dump(a, false);
	/* Split at the first '=', empty pairs dropped, a bare key is "". */
	assert_string_equal(s, "[[\"A\",\"1\"],[\"B\",\"x=y\"],[\"C\",\"\"],[\"D\",\"\"]]");
	free(s);
	s = cache_args_string(a);
	assert_string_equal(s, "A=1;B=x=y;C=;D=");
	free(s);
	json_free(a);
	assert_null(cache_args_string(NULL));
	struct cni_json *empty = json_new(JSON_ARRAY);
	assert_null(cache_args_string(empty));
	json_free(empty);
}

static void test_lock(void **state)
{
	FX();
	int sh = cache_lock(f->dir, "tcfnet", false, &f->err);
	assert_true(sh >= 0);
	char *path = xasprintf("%s/locks/tcfnet", f->dir);
	int other = open(path, O_RDWR | O_CLOEXEC);
	assert_true(other >= 0);
	/* Shared with another ADD, exclusive of GC. */
	assert_int_equal(flock(other, LOCK_SH | LOCK_NB), 0);
	assert_int_equal(flock(other, LOCK_UN), 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	close(sh);
	int ex = cache_lock(f->dir, "tcfnet", true, &f->err);
	assert_true(ex >= 0);
	assert_int_equal(flock(other, LOCK_SH | LOCK_NB), -1);
	close(ex);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
	close(other);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
	    cmocka_unit_test(test_dump_omissions),
	    cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_libcni_fixture, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_legacy_result, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_list, setup, teardown),
	    cmocka_unit_test(test_args),
	    cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
