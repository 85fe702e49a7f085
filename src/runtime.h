/* The built-in runtime: network configuration lists (SPEC.md section 1)
 * and their execution (section 3), for `cni exec`, cnitool and the Kurma
 * API.
 *
 * Loading validates the whole list before anything runs: every plugin is
 * an object with a safe "type", the version is one we speak, and (when
 * running) every type is either built in or found in CNI_PATH. So a bad
 * list fails before the first plugin touches the host.
 *
 * Running: a type that is a built-in applet runs in this process through
 * invoke_plugin() (no fork, no exec) unless RUNTIME_EXEC is set; any other
 * type is executed from CNI_PATH. ADD chains prevResult and, when a plugin
 * fails, runs DEL for the plugins already run (the failed one included, as
 * it may have half-applied), in reverse, and reports the original error.
 * The final ADD result goes to the result cache (src/cache.h); DEL and
 * CHECK pass the cached result as prevResult and DEL removes the entry.
 * ADD writes the entry before the first plugin runs and again whenever the
 * result changes, so that after a crash half-way DEL and GC find the
 * attachment and its addresses; a failed ADD removes it.
 *
 * Functions never print to stdout and never exit; rollback and GC problems
 * that do not decide the outcome are logged to stderr. */
#ifndef CNI_RUNTIME_H
#define CNI_RUNTIME_H

#include "applet.h"
#include "cache.h"

#define RUNTIME_CONF_DIR "/etc/cni/net.d"
#define RUNTIME_CACHE_DIR "/var/lib/cni"
#define RUNTIME_CNI_PATH "/opt/cni/bin"

/* A loaded, normalized configuration list. */
struct cni_netconf {
	char *name;
	char *version; /* the cniVersion selected for every plugin */
	bool disable_check, disable_gc, load_only_inlined;
	/* The normalized list: cniVersion (the selected one), name, the
	 * list's other keys, and "plugins" (inlined ones first, then those
	 * aggregated from <dir>/<name>/ *.conf). cniVersions is dropped: the
	 * choice is made. This is what the cache stores as "config". */
	struct cni_json *conf;
	const struct cni_json *plugins; /* borrowed from conf */
	size_t n_plugins;
	char *source; /* file it was read from, or NULL */
};

void runtime_netconf_free(struct cni_netconf *nc);
static inline void runtime_netconf_freep(struct cni_netconf **nc)
{
	runtime_netconf_free(*nc);
}

enum {
	/* The text is a list even without a "plugins" key (a .conflist). */
	RUNTIME_LOAD_LIST = 1 << 0,
	/* Do not aggregate plugins from the sibling directory. */
	RUNTIME_LOAD_NO_SIBLINGS = 1 << 1,
};

/* Parse a list, or a single plugin configuration (no "plugins" key and not
 * RUNTIME_LOAD_LIST) wrapped as a one-plugin list. source names the input
 * in errors; when it is a file path, plugins are also aggregated from the
 * directory <dirname>/<name> unless loadOnlyInlinedPlugins is set. Errors:
 * CNI_ERR_DECODE (not JSON), CNI_ERR_INVALID_CONFIG (structure),
 * CNI_ERR_INCOMPATIBLE_VERSION (no version we support). */
struct cni_netconf *runtime_parse(const char *text, size_t len, const char *source,
				  unsigned flags, struct cni_err *err);
/* Read and parse a file (a .conflist is always a list). */
struct cni_netconf *runtime_load_file(const char *path, struct cni_err *err);

/* Kurma's network definition (kurma-network-spec.md): one plugin
 * configuration (or a list) plus Kurma's own keys aci, default and
 * containerInterface, which are dropped before parsing. *ifname gets
 * containerInterface when it is a plain interface name (owned, else
 * NULL). */
struct cni_netconf *runtime_parse_kurma(const char *text, size_t len, char **ifname,
					struct cni_err *err);

/* The configuration files of dir as libcni orders them: *.conflist by
 * name, then *.conf and *.json by name. An absent dir is an empty list.
 * *v is an owned array of owned paths. */
int runtime_conf_files(const char *dir, char ***v, size_t *n, struct cni_err *err);
void runtime_strv_free(char **v, size_t n);
/* Find network `name` in dir. Two files defining the same name is an error
 * naming both (libcni would silently take the first; a runtime that picks
 * one of two conflicting definitions applies the wrong network). */
