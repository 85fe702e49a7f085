#include "plugin.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>

#include "caps.h"
#include "config.h"

struct cni_undo {
	void (*fn)(struct cni_req *req, void *arg);
	void *arg;
	void (*free_arg)(void *arg);
	struct cni_undo *next;
};

/* Crash-safety tests: CNI_TEST_KILL_AFTER=N makes the process SIGKILL
 * itself right after the Nth host change of this process (every change
 * pushes its undo here), to prove that DEL and GC clean up after an ADD
 * that died at any point. */
static void test_kill_point(void)
{
	static long left = -1;
	if (left == -1) {
		const char *s = getenv("CNI_TEST_KILL_AFTER");
		left = s ? atol(s) : 0;
		if (left <= 0)
			left = 0;
	}
	if (left > 0 && --left == 0)
		kill(getpid(), SIGKILL);
}

void req_push_undo(struct cni_req *req, void (*fn)(struct cni_req *req, void *arg), void *arg,
		   void (*free_arg)(void *arg))
{
	struct cni_undo *u = xcalloc(1, sizeof(*u));
	u->fn = fn;
	u->arg = arg;
	u->free_arg = free_arg;
	u->next = req->undo;
	req->undo = u;
	test_kill_point();
}

static void undo_pop_all(struct cni_req *req, bool run)
{
	while (req->undo) {
		struct cni_undo *u = req->undo;
		req->undo = u->next;
		if (run && u->fn)
			u->fn(req, u->arg);
		if (u->free_arg)
			u->free_arg(u->arg);
		free(u);
	}
}

void req_run_undo(struct cni_req *req)
{
	undo_pop_all(req, true);
}

void req_drop_undo(struct cni_req *req)
{
	undo_pop_all(req, false);
}

struct cni_netns *req_netns(struct cni_req *req, bool *gone, struct cni_err *err)
{
	if (gone)
		*gone = false;
	if (req->ns)
		return req->ns;
	if (strempty(req->netns_path)) {
		if (req->cmd == CNI_CMD_DEL || req->cmd == CNI_CMD_GC) {
			if (gone)
				*gone = true;
			return NULL;
		}
		err_set(err, CNI_ERR_INVALID_ENV, "CNI_NETNS: required env variable missing");
		return NULL;
	}
	int e = 0;
	struct cni_err tmp = {0};
	req->ns = netns_open(req->netns_path, &e, &tmp);
	if (!req->ns) {
		/* DEL is best effort: a namespace that is already gone leaves
		 * only host-side state to clean up. */
		if (req->cmd == CNI_CMD_DEL && (e == ENOENT || e == EINVAL)) {
			if (gone)
				*gone = true;
			return NULL;
		}
		*err = err_isset(err) ? *err : tmp;
		return NULL;
	}
	return req->ns;
}

void req_free(struct cni_req *req)
{
	if (!req)
		return;
	req_drop_undo(req);
	if (req->priv && req->applet && req->applet->free)
		req->applet->free(req->priv);
	req->priv = NULL;
	result_free(req->prev);
	req->prev = NULL;
	netns_close(req->ns);
	req->ns = NULL;
	args_free(&req->args);
	json_free(req->conf);
	req->conf = NULL;
}

