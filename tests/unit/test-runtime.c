/* runtime.c: configuration lists parsed from bytes and files (SPEC.md
 * section 1), the request configuration each plugin gets (section 3,
 * "Deriving request configuration"), and the order of a chain and its
 * rollback. The plugins are three applets defined here, in a registry of
 * their own, which record what they are given; nothing touches the host
 * but a temporary directory (configuration files, the result cache). */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cmocka.h> /* after setjmp.h, stdarg.h, stddef.h */

#include "plugin.h"
#include "runtime.h"

/* --- The fake plugins. --- */

struct call {
	char *who;  /* "tcfa ADD" */
	char *conf; /* the request configuration, serialized */
};
static struct call calls[16];
static size_t n_calls;

static void forget_calls(void)
{
	for (size_t i = 0; i < n_calls; i++) {
		free(calls[i].who);
		free(calls[i].conf);
	}
	n_calls = 0;
}

static void record(struct cni_req *req)
{
	assert_true(n_calls < ARRAY_SIZE(calls));
	calls[n_calls].who = xasprintf("%s %s", req->type, cmd_name(req->cmd));
	calls[n_calls].conf = json_dump(req->conf, false);
	n_calls++;
}

/* Adds its interface to what came before. */
static int rec_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	record(req);
	result_add_iface(res, req->type, NULL, req->netns_path);
	return 0;
}

static int rec_other(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	record(req);
	return 0;
}

static int fail_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	record(req);
	return err_set(err, CNI_ERR_TRY_AGAIN, "tcffail refuses ADD");
}

static const struct cni_applet tcfa = {
    .name = "tcfa", .add = rec_add, .del = rec_other, .check = rec_other};
static const struct cni_applet tcfb = {
    .name = "tcfb", .add = rec_add, .del = rec_other, .check = rec_other};
static const struct cni_applet tcffail = {.name = "tcffail", .add = fail_add, .del = rec_other};

/* The registry: this test's applets instead of the real ones. */
const struct cni_applet *const cni_applets[] = {&tcfa, &tcfb, &tcffail};
const size_t cni_applets_count = ARRAY_SIZE(cni_applets);

/* --- Helpers. --- */

static char tmpdir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int make_tmp(void **state)
{
	strlcpy_(tmpdir, "/tmp/cni-test-runtime.XXXXXX", sizeof(tmpdir));
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
	forget_calls();
	if (strcmp(tmpdir, "/tmp/cni-test-runtime.XXXXXX"))
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void put_file(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(path);
}

static struct cni_netconf *parse(const char *text, unsigned flags)
{
	struct cni_err err = {0};
	struct cni_netconf *nc = runtime_parse(text, strlen(text), NULL, flags, &err);
	if (!nc)
		print_error("# %s: %s\n", err.msg, err.details);
	assert_non_null(nc);
	return nc;
}

static char *dump(const struct cni_json *j)
{
	return json_dump(j, false);
}

#define assert_json(j, want)                                                                       \
	do {                                                                                       \
		char *_s = dump(j);                                                                \
		assert_string_equal(_s, want);                                                     \
		free(_s);                                                                          \
	} while (0)

/* --- Parsing. --- */

static void test_version_selection(void **state)
{
	struct cni_netconf *nc = parse("{\"cniVersion\":\"1.0.0\",\"cniVersions\":[\"0.4.0\","
				       "\"1.1.0\",\"9.9.9\"],\"name\":\"n\",\"plugins\":[{\"type\":"
				       "\"tcfa\"}]}",
				       0);
	/* The highest supported of both; cniVersions is dropped, the choice
	 * made. */
	assert_string_equal(nc->version, "1.1.0");
	assert_json(nc->conf, "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"plugins\":[{\"type\":"
			      "\"tcfa\"}]}");
	runtime_netconf_free(nc);

	/* cniVersion above the list's entries wins too. */
	nc = parse("{\"cniVersion\":\"1.0.0\",\"cniVersions\":[\"0.3.1\"],\"name\":\"n\","
		   "\"plugins\":[{\"type\":\"tcfa\"}]}",
		   0);
	assert_string_equal(nc->version, "1.0.0");
	runtime_netconf_free(nc);

	/* No version at all: 0.1.0, as plugins read such a config. */
	nc = parse("{\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\"}]}", 0);
	assert_string_equal(nc->version, "0.1.0");
	runtime_netconf_free(nc);
}

static void test_single_conf_wrapped(void **state)
{
	const char *conf = "{\"cniVersion\":\"0.4.0\",\"name\":\"single\",\"type\":\"tcfa\","
			   "\"bridge\":\"tcf0\",\"disableCheck\":true}";
	struct cni_netconf *nc = parse(conf, 0);
	assert_string_equal(nc->name, "single");
	assert_string_equal(nc->version, "0.4.0");
	assert_int_equal(nc->n_plugins, 1);
	/* The plugin is the whole configuration; list-only keys such as
	 * disableCheck mean nothing in a single configuration. */
	assert_json(json_at(nc->plugins, 0), conf);
	assert_false(nc->disable_check);
	assert_json(nc->conf, "{\"cniVersion\":\"0.4.0\",\"name\":\"single\",\"plugins\":[{"
			      "\"cniVersion\":\"0.4.0\",\"name\":\"single\",\"type\":\"tcfa\","
			      "\"bridge\":\"tcf0\",\"disableCheck\":true}]}");
	runtime_netconf_free(nc);

	/* As a list (a .conflist), it lacks its plugins. */
	struct cni_err err = {0};
	assert_null(runtime_parse(conf, strlen(conf), NULL, RUNTIME_LOAD_LIST, &err));
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "plugins: missing"));
}

