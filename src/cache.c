#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "base64.h"
#include "result.h"

/* A cache file holds one result and a copy of the configuration: small. */
#define CACHE_MAX_BYTES (1u << 20)

void cache_entry_free(struct cni_cache_entry *e)
{
	if (!e)
		return;
	free(e->network);
	free(e->container_id);
	free(e->ifname);
	free(e->netns);
	free(e->config);
	json_free(e->cni_args);
	json_free(e->cap_args);
	json_free(e->result);
	free(e->path);
	free(e);
}

void cache_list_free(struct cni_cache_entry **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cache_entry_free(v[i]);
	free(v);
}

char *cache_file_path(const char *dir, const char *network, const char *id, const char *ifname)
{
	return xasprintf("%s/results/%s-%s-%s", dir, network, id, ifname);
}

static char *dup_str(const struct cni_json *obj, const char *key)
{
	const char *s = json_str(json_get(obj, key));
	return s ? xstrdup(s) : NULL;
}

static struct cni_json *take_if(struct cni_json *obj, const char *key, enum json_type t)
{
	struct cni_json *v = json_get(obj, key);
	return v && v->type == t ? json_take(obj, key) : NULL;
}

/* A file without a kind that looks like a result is the pre-cniCacheV1
 * format: the result alone. */
int cache_decode(const char *path, const char *text, size_t len, struct cni_cache_entry **out,
		 struct cni_err *err)
{
	_cleanup_(json_freep) struct cni_json *j = json_parse(text, len, err);
	*out = NULL;
	if (!j)
		return err_append(err, "cache file %s", path);
	if (!json_is(j, JSON_OBJECT))
		return err_set(err, CNI_ERR_DECODE, "cache file %s: not a JSON object", path);
	struct cni_cache_entry *e = xcalloc(1, sizeof(*e));
	e->path = xstrdup(path);
	const char *kind = json_str(json_get(j, "kind"));
	if (!kind && json_get(j, "cniVersion")) {
		e->result = TAKE_PTR(j);
		*out = e;
		return 1;
	}
	if (!streq(kind, CACHE_KIND)) {
		cache_entry_free(e);
		return err_set(err, CNI_ERR_DECODE, "cache file %s: unknown kind \"%.32s\"", path,
			       kind ? kind : "");
	}
	e->network = dup_str(j, "networkName");
	e->container_id = dup_str(j, "containerId");
	e->ifname = dup_str(j, "ifName");
	e->netns = dup_str(j, "netns");
	const char *conf = json_str(json_get(j, "config"));
	if (conf && base64_decode(conf, &e->config, &e->config_len) < 0) {
		cache_entry_free(e);
		return err_set(err, CNI_ERR_DECODE, "cache file %s: config is not base64", path);
	}
	e->cni_args = take_if(j, "cniArgs", JSON_ARRAY);
	e->cap_args = take_if(j, "capabilityArgs", JSON_OBJECT);
	e->result = take_if(j, "result", JSON_OBJECT);
	*out = e;
	return 1;
}