int req_init_conf(struct cni_req *req, struct cni_json *conf, struct cni_err *err)
{
	req->conf = conf;
	if (!json_is(conf, JSON_OBJECT))
		return err_set(err, CNI_ERR_DECODE, "network config: expected a JSON object");
	const char *v = "0.1.0";
	/* A missing cniVersion means 0.1.0, the first spec version. */
	if (json_get_str(conf, "cniVersion", 0, &v, err) < 0) {
		err->code = CNI_ERR_DECODE;
		return -1;
	}
	req->version = v;
	if (version_cmp(v, "0.0.0") == -2)
		return err_set(err, CNI_ERR_INCOMPATIBLE_VERSION,
			       "cniVersion: malformed version \"%.32s\"", v);
	if (!version_supported(v))
		return err_set(err, CNI_ERR_INCOMPATIBLE_VERSION,
			       "cniVersion: unsupported version \"%.32s\" (supported: 0.1.0 to %s)", v,
			       CNI_SPEC_VERSION);
	if (req->cmd == CNI_CMD_VERSION)
		return 0;

	const char *name = NULL;
	if (json_get_str(conf, "name", 0, &name, err) < 0)
		return -1;
	if (env_check_netname(name, "name", err) < 0)
		return -1;
	req->name = name;
	if (json_get_str(conf, "type", 0, &req->type, err) < 0)
		return -1;
	if (json_get_obj(conf, "ipam", 0, &req->ipam, err) < 0 ||
	    json_get_obj(conf, "runtimeConfig", 0, &req->rt, err) < 0)
		return -1;
	const struct cni_json *args = NULL;
	if (json_get_obj(conf, "args", 0, &args, err) < 0)
		return -1;
	bool masq;
	if (json_get_bool(conf, "ipMasq", 0, &masq, err) < 0)
		return -1;
	const struct cni_json *dns = NULL;
	if (json_get_obj(conf, "dns", 0, &dns, err) < 0)
		return -1;
	if (req->cmd == CNI_CMD_GC) {
		const struct cni_json *va = NULL;
		if (json_get_arr(conf, "cni.dev/valid-attachments", 0, &va, err) < 0)
			return -1;
		for (size_t i = 0; i < json_len(va); i++) {
			const struct cni_json *a = json_at(va, i);
			if (!json_is(a, JSON_OBJECT))
				return json_err(err, a, "expected {containerID, ifname}");
			const char *s;
			if (json_get_str(a, "containerID", JSON_REQ, &s, err) < 0 ||
			    json_get_str(a, "ifname", JSON_REQ, &s, err) < 0)
				return -1;
		}
	}
	const struct cni_json *prev = json_get(conf, "prevResult");
	if (prev) {
		req->prev = result_decode(prev, v, err);
		if (!req->prev)
			return -1;
	}
	return 0;
}

bool req_gc_is_valid(const struct cni_req *req, const char *id, const char *ifname)
{
	const struct cni_json *va = json_get(req->conf, "cni.dev/valid-attachments");
	for (size_t i = 0; i < json_len(va); i++) {
		const struct cni_json *a = json_at(va, i);
		if (streq(json_str(json_get(a, "containerID")), id) &&
		    streq(json_str(json_get(a, "ifname")), ifname))
			return true;
	}
	return false;
}

int plugin_invoke(const struct cni_applet *a, struct cni_req *req, struct cni_result **res,
		  struct cni_err *err)
{
	int (*fn)(struct cni_req *, struct cni_result *, struct cni_err *) = NULL;
	*res = NULL;
	req->applet = a;
	if (version_allows(req->version, req->cmd, err) < 0)
		return -1;
	switch (req->cmd) {
	case CNI_CMD_ADD:
		fn = a->add;
		if (!fn)
			return err_set(err, CNI_ERR_INVALID_ENV, "ADD is not supported by %s", a->name);
		break;
	case CNI_CMD_DEL:
		fn = a->del;
		break;
	case CNI_CMD_CHECK:
		fn = a->check;
		break;
	case CNI_CMD_STATUS:
		fn = a->status;
		break;
	case CNI_CMD_GC:
		fn = a->gc;
		break;
	default:
		return err_set(err, CNI_ERR_INVALID_ENV, "CNI_COMMAND: %s is not dispatched here",
			       cmd_name(req->cmd));
	}
	if (a->parse && a->parse(req, err) < 0)
		return -1;
	/* A chained plugin passes prevResult through with its changes; an
	 * IPAM plugin reports only its own allocation. */
	_cleanup_(result_freep) struct cni_result *r = req->prev && !(a->flags & APPLET_IPAM)
							       ? result_clone(req->prev)
							       : result_new(req->version);
	free(r->cni_version);
	r->cni_version = xstrdup(req->version);
	if (!fn) {
		*res = TAKE_PTR(r);
		return 0;
	}
	int rc = fn(req, r, err);
	if (rc < 0) {
		if (!err_isset(err))
			err_set(err, CNI_ERR_INTERNAL, "%s: %s failed", a->name, cmd_name(req->cmd));
		if (req->cmd == CNI_CMD_ADD)
			req_run_undo(req);
		return -1;
	}
	req_drop_undo(req);
	*res = TAKE_PTR(r);
	return 0;
}