static void test_list_keys(void **state)
{
	struct cni_netconf *nc =
	    parse("{\"cniVersion\":\"1.1.0\",\"name\":\"x\",\"name\":\"lst\",\"disableCheck\":"
		  "\"TRUE\",\"disableGC\":false,\"extra\":{\"k\":1},\"plugins\":[{\"type\":"
		  "\"tcfa\"},{\"type\":\"tcfa\",\"n\":2}]}",
		  0);
	/* A duplicate key: the last one, as Go's decoder. */
	assert_string_equal(nc->name, "lst");
	/* libcni's flags take strings in any case. */
	assert_true(nc->disable_check);
	assert_false(nc->disable_gc);
	assert_false(nc->load_only_inlined);
	/* Two plugins of one type are two plugins (types are no names). */
	assert_int_equal(nc->n_plugins, 2);
	/* Unknown list keys are kept, the version and name lead. */
	assert_json(nc->conf, "{\"cniVersion\":\"1.1.0\",\"name\":\"lst\",\"disableCheck\":"
			      "\"TRUE\",\"disableGC\":false,\"extra\":{\"k\":1},\"plugins\":[{"
			      "\"type\":\"tcfa\"},{\"type\":\"tcfa\",\"n\":2}]}");
	runtime_netconf_free(nc);
}

static void test_bad_lists(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg;
		unsigned flags;
	} v[] = {
	    {"{\"name\":", CNI_ERR_DECODE, "invalid JSON"},
	    {"[]", CNI_ERR_DECODE, "expected a JSON object"},
	    {"{\"plugins\":[{\"type\":\"tcfa\"}]}", CNI_ERR_INVALID_CONFIG, "missing network name"},
	    {"{\"name\":\"a/b\",\"plugins\":[{\"type\":\"tcfa\"}]}", CNI_ERR_INVALID_CONFIG,
	     "invalid network name"},
	    {"{\"name\":5,\"plugins\":[]}", CNI_ERR_INVALID_CONFIG, "name: expected string"},
	    {"{\"cniVersion\":\"9.9.9\",\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\"}]}",
	     CNI_ERR_INCOMPATIBLE_VERSION, "no supported cniVersion in [9.9.9]"},
	    {"{\"cniVersion\":\"1.x\",\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\"}]}",
	     CNI_ERR_INCOMPATIBLE_VERSION, "malformed version"},
	    {"{\"cniVersions\":[1],\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\"}]}",
	     CNI_ERR_INVALID_CONFIG, "cniVersions[0]: expected a version string"},
	    {"{\"name\":\"n\",\"plugins\":{}}", CNI_ERR_INVALID_CONFIG, "plugins: expected a list"},
	    {"{\"name\":\"n\",\"plugins\":[]}", CNI_ERR_INVALID_CONFIG, "plugins: empty"},
	    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\"},7]}", CNI_ERR_INVALID_CONFIG,
	     "plugins[1]: expected a plugin object"},
	    {"{\"name\":\"n\",\"plugins\":[{\"typo\":\"tcfa\"}]}", CNI_ERR_INVALID_CONFIG,
	     "plugins[0]: missing \"type\""},
	    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"../bin/sh\"}]}", CNI_ERR_INVALID_CONFIG,
	     "plugins[0].type: invalid plugin type"},
	    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\",\"ipam\":{\"type\":\"..\"}}]}",
	     CNI_ERR_INVALID_CONFIG, "plugins[0].ipam.type: invalid plugin type"},
	    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\",\"capabilities\":[]}]}",
	     CNI_ERR_INVALID_CONFIG, "capabilities: expected object"},
	    {"{\"name\":\"n\",\"plugins\":[{\"type\":\"tcfa\",\"capabilities\":{\"mac\":1}}]}",
	     CNI_ERR_INVALID_CONFIG, "capabilities.mac: expected true or false"},
	    {"{\"name\":\"n\",\"disableGC\":\"yes\",\"plugins\":[{\"type\":\"tcfa\"}]}",
	     CNI_ERR_INVALID_CONFIG, "disableGC: expected true or false"},
	    /* A .conflist (without "plugins" anything else is one plugin). */
	    {"{\"name\":\"n\",\"loadOnlyInlinedPlugins\":true}", CNI_ERR_INVALID_CONFIG,
	     "plugins: missing, and loadOnlyInlinedPlugins is true", RUNTIME_LOAD_LIST},
	    {"{\"name\":\"n\",\"type\":\"\"}", CNI_ERR_INVALID_CONFIG, "config: missing \"type\""},
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		struct cni_err err = {0};
		print_message("# case %zu\n", i);
		assert_null(runtime_parse(v[i].text, strlen(v[i].text), NULL, v[i].flags, &err));
		if (err.code != v[i].code || !strstr(err.msg, v[i].msg))
			print_error("# got %d \"%s\" (%s)\n", err.code, err.msg, err.details);
		assert_int_equal(err.code, v[i].code);
		assert_non_null(strstr(err.msg, v[i].msg));
		/* Which input. */
		char all[sizeof(err.msg) + sizeof(err.details) + 1];
		snprintf(all, sizeof(all), "%s %s", err.msg, err.details);
		assert_non_null(strstr(all, "network configuration"));
	}
}

