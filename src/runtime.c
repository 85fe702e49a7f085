#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>

#include "invoke.h"
#include "plugin.h"
#include "sha512.h"

/* Configuration files are small; anything bigger is not one. */
#define RUNTIME_MAX_CONF JSON_MAX_BYTES

void runtime_netconf_free(struct cni_netconf *nc)
{
	if (!nc)
		return;
	free(nc->name);
	free(nc->version);
	json_free(nc->conf);
	free(nc->source);
	free(nc);
}

void runtime_strv_free(char **v, size_t n)
{
	strv_free_n(v, n);
}

/* Loading. */

/* libcni accepts the booleans of a list as JSON booleans or as the strings
 * "true"/"false" in any case. */
static int get_flag(const struct cni_json *o, const char *key, bool *out, struct cni_err *err)
{
	const struct cni_json *v = json_get(o, key);
	*out = false;
	if (!v)
		return 0;
	if (v->type == JSON_BOOL) {
		*out = v->b;
		return 0;
	}
	if (v->type == JSON_STRING && !strcasecmp(v->str, "true")) {
		*out = true;
		return 0;
	}
	if (v->type == JSON_STRING && !strcasecmp(v->str, "false"))
		return 0;
	return json_err(err, v, "expected true or false");
}

/* SPEC.md section 1, "Version considerations": the highest version of
 * cniVersion and cniVersions that we support. No version at all is 0.1.0,
 * as plugins read a config without one. */
static int select_version(const struct cni_json *o, char **out, struct cni_err *err)
{
	const char *best = NULL, *v = NULL;
	const struct cni_json *vs = NULL;
	char seen[160] = "";
	bool any = false;
	if (json_get_str(o, "cniVersion", 0, &v, err) < 0 ||
	    json_get_arr(o, "cniVersions", 0, &vs, err) < 0)
		return -1;
	for (size_t i = 0; i <= json_len(vs); i++) {
		const struct cni_json *node = i < json_len(vs) ? json_at(vs, i) : json_get(o, "cniVersion");
		const char *c = i < json_len(vs) ? json_str(node) : v;
		if (i < json_len(vs) && !c)
			return json_err(err, node, "expected a version string");
		if (!c)
			continue;
		if (version_cmp(c, "0.0.0") == -2) {
			json_err(err, node, "malformed version \"%.32s\"", c);
			err->code = CNI_ERR_INCOMPATIBLE_VERSION;
			return -1;
		}
		any = true;
		str_append_item(seen, sizeof(seen), ", ", c);
		if (version_supported(c) && (!best || version_cmp(c, best) > 0))
			best = c;
	}
	if (!any)
		best = "0.1.0";
	if (!best)
		return err_set(err, CNI_ERR_INCOMPATIBLE_VERSION,
			       "no supported cniVersion in [%s] (supported: 0.1.0 to %s)", seen,
			       CNI_SPEC_VERSION);
	*out = xstrdup(best);
	return 0;
}

/* One plugin configuration object: what libcni's NetConf decoding would
 * refuse, plus a type that could escape CNI_PATH. */
static int check_plugin(const struct cni_json *p, const char *field, struct cni_err *err)
{
	const char *type = NULL;
	const struct cni_json *caps = NULL, *ipam = NULL;
	if (!json_is(p, JSON_OBJECT))
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: expected a plugin object", field);
	if (json_get_str(p, "type", 0, &type, err) < 0)
		return -1;
	if (strempty(type))
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: missing \"type\"", field);
	char f[64];
	snprintf(f, sizeof(f), "%s.type", field);
	if (invoke_check_type(type, f, err) < 0)
		return -1;
	if (json_get_obj(p, "capabilities", 0, &caps, err) < 0 ||
	    json_get_obj(p, "ipam", 0, &ipam, err) < 0)
		return -1;
	for (size_t i = 0; caps && i < caps->obj.n; i++)
		if (!json_is(caps->obj.v[i], JSON_BOOL) && !json_is(caps->obj.v[i], JSON_NULL))
			return json_err(err, caps->obj.v[i], "expected true or false");
	const char *itype = NULL;
	if (json_get_str(ipam, "type", 0, &itype, err) < 0)
		return -1;
	snprintf(f, sizeof(f), "%s.ipam.type", field);
	if (itype && invoke_check_type(itype, f, err) < 0)
		return -1;
	return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a > b && !strcmp(s + a - b, suffix);
}

/* Regular files (or links to them) of dir whose names end in one of exts,
 * sorted. An absent directory is empty. */
