/* The plugin protocol driver: environment, config, version, verb, result
 * or error. plugin_main() is what a symlinked applet runs; plugin_invoke()
 * is the same request processing without any process I/O, used by the
 * in-process runtime and by IPAM delegation. */
#ifndef CNI_PLUGIN_H
#define CNI_PLUGIN_H

#include "applet.h"

#define CNI_SPEC_VERSION "1.1.0"

/* Supported spec versions, oldest first, NULL-terminated. */
extern const char *const cni_versions[];
/* Compare two "x.y.z" versions; -2 if either is malformed. */
int version_cmp(const char *a, const char *b);
bool version_supported(const char *v);
/* Whether cmd may be used with config version v (CHECK >= 0.4.0, STATUS
 * and GC >= 1.1.0); fills a code 1 error when not. */
int version_allows(const char *v, enum cni_cmd cmd, struct cni_err *err);

/* Parse CNI_ARGS ("K=V;K=V"): each pair must have exactly one '='.
 * Returns 0 or -1 with code CNI_ERR_INVALID_ENV naming CNI_ARGS. */
int args_parse(const char *s, struct cni_args *out, struct cni_err *err);
void args_free(struct cni_args *a);
/* The reference's IgnoreUnknown semantics: every key must be one of
 * known[] unless IgnoreUnknown=1/true is given. Code CNI_ERR_INVALID_CONFIG
 * naming the unknown keys. */
int args_check_known(const struct cni_args *a, const char *const *known, struct cni_err *err);

/* Validate a container id / ifname / network name (as the reference's
 * utils.ValidateContainerID, ValidateInterfaceName, ValidateNetworkName). */
int env_check_container_id(const char *id, const char *var, struct cni_err *err);
int env_check_ifname(const char *ifname, const char *var, struct cni_err *err);
int env_check_netname(const char *name, const char *field, struct cni_err *err);

/* Fill req's CNI_* fields from the process environment and check that the
 * variables required for req->cmd are present and valid. */
int env_load(struct cni_req *req, struct cni_err *err);
/* The same checks for a request whose CNI_* fields were filled by the
 * caller (the runtime, delegation); also parses args_raw into args. */
int env_validate(struct cni_req *req, struct cni_err *err);

/* Build a request for cmd from a parsed config (takes ownership of conf):
 * reads the common fields (cniVersion, name, type, ipam, runtimeConfig,
 * prevResult). The CNI_* fields are the caller's to fill before. */
int req_init_conf(struct cni_req *req, struct cni_json *conf, struct cni_err *err);
void req_free(struct cni_req *req); /* frees what the request owns */
/* GC: whether (id, ifname) is in the request's cni.dev/valid-attachments. */
bool req_gc_is_valid(const struct cni_req *req, const char *id, const char *ifname);

/* Run one request against an applet: parse, dispatch the verb, undo a
 * failed ADD. On ADD/CHECK/DEL success *res holds the result (for ADD: the
 * applet's, starting from prevResult). Never prints, never exits. */
int plugin_invoke(const struct cni_applet *a, struct cni_req *req, struct cni_result **res,
		  struct cni_err *err);

/* main() of a plugin applet: the whole process protocol. Returns the exit
 * status. */
int plugin_main(const struct cni_applet *a, int argc, char **argv);

#endif