/* Plugins of <dir>/<name>/ *.conf follow the inlined ones, in name order,
 * unless loadOnlyInlinedPlugins. */
static void test_siblings(void **state)
{
	char *sub = xasprintf("%s/sib", tmpdir);
	assert_int_equal(mkdir(sub, 0700), 0);
	free(sub);
	put_file("sib/20-b.conf", "{\"type\":\"tcfb\",\"n\":20}");
	put_file("sib/10-a.conf", "{\"type\":\"tcfa\",\"n\":10}");
	put_file("sib/30-c.json", "{\"type\":\"ignored: not .conf\"}");
	put_file("sib.conflist", "{\"cniVersion\":\"1.1.0\",\"name\":\"sib\",\"plugins\":["
				 "{\"type\":\"tcfa\",\"n\":0}]}");
	put_file("inl.conflist", "{\"cniVersion\":\"1.1.0\",\"name\":\"sib\","
				 "\"loadOnlyInlinedPlugins\":\"true\",\"plugins\":[{\"type\":"
				 "\"tcfa\",\"n\":0}]}");
	put_file("none.conflist", "{\"cniVersion\":\"1.1.0\",\"name\":\"sib\"}");

	struct cni_err err = {0};
	char *path = xasprintf("%s/sib.conflist", tmpdir);
	struct cni_netconf *nc = runtime_load_file(path, &err);
	assert_non_null(nc);
	assert_string_equal(nc->source, path);
	assert_json(nc->plugins, "[{\"type\":\"tcfa\",\"n\":0},{\"type\":\"tcfa\",\"n\":10},"
				 "{\"type\":\"tcfb\",\"n\":20}]");
	runtime_netconf_free(nc);
	free(path);

	/* A list without inlined plugins takes the directory's. */
	path = xasprintf("%s/none.conflist", tmpdir);
	nc = runtime_load_file(path, &err);
	assert_non_null(nc);
	assert_int_equal(nc->n_plugins, 2);
	runtime_netconf_free(nc);
	free(path);

	path = xasprintf("%s/inl.conflist", tmpdir);
	nc = runtime_load_file(path, &err);
	assert_non_null(nc);
	assert_true(nc->load_only_inlined);
	assert_json(nc->plugins, "[{\"type\":\"tcfa\",\"n\":0}]");
	runtime_netconf_free(nc);
	free(path);

	/* Parsed from bytes with RUNTIME_LOAD_NO_SIBLINGS: none either. */
	const char *text = "{\"cniVersion\":\"1.1.0\",\"name\":\"sib\",\"plugins\":[{\"type\":"
			   "\"tcfa\"}]}";
	path = xasprintf("%s/sib.conflist", tmpdir);
	nc = runtime_parse(text, strlen(text), path, RUNTIME_LOAD_NO_SIBLINGS, &err);
	assert_non_null(nc);
	assert_int_equal(nc->n_plugins, 1);
	runtime_netconf_free(nc);

	/* A broken sibling fails the load, naming the file. */
	put_file("sib/15-bad.conf", "{\"type\":\"a/b\"}");
	err_clear(&err);
	assert_null(runtime_load_file(path, &err));
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "plugins[2].type"));
	assert_non_null(strstr(err.details, "15-bad.conf"));
	free(path);
}