int cache_read_file(const char *path, struct cni_cache_entry **out, struct cni_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	*out = NULL;
	int r = read_state_file(path, CACHE_MAX_BYTES, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot read cache file %s", path);
	return cache_decode(path, text, len, out, err);
}

int cache_read(const char *dir, const char *network, const char *id, const char *ifname,
	       struct cni_cache_entry **out, struct cni_err *err)
{
	_cleanup_free_ char *path = cache_file_path(dir, network, id, ifname);
	int r = cache_read_file(path, out, err);
	if (r <= 0)
		return r;
	struct cni_cache_entry *e = *out;
	if (!e->network)
		e->network = xstrdup(network);
	if (!e->container_id)
		e->container_id = xstrdup(id);
	if (!e->ifname)
		e->ifname = xstrdup(ifname);
	return 1;
}

struct cni_result *cache_entry_result(const struct cni_cache_entry *e, const char *version,
				      struct cni_err *err)
{
	if (!e || !e->result)
		return NULL;
	const char *v = json_str(json_get(e->result, "cniVersion"));
	return result_decode(e->result, v ? v : version, err);
}

char *cache_entry_dump(const struct cni_cache_entry *e)
{
	/* The field order and omissions of libcni's cachedInfo, so a diff
	 * between the two tools' files shows only real differences. */
	_cleanup_(json_freep) struct cni_json *o = json_new(JSON_OBJECT);
	_cleanup_free_ char *conf = base64_encode(e->config ? e->config : "", e->config_len);
	json_set(o, "kind", json_new_str(CACHE_KIND));
	json_set(o, "containerId", json_new_str(e->container_id));
	json_set(o, "config", json_new_str(conf));
	json_set(o, "ifName", json_new_str(e->ifname));
	json_set(o, "networkName", json_new_str(e->network));
	if (!strempty(e->netns))
		json_set(o, "netns", json_new_str(e->netns));
	if (json_len(e->cni_args))
		json_set(o, "cniArgs", json_clone(e->cni_args));
	if (e->cap_args && e->cap_args->obj.n)
		json_set(o, "capabilityArgs", json_clone(e->cap_args));
	if (e->result)
		json_set(o, "result", json_clone(e->result));
	return json_dump(o, false);
}

int cache_write(const char *dir, const struct cni_cache_entry *e, struct cni_err *err)
{
	_cleanup_free_ char *results = xasprintf("%s/results", dir);
	_cleanup_free_ char *path = cache_file_path(dir, e->network, e->container_id, e->ifname);
	_cleanup_free_ char *text = cache_entry_dump(e);
	int r = mkdir_p(results, 0700);
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot create cache directory %s", results);
	r = write_file_atomic(path, text, strlen(text));
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot write cache file %s", path);
	return 0;
}

int cache_remove(const char *dir, const char *network, const char *id, const char *ifname,
		 struct cni_err *err)
{
	_cleanup_free_ char *path = cache_file_path(dir, network, id, ifname);
	if (unlink(path) < 0 && errno != ENOENT)
		return err_errno(err, CNI_ERR_IO, errno, "cannot remove cache file %s", path);
	return 0;
}

int cache_list(const char *dir, const char *network, struct cni_cache_entry ***v, size_t *n,
	       struct cni_err *err)
{
	_cleanup_free_ char *results = xasprintf("%s/results", dir);
	char **names = NULL;
	size_t nn = 0, vcap = 0;
	*v = NULL;
	*n = 0;
	int r = read_dir(results, &names, &nn);
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot read cache directory %s", results);
	for (size_t i = 0; i < nn; i++) {
		if (names[i][0] == '.')
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", results, names[i]);
		struct cni_cache_entry *e = NULL;
		struct cni_err ignore = {0};
		struct stat st;
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (cache_read_file(path, &e, &ignore) <= 0)
			continue;
		/* Only cniCacheV1 entries name their attachment. */
		if (!e->network || !e->container_id || strempty(e->ifname) ||
		    (network && !streq(e->network, network))) {
			cache_entry_free(e);
			continue;
		}
		xgrow(v, &vcap, *n, sizeof(**v));
		(*v)[(*n)++] = e;
	}
	strv_free_n(names, nn);
	return 0;
}

struct cni_json *cache_args_json(const char *args)
{
	if (strempty(args))
		return NULL;
	struct cni_json *a = json_new(JSON_ARRAY);
	const char *p = args;
	while (*p) {
		const char *end = strchrnul(p, ';');
		const char *eq = memchr(p, '=', (size_t)(end - p));
		if (end > p) {
			struct cni_json *pair = json_push(a, json_new(JSON_ARRAY));
			size_t klen = eq ? (size_t)(eq - p) : (size_t)(end - p);
			_cleanup_free_ char *k = xstrndup(p, klen);
			_cleanup_free_ char *val = eq ? xstrndup(eq + 1, (size_t)(end - eq - 1))
						      : xstrdup("");
			json_push(pair, json_new_str(k));
			json_push(pair, json_new_str(val));
		}
		p = *end ? end + 1 : end;
	}
	return a;
}

char *cache_args_string(const struct cni_json *pairs)
{
	size_t n = json_len(pairs);
	if (!n)
		return NULL;
	char *s = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		const struct cni_json *p = json_at(pairs, i);
		const char *k = json_str(json_at(p, 0)), *val = json_str(json_at(p, 1));
		if (!k)
			continue;
		char *t = xasprintf("%s%s%s=%s", s, *s ? ";" : "", k, val ? val : "");
		free(s);
		s = t;
	}
	if (!*s) {
		free(s);
		return NULL;
	}
	return s;
}

int cache_lock(const char *dir, const char *network, bool exclusive, struct cni_err *err)
{
	_cleanup_free_ char *locks = xasprintf("%s/locks", dir);
	_cleanup_free_ char *path = xasprintf("%s/%s", locks, network);
	int r = mkdir_p(locks, 0700);
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot create lock directory %s", locks);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, CNI_ERR_IO, errno, "cannot open lock %s", path);
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		return err_errno(err, CNI_ERR_IO, e, "cannot lock %s", path);
	}
	return fd;
}