static int print_version(const struct cni_json *conf)
{
	const char *v = json_str(json_get(conf, "cniVersion"));
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "cniVersion", json_new_str(v && version_supported(v) ? v : CNI_SPEC_VERSION));
	struct cni_json *a = json_set(o, "supportedVersions", json_new(JSON_ARRAY));
	for (size_t i = 0; cni_versions[i]; i++)
		json_push(a, json_new_str(cni_versions[i]));
	char *s = json_dump(o, false);
	printf("%s\n", s);
	free(s);
	json_free(o);
	return fflush(stdout) == 0 ? 0 : 1;
}

int plugin_main(const struct cni_applet *a, int argc, char **argv)
{
	struct cni_req req = {0};
	struct cni_err err = {0};
	_cleanup_free_ char *input = NULL;
	_cleanup_(result_freep) struct cni_result *res = NULL;
	const char *ver = CNI_SPEC_VERSION;
	size_t len = 0;
	int rc = 1;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("%s - %s\n\n%s\nSee cni-%s(8).\n", a->name, a->summary,
		       a->usage ? a->usage : "", a->name);
		return 0;
	}
	if (argc > 1 && streq(argv[1], "--version")) {
		printf("CNI %s plugin (cni %s), CNI protocol versions supported: 0.1.0 to %s\n",
		       a->name, CNI_PROGRAM_VERSION, CNI_SPEC_VERSION);
		return 0;
	}
	if (streq(getenv("CNI_COMMAND"), "VERSION"))
		caps_drop_all();
	else
		caps_drop_for(a);

	int e = read_all_fd(0, JSON_MAX_BYTES, &input, &len);
	if (e == -E2BIG) {
		err_set(&err, CNI_ERR_DECODE, "network config larger than %u bytes", JSON_MAX_BYTES);
		goto out;
	}
	if (e < 0) {
		err_errno(&err, CNI_ERR_IO, e, "error reading network config from stdin");
		goto out;
	}
	if (env_load(&req, &err) < 0) {
		/* Report in the request's version when it can be read. */
		struct cni_err ignore = {0};
		struct cni_json *j = json_parse(input, len, &ignore);
		const char *v = json_str(json_get(j, "cniVersion"));
		static char vbuf[16];
		if (v && version_supported(v))
			ver = strcpy(vbuf, v);
		json_free(j);
		goto out;
	}
	if (getenv("CNI_TEST_CAPS"))
		fprintf(stderr, "caps=%llx\n", (unsigned long long)caps_effective());
	if (req.cmd == CNI_CMD_VERSION) {
		struct cni_err ignore = {0};
		struct cni_json *j = len ? json_parse(input, len, &ignore) : NULL;
		rc = print_version(j);
		json_free(j);
		goto done;
	}
	struct cni_json *conf = json_parse(input, len, &err);
	if (!conf)
		goto out;
	if (req_init_conf(&req, conf, &err) < 0) {
		if (req.version && version_supported(req.version))
			ver = req.version;
		goto out;
	}
	ver = req.version;
	if (plugin_invoke(a, &req, &res, &err) < 0)
		goto out;
	if (req.cmd == CNI_CMD_ADD) {
		struct cni_json *j = result_encode(res, req.version, &err);
		if (!j)
			goto out;
		char *s = json_dump(j, true);
		printf("%s\n", s);
		free(s);
		json_free(j);
		if (fflush(stdout) != 0) {
			err_errno(&err, CNI_ERR_IO, errno, "error writing result");
			goto out;
		}
	}
	rc = 0;
	goto done;
out:
	err_print(&err, ver, stdout);
	if (err.details[0])
		fprintf(stderr, "%s: %s: %s\n", a->name, err.msg, err.details);
	else
		fprintf(stderr, "%s: %s\n", a->name, err.msg);
	rc = 1;
done:
	req_free(&req);
	return rc;
}