/* --- Deriving request configurations, running the chain. --- */

static const char *const chain =
    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"plugins\":["
    /* 0: declares portMappings; mac is declared false. */
    "{\"type\":\"tcfa\",\"capabilities\":{\"portMappings\":true,\"mac\":false},\"a\":1},"
    /* 1: declares nothing; its static runtimeConfig passes through, its
     * own version, name, prevResult and cni.dev/ keys do not. */
    "{\"cniVersion\":\"0.3.1\",\"name\":\"other\",\"type\":\"tcfb\",\"runtimeConfig\":"
    "{\"x\":1},\"prevResult\":{\"bogus\":true},\"cni.dev/valid-attachments\":[]},"
    /* 2: declares bandwidth (supplied) and ips (not supplied): what the
     * runtime supplies replaces the static runtimeConfig. */
    "{\"type\":\"tcfa\",\"runtimeConfig\":{\"y\":2},\"capabilities\":{\"bandwidth\":true,"
    "\"ips\":true}}]}";

static const char *const cap_args =
    "{\"portMappings\":[{\"hostPort\":8080,\"containerPort\":80}],\"mac\":\"02:00:00:00:00:01\","
    "\"bandwidth\":{\"ingressRate\":1000}}";

/* The recorded configuration without its prevResult, and whether it had
 * one naming the interfaces in want_prev (comma separated). */
static void expect_call(size_t i, const char *who, const char *want, const char *want_prev)
{
	assert_true(i < n_calls);
	assert_string_equal(calls[i].who, who);
	struct cni_err err = {0};
	struct cni_json *j = json_parse(calls[i].conf, strlen(calls[i].conf), &err);
	assert_non_null(j);
	struct cni_json *prev = json_take(j, "prevResult");
	assert_json(j, want);
	if (!want_prev) {
		assert_null(prev);
	} else {
		assert_non_null(prev);
		const struct cni_json *ifs = json_get(prev, "interfaces");
		char names[64] = "";
		for (size_t k = 0; k < json_len(ifs); k++) {
			size_t n = strlen(names);
			snprintf(names + n, sizeof(names) - n, "%s%s", n ? "," : "",
				 json_str(json_get(json_at(ifs, k), "name")));
		}
		assert_string_equal(names, want_prev);
		assert_string_equal(json_str(json_get(prev, "cniVersion")), "1.0.0");
	}
	json_free(prev);
	json_free(j);
}

static void test_derive_add_del(void **state)
{
	struct cni_netconf *nc = parse(chain, 0);
	struct cni_err err = {0};
	struct cni_json *caps = json_parse(cap_args, strlen(cap_args), &err);
	assert_non_null(caps);
	struct cni_runtime rt = {.cni_path = "", .cache_dir = tmpdir};
	struct cni_attachment at = {.container_id = "tcfctr",
				    .netns = "/run/netns/tcf-none",
				    .ifname = "eth0",
				    .args = "K8S_POD_NAME=p",
				    .cap_args = caps};
	struct cni_result *res = NULL;
	int r = runtime_add(&rt, nc, &at, &res, &err);
	if (r < 0)
		print_error("# %s: %s\n", err.msg, err.details);
	assert_int_equal(r, 0);
	assert_int_equal(rt.failed, -1);
	assert_int_equal(res->n_ifaces, 3); /* each plugin added one */
	result_free(res);

	assert_int_equal(n_calls, 3);
	expect_call(0, "tcfa ADD",
		    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"type\":\"tcfa\",\"a\":1,"
		    "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":8080,\"containerPort\":"
		    "80}]}}",
		    NULL);
	expect_call(1, "tcfb ADD",
		    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"type\":\"tcfb\","
		    "\"runtimeConfig\":{\"x\":1}}",
		    "tcfa");
	expect_call(2, "tcfa ADD",
		    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"type\":\"tcfa\","
		    "\"runtimeConfig\":{\"bandwidth\":{\"ingressRate\":1000}}}",
		    "tcfa,tcfb");

	/* The result was cached; DEL runs the chain in reverse with it as
	 * prevResult and the same capability arguments, then drops it. */
	char *path = cache_file_path(tmpdir, "tcfchain", "tcfctr", "eth0");
	assert_int_equal(access(path, F_OK), 0);
	forget_calls();
	struct cni_attachment del = {.container_id = "tcfctr", .ifname = "eth0"};
	r = runtime_del(&rt, nc, &del, &err);
	assert_int_equal(r, 0);
	assert_int_equal(n_calls, 3);
	expect_call(0, "tcfa DEL",
		    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"type\":\"tcfa\","
		    "\"runtimeConfig\":{\"bandwidth\":{\"ingressRate\":1000}}}",
		    "tcfa,tcfb,tcfa");
	assert_string_equal(calls[1].who, "tcfb DEL");
	expect_call(2, "tcfa DEL",
		    "{\"cniVersion\":\"1.0.0\",\"name\":\"tcfchain\",\"type\":\"tcfa\",\"a\":1,"
		    "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":8080,\"containerPort\":"
		    "80}]}}",
		    "tcfa,tcfb,tcfa");
	assert_int_equal(access(path, F_OK), -1);
	free(path);
	json_free(caps);
	runtime_netconf_free(nc);
}