struct cni_netconf *runtime_find(const char *dir, const char *name, struct cni_err *err);

/* The defaults of the tools: $NETCONFPATH, $CNI_CACHE_DIR, $CNI_PATH when
 * set and non-empty, else the RUNTIME_* paths above. Borrowed. */
const char *runtime_conf_dir(void);
const char *runtime_cache_dir(void);
const char *runtime_cni_path(void);

/* filepath.Abs of Go: absolute (against the cwd) and lexically cleaned,
 * symlinks not resolved. Owned, or NULL if the cwd is unknown. */
char *runtime_abs_path(const char *path);
/* The container id cnitool derives from a netns path: "cnitool-" and the
 * hex of the first 10 bytes of the SHA-512 of its absolute path. Owned. */
char *runtime_netns_id(const char *netns);

/* An attachment is stale once its namespace is gone: the path no longer
 * exists, or no longer is a network namespace (a bind mount left behind
 * as an empty file). Anything else (no permission...) counts as alive, and
 * so does an empty path (libcni before 1.2 recorded none). */
bool runtime_netns_gone(const char *path);

/* One attachment (SPEC.md section 3, "Attachment Parameters"). Borrowed. */
struct cni_attachment {
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args;		 /* CNI_ARGS ("K=V;K=V"), or NULL */
	const struct cni_json *cap_args; /* capability arguments (object), or NULL */
};

enum {
	RUNTIME_EXEC = 1 << 0, /* exec every plugin, built in or not */
};

/* The runtime's settings, and what happened. */
struct cni_runtime {
	const char *cni_path;
	const char *cache_dir;
	unsigned flags;
	/* Out: the plugin that failed (index into plugins, -1: none, e.g. a
	 * load or cache error), and whether the verb was skipped because the
	 * list disables it or its version predates it. */
	int failed;
	const char *failed_type;
	bool skipped;
};

/* ADD the attachment; *res is the final result (owned), also cached. */
int runtime_add(struct cni_runtime *rt, const struct cni_netconf *nc,
		const struct cni_attachment *at, struct cni_result **res, struct cni_err *err);
/* DEL: plugins in reverse with the cached result as prevResult (0.4.0 and
 * later), then the cache entry is removed. Attachment fields left NULL
 * (netns, args, cap_args) are taken from the cache entry. Idempotent. */
int runtime_del(struct cni_runtime *rt, const struct cni_netconf *nc,
		const struct cni_attachment *at, struct cni_err *err);
/* CHECK with the cached result (needs 0.4.0; skipped with disableCheck).
 * A missing cache entry is CNI_ERR_UNKNOWN_CONTAINER: nothing was added. */
int runtime_check(struct cni_runtime *rt, const struct cni_netconf *nc,
		  const struct cni_attachment *at, struct cni_err *err);
/* STATUS of every plugin, stopping at the first failure (needs 1.1.0;
 * earlier versions are skipped, as libcni does). */
int runtime_status(struct cni_runtime *rt, const struct cni_netconf *nc, struct cni_err *err);

/* An attachment still in use, for GC. */
struct cni_gc_attachment {
	char *container_id;
	char *ifname;
};
/* What GC did (owned arrays, runtime_gc_report_free). */
struct cni_gc_report {
	struct cni_gc_attachment *valid, *removed;
	size_t n_valid, n_removed;
	size_t n_errors;
};
void runtime_gc_report_free(struct cni_gc_report *r);

/* GC the network (skipped with disableGC). The valid attachments are the
 * cached ones whose netns still exists (or that recorded none: libcni
 * before 1.2 did not), plus extra[]. Every other cached attachment is
 * stale: DEL runs for it with its cached parameters and its entry goes.
 * Then, from 1.1.0, every plugin gets GC with cni.dev/valid-attachments.
 * Errors do not stop the collection; the first is returned and the count
 * is in report->n_errors (others are logged). */
int runtime_gc(struct cni_runtime *rt, const struct cni_netconf *nc,
	       const struct cni_gc_attachment *extra, size_t n_extra, struct cni_gc_report *report,
	       struct cni_err *err);

#endif
