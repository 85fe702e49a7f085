#include "invoke.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "plugin.h"

extern char **environ;

/* What an exec'd plugin may print: results are small, but a broken plugin
 * must not make us buffer without bound. */
#define INVOKE_MAX_OUTPUT (1u << 20)

int invoke_check_type(const char *type, const char *field, struct cni_err *err)
{
	if (strempty(type))
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: missing plugin type", field);
	if (!name_is_safe(type, 255) || strchr(type, '\\') || strstr(type, ".."))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "%s: invalid plugin type \"%.64s\" (must be a file name, without '/' "
			       "or '..')",
			       field, type);
	return 0;
}

char *invoke_find(const char *type, const char *path, struct cni_err *err)
{
	if (invoke_check_type(type, "type", err) < 0)
		return NULL;
	const char *p = path ? path : "";
	while (*p) {
		const char *end = strchrnul(p, ':');
		if (end > p) {
			char *cand = xasprintf("%.*s/%s", (int)(end - p), p, type);
			struct stat st;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
				return cand;
			free(cand);
		}
		p = *end ? end + 1 : end;
	}
	err_set(err, CNI_ERR_INTERNAL, "failed to find plugin \"%.64s\" in path [%.200s]", type,
		path ? path : "");
	return NULL;
}

static int run_builtin(const struct cni_applet *a, const struct cni_json *conf,
		       const struct cni_invoke_env *env, struct cni_result **res,
		       struct cni_err *err)
{
	struct cni_req req = {
		.cmd = env->cmd,
		.container_id = env->container_id,
		.netns_path = env->netns,
		.ifname = env->ifname,
		.args_raw = env->args,
		.cni_path = env->path,
	};
	struct cni_result *r = NULL;
	int rc = -1;
	if (env_validate(&req, err) < 0 || req_init_conf(&req, json_clone(conf), err) < 0 ||
	    plugin_invoke(a, &req, &r, err) < 0)
		goto out;
	if (env->cmd == CNI_CMD_ADD)
		*res = TAKE_PTR(r);
	rc = 0;
out:
	result_free(r);
	req_free(&req);
	return rc;
}

/* The plugin's environment: ours without any CNI_* variable, then the
 * invocation's. */
static char **build_env(const struct cni_invoke_env *env)
{
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **v = xcalloc(n + 8, sizeof(char *));
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "CNI_", 4) != 0)
			v[k++] = xstrdup(*e);
	v[k++] = xasprintf("CNI_COMMAND=%s", cmd_name(env->cmd));
	if (env->container_id)
		v[k++] = xasprintf("CNI_CONTAINERID=%s", env->container_id);
	if (env->netns)
		v[k++] = xasprintf("CNI_NETNS=%s", env->netns);
	if (env->ifname)
		v[k++] = xasprintf("CNI_IFNAME=%s", env->ifname);
	if (env->args)
		v[k++] = xasprintf("CNI_ARGS=%s", env->args);
	v[k++] = xasprintf("CNI_PATH=%s", env->path ? env->path : "");
	return v;
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* Turn a failed plugin's stdout into our error: its own CNI error when it
 * printed one, else a generic failure quoting what it said. */
static void plugin_error(const char *type, const char *out, size_t len, int status,
			 struct cni_err *err)
{
	struct cni_err ignore = {0};
	_cleanup_(json_freep) struct cni_json *j = len ? json_parse(out, len, &ignore) : NULL;
	uint64_t code = 0;
	const char *msg = NULL, *details = NULL;
	if (j && json_get_uint(j, "code", 0, UINT32_MAX, &code, &ignore) > 0 &&
	    json_get_str(j, "msg", 0, &msg, &ignore) >= 0) {
		json_get_str(j, "details", 0, &details, &ignore);
		err_set(err, code ? (int)code : CNI_ERR_INTERNAL, "%s", msg ? msg : "");
		if (details && *details)
			err_append(err, "%s", details);
		return;
	}
	err_set(err, CNI_ERR_INTERNAL, "plugin %s failed (%s %d)", type,
		WIFEXITED(status) ? "exit status" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	if (len)
		err_append(err, "output: %.300s", out);
}

static int run_exec(const char *type, const struct cni_json *conf,
		    const struct cni_invoke_env *env, struct cni_result **res, struct cni_err *err)
{
	_cleanup_free_ char *path = invoke_find(type, env->path, err);
	if (!path)
		return -1;
	_cleanup_free_ char *input = json_dump(conf, false);
	_cleanup_free_ char *out = NULL;
	size_t outlen = 0;
	int in = memfd_create("cni-stdin", MFD_CLOEXEC);
	int pipefd[2] = {-1, -1};
	if (in < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		int e = errno;
		if (in >= 0)
			close(in);
		return err_errno(err, CNI_ERR_IO, e, "cannot run plugin %s", type);
	}
	size_t left = strlen(input);
	for (const char *p = input; left;) {
		ssize_t w = write(in, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		left -= (size_t)w;
	}
	lseek(in, 0, SEEK_SET);

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	char **envp = build_env(env);
	char *argv[] = {(char *)type, NULL};
	pid_t pid;
	int e = posix_spawn(&pid, path, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	strv_free(envp);
	close(in);
	close(pipefd[1]);
	if (e != 0) {
		close(pipefd[0]);
		return err_errno(err, CNI_ERR_INTERNAL, e, "cannot execute plugin %s", path);
	}
	int r = read_all_fd(pipefd[0], INVOKE_MAX_OUTPUT, &out, &outlen);
	close(pipefd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "cannot read the output of plugin %s", type);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		plugin_error(type, out, outlen, status, err);
		return -1;
	}
	if (env->cmd != CNI_CMD_ADD)
		return 0;
	_cleanup_(json_freep) struct cni_json *j = json_parse(out, outlen, err);
	if (!j)
		return err_append(err, "result of plugin %s", type);
	const char *v = json_str(json_get(conf, "cniVersion"));
	*res = result_decode(j, v ? v : "0.1.0", err);
	return *res ? 0 : err_append(err, "result of plugin %s", type);
}

int invoke_plugin(const char *type, const struct cni_json *conf, const struct cni_invoke_env *env,
		  unsigned flags, struct cni_result **res, struct cni_err *err)
{
	*res = NULL;
	if (invoke_check_type(type, "type", err) < 0)
		return -1;
	const struct cni_applet *a = applet_find(type);
	if (a && !a->main && !(flags & INVOKE_EXEC))
		return run_builtin(a, conf, env, res, err);
	return run_exec(type, conf, env, res, err);
}

int ipam_exec(struct cni_req *req, enum cni_cmd cmd, struct cni_result **res,
	      struct cni_err *err)
{
	const char *type = NULL;
	*res = NULL;
	if (!req->ipam)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "ipam: missing IPAM configuration");
	if (json_get_str(req->ipam, "type", JSON_REQ | JSON_NONEMPTY, &type, err) < 0 ||
	    invoke_check_type(type, "ipam.type", err) < 0)
		return -1;
	struct cni_invoke_env env = {
		.cmd = cmd,
		.container_id = req->container_id,
		.netns = req->netns_path,
		.ifname = req->ifname,
		.args = req->args_raw,
		.path = req->cni_path,
	};
	return invoke_plugin(type, req->conf, &env, 0, res, err);
}