/* A failing plugin: the ones before it and itself get DEL, in reverse;
 * its error is the one reported; nothing is cached. */
static void test_rollback(void **state)
{
	struct cni_netconf *nc = parse("{\"cniVersion\":\"1.0.0\",\"name\":\"tcfrb\",\"plugins\":"
				       "[{\"type\":\"tcfa\"},{\"type\":\"tcffail\"},{\"type\":"
				       "\"tcfb\"}]}",
				       0);
	struct cni_runtime rt = {.cni_path = "", .cache_dir = tmpdir};
	struct cni_attachment at = {
	    .container_id = "tcfctr", .netns = "/run/netns/tcf-none", .ifname = "eth1"};
	struct cni_result *res = NULL;
	struct cni_err err = {0};
	assert_int_equal(runtime_add(&rt, nc, &at, &res, &err), -1);
	assert_null(res);
	assert_int_equal(err.code, CNI_ERR_TRY_AGAIN);
	assert_string_equal(err.msg, "tcffail refuses ADD");
	assert_int_equal(rt.failed, 1);
	assert_string_equal(rt.failed_type, "tcffail");
	const char *want[] = {"tcfa ADD", "tcffail ADD", "tcffail DEL", "tcfa DEL"};
	assert_int_equal(n_calls, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(calls[i].who, want[i]);
	char *path = cache_file_path(tmpdir, "tcfrb", "tcfctr", "eth1");
	assert_int_equal(access(path, F_OK), -1);
	free(path);

	/* Unknown types fail before anything runs. */
	forget_calls();
	runtime_netconf_free(nc);
	nc = parse("{\"cniVersion\":\"1.0.0\",\"name\":\"tcfrb\",\"plugins\":[{\"type\":\"tcfa\"},"
		   "{\"type\":\"tcf-not-there\"}]}",
		   0);
	err_clear(&err);
	assert_int_equal(runtime_add(&rt, nc, &at, &res, &err), -1);
	assert_int_equal(err.code, CNI_ERR_INVALID_CONFIG);
	assert_non_null(strstr(err.msg, "plugins[1].type: plugin \"tcf-not-there\" not found"));
	assert_int_equal(n_calls, 0);
	runtime_netconf_free(nc);
}

static void test_paths_and_ids(void **state)
{
	static const char *const v[][2] = {
	    {"/a/./b/../c//d/", "/a/c/d"},
	    {"/../x", "/x"},
	    {"/", "/"},
	    {"/run/netns/x", "/run/netns/x"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		char *p = runtime_abs_path(v[i][0]);
		assert_string_equal(p, v[i][1]);
		free(p);
	}
	/* cnitool's id: "cnitool-" and 20 hex digits of SHA-512 (sha512sum
	 * of the path gives 55e2cecc95014b0f7fc4...). */
	char *id = runtime_netns_id("/run/netns/x");
	assert_string_equal(id, "cnitool-55e2cecc95014b0f7fc4");
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_version_selection),
	    cmocka_unit_test(test_single_conf_wrapped),
	    cmocka_unit_test(test_list_keys),
	    cmocka_unit_test(test_bad_lists),
	    cmocka_unit_test_setup_teardown(test_siblings, make_tmp, remove_tmp),
	    cmocka_unit_test_setup_teardown(test_derive_add_del, make_tmp, remove_tmp),
	    cmocka_unit_test_setup_teardown(test_rollback, make_tmp, remove_tmp),
	    cmocka_unit_test(test_paths_and_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
