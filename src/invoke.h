/* Running a plugin on behalf of another: IPAM delegation (SPEC.md section
 * 4) and the runtime's chain (section 3). A type that is a built-in applet
 * runs in this process through plugin_invoke(); any other type is looked up
 * in CNI_PATH and executed with the CNI_* environment, config on stdin and
 * its stderr passed through, in a process group of its own: one still
 * running after CNI_EXEC_TIMEOUT seconds (default 300) is killed with that
 * group and fails with code 999, "plugin <type> timed out". */
#ifndef CNI_INVOKE_H
#define CNI_INVOKE_H

#include "applet.h"

/* The environment of one invocation (borrowed strings). */
struct cni_invoke_env {
	enum cni_cmd cmd;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args; /* CNI_ARGS */
	const char *path; /* CNI_PATH */
};

/* A plugin type must be a bare file name: no '/', not "." or "..", no
 * control characters. Code CNI_ERR_INVALID_CONFIG naming field. */
int invoke_check_type(const char *type, const char *field, struct cni_err *err);

/* Find an executable named type in the ':'-separated path list. Returns an
 * owned path, or NULL with an error naming the type and the path. */
char *invoke_find(const char *type, const char *path, struct cni_err *err);

enum {
	INVOKE_EXEC = 1, /* exec even when the type is built in */
};

/* Run plugin `type` with conf (not consumed) and env. On success for ADD
 * (and CHECK/DEL when the plugin printed one) *res is the decoded result in
 * conf's cniVersion, else NULL. On failure err holds the plugin's own CNI
 * error (code, msg, details) when it printed one. */
int invoke_plugin(const char *type, const struct cni_json *conf, const struct cni_invoke_env *env,
		  unsigned flags, struct cni_result **res, struct cni_err *err);

/* IPAM delegation for an interface applet: runs ipam.type of req's config
 * with req's environment and the whole config, for cmd. ADD returns the
 * IPAM result (no interfaces). A type containing '/' or ".." is refused. */
int ipam_exec(struct cni_req *req, enum cni_cmd cmd, struct cni_result **res,
	      struct cni_err *err);

#endif
