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
#include <strings.h>
#include <sys/stat.h>

#include "applet.h"
#include "plugin.h"
#include "runtime.h"

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

/* Print a JSON tree on stdout, pretty or on one line. */
static void exec_print_json(const struct cni_json *j, bool compact)
{
	_cleanup_free_ char *s = json_dump(j, !compact);
	printf("%s\n", s);
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
	fprintf(stderr, "cni exec: %s: %s failed%s: %s%s%s\n", net, cmd_name(cmd), where,
		err->msg, err->details[0] ? ": " : "", err->details);
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
		exec_print_json(j, true);
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
	struct cni_err err = {0};
	struct cni_runtime rt = {.failed = -1};
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc = NULL;
	_cleanup_(json_freep) struct cni_json *caps = NULL;
	_cleanup_(result_freep) struct cni_result *res = NULL;
	_cleanup_free_ char *netns = NULL, *id = NULL;
	struct cni_gc_report rep = {0};
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
	static const char *const verbs[] = {"add", "del", "check", "status", "gc"};
	static const enum cni_cmd cmds[] = {CNI_CMD_ADD, CNI_CMD_DEL, CNI_CMD_CHECK,
					    CNI_CMD_STATUS, CNI_CMD_GC};
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (!strcasecmp(o.verb, verbs[i]))
			cmd = cmds[i];
	if (cmd == CNI_CMD_NONE) {
		fprintf(stderr, "cni exec: unknown command \"%s\" (add, del, check, status, gc)\n",
			o.verb);
		goto done;
	}
	if (o.netns_arg && !(netns = runtime_abs_path(o.netns_arg))) {
		fprintf(stderr, "cni exec: cannot resolve %s: %m\n", o.netns_arg);
		goto done;
	}
	bool attach = cmd == CNI_CMD_ADD || cmd == CNI_CMD_DEL || cmd == CNI_CMD_CHECK;
	if (attach && !o.id && !netns) {
		fprintf(stderr, "cni exec: %s needs NETNS (or --id for del and check)\n", o.verb);
		goto done;
	}
	if (cmd == CNI_CMD_ADD && !netns) {
		fprintf(stderr, "cni exec: add needs NETNS\n");
		goto done;
	}
	id = o.id ? xstrdup(o.id) : netns ? runtime_netns_id(netns) : NULL;

	rc = 1;
	if (o.args) {
		struct cni_args parsed = {0};
		if (args_parse(o.args, &parsed, &err) < 0)
			goto fail;
		args_free(&parsed);
	}
	if (o.cap_args_text) {
		caps = json_parse(o.cap_args_text, strlen(o.cap_args_text), &err);
		if (!caps) {
			err_append(&err, "in --cap-args");
			goto fail;
		}
		if (!json_is(caps, JSON_OBJECT)) {
			err_set(&err, CNI_ERR_DECODE, "--cap-args: expected a JSON object");
			goto fail;
		}
	}
	rt.cni_path = o.cni_path ? o.cni_path : runtime_cni_path();
	rt.cache_dir = o.cache_dir ? o.cache_dir : runtime_cache_dir();
	rt.flags = o.exec ? RUNTIME_EXEC : 0;
	const char *conf_dir = o.conf_dir ? o.conf_dir : runtime_conf_dir();

	if (exec_is_file(o.target)) {
		nc = runtime_load_file(o.target, &err);
	} else {
		nc = runtime_find(conf_dir, o.target, &err);
		/* A network removed from the configuration directory can still
		 * be deleted (or checked) with the list cached at ADD time. */
		struct cni_cache_entry *e = NULL;
		struct cni_err ce = {0};
		if (!nc && (cmd == CNI_CMD_DEL || cmd == CNI_CMD_CHECK) && id &&
		    env_check_netname(o.target, "network", &ce) == 0 &&
		    env_check_container_id(id, "container id", &ce) == 0 &&
		    env_check_ifname(o.ifname, "ifname", &ce) == 0 &&
		    cache_read(rt.cache_dir, o.target, id, o.ifname, &e, &ce) > 0 && e->config) {
			nc = runtime_parse(e->config, e->config_len, e->path,
					   RUNTIME_LOAD_LIST | RUNTIME_LOAD_NO_SIBLINGS, &ce);
			if (nc) {
				fprintf(stderr, "cni exec: %s: using the configuration cached in %s\n",
					o.target, e->path);
				err_clear(&err);
			}
		}
		cache_entry_free(e);
	}
	if (!nc)
		goto fail;
	net = nc->name;

	struct cni_attachment at = {
		.container_id = id,
		.netns = netns,
		.ifname = o.ifname,
		.args = o.args,
		.cap_args = caps,
	};
	switch (cmd) {
	case CNI_CMD_ADD:
		if (runtime_add(&rt, nc, &at, &res, &err) < 0)
			goto fail;
		if (!o.quiet) {
			_cleanup_(json_freep) struct cni_json *j = result_encode(res, nc->version, &err);
			if (!j)
				goto fail;
			exec_print_json(j, o.json);
		}
		break;
	case CNI_CMD_DEL:
		if (runtime_del(&rt, nc, &at, &err) < 0)
			goto fail;
		break;
	case CNI_CMD_CHECK:
		if (runtime_check(&rt, nc, &at, &err) < 0)
			goto fail;
		if (rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: disableCheck is set, nothing checked\n", net);
		break;
	case CNI_CMD_STATUS:
		if (runtime_status(&rt, nc, &err) < 0)
			goto fail;
		if (rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: version %s has no STATUS, nothing checked\n",
				net, nc->version);
		break;
	case CNI_CMD_GC:
		if (runtime_gc(&rt, nc, o.valid, o.n_valid, &rep, &err) < 0) {
			exec_gc_output(&o, &rep);
			if (rep.n_errors > 1)
				err_append(&err, "and %zu more errors", rep.n_errors - 1);
			goto fail;
		}
		if (rt.skipped && !o.quiet)
			fprintf(stderr, "cni exec: %s: disableGC is set, nothing collected\n", net);
		exec_gc_output(&o, &rep);
		break;
	default:
		break;
	}
	if (fflush(stdout) != 0) {
		err_errno(&err, CNI_ERR_IO, errno, "cannot write the output");
		goto fail;
	}
	rc = 0;
	goto done;
fail:
	exec_report(&o, net, cmd, nc, &rt, &err);
	rc = 1;
done:
	runtime_gc_report_free(&rep);
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