static int list_files(const char *dir, const char *const *exts, char ***v, size_t *n,
		      struct cni_err *err)
{
	char **names = NULL;
	size_t nn = 0, cap = *n;
	int r = read_dir(dir, &names, &nn);
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot read configuration directory %s", dir);
	for (size_t k = 0; k < nn; k++) {
		bool match = false;
		for (size_t i = 0; exts[i] && !match; i++)
			match = has_suffix(names[k], exts[i]);
		if (!match)
			continue;
		char *path = xasprintf("%s/%s", dir, names[k]);
		struct stat st;
		/* Regular files only: reading a FIFO would wait forever. */
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(path);
			continue;
		}
		xgrow(v, &cap, *n, sizeof(**v));
		(*v)[(*n)++] = path;
	}
	strv_free_n(names, nn);
	return 0;
}

struct cni_netconf *runtime_parse_kurma(const char *text, size_t len, char **ifname,
					struct cni_err *err)
{
	_cleanup_(json_freep) struct cni_json *j = json_parse(text, len, err);
	*ifname = NULL;
	if (!j) {
		err_append(err, "in the network definition");
		return NULL;
	}
	if (!json_is(j, JSON_OBJECT)) {
		err_set(err, CNI_ERR_DECODE, "network definition: expected a JSON object");
		return NULL;
	}
	/* Kurma renders a templated containerInterface and passes the result
	 * as IFNAME; an unrendered template is no name. */
	const char *ci = json_str(json_get(j, "containerInterface"));
	struct cni_err ignore = {0};
	if (ci && env_check_ifname(ci, "containerInterface", &ignore) == 0 && !strchr(ci, '{'))
		*ifname = xstrdup(ci);
	json_del(j, "aci");
	json_del(j, "default");
	json_del(j, "containerInterface");
	_cleanup_free_ char *clean = json_dump(j, false);
	struct cni_netconf *nc =
		runtime_parse(clean, strlen(clean), NULL, RUNTIME_LOAD_NO_SIBLINGS, err);
	if (!nc) {
		free(*ifname);
		*ifname = NULL;
	}
	return nc;
}

