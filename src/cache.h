/* The result cache: one file per attachment, in the reference library's
 * (libcni's) layout and format, so that cnitool, podman, containerd and
 * `cni exec` can each delete or check what another one added.
 *
 *   <dir>/results/<network>-<container id>-<ifname>
 *
 * holds one JSON object: kind "cniCacheV1", containerId, config (base64 of
 * the network configuration list), ifName, networkName, netns, cniArgs
 * ([["K","V"],...]), capabilityArgs and result (the final ADD result, in
 * the list's cniVersion). libcni before 1.2 did not record netns; a file
 * that is a bare result (libcni before the cniCacheV1 kind) is read as the
 * result alone.
 *
 * Nothing here runs plugins; src/runtime.c decides when to read, write and
 * remove entries. */
#ifndef CNI_CACHE_H
#define CNI_CACHE_H

#include "json.h"

struct cni_result;

#define CACHE_KIND "cniCacheV1"

struct cni_cache_entry {
	char *network;
	char *container_id;
	char *ifname;
	char *netns;		   /* NULL when not recorded */
	char *config;		   /* decoded "config" bytes, NUL-terminated, or NULL */
	size_t config_len;
	struct cni_json *cni_args; /* [["K","V"],...] or NULL */
	struct cni_json *cap_args; /* object or NULL */
	struct cni_json *result;   /* the cached result object, or NULL */
	char *path;		   /* the file it was read from */
};

void cache_entry_free(struct cni_cache_entry *e);
static inline void cache_entry_freep(struct cni_cache_entry **e)
{
	cache_entry_free(*e);
}

/* <dir>/results/<network>-<id>-<ifname> (owned). The three names must have
 * been validated (no '/'); src/runtime.c does so before any cache call. */
char *cache_file_path(const char *dir, const char *network, const char *id, const char *ifname);

/* Decode the text of a cache file (path names it in errors); the returns
 * of cache_read_file but never 0. Split out for the fuzzer. */
int cache_decode(const char *path, const char *text, size_t len, struct cni_cache_entry **out,
		 struct cni_err *err);
/* Read one file. Returns 1 with an owned entry, 0 when the file does not
 * exist, -1 (CNI_ERR_DECODE naming the file) when it cannot be understood. */
int cache_read_file(const char *path, struct cni_cache_entry **out, struct cni_err *err);
/* Read the entry of one attachment; same returns. A bare legacy result
 * gets network, id and ifname from the arguments. */
int cache_read(const char *dir, const char *network, const char *id, const char *ifname,
	       struct cni_cache_entry **out, struct cni_err *err);

/* Write e atomically (temp file and rename, mode 0600, directories 0700),
 * replacing any previous entry of the same attachment. 0 or -1. */
int cache_write(const char *dir, const struct cni_cache_entry *e, struct cni_err *err);
/* Remove the entry of one attachment; a missing file is success. */
int cache_remove(const char *dir, const char *network, const char *id, const char *ifname,
		 struct cni_err *err);

/* Every readable cniCacheV1 entry under <dir>/results, in file name order,
 * optionally only those of one network (NULL: all). Files that are not
 * cache entries (temp files, other kinds, garbage) are skipped, as libcni
 * does. *v is an owned array of owned entries (cache_list_free). */
int cache_list(const char *dir, const char *network, struct cni_cache_entry ***v, size_t *n,
	       struct cni_err *err);
void cache_list_free(struct cni_cache_entry **v, size_t n);

/* The cached result decoded in the version it was cached in (its own
 * cniVersion, else version). Owned; NULL when there is none or it cannot
 * be decoded (err set). */
struct cni_result *cache_entry_result(const struct cni_cache_entry *e, const char *version,
				      struct cni_err *err);

/* CNI_ARGS text <-> the cache's [["K","V"],...] form. cache_args_json
 * returns NULL for an empty string; cache_args_string NULL for an absent or
 * empty list. Both owned. */
struct cni_json *cache_args_json(const char *args);
char *cache_args_string(const struct cni_json *pairs);

/* Serialize an entry as the reference library does (field order and
 * omissions included). Owned string. */
char *cache_entry_dump(const struct cni_cache_entry *e);

/* Serialize runs of one network against GC: add, check and del take the
 * lock shared, gc exclusive (SPEC.md section 3, "Lifecycle"). The lock is
 * <dir>/locks/<network>. Returns an fd to close, or -1 with an error. */
int cache_lock(const char *dir, const char *network, bool exclusive, struct cni_err *err);

#endif
