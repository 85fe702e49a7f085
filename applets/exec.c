/* exec: the built-in runtime. Runs a network configuration list on one
 * attachment as a container runtime does (SPEC.md section 3):
 *
 *   cni exec NET|FILE add|del|check|status|gc [NETNS] [options]
 *
 * NET is looked up in the configuration directory; an argument with a '/'
 * (or an existing file ending in .conflist, .conf or .json) is read as a file.
 * Built-in plugin types run in this process; others are executed from
 * CNI_PATH; --exec executes every plugin (to compare both paths).
 *
 * The container id defaults to the one cnitool derives from the netns
 * path, so cnitool and `cni exec` manage the same attachments, and the
 * result cache is libcni's, so podman, containerd and cnitool can delete
 * what we added and the other way round. Where we differ from libcni:
 * a network defined by two files is an error instead of the first one
 * silently winning; DEL and CHECK of a network whose file is gone use the
 * list cached at ADD time; gc keeps attachments whose namespace is alive
 * (cnitool's gc collects every attachment). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "plugin.h"
#include "tool.h"

struct exec_opts {
	const char *target, *verb, *netns_arg;
	const char *ifname, *id, *args, *cap_args_text;
	const char *conf_dir, *cache_dir, *cni_path;
	struct cni_gc_attachment *valid;
	size_t n_valid;
	bool exec, json, quiet;
};

static const char exec_usage[] =
	"Usage: cni exec NET|FILE add|del|check|status|gc [NETNS] [options]\n"
	"\n"
	"  -i, --ifname NAME     interface in the container (default eth0)\n"
	"      --id ID           container id (default: derived from NETNS as cnitool does)\n"
	"      --args 'K=V;..'   CNI_ARGS\n"
	"      --cap-args JSON   capability arguments, e.g. '{\"portMappings\":[...]}'\n"
	"      --conf-dir DIR    where NET is looked up (default $NETCONFPATH, else\n"
	"                        /etc/cni/net.d)\n"
	"      --cache-dir DIR   result cache (default $CNI_CACHE_DIR, else /var/lib/cni)\n"
	"      --cni-path PATH   plugin directories (default $CNI_PATH, else /opt/cni/bin)\n"
	"      --exec            execute every plugin from CNI_PATH, even built-in ones\n"
	"      --valid ID/IFNAME gc: an attachment still in use (repeatable)\n"
	"      --json            print JSON on one line\n"
	"  -q, --quiet           print nothing but errors\n"
	"\n"
	"add prints the result; del, check and status print nothing. On failure the\n"
	"CNI error is printed on stdout and a one-line message on stderr. See cni-exec(8).\n";

/* A target naming a file rather than a network: network names cannot hold
 * '/', but they can end in ".conf", so an extension alone needs the file. */
static bool exec_is_file(const char *t)
{
	struct stat st;
	if (strchr(t, '/'))
		return true;
	size_t n = strlen(t);
	bool ext = (n > 9 && !strcmp(t + n - 9, ".conflist")) ||
		   (n > 5 && !strcmp(t + n - 5, ".conf")) || (n > 5 && !strcmp(t + n - 5, ".json"));
	return ext && stat(t, &st) == 0 && S_ISREG(st.st_mode);
}