int runtime_conf_files(const char *dir, char ***v, size_t *n, struct cni_err *err)
{
	static const char *const lists[] = {".conflist", NULL};
	static const char *const singles[] = {".conf", ".json", NULL};
	*v = NULL;
	*n = 0;
	if (list_files(dir, lists, v, n, err) < 0 || list_files(dir, singles, v, n, err) < 0) {
		runtime_strv_free(*v, *n);
		*v = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

/* SPEC.md section 1: unless loadOnlyInlinedPlugins, plugin objects from
 * <dir>/<network name>/ *.conf follow the inlined ones. */
static int add_siblings(const char *source, const char *name, struct cni_json *plugins,
			struct cni_err *err)
{
	static const char *const exts[] = {".conf", NULL};
	const char *slash = strrchr(source, '/');
	_cleanup_free_ char *dir = slash ? xasprintf("%.*s/%s", (int)(slash - source), source, name)
					 : xstrdup(name);
	char **files = NULL;
	size_t n = 0;
	if (list_files(dir, exts, &files, &n, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		int r = read_file(files[i], RUNTIME_MAX_CONF, &text, &len);
		if (r < 0) {
			rc = err_errno(err, CNI_ERR_IO, r, "cannot read %s", files[i]);
			break;
		}
		struct cni_json *p = json_parse(text, len, err);
		if (!p) {
			rc = err_append(err, "in %s", files[i]);
			break;
		}
		char field[64];
		snprintf(field, sizeof(field), "plugins[%zu]", json_len(plugins));
		if (check_plugin(p, field, err) < 0) {
			json_free(p);
			rc = err_append(err, "in %s", files[i]);
			break;
		}
		json_push(plugins, p);
	}
	runtime_strv_free(files, n);
	return rc;
}

struct cni_netconf *runtime_parse(const char *text, size_t len, const char *source,
				  unsigned flags, struct cni_err *err)
{
	_cleanup_(json_freep) struct cni_json *in = json_parse(text, len, err);
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc = NULL;
	const char *what = source ? source : "network configuration";
	const char *name = NULL;
	if (!in) {
		err_append(err, "in %s", what);
		return NULL;
	}
	if (!json_is(in, JSON_OBJECT)) {
		err_set(err, CNI_ERR_DECODE, "%s: expected a JSON object", what);
		return NULL;
	}
	bool list = (flags & RUNTIME_LOAD_LIST) || json_get(in, "plugins");
	nc = xcalloc(1, sizeof(*nc));
	if (json_get_str(in, "name", 0, &name, err) < 0 || env_check_netname(name, "name", err) < 0 ||
	    select_version(in, &nc->version, err) < 0)
		goto fail;
	nc->name = xstrdup(name);

	struct cni_json *out = json_new(JSON_OBJECT);
	nc->conf = out;
	json_set(out, "cniVersion", json_new_str(nc->version));
	json_set(out, "name", json_new_str(name));
	struct cni_json *plugins;
	if (!list) {
		/* A single plugin configuration becomes a one-plugin list, as
		 * libcni's ConfListFromConf does. */
		if (check_plugin(in, "config", err) < 0)
			goto fail;
		plugins = json_set(out, "plugins", json_new(JSON_ARRAY));
		json_push(plugins, json_clone(in));
	} else {
		if (get_flag(in, "disableCheck", &nc->disable_check, err) < 0 ||
		    get_flag(in, "disableGC", &nc->disable_gc, err) < 0 ||
		    get_flag(in, "loadOnlyInlinedPlugins", &nc->load_only_inlined, err) < 0)
			goto fail;
		for (size_t i = 0; i < in->obj.n; i++) {
			const char *k = in->obj.k[i];
			if (!streq(k, "cniVersion") && !streq(k, "cniVersions") &&
			    !streq(k, "name") && !streq(k, "plugins"))
				json_set(out, k, json_clone(in->obj.v[i]));
		}
		const struct cni_json *inl = json_get(in, "plugins");
		if (!inl && nc->load_only_inlined) {
			err_set(err, CNI_ERR_INVALID_CONFIG,
				"plugins: missing, and loadOnlyInlinedPlugins is true");
			goto fail;
		}
		if (inl && inl->type != JSON_ARRAY) {
			json_err(err, inl, "expected a list of plugin objects");
			goto fail;
		}
		if (inl && !json_len(inl)) {
			json_err(err, inl, "empty: a network needs at least one plugin");
			goto fail;
		}
		plugins = json_set(out, "plugins", json_new(JSON_ARRAY));
		for (size_t i = 0; i < json_len(inl); i++) {
			char field[32];
			snprintf(field, sizeof(field), "plugins[%zu]", i);
			if (check_plugin(json_at(inl, i), field, err) < 0)
				goto fail;
			json_push(plugins, json_clone(json_at(inl, i)));
		}
		if (source && !nc->load_only_inlined && !(flags & RUNTIME_LOAD_NO_SIBLINGS) &&
		    add_siblings(source, name, plugins, err) < 0)
			goto fail;
		if (!json_len(plugins)) {
			err_set(err, CNI_ERR_INVALID_CONFIG,
				"plugins: missing (a configuration list needs a \"plugins\" list)");
			goto fail;
		}
	}
	nc->plugins = plugins;
	nc->n_plugins = json_len(plugins);
	nc->source = source ? xstrdup(source) : NULL;
	return TAKE_PTR(nc);
fail:
	err_append(err, "in %s", what);
	return NULL;
}

struct cni_netconf *runtime_load_file(const char *path, struct cni_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file(path, RUNTIME_MAX_CONF, &text, &len);
	if (r < 0) {
		err_errno(err, r == -E2BIG ? CNI_ERR_DECODE : CNI_ERR_IO, r, "cannot read %s", path);
		return NULL;
	}
	return runtime_parse(text, len, path, has_suffix(path, ".conflist") ? RUNTIME_LOAD_LIST : 0,
			     err);
}

struct cni_netconf *runtime_find(const char *dir, const char *name, struct cni_err *err)
{
	char **files = NULL;
	size_t n = 0;
	const char *found = NULL, *broken = NULL;
	struct cni_netconf *nc = NULL;
	char why[160] = "";

	if (env_check_netname(name, "network", err) < 0)
		return NULL;
	if (runtime_conf_files(dir, &files, &n, err) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		struct cni_err e = {0};
		_cleanup_(json_freep) struct cni_json *j = NULL;
		int r = read_file(files[i], RUNTIME_MAX_CONF, &text, &len);
		if (r >= 0)
			j = json_parse(text, len, &e);
		const char *jn = json_str(json_get(j, "name"));
		if (!jn) {
			/* Not ours to judge unless nothing else matches. */
			if (!broken) {
				broken = files[i];
				snprintf(why, sizeof(why), "%s",
					 r < 0 ? strerror(-r) : j ? "no \"name\"" : e.msg);
			}
			continue;
		}
		if (!streq(jn, name))
			continue;
		if (found) {
			err_set(err, CNI_ERR_INVALID_CONFIG, "network \"%s\" is defined more than once",
				name);
			err_append(err, "in %s and %s: remove or rename one of them", found, files[i]);
			goto out;
		}
		found = files[i];
	}
	if (!found) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "no network configuration named \"%s\" in %s",
			name, dir);
		if (broken)
			err_append(err, "%s could not be read: %s", broken, why);
		goto out;
	}
	nc = runtime_load_file(found, err);
out:
	runtime_strv_free(files, n);
	return nc;
}

static const char *env_or(const char *var, const char *def)
{
	const char *v = getenv(var);
	return strempty(v) ? def : v;
}

const char *runtime_conf_dir(void)
{
	return env_or("NETCONFPATH", RUNTIME_CONF_DIR);
}

const char *runtime_cache_dir(void)
{
	return env_or("CNI_CACHE_DIR", RUNTIME_CACHE_DIR);
}

const char *runtime_cni_path(void)
{
	return env_or("CNI_PATH", RUNTIME_CNI_PATH);
}

/* Go's filepath.Clean on an absolute path: one pass over the elements,
 * dropping "." and empty ones, ".." removing the previous one (and
 * staying at the root). */
static void clean_path(char *p)
{
	char *out = p + 1;
	const char *s = p;
	while (*s) {
		while (*s == '/')
			s++;
		const char *e = strchrnul(s, '/');
		size_t len = (size_t)(e - s);
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (out > p + 1 && out[-1] != '/')
				out--;
			if (out > p + 1)
				out--;
		} else if (len && !(len == 1 && s[0] == '.')) {
			/* The separator goes before the element, so the
			 * output never overtakes the input. */
			if (out > p + 1)
				*out++ = '/';
			memmove(out, s, len);
			out += len;
		}
		s = e;
	}
	*out = 0;
}

