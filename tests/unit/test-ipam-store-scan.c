/* ipam-store.c without a full scan: store_scan_owner (ADD's scan, and the
 * owner cache it keeps in the lock file), store_read and store_remove
 * (DEL from prevResult). Every answer is checked against store_scan, which
 * reads every file; the files a test writes behind the store's back stand
 * for the reference plugin and for crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipam-store.h"

static char tmpdir[64];

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cni-test-store.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Two at a time (link). */
static const char *path(const char *name)
{
	static char p[2][256];
	static int k;
	k ^= 1;
	snprintf(p[k], sizeof(p[k]), "%s/net/%s", tmpdir, name);
	return p[k];
}

/* Rewrite a file in place (same inode), as neither plugin ever does. */
static void put(const char *name, const char *data)
{
	FILE *f = fopen(path(name), "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
}

/* A new file under name (a new inode), as the reference writes one. */
static void put_new(const char *name, const char *data)
{
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s/net/.test-tmp", tmpdir);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
	assert_int_equal(rename(tmp, path(name)), 0);
}

static bool exists(const char *name)
{
	struct stat st;
	return lstat(path(name), &st) == 0;
}

static struct cni_ip ip(const char *s)
{
	struct cni_ip a;
	assert_int_equal(ip_parse(s, &a), 0);
	return a;
}

static struct cni_store *open_locked(void)
{
	struct cni_err err = {0};
	struct cni_store *s = store_open(tmpdir, "net", true, NULL, &err);
	if (!s)
		fail_msg("store_open: %s", err.msg);
	assert_int_equal(store_lock(s, &err), 0);
	return s;
}

/* A foreign change in the same clock tick as our last one could keep the
 * directory's ctime on kernels without fine-grained timestamps. */
static void next_tick(void)
{
	usleep(20000);
}

/* The lock file's lines. */
static size_t lock_lines(char *last, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	assert_int_equal(read_file(path("lock"), 1 << 20, &text, NULL), 0);
	const char *l = text;
	for (const char *p = text; *p; p++)
		if (*p == '\n') {
			if (last && (size_t)(p - l) < len) {
				memcpy(last, l, (size_t)(p - l));
				last[p - l] = 0;
			}
			l = p + 1;
			n++;
		}
	free(text);
	return n;
}

struct who {
	const char *id, *ifname;
};

/* store_scan_owner for each of who[] agrees with store_scan: the same
 * addresses and names in the same order, the same ownership; an entry it
 * did not read is someone else's. */
static void check_owner_scan(const struct who *who, size_t n)
{
	struct cni_err err = {0};
	for (size_t w = 0; w < n; w++) {
		struct cni_store *s = open_locked();
		struct cni_store_scan full, lean;
		assert_int_equal(store_scan(s, &full, &err), 0);
		assert_int_equal(store_scan_owner(s, who[w].id, who[w].ifname, &lean, &err), 0);
		assert_int_equal(full.n, lean.n);
		for (size_t i = 0; i < full.n; i++) {
			assert_string_equal(full.e[i].name, lean.e[i].name);
			assert_true(ip_eq(&full.e[i].ip, &lean.e[i].ip));
			bool owned = store_entry_owned(&full.e[i], who[w].id, who[w].ifname);
			if (owned != store_entry_owned(&lean.e[i], who[w].id, who[w].ifname))
				fail_msg("%s for %s/%s: scan says %d", full.e[i].name, who[w].id,
					 who[w].ifname, owned);
			if (lean.e[i].id) {
				assert_string_equal(lean.e[i].id, full.e[i].id);
				assert_true(lean.e[i].regular);
			}
		}
		store_scan_clear(&full);
		store_scan_clear(&lean);
		store_close(s);
	}
}

static const struct who everyone[] = {
    {"c1", "eth0"}, {"c1", "eth1"}, {"c2", "eth0"},	 {"legacy", "eth0"}, {"legacy", "eth7"},
    {"c9", "eth0"}, {"nobody", "eth0"}, {"", "eth0"}, {"c1\r\neth0", "x"},
};
#define N_EVERYONE (sizeof(everyone) / sizeof(*everyone))

static void test_owner_scan_foreign(void **state)
{
	struct cni_err err = {0};
	struct cni_store *s = open_locked();
	struct cni_ip a = ip("10.1.0.2"), b = ip("10.1.0.3"), c = ip("fd00::2");
	assert_int_equal(store_reserve(s, &a, "c1", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &b, "c1", "eth1", &err), 1);
	assert_int_equal(store_reserve(s, &c, "c2", "eth0", &err), 1);
	store_close(s);
	put_new("10.1.0.5", "");
	put_new("10.1.0.6", "\x01\x02garbage\xff");
	put_new("10.1.0.10", "legacy\n");
	put_new("10.1.0.11", "  c9\r\neth0\n");
	put_new("FD00::9", "c9\r\neth0");
	put_new("README", "c2\r\neth0");
	put_new(".cni-tmp-0123456789ab", "c2\r\neth0");
	assert_int_equal(mkdir(path("10.1.0.7"), 0700), 0);
	assert_int_equal(symlink("/etc/passwd", path("10.1.0.8")), 0);
	assert_int_equal(mkfifo(path("10.1.0.9"), 0600), 0);

	/* No cache yet, then a cache built from every file, then believed. */
	for (int round = 0; round < 3; round++)
		check_owner_scan(everyone, N_EVERYONE);
	assert_false(exists(".cni-tmp-0123456789ab"));
	char last[128] = "";
	assert_true(lock_lines(last, sizeof(last)) >= 1 + 7);
	assert_int_equal(last[0], '@');

	/* Without an id: the addresses only. */
	s = open_locked();
	struct cni_store_scan sc;
	assert_int_equal(store_scan_owner(s, NULL, NULL, &sc, &err), 0);
	assert_int_equal(sc.n, 11);
	for (size_t i = 0; i < sc.n; i++)
		assert_null(sc.e[i].id);
	assert_non_null(store_scan_find(&sc, &c));
	store_scan_clear(&sc);
	store_close(s);
}

static void test_owner_scan_changes(void **state)
{
	struct cni_err err = {0};
	struct cni_store *s = open_locked();
	struct cni_store_scan sc;
	struct cni_ip a = ip("10.1.0.2"), b = ip("10.1.0.3");
	assert_int_equal(store_scan_owner(s, "c1", "eth0", &sc, &err), 0);
	store_scan_clear(&sc);
	assert_int_equal(store_reserve(s, &a, "c1", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &b, "c2", "eth0", &err), 1);
	store_close(s);
	char last[128] = "";
	assert_int_equal(lock_lines(last, sizeof(last)), 4); /* header, 2 lines, stamp */
	assert_int_equal(last[0], '@');

	/* The cache is believed: a file rewritten in place (which neither
	 * plugin does, and which changes no directory) is not read again. */
	put("10.1.0.3", "c3\r\neth0");
	s = open_locked();
	assert_int_equal(store_scan_owner(s, "c3", "eth0", &sc, &err), 0);
	assert_null(store_scan_find(&sc, &b)->id);
	store_scan_clear(&sc);
	store_close(s);

	/* Any change to the directory by another (a reservation made or
	 * removed) makes the next scan read every file again. */
	next_tick();
	put_new("10.1.0.9", "c4\r\neth0");
	check_owner_scan((const struct who[]){{"c3", "eth0"}, {"c4", "eth0"}, {"c1", "eth0"}}, 3);

	/* A reservation removed and made again for another owner under the
	 * same name, by another, inode number reused or not. */
	next_tick();
	assert_int_equal(unlink(path("10.1.0.2")), 0);
	put_new("10.1.0.2", "c5\r\neth0");
	check_owner_scan((const struct who[]){{"c1", "eth0"}, {"c5", "eth0"}}, 2);

	/* ... and by us: the new line wins over the old one. */
	s = open_locked();
	assert_int_equal(store_scan_owner(s, "c6", "eth0", &sc, &err), 0);
	store_scan_clear(&sc);
	assert_int_equal(store_unreserve(s, &b, &err), 0);
	assert_int_equal(store_reserve(s, &b, "c6", "eth0", &err), 1);
	store_close(s);
	check_owner_scan((const struct who[]){{"c3", "eth0"}, {"c6", "eth0"}, {"c2", "eth0"}}, 3);

	/* Two names for one inode (a hard link made by hand): inode numbers
	 * are no identity there, the cache is not used. */
	assert_int_equal(link(path("10.1.0.9"), path("10.1.0.19")), 0);
	check_owner_scan((const struct who[]){{"c4", "eth0"}, {"c6", "eth0"}}, 2);
	assert_int_equal(unlink(path("10.1.0.19")), 0);

	/* A reservation made by store_reserve after a full scan gets no
	 * line, and the session no stamp: the next scan reads every file. */
	s = open_locked();
	assert_int_equal(store_scan(s, &sc, &err), 0);
	store_scan_clear(&sc);
	size_t before = lock_lines(NULL, 0);
	struct cni_ip d = ip("10.1.0.4");
	assert_int_equal(store_reserve(s, &d, "c7", "eth0", &err), 1);
	store_close(s);
	assert_int_equal(lock_lines(NULL, 0), before);
	check_owner_scan((const struct who[]){{"c7", "eth0"}, {"c6", "eth0"}}, 2);
}

static void test_owner_scan_lock_contents(void **state)
{
	struct cni_err err = {0};
	struct cni_store_scan sc;
	struct cni_store *s = open_locked();
	store_close(s);
	put_new("10.1.0.2", "c1\r\neth0");
	put_new("10.1.0.3", "c2\r\neth0");

	/* Whatever the lock file holds: a torn line, garbage, a stamp that
	 * looks right but is not the directory's. */
	const char *junk[] = {
	    "# cni host-local owner cache: <owner hash> <inode> <file>\n0123",
	    "\x01\x02\xff\n\n@ 12 13\nzzzzzzzzzzzzzzzz 12 10.1.0.2\n",
	    ("# cni host-local owner cache: <owner hash> <inode> <file>\n"
	     "0000000000000000 1 10.1.0.2\n@ 1 1\n"),
	};
	for (size_t j = 0; j < 3; j++) {
		put("lock", junk[j]);
		check_owner_scan((const struct who[]){{"c1", "eth0"}, {"c2", "eth0"}}, 2);
		char last[128] = "";
		assert_int_equal(lock_lines(last, sizeof(last)), 4);
		assert_int_equal(last[0], '@');
	}

	/* Dead lines are dropped once they outnumber the live ones. */
	s = open_locked();
	assert_int_equal(store_scan_owner(s, "x", "eth0", &sc, &err), 0);
	store_scan_clear(&sc);
	for (int i = 0; i < 100; i++) {
		struct cni_ip a = ip("10.2.0.0");
		a.a[3] = (uint8_t)i;
		assert_int_equal(store_reserve(s, &a, "many", "eth0", &err), 1);
	}
	store_close(s);
	assert_true(lock_lines(NULL, 0) >= 100);
	s = open_locked();
	assert_int_equal(store_release(s, "many", "eth0", &err), 100);
	store_close(s);
	s = open_locked();
	assert_int_equal(store_scan_owner(s, "x", "eth0", &sc, &err), 0);
	store_scan_clear(&sc);
	store_close(s);
	assert_int_equal(lock_lines(NULL, 0), 4);
	check_owner_scan((const struct who[]){{"c1", "eth0"}, {"many", "eth0"}}, 2);

	/* A lock file that cannot hold the cache: a FIFO. */
	assert_int_equal(unlink(path("lock")), 0);
	assert_int_equal(mkfifo(path("lock"), 0600), 0);
	check_owner_scan((const struct who[]){{"c1", "eth0"}, {"c2", "eth0"}}, 2);
}

/* store_release reads through the owner cache: same passes as before. */
static void test_release_cached(void **state)
{
	struct cni_err err = {0};
	struct cni_store_scan sc;
	struct cni_store *s = open_locked();
	store_close(s);
	put_new("10.1.0.2", "old"); /* before ifnames were recorded */
	put_new("10.1.0.3", "old\r\neth1");
	put_new("10.1.0.4", "other\r\neth0");
	s = open_locked();
	assert_int_equal(store_scan_owner(s, "x", "eth0", &sc, &err), 0); /* builds it */
	store_scan_clear(&sc);
	struct cni_ip a = ip("10.1.0.5"), b = ip("fd00::5");
	assert_int_equal(store_reserve(s, &a, "old", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &b, "old", "eth0", &err), 1);
	store_close(s);
	char last[128] = "";
	lock_lines(last, sizeof(last));
	assert_int_equal(last[0], '@');

	/* Exact records first, and then the id-only one is kept. */
	s = open_locked();
	assert_int_equal(store_release(s, "old", "eth0", &err), 2);
	store_close(s);
	assert_true(exists("10.1.0.2") && exists("10.1.0.3") && exists("10.1.0.4"));
	assert_false(exists("10.1.0.5") || exists("fd00::5"));
	lock_lines(last, sizeof(last));
	assert_int_equal(last[0], '@'); /* removals keep the cache true */
	s = open_locked();
	assert_int_equal(store_release(s, "old", "eth0", &err), 1);
	assert_false(exists("10.1.0.2"));
	assert_int_equal(store_release(s, "old", "eth1", &err), 1);
	assert_int_equal(store_release(s, "old", "eth1", &err), 0);
	assert_int_equal(store_release(s, "other", "eth1", &err), 0);
	assert_int_equal(store_release(s, "other", "eth0", &err), 1);
	store_close(s);
	assert_false(exists("10.1.0.3") || exists("10.1.0.4"));
}

static void test_read_remove(void **state)
{
	struct cni_err err = {0};
	struct cni_store *s = open_locked();
	struct cni_ip a = ip("10.1.0.2"), six = ip("fd00::2"), none = ip("10.1.0.99");
	assert_int_equal(store_reserve(s, &a, "c1", "eth0", &err), 1);
	assert_int_equal(store_reserve(s, &six, "c1", "eth1", &err), 1);
	put_new("10.1.0.3", "legacy");
	assert_int_equal(mkdir(path("10.1.0.4"), 0700), 0);
	assert_int_equal(symlink("10.1.0.2", path("10.1.0.5")), 0);

	struct cni_store_entry e;
	assert_int_equal(store_read(s, &a, &e), 1);
	assert_string_equal(e.name, "10.1.0.2");
	assert_true(e.regular);
	assert_true(store_entry_owned(&e, "c1", "eth0"));
	assert_false(store_entry_owned(&e, "c1", "eth1"));
	assert_int_equal(store_remove(s, &e, &err), 0);
	assert_false(exists("10.1.0.2"));
	assert_int_equal(store_remove(s, &e, &err), 0); /* already gone */
	store_entry_clear(&e);

	assert_int_equal(store_read(s, &six, &e), 1);
	assert_string_equal(e.name, "fd00::2");
	assert_string_equal(e.ifname, "eth1");
	store_entry_clear(&e);

	struct cni_ip l = ip("10.1.0.3");
	assert_int_equal(store_read(s, &l, &e), 1);
	assert_string_equal(e.id, "legacy");
	assert_null(e.ifname);
	store_entry_clear(&e);

	assert_int_equal(store_read(s, &none, &e), 0);
	assert_null(e.name);
	store_entry_clear(&e);

	/* A directory and a symlink are there, but nobody's, and stay. */
	const char *odd[] = {"10.1.0.4", "10.1.0.5"};
	for (size_t i = 0; i < 2; i++) {
		struct cni_ip x = ip(odd[i]);
		assert_int_equal(store_read(s, &x, &e), 1);
		assert_false(e.regular);
		assert_null(e.id);
		assert_int_equal(store_remove(s, &e, &err), 0);
		assert_true(exists(odd[i]));
		store_entry_clear(&e);
	}
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_owner_scan_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_scan_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_scan_lock_contents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_cached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_remove, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
