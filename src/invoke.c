#include "invoke.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "plugin.h"

extern char **environ;

/* What an exec'd plugin may print: results are small, but a broken plugin
 * must not make us buffer without bound. */
#define INVOKE_MAX_OUTPUT (1u << 20)
/* How long an exec'd plugin may run (CNI_EXEC_TIMEOUT overrides). Generous:
 * a DHCP lease or a slow IPAM store can take a while; the point is only
 * that a plugin that never exits cannot hang its caller for ever. */
#define INVOKE_TIMEOUT_SEC 300
/* After the plugin exited, how long a descendant that inherited its stdout
 * may keep the pipe open before we stop waiting for the end of output. */
#define INVOKE_DRAIN_MSEC 1000

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

/* The plugin's environment: ours without any CNI_* variable (except
 * CNI_EXEC_TIMEOUT, so that a plugin delegating further applies the same
 * limit), then the invocation's. */
static char **build_env(const struct cni_invoke_env *env)
{
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **v = xcalloc(n + 8, sizeof(char *));
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "CNI_", 4) != 0 || !strncmp(*e, "CNI_EXEC_TIMEOUT=", 17))
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

/* CNI_EXEC_TIMEOUT in seconds; unset, empty or not a positive integer:
 * the default. */
static unsigned exec_timeout(void)
{
	const char *s = getenv("CNI_EXEC_TIMEOUT");
	if (strempty(s))
		return INVOKE_TIMEOUT_SEC;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 7 * 24 * 3600 || *s == '-' || *s == '+')
		return INVOKE_TIMEOUT_SEC;
	return (unsigned)v;
}

/* A descriptor that polls readable when the child exits, or -1 on kernels
 * before 5.3 (the caller then polls waitpid). */
static int child_fd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	return -1;
#endif
}

struct plugin_run {
	pid_t pid;
	int out_fd; /* read end of the plugin's stdout; -1 once at EOF */
	int status; /* waitpid status, once exited */
	bool exited;
	bool timed_out;
	int read_error; /* -errno reading stdout (E2BIG past the limit), 0 */
	char *out;
	size_t len, cap;
};

/* Read one chunk of stdout; at EOF, on an error or past the limit the pipe
 * is closed (a plugin still writing then gets EPIPE). */
static void read_chunk(struct plugin_run *p)
{
	if (p->cap - p->len < 4097) {
		p->cap = p->cap ? 2 * p->cap : 8192;
		p->out = xrealloc(p->out, p->cap);
	}
	ssize_t r = read(p->out_fd, p->out + p->len, p->cap - p->len - 1);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r > 0 && p->len + (size_t)r <= INVOKE_MAX_OUTPUT) {
		p->len += (size_t)r;
		return;
	}
	if (r < 0)
		p->read_error = -errno;
	else if (r > 0)
		p->read_error = -E2BIG;
	close(p->out_fd);
	p->out_fd = -1;
}

static void reap(struct plugin_run *p, int flags)
{
	int st;
	pid_t r;
	while ((r = waitpid(p->pid, &st, flags)) < 0 && errno == EINTR)
		;
	if (r == p->pid || (r < 0 && errno == ECHILD)) {
		p->exited = true;
		p->status = r == p->pid ? st : 0;
	}
}

/* Collect the plugin's stdout and its exit status within timeout_s. A
 * plugin still running at the deadline is killed (SIGKILL, with its
 * process group) and reaped, with timed_out set. Once it has exited, a
 * descendant holding its stdout gets INVOKE_DRAIN_MSEC more, then the
 * output read so far counts. */
static void wait_plugin(struct plugin_run *p, unsigned timeout_s)
{
	int64_t deadline = monotonic_ms() + (int64_t)timeout_s * 1000, drain_end = 0;
	int pfd = child_fd(p->pid);
	while (!p->exited || p->out_fd >= 0) {
		int64_t now = monotonic_ms();
		if (p->exited && !drain_end)
			drain_end = now + INVOKE_DRAIN_MSEC;
		int64_t end = p->exited && drain_end < deadline ? drain_end : deadline;
		if (now >= end) {
			if (!p->exited) {
				kill(-p->pid, SIGKILL);
				reap(p, 0);
				p->timed_out = true;
			}
			break;
		}
		int64_t wait = end - now;
		/* Without a pidfd, look at the child every 50 ms. */
		if (pfd < 0 && !p->exited && wait > 50)
			wait = 50;
		struct pollfd fds[2];
		nfds_t n = 0;
		if (p->out_fd >= 0)
			fds[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
		int child = -1;
		if (pfd >= 0 && !p->exited) {
			child = (int)n;
			fds[n++] = (struct pollfd){.fd = pfd, .events = POLLIN};
		}
		int r = poll(n ? fds : NULL, n, (int)wait);
		if (r < 0 && errno != EINTR) {
			/* Cannot wait any more: do not leave it running. */
			p->read_error = -errno;
			if (!p->exited)
				kill(-p->pid, SIGKILL);
			break;
		}
		if (r > 0 && p->out_fd >= 0 && fds[0].revents)
			read_chunk(p);
		if (!p->exited && (pfd < 0 || (r > 0 && child >= 0 && fds[child].revents)))
			reap(p, WNOHANG);
	}
	if (!p->exited)
		reap(p, 0);
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->out_fd = -1;
	if (pfd >= 0)
		close(pfd);
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
	write_all(in, input, strlen(input)); /* a memfd: short only without memory */
	lseek(in, 0, SEEK_SET);

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	char **envp = build_env(env);
	char *argv[] = {(char *)type, NULL};
	pid_t pid;
	/* Its own process group, so that a timeout kills whatever it
	 * started too (a shell plugin's children hold its stdout). */
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	int e = posix_spawn(&pid, path, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	strv_free(envp);
	close(in);
	close(pipefd[1]);
	if (e != 0) {
		close(pipefd[0]);
		return err_errno(err, CNI_ERR_INTERNAL, e, "cannot execute plugin %s", path);
	}
	unsigned timeout = exec_timeout();
	struct plugin_run run = {.pid = pid, .out_fd = pipefd[0]};
	wait_plugin(&run, timeout);
	out = run.out ? run.out : xstrdup("");
	outlen = run.len;
	out[outlen] = 0;
	int status = run.status;
	if (run.timed_out) {
		err_set(err, CNI_ERR_INTERNAL, "plugin %s timed out after %u s and was killed",
			type, timeout);
		return err_append(err, "%s (%s %s); CNI_EXEC_TIMEOUT sets the limit", path,
				  cmd_name(env->cmd), env->container_id ? env->container_id : "");
	}
	if (run.read_error < 0)
		return err_errno(err, CNI_ERR_IO, run.read_error,
				 "cannot read the output of plugin %s", type);
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
	/* The tools' names are ours (and cni --install links some of them
	 * into CNI_PATH): executing `add` or `cnitool` as a plugin would feed
	 * a plugin config to a runtime. The runtime refuses them at load
	 * time; this covers delegation (ipam.type) from a lone plugin. */
	if (a && a->main)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: \"%.64s\" is a cni tool, not a plugin",
			       "type", type);
	if (a && !(flags & INVOKE_EXEC))
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
	const struct cni_applet *a = applet_find(type);
	if (a && a->main)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam.type: \"%.64s\" is a cni tool, not a plugin", type);
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