char *runtime_abs_path(const char *path)
{
	char *p;
	if (path[0] == '/') {
		p = xstrdup(path);
	} else {
		char *cwd = getcwd(NULL, 0);
		if (!cwd)
			return NULL;
		p = xasprintf("%s/%s", cwd, path);
		free(cwd);
	}
	clean_path(p);
	return p;
}

char *runtime_netns_id(const char *netns)
{
	uint8_t d[SHA512_DIGEST_SIZE];
	char hex[21];
	sha512_digest(netns, strlen(netns), d);
	for (int i = 0; i < 10; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return xasprintf("cnitool-%s", hex);
}

/* Running. */

static const char *plugin_type(const struct cni_netconf *nc, size_t i)
{
	return json_str(json_get(json_at(nc->plugins, i), "type"));
}

/* Plugin i is the one that failed. */
static void failed_at(struct cni_runtime *rt, const struct cni_netconf *nc, size_t i)
{
	rt->failed = (int)i;
	rt->failed_type = plugin_type(nc, i);
}

/* The environment of a plugin run for one attachment: ADD, DEL, CHECK. */
static struct cni_invoke_env attach_env(const struct cni_runtime *rt, enum cni_cmd cmd,
					const struct cni_attachment *at)
{
	return (struct cni_invoke_env){
		.cmd = cmd,
		.container_id = at->container_id,
		.netns = at->netns,
		.ifname = at->ifname,
		.args = at->args,
		.path = rt->cni_path,
	};
}

/* SPEC.md section 3, "Deriving request configuration": the plugin object
 * with cniVersion and name of the list; for ADD, DEL and CHECK the
 * capability arguments the plugin declares as runtimeConfig, and
 * prevResult; for GC the valid attachments. The keys only a runtime may
 * set (capabilities, prevResult, cni.dev/...) never pass through from the
 * file. */
static struct cni_json *derive(const struct cni_netconf *nc, size_t i, enum cni_cmd cmd,
			       const struct cni_json *prev, const struct cni_json *cap_args,
			       const struct cni_json *valid)
{
	const struct cni_json *p = json_at(nc->plugins, i);
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "cniVersion", json_new_str(nc->version));
	json_set(o, "name", json_new_str(nc->name));
	for (size_t k = 0; k < p->obj.n; k++) {
		const char *key = p->obj.k[k];
		if (streq(key, "cniVersion") || streq(key, "name") || streq(key, "capabilities") ||
		    streq(key, "prevResult") || !strncmp(key, "cni.dev/", 8))
			continue;
		json_set(o, key, json_clone(p->obj.v[k]));
	}
	bool attach = cmd == CNI_CMD_ADD || cmd == CNI_CMD_DEL || cmd == CNI_CMD_CHECK;
	const struct cni_json *caps = json_get(p, "capabilities");
	struct cni_json *rc = NULL;
	for (size_t k = 0; attach && caps && k < caps->obj.n; k++) {
		const struct cni_json *v = json_get(cap_args, caps->obj.k[k]);
		if (!json_is(caps->obj.v[k], JSON_BOOL) || !caps->obj.v[k]->b || !v)
			continue;
		if (!rc)
			rc = json_new(JSON_OBJECT);
		json_set(rc, caps->obj.k[k], json_clone(v));
	}
	/* As libcni: what the runtime supplies replaces a static
	 * runtimeConfig; without capability arguments it passes through. */
	if (rc)
		json_set(o, "runtimeConfig", rc);
	if (attach && prev)
		json_set(o, "prevResult", json_clone(prev));
	if (cmd == CNI_CMD_GC) {
		json_set(o, "cni.dev/valid-attachments", json_clone(valid));
		/* The name spec 1.1.0 first printed; libcni sends both. */
		json_set(o, "cni.dev/attachments", json_clone(valid));
	}
	return o;
}