static int exec_parse(int argc, char **argv, struct exec_opts *o)
{
	enum { O_ID = 256, O_ARGS, O_CAPS, O_CONF, O_CACHE, O_PATH, O_EXEC, O_VALID, O_JSON };
	static const struct option longopts[] = {
		{"ifname", required_argument, NULL, 'i'},
		{"id", required_argument, NULL, O_ID},
		{"args", required_argument, NULL, O_ARGS},
		{"cap-args", required_argument, NULL, O_CAPS},
		{"conf-dir", required_argument, NULL, O_CONF},
		{"cache-dir", required_argument, NULL, O_CACHE},
		{"cni-path", required_argument, NULL, O_PATH},
		{"exec", no_argument, NULL, O_EXEC},
		{"valid", required_argument, NULL, O_VALID},
		{"json", no_argument, NULL, O_JSON},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "i:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->ifname = optarg;
			break;
		case O_ID:
			o->id = optarg;
			break;
		case O_ARGS:
			o->args = optarg;
			break;
		case O_CAPS:
			o->cap_args_text = optarg;
			break;
		case O_CONF:
			o->conf_dir = optarg;
			break;
		case O_CACHE:
			o->cache_dir = optarg;
			break;
		case O_PATH:
			o->cni_path = optarg;
			break;
		case O_EXEC:
			o->exec = true;
			break;
		case O_VALID: {
			const char *slash = strrchr(optarg, '/');
			if (!slash || slash == optarg || !slash[1]) {
				fprintf(stderr, "cni exec: --valid wants ID/IFNAME, not \"%s\"\n",
					optarg);
				return -1;
			}
			o->valid = xrealloc(o->valid, (o->n_valid + 1) * sizeof(*o->valid));
			o->valid[o->n_valid].container_id =
				xstrndup(optarg, (size_t)(slash - optarg));
			o->valid[o->n_valid].ifname = xstrdup(slash + 1);
			o->n_valid++;
			break;
		}
		case O_JSON:
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			return 1;
		default:
			return -1;
		}
	}
	int n = argc - optind;
	if (n < 2 || n > 3) {
		fprintf(stderr, "cni exec: expected NET|FILE, a command and an optional NETNS\n");
		return -1;
	}
	o->target = argv[optind];
	o->verb = argv[optind + 1];
	o->netns_arg = n == 3 ? argv[optind + 2] : NULL;
	return 0;
}

static void exec_opts_free(struct exec_opts *o)
{
	for (size_t i = 0; i < o->n_valid; i++) {
		free(o->valid[i].container_id);
		free(o->valid[i].ifname);
	}
	free(o->valid);
}

static void exec_report(const struct exec_opts *o, const char *net, enum cni_cmd cmd,
			const struct cni_netconf *nc, const struct cni_runtime *rt,
			const struct cni_err *err)
{
	if (!o->quiet)
		err_print(err, nc ? nc->version : CNI_SPEC_VERSION, stdout);
	char where[96] = "";
	if (nc && rt->failed >= 0)
		snprintf(where, sizeof(where), " at plugin %d/%zu (%s)", rt->failed + 1,
			 nc->n_plugins, rt->failed_type ? rt->failed_type : "?");
	err_log(err, "cni exec: %s: %s failed%s", net, cmd_name(cmd), where);
}

static int exec_gc_output(const struct exec_opts *o, const struct cni_gc_report *rep)
{
	if (o->quiet)
		return 0;
	if (o->json) {
		_cleanup_(json_freep) struct cni_json *j = json_new(JSON_OBJECT);
		const struct cni_gc_attachment *lists[] = {rep->valid, rep->removed};
		size_t counts[] = {rep->n_valid, rep->n_removed};
		const char *keys[] = {"valid", "removed"};
		for (int k = 0; k < 2; k++) {
			struct cni_json *a = json_set(j, keys[k], json_new(JSON_ARRAY));
			for (size_t i = 0; i < counts[k]; i++) {
				struct cni_json *x = json_push(a, json_new(JSON_OBJECT));
				json_set(x, "containerID", json_new_str(lists[k][i].container_id));
				json_set(x, "ifname", json_new_str(lists[k][i].ifname));
			}
		}
		tool_print_json(j, false);
		return 0;
	}
	for (size_t i = 0; i < rep->n_removed; i++)
		printf("removed stale attachment %s/%s\n", rep->removed[i].container_id,
		       rep->removed[i].ifname);
	return 0;
}

