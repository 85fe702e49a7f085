/* Applets: one file in applets/ each, registered by name in
 * applets/meson.build, which generates the table cni_applets[] from that
 * list (name "host-local" gives symbol host_local_applet).
 *
 * A plugin applet sets .parse and the verb handlers; the generic driver in
 * src/plugin.c reads the environment and stdin, validates, negotiates the
 * version, calls .parse (so bad config never reaches the kernel), then the
 * verb's handler, and prints the result or the error.
 *
 * Default for a NULL handler:
 *   add   - CNI_ERR_INVALID_ENV ("ADD not supported by <name>")
 *   del   - success (nothing to undo)
 *   check - success
 *   status- success (ready)
 *   gc    - success (nothing to collect)
 * VERSION is generic and never reaches the applet.
 *
 * A tool (exec, cnitool, Kurma add/del) sets .main instead and owns its
 * argv; the driver is not involved. */
#ifndef CNI_APPLET_H
#define CNI_APPLET_H

#include "err.h"
#include "json.h"
#include "netns.h"
#include "result.h"

enum cni_cmd {
	CNI_CMD_NONE = 0,
	CNI_CMD_ADD,
	CNI_CMD_DEL,
	CNI_CMD_CHECK,
	CNI_CMD_STATUS,
	CNI_CMD_GC,
	CNI_CMD_VERSION,
};
const char *cmd_name(enum cni_cmd c);	 /* "ADD" ... */
enum cni_cmd cmd_parse(const char *s); /* exact, upper case; NONE if unknown */

/* CNI_ARGS, "K=V;K=V" in order. */
struct cni_kv {
	char *key, *val;
};
struct cni_args {
	struct cni_kv *kv;
	size_t n, cap;
};
/* The value for key, or NULL. */
const char *args_get(const struct cni_args *a, const char *key);

struct cni_undo;

/* One plugin invocation, as the driver or the runtime built it. Strings are
 * borrowed from the environment or owned by the request (freed by
 * req_free). */
struct cni_req {
	enum cni_cmd cmd;
	const char *container_id; /* CNI_CONTAINERID */
	const char *netns_path;	  /* CNI_NETNS (may be NULL for DEL/GC/STATUS) */
	const char *ifname;	  /* CNI_IFNAME */
	const char *args_raw;	  /* CNI_ARGS as given */
	const char *cni_path;	  /* CNI_PATH */
	struct cni_args args;	  /* CNI_ARGS parsed */

	struct cni_json *conf;	    /* the whole request config (owned) */
	const char *version;	    /* cniVersion of conf ("0.1.0" if absent) */
	const char *name;	    /* network name */
	const char *type;	    /* plugin type */
	struct cni_result *prev;    /* decoded prevResult, or NULL */
	const struct cni_json *rt;  /* runtimeConfig object, or NULL */
	const struct cni_json *ipam;/* ipam object, or NULL */

	/* Opened by req_netns() on first use; NULL for the host. */
	struct cni_netns *ns;

	const struct cni_applet *applet;
	void *priv; /* the applet's parsed config, freed with applet->free */

	/* Undo steps pushed by ADD, run in reverse if ADD fails. */
	struct cni_undo *undo;
};

struct cni_applet {
	const char *name;
	const char *summary; /* one line, for --list */
	const char *usage;   /* printed by --help */
	unsigned flags;
	/* Capabilities kept while running (1ull << CAP_*); 0: CAPS_NET. */
	uint64_t caps;

	int (*main)(int argc, char **argv);

	int (*parse)(struct cni_req *req, struct cni_err *err);
	void (*free)(void *priv);
	int (*add)(struct cni_req *req, struct cni_result *res, struct cni_err *err);
	int (*del)(struct cni_req *req, struct cni_result *res, struct cni_err *err);
	int (*check)(struct cni_req *req, struct cni_result *res, struct cni_err *err);
	int (*status)(struct cni_req *req, struct cni_result *res, struct cni_err *err);
	int (*gc)(struct cni_req *req, struct cni_result *res, struct cni_err *err);
};

enum {
	/* An IPAM plugin: its ADD result has no interfaces. */
	APPLET_IPAM = 1 << 0,
	/* A tool (sets .main), not a CNI plugin. */
	APPLET_TOOL = 1 << 1,
	/* Only reachable as `cni NAME`: `cni --install` makes no symlink for
	 * it (exec, list, show would be odd names in CNI_PATH). */
	APPLET_NOLINK = 1 << 2,
};

/* The generated, name-sorted registry. */
extern const struct cni_applet *const cni_applets[];
extern const size_t cni_applets_count;
/* Look up by exact name; NULL if not built in. */
const struct cni_applet *applet_find(const char *name);

/* Push an undo step for the current ADD: fn(arg) runs in reverse push
 * order if the ADD fails; free_arg (may be NULL) releases arg either way.
 * An undo must tolerate the thing already being gone. */
void req_push_undo(struct cni_req *req, void (*fn)(struct cni_req *req, void *arg), void *arg,
		   void (*free_arg)(void *arg));
/* Run (and drop) the pending undo steps in reverse order. */
void req_run_undo(struct cni_req *req);
/* Drop the pending undo steps without running them (ADD succeeded). */
void req_drop_undo(struct cni_req *req);

/* The container namespace for this request, opened once (CNI_NETNS).
 * On DEL a missing namespace returns NULL with *gone = true and no error,
 * so DEL can finish its host-side cleanup. */
struct cni_netns *req_netns(struct cni_req *req, bool *gone, struct cni_err *err);

#endif