/* Whether a type can run: built in, or found in CNI_PATH. */
static int type_available(const struct cni_runtime *rt, const char *type, bool force_exec,
			  const char *field, struct cni_err *err)
{
	const struct cni_applet *a = applet_find(type);
	if (a && a->main)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "%s: \"%s\" is a cni tool, not a plugin", field, type);
	if (a && !force_exec)
		return 0;
	struct cni_err e = {0};
	char *path = invoke_find(type, rt->cni_path, &e);
	if (!path) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "%s: plugin \"%s\" not found", field, type);
		err_append(err, "%s in CNI_PATH %s", a ? "not built in with --exec, and not" : "not built in and not",
			   strempty(rt->cni_path) ? "(empty)" : rt->cni_path);
		return -1;
	}
	free(path);
	return 0;
}

/* Every type must be runnable before the first plugin runs, so that an
 * unknown type fails with nothing applied. IPAM types are checked for the
 * verbs that need them to succeed. */
static int preflight(struct cni_runtime *rt, const struct cni_netconf *nc, bool ipam,
		     struct cni_err *err)
{
	for (size_t i = 0; i < nc->n_plugins; i++) {
		char field[48];
		snprintf(field, sizeof(field), "plugins[%zu].type", i);
		const char *itype =
			json_str(json_get(json_get(json_at(nc->plugins, i), "ipam"), "type"));
		int r = type_available(rt, plugin_type(nc, i), rt->flags & RUNTIME_EXEC, field, err);
		if (r == 0 && ipam && itype) {
			snprintf(field, sizeof(field), "plugins[%zu].ipam.type", i);
			/* A built-in IPAM is reachable from a built-in plugin
			 * even with --exec: the plugin delegates in-process. */
			r = type_available(rt, itype, false, field, err);
		}
		if (r < 0) {
			failed_at(rt, nc, i);
			return -1;
		}
	}
	return 0;
}

static int run_plugin(struct cni_runtime *rt, const struct cni_netconf *nc, size_t i,
		      const struct cni_json *conf, const struct cni_invoke_env *env,
		      struct cni_result **res, struct cni_err *err)
{
	struct cni_result *r = NULL;
	unsigned flags = rt->flags & RUNTIME_EXEC ? INVOKE_EXEC : 0;
	if (invoke_plugin(plugin_type(nc, i), conf, env, flags, &r, err) < 0) {
		result_free(r);
		failed_at(rt, nc, i);
		return -1;
	}
	if (res)
		*res = r;
	else
		result_free(r);
	return 0;
}

static void log_err(const char *what, const struct cni_err *e)
{
	err_log(e, "cni: %s", what);
}

static int check_attachment(const struct cni_attachment *at, bool need_netns, struct cni_err *err)
{
	if (env_check_container_id(at->container_id, "container id", err) < 0 ||
	    env_check_ifname(at->ifname, "ifname", err) < 0)
		return -1;
	if (need_netns && strempty(at->netns))
		return err_set(err, CNI_ERR_INVALID_ENV, "netns: required for this command");
	return 0;
}

static void begin(struct cni_runtime *rt)
{
	rt->failed = -1;
	rt->failed_type = NULL;
	rt->skipped = false;
}

/* The prevResult for DEL and CHECK: the cached result, converted to the
 * list's version (the config may have changed version since ADD). */
static struct cni_json *cached_prev(const struct cni_netconf *nc, const struct cni_cache_entry *e,
				    struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *r = cache_entry_result(e, nc->version, err);
	if (!r)
		return NULL;
	return result_encode(r, nc->version, err);
}

/* DEL and CHECK use the parameters of the ADD (SPEC.md section 2): what
 * the caller left unset comes from the cache entry e. *args owns the
 * CNI_ARGS text made for it. */
static void from_cache(struct cni_attachment *at, const struct cni_cache_entry *e, char **args)
{
	if (!at->netns)
		at->netns = e->netns;
	if (!at->args)
		at->args = *args = cache_args_string(e->cni_args);
	if (!at->cap_args)
		at->cap_args = e->cap_args;
}

/* DEL plugins from..0 in reverse: the chain of DEL, and the rollback of a
 * failed ADD (stop_on_error false: undo as much as possible). */
static int del_chain(struct cni_runtime *rt, const struct cni_netconf *nc, size_t from,
		     const struct cni_attachment *at, const struct cni_json *prev,
		     bool stop_on_error, struct cni_err *err)
{
	struct cni_invoke_env env = attach_env(rt, CNI_CMD_DEL, at);
	for (size_t i = from + 1; i-- > 0;) {
		_cleanup_(json_freep) struct cni_json *conf =
			derive(nc, i, CNI_CMD_DEL, prev, at->cap_args, NULL);
		struct cni_err e = {0};
		if (run_plugin(rt, nc, i, conf, &env, NULL, stop_on_error ? err : &e) < 0) {
			if (stop_on_error)
				return -1;
			char what[96];
			snprintf(what, sizeof(what), "rollback: DEL of plugin %zu (%s)", i,
				 plugin_type(nc, i));
			log_err(what, &e);
		}
	}
	return 0;
}

/* Write the cache entry of an attachment with result (may be NULL) unless
 * *written already holds the same text; *written is what is on disk. */
