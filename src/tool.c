#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <strings.h>

#include "plugin.h"

void tool_print_json(const struct cni_json *j, bool pretty)
{
	_cleanup_free_ char *s = json_dump(j, pretty);
	printf("%s\n", s);
}

enum cni_cmd tool_parse_verb(const char *s, bool any_case)
{
	static const struct {
		const char *name;
		enum cni_cmd cmd;
	} verbs[] = {
		{"add", CNI_CMD_ADD},
		{"del", CNI_CMD_DEL},
		{"check", CNI_CMD_CHECK},
		{"status", CNI_CMD_STATUS},
		{"gc", CNI_CMD_GC},
	};
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (any_case ? !strcasecmp(s, verbs[i].name) : streq(s, verbs[i].name))
			return verbs[i].cmd;
	return CNI_CMD_NONE;
}

int tool_parse_opts(int argc, char **argv, const char *usage, const char *dir_opt, bool with_id,
		    struct cni_tool_opts *o)
{
	enum { O_ID = 256, O_DIR, O_JSON };
	/* --id first, so that without it the table starts one later: each
	 * tool accepts (and abbreviates) only its own options. */
	const struct option longopts[] = {
		{"id", required_argument, NULL, O_ID},
		{dir_opt, required_argument, NULL, O_DIR},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", with_id ? longopts : longopts + 1, NULL)) != -1) {
		switch (c) {
		case O_ID:
			o->id = optarg;
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_JSON:
			o->json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(usage, stderr);
		return 2;
	}
	o->arg = optind < argc ? argv[optind] : NULL;
	return TOOL_CONTINUE;
}

void tool_run_clear(struct cni_tool_run *t)
{
	runtime_netconf_free(t->nc);
	free(t->container_id);
	free(t->netns);
	json_free(t->cap_args);
	result_free(t->res);
	runtime_gc_report_free(&t->rep);
	t->nc = NULL;
	t->container_id = t->netns = NULL;
	t->cap_args = NULL;
	t->res = NULL;
}

int tool_run(struct cni_tool_run *t, enum cni_cmd cmd)
{
	const struct cni_attachment at = {
		.container_id = t->container_id,
		.netns = t->netns,
		.ifname = t->ifname,
		.args = t->args,
		.cap_args = t->cap_args,
	};
	switch (cmd) {
	case CNI_CMD_ADD:
		return runtime_add(&t->rt, t->nc, &at, &t->res, &t->err);
	case CNI_CMD_DEL:
		return runtime_del(&t->rt, t->nc, &at, &t->err);
	case CNI_CMD_CHECK:
		return runtime_check(&t->rt, t->nc, &at, &t->err);
	case CNI_CMD_STATUS:
		return runtime_status(&t->rt, t->nc, &t->err);
	case CNI_CMD_GC:
		return runtime_gc(&t->rt, t->nc, t->valid, t->n_valid, &t->rep, &t->err);
	default:
		return 0;
	}
}

int tool_parse_caps(struct cni_tool_run *t, const char *text, const char *what)
{
	t->cap_args = json_parse(text, strlen(text), &t->err);
	if (!t->cap_args)
		return -1;
	if (!json_is(t->cap_args, JSON_OBJECT))
		return err_set(&t->err, CNI_ERR_DECODE, "%s: expected a JSON object", what);
	return 0;
}

int tool_print_result(struct cni_tool_run *t, bool pretty)
{
	_cleanup_(json_freep) struct cni_json *j = result_encode(t->res, t->nc->version, &t->err);
	if (!j)
		return -1;
	tool_print_json(j, pretty);
	return 0;
}

int tool_kurma_main(int argc, char **argv, enum cni_cmd cmd, const char *usage,
		    struct cni_json *(*output)(const struct cni_result *res, struct cni_err *err))
{
	_cleanup_(tool_run_clear) struct cni_tool_run t = TOOL_RUN_INIT;
	_cleanup_(json_freep) struct cni_json *out = NULL;
	_cleanup_free_ char *input = NULL, *ci = NULL;
	size_t len = 0;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fputs(usage, stderr);
		return 2;
	}
	int r = read_all_fd(0, JSON_MAX_BYTES, &input, &len);
	if (r < 0) {
		err_errno(&t.err, CNI_ERR_IO, r, "cannot read the network definition from stdin");
		goto fail;
	}
	if (!(t.nc = runtime_parse_kurma(input, len, &ci, &t.err)))
		goto fail;
	if (!(t.netns = runtime_abs_path(argv[1]))) {
		err_errno(&t.err, CNI_ERR_INVALID_ENV, errno, "cannot resolve %s", argv[1]);
		goto fail;
	}
	t.rt.cni_path = runtime_cni_path();
	t.rt.cache_dir = runtime_cache_dir();
	t.container_id = xstrdup(argv[2]);
	t.ifname = argc > 3 ? argv[3] : ci ? ci : "eth0";
	if (tool_run(&t, cmd) < 0)
		goto fail;
	if (cmd == CNI_CMD_ADD && output) {
		if (!(out = output(t.res, &t.err)))
			goto fail;
		tool_print_json(out, true);
	}
	return fflush(stdout) == 0 ? 0 : 1;
fail:
	err_print(&t.err, t.nc ? t.nc->version : CNI_SPEC_VERSION, stdout);
	err_log(&t.err, "%s%s%s", cmd == CNI_CMD_ADD ? "add" : "del", t.rt.failed_type ? ": " : "",
		t.rt.failed_type ? t.rt.failed_type : "");
	return 1;
}