static int exec_main(int argc, char **argv)
{
	struct exec_opts o = {.ifname = "eth0"};
	struct cni_tool_run t = TOOL_RUN_INIT;
	enum cni_cmd cmd = CNI_CMD_NONE;
	const char *net = "?";
	int rc = 2;

	int p = exec_parse(argc, argv, &o);
	if (p != 0) {
		fputs(exec_usage, p > 0 ? stdout : stderr);
		rc = p > 0 ? 0 : 2;
		goto done;
	}
	net = o.target;
	cmd = tool_parse_verb(o.verb, true);
	if (cmd == CNI_CMD_NONE) {
		fprintf(stderr, "cni exec: unknown command \"%s\" (add, del, check, status, gc)\n",
			o.verb);
		goto done;
	}
	if (o.netns_arg && !(t.netns = runtime_abs_path(o.netns_arg))) {
		fprintf(stderr, "cni exec: cannot resolve %s: %m\n", o.netns_arg);
		goto done;
	}
	bool attach = cmd == CNI_CMD_ADD || cmd == CNI_CMD_DEL || cmd == CNI_CMD_CHECK;
	if (attach && !o.id && !t.netns) {
		fprintf(stderr, "cni exec: %s needs NETNS (or --id for del and check)\n", o.verb);
		goto done;
	}
	if (cmd == CNI_CMD_ADD && !t.netns) {
		fprintf(stderr, "cni exec: add needs NETNS\n");
		goto done;
	}
	t.container_id = o.id ? xstrdup(o.id) : t.netns ? runtime_netns_id(t.netns) : NULL;

	rc = 1;
	if (o.args) {
		struct cni_args parsed = {0};
		if (args_parse(o.args, &parsed, &t.err) < 0)
			goto fail;
		args_free(&parsed);
	}
	if (o.cap_args_text && tool_parse_caps(&t, o.cap_args_text, "--cap-args") < 0) {
		if (!t.cap_args)
			err_append(&t.err, "in --cap-args");
		goto fail;
	}
	t.rt.cni_path = o.cni_path ? o.cni_path : runtime_cni_path();
	t.rt.cache_dir = o.cache_dir ? o.cache_dir : runtime_cache_dir();
	t.rt.flags = o.exec ? RUNTIME_EXEC : 0;
	const char *conf_dir = o.conf_dir ? o.conf_dir : runtime_conf_dir();

	if (exec_is_file(o.target)) {
		t.nc = runtime_load_file(o.target, &t.err);
	} else {
		t.nc = runtime_find(conf_dir, o.target, &t.err);
		/* A network removed from the configuration directory can still
		 * be deleted (or checked) with the list cached at ADD time. */
		struct cni_cache_entry *e = NULL;
		struct cni_err ce = {0};
		if (!t.nc && (cmd == CNI_CMD_DEL || cmd == CNI_CMD_CHECK) && t.container_id &&
		    env_check_netname(o.target, "network", &ce) == 0 &&
		    env_check_container_id(t.container_id, "container id", &ce) == 0 &&
		    env_check_ifname(o.ifname, "ifname", &ce) == 0 &&
		    cache_read(t.rt.cache_dir, o.target, t.container_id, o.ifname, &e, &ce) > 0 &&
		    e->config) {
			t.nc = runtime_parse(e->config, e->config_len, e->path,
					     RUNTIME_LOAD_LIST | RUNTIME_LOAD_NO_SIBLINGS, &ce);
			if (t.nc) {
				fprintf(stderr, "cni exec: %s: using the configuration cached in %s\n",
					o.target, e->path);
				err_clear(&t.err);
			}
		}
		cache_entry_free(e);
	}
	if (!t.nc)
		goto fail;
	net = t.nc->name;

	t.ifname = o.ifname;
	t.args = o.args;
	t.valid = o.valid;
	t.n_valid = o.n_valid;
	if (tool_run(&t, cmd) < 0) {
		if (cmd == CNI_CMD_GC) {
			exec_gc_output(&o, &t.rep);
			if (t.rep.n_errors > 1)
				err_append(&t.err, "and %zu more errors", t.rep.n_errors - 1);
		}
		goto fail;
	}
	switch (cmd) {
	case CNI_CMD_ADD:
		if (!o.quiet && tool_print_result(&t, !o.json) < 0)
			goto fail;
		break;
	case CNI_CMD_CHECK:
		if (t.rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: disableCheck is set, nothing checked\n", net);
		break;
	case CNI_CMD_STATUS:
		if (t.rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: version %s has no STATUS, nothing checked\n",
				net, t.nc->version);
		break;
	case CNI_CMD_GC:
		if (t.rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: disableGC is set, nothing collected\n", net);
		exec_gc_output(&o, &t.rep);
		break;
	default:
		break;
	}
	if (fflush(stdout) != 0) {
		err_errno(&t.err, CNI_ERR_IO, errno, "cannot write the output");
		goto fail;
	}
	rc = 0;
	goto done;
fail:
	exec_report(&o, net, cmd, t.nc, &t.rt, &t.err);
	rc = 1;
done:
	tool_run_clear(&t);
	exec_opts_free(&o);
	return rc;
}

const struct cni_applet exec_applet = {
	.name = "exec",
	.summary = "run a network configuration list (built-in runtime)",
	.usage = exec_usage,
	.flags = APPLET_TOOL | APPLET_NOLINK,
	.main = exec_main,
};