static int cache_progress(struct cni_runtime *rt, const struct cni_netconf *nc,
			  const struct cni_attachment *at, const struct cni_json *result,
			  char **written, struct cni_err *err)
{
	struct cni_cache_entry entry = {
		.network = nc->name,
		.container_id = (char *)at->container_id,
		.ifname = (char *)at->ifname,
		.netns = (char *)at->netns,
		.config = json_dump(nc->conf, false),
		.cni_args = cache_args_json(at->args),
		.cap_args = (struct cni_json *)at->cap_args,
		.result = (struct cni_json *)result,
	};
	entry.config_len = strlen(entry.config);
	char *text = cache_entry_dump(&entry);
	int w = 0;
	if (!*written || !streq(text, *written))
		w = cache_write(rt->cache_dir, &entry, err);
	free(entry.config);
	json_free(entry.cni_args);
	free(*written);
	*written = w < 0 ? NULL : text;
	if (w < 0)
		free(text);
	return w;
}

int runtime_add(struct cni_runtime *rt, const struct cni_netconf *nc,
		const struct cni_attachment *at, struct cni_result **res, struct cni_err *err)
{
	_cleanup_(result_freep) struct cni_result *last = NULL;
	_cleanup_(json_freep) struct cni_json *prev = NULL;
	_cleanup_free_ char *written = NULL;
	int lock = -1, rc = -1;
	size_t i = 0;
	begin(rt);
	*res = NULL;
	if (check_attachment(at, true, err) < 0 || preflight(rt, nc, true, err) < 0)
		return -1;
	if ((lock = cache_lock(rt->cache_dir, nc->name, false, err)) < 0)
		return -1;
	/* SPEC.md section 2: no second ADD of an attachment without a DEL in
	 * between. Refusing here leaves the first one intact; letting the
	 * plugins fail would roll it back. */
	_cleanup_free_ char *path =
		cache_file_path(rt->cache_dir, nc->name, at->container_id, at->ifname);
	if (access(path, F_OK) == 0) {
		err_set(err, CNI_ERR_INVALID_ENV, "%s/%s is already attached to network %s",
			at->container_id, at->ifname, nc->name);
		err_append(err, "cached in %s: del it (or gc) first", path);
		close(lock);
		return -1;
	}

	struct cni_invoke_env env = attach_env(rt, CNI_CMD_ADD, at);
	/* Crash safety: the entry is on disk before the first plugin runs and
	 * follows the result through the chain, so that when this process
	 * dies half-way the runtime's DEL (and GC, once the namespace is gone)
	 * finds the attachment and gives each plugin the addresses it may
	 * have acted on (the iptables firewall keys its rules by address
	 * alone). libcni writes only the final result; readers of either see
	 * an ordinary entry. */
	if (cache_progress(rt, nc, at, NULL, &written, err) < 0) {
		close(lock);
		return -1;
	}
	for (i = 0; i < nc->n_plugins; i++) {
		_cleanup_(json_freep) struct cni_json *conf =
			derive(nc, i, CNI_CMD_ADD, prev, at->cap_args, NULL);
		struct cni_result *r = NULL;
		if (run_plugin(rt, nc, i, conf, &env, &r, err) < 0)
			goto rollback;
		if (!r) {
			err_set(err, CNI_ERR_INTERNAL, "plugin %s returned no result", plugin_type(nc, i));
			failed_at(rt, nc, i);
			goto rollback;
		}
		result_free(last);
		last = r;
		json_free(prev);
		prev = result_encode(last, nc->version, err);
		if (!prev) {
			failed_at(rt, nc, i);
			goto rollback;
		}
		/* After the last plugin this is the final entry. */
		if (cache_progress(rt, nc, at, prev, &written, err) < 0)
			goto rollback;
	}
	*res = TAKE_PTR(last);
	rc = 0;
	goto out;

rollback:
	/* Undo in reverse what ran, the failed plugin included: it may have
	 * half-applied. Its prevResult is the last good result. */
	{
		struct cni_err e = {0};
		int failed = rt->failed;
		const char *ftype = rt->failed_type;
		const struct cni_json *p = version_cmp(nc->version, "0.4.0") >= 0 ? prev : NULL;
		del_chain(rt, nc, i, at, p, false, &e);
		rt->failed = failed;
		rt->failed_type = ftype;
		if (cache_remove(rt->cache_dir, nc->name, at->container_id, at->ifname, &e) < 0)
			log_err("rollback", &e);
	}
out:
	close(lock);
	return rc;
}

static int read_entry(struct cni_runtime *rt, const struct cni_netconf *nc,
		      const struct cni_attachment *at, struct cni_cache_entry **e)
{
	struct cni_err ce = {0};
	int r = cache_read(rt->cache_dir, nc->name, at->container_id, at->ifname, e, &ce);
	if (r < 0) {
		/* libcni drops an unreadable entry and goes on without it. */
		log_err("ignoring the cached result", &ce);
		return 0;
	}
	return r;
}

/* DEL with the cache entry e (may be NULL); removes it on success. */
static int do_del(struct cni_runtime *rt, const struct cni_netconf *nc,
		  const struct cni_attachment *in, const struct cni_cache_entry *e,
		  struct cni_err *err)
{
	struct cni_attachment at = *in;
	_cleanup_free_ char *args = NULL;
	_cleanup_(json_freep) struct cni_json *prev = NULL;
	if (e)
		from_cache(&at, e, &args);
	if (version_cmp(nc->version, "0.4.0") >= 0 && e && e->result) {
		struct cni_err pe = {0};
		prev = cached_prev(nc, e, &pe);
		if (!prev)
			log_err("ignoring the cached result", &pe);
	}
	if (del_chain(rt, nc, nc->n_plugins - 1, &at, prev, true, err) < 0)
		return -1;
	rt->failed = -1;
	return cache_remove(rt->cache_dir, nc->name, at.container_id, at.ifname, err);
}

int runtime_del(struct cni_runtime *rt, const struct cni_netconf *nc,
		const struct cni_attachment *at, struct cni_err *err)
{
	_cleanup_(cache_entry_freep) struct cni_cache_entry *e = NULL;
	begin(rt);
	if (check_attachment(at, false, err) < 0 || preflight(rt, nc, false, err) < 0)
		return -1;
	int lock = cache_lock(rt->cache_dir, nc->name, false, err);
	if (lock < 0)
		return -1;
	read_entry(rt, nc, at, &e);
	int rc = do_del(rt, nc, at, e, err);
	close(lock);
	return rc;
}

int runtime_check(struct cni_runtime *rt, const struct cni_netconf *nc,
		  const struct cni_attachment *in, struct cni_err *err)
{
	_cleanup_(cache_entry_freep) struct cni_cache_entry *e = NULL;
	_cleanup_(json_freep) struct cni_json *prev = NULL;
	_cleanup_free_ char *args = NULL;
	struct cni_attachment at = *in;
	int rc = -1;
	begin(rt);
	if (version_allows(nc->version, CNI_CMD_CHECK, err) < 0)
		return -1;
	if (nc->disable_check) {
		rt->skipped = true;
		return 0;
	}
	if (check_attachment(&at, false, err) < 0 || preflight(rt, nc, true, err) < 0)
		return -1;
	int lock = cache_lock(rt->cache_dir, nc->name, false, err);
	if (lock < 0)
		return -1;
	if (read_entry(rt, nc, &at, &e) <= 0 || !e->result) {
		err_set(err, CNI_ERR_UNKNOWN_CONTAINER,
			"no cached result for %s/%s on network %s: not added, or already deleted",
			at.container_id, at.ifname, nc->name);
		goto out;
	}
	from_cache(&at, e, &args);
	if (strempty(at.netns)) {
		err_set(err, CNI_ERR_INVALID_ENV, "netns: required for CHECK");
		goto out;
	}
	if (!(prev = cached_prev(nc, e, err)))
		goto out;
	struct cni_invoke_env env = attach_env(rt, CNI_CMD_CHECK, &at);
	for (size_t i = 0; i < nc->n_plugins; i++) {
		_cleanup_(json_freep) struct cni_json *conf =
			derive(nc, i, CNI_CMD_CHECK, prev, at.cap_args, NULL);
		if (run_plugin(rt, nc, i, conf, &env, NULL, err) < 0)
			goto out;
	}
	rc = 0;
out:
	close(lock);
	return rc;
}

int runtime_status(struct cni_runtime *rt, const struct cni_netconf *nc, struct cni_err *err)
{
	begin(rt);
	if (version_cmp(nc->version, "1.1.0") < 0) {
		rt->skipped = true;
		return 0;
	}
	if (preflight(rt, nc, false, err) < 0)
		return -1;
	struct cni_invoke_env env = {.cmd = CNI_CMD_STATUS, .path = rt->cni_path};
	for (size_t i = 0; i < nc->n_plugins; i++) {
		_cleanup_(json_freep) struct cni_json *conf =
			derive(nc, i, CNI_CMD_STATUS, NULL, NULL, NULL);
		if (run_plugin(rt, nc, i, conf, &env, NULL, err) < 0)
			return -1;
	}
	return 0;
}

void runtime_gc_report_free(struct cni_gc_report *r)
{
	for (size_t i = 0; i < r->n_valid; i++) {
		free(r->valid[i].container_id);
		free(r->valid[i].ifname);
	}
	for (size_t i = 0; i < r->n_removed; i++) {
		free(r->removed[i].container_id);
		free(r->removed[i].ifname);
	}
	free(r->valid);
	free(r->removed);
	memset(r, 0, sizeof(*r));
}

static bool gc_listed(const struct cni_gc_attachment *v, size_t n, const char *id,
		      const char *ifname)
{
	for (size_t i = 0; i < n; i++)
		if (streq(v[i].container_id, id) && streq(v[i].ifname, ifname))
			return true;
	return false;
}

static void gc_push(struct cni_gc_attachment **v, size_t *n, const char *id, const char *ifname)
{
	if (gc_listed(*v, *n, id, ifname))
		return;
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].container_id = xstrdup(id);
	(*v)[*n].ifname = xstrdup(ifname);
	(*n)++;
}

bool runtime_netns_gone(const char *path)
{
	int e = 0;
	struct cni_err ignore = {0};
	if (strempty(path))
		return false;
	struct cni_netns *ns = netns_open(path, &e, &ignore);
	netns_close(ns);
	return !ns && (e == ENOENT || e == EINVAL);
}

/* Record a GC error: the first one is returned (with the plugin that
 * failed, if any), the others are logged. failed0 is rt->failed from
 * before the failed step. */
static void gc_error(struct cni_runtime *rt, int failed0, struct cni_gc_report *rep,
		     struct cni_err *err, const struct cni_err *e, const char *what)
{
	if (rep->n_errors++ == 0) {
		*err = *e;
		err_append(err, "%s", what);
	} else {
		rt->failed = failed0;
		log_err(what, e);
	}
}

int runtime_gc(struct cni_runtime *rt, const struct cni_netconf *nc,
	       const struct cni_gc_attachment *extra, size_t n_extra, struct cni_gc_report *rep,
	       struct cni_err *err)
{
	struct cni_cache_entry **v = NULL;
	size_t n = 0;
	int lock = -1;
	begin(rt);
	memset(rep, 0, sizeof(*rep));
	if (nc->disable_gc) {
		rt->skipped = true;
		return 0;
	}
	for (size_t i = 0; i < n_extra; i++) {
		if (env_check_container_id(extra[i].container_id, "valid attachment", err) < 0 ||
		    env_check_ifname(extra[i].ifname, "valid attachment", err) < 0)
			return -1;
		gc_push(&rep->valid, &rep->n_valid, extra[i].container_id, extra[i].ifname);
	}
	if (preflight(rt, nc, false, err) < 0)
		return -1;
	/* GC runs alone: no ADD or DEL of this network may be in progress
	 * (SPEC.md section 3, "Lifecycle & Ordering"). */
	if ((lock = cache_lock(rt->cache_dir, nc->name, true, err)) < 0)
		return -1;
	if (cache_list(rt->cache_dir, nc->name, &v, &n, err) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct cni_cache_entry *e = v[i];
		if (gc_listed(rep->valid, rep->n_valid, e->container_id, e->ifname))
			continue;
		if (!runtime_netns_gone(e->netns)) {
			gc_push(&rep->valid, &rep->n_valid, e->container_id, e->ifname);
			continue;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct cni_cache_entry *e = v[i];
		if (gc_listed(rep->valid, rep->n_valid, e->container_id, e->ifname))
			continue;
		struct cni_attachment at = {
			.container_id = e->container_id,
			.ifname = e->ifname,
		};
		struct cni_err de = {0};
		char what[256];
		snprintf(what, sizeof(what), "DEL of stale attachment %s/%s", e->container_id,
			 e->ifname);
		int failed0 = rt->failed;
		if (check_attachment(&at, false, &de) < 0 || do_del(rt, nc, &at, e, &de) < 0) {
			gc_error(rt, failed0, rep, err, &de, what);
			continue;
		}
		gc_push(&rep->removed, &rep->n_removed, e->container_id, e->ifname);
	}
	if (version_cmp(nc->version, "1.1.0") >= 0) {
		_cleanup_(json_freep) struct cni_json *valid = json_new(JSON_ARRAY);
		for (size_t i = 0; i < rep->n_valid; i++) {
			struct cni_json *a = json_push(valid, json_new(JSON_OBJECT));
			json_set(a, "containerID", json_new_str(rep->valid[i].container_id));
			json_set(a, "ifname", json_new_str(rep->valid[i].ifname));
		}
		struct cni_invoke_env env = {.cmd = CNI_CMD_GC, .path = rt->cni_path};
		for (size_t i = 0; i < nc->n_plugins; i++) {
			_cleanup_(json_freep) struct cni_json *conf =
				derive(nc, i, CNI_CMD_GC, NULL, NULL, valid);
			struct cni_err ge = {0};
			char what[96];
			snprintf(what, sizeof(what), "GC of plugin %zu (%s)", i, plugin_type(nc, i));
			int failed0 = rt->failed;
			if (run_plugin(rt, nc, i, conf, &env, NULL, &ge) < 0)
				gc_error(rt, failed0, rep, err, &ge, what);
		}
	}
out:
	cache_list_free(v, n);
	close(lock);
	return rep->n_errors || err_isset(err) ? -1 : 0;
}
