/* cnitool: the reference cnitool's command line on top of the built-in
 * runtime, for scripts and habits that expect it.
 *
 *   cnitool add|check|del|gc|status NETNAME NETNS [-i IFNAME]
 *
 * Environment as the reference: NETCONFPATH (default /etc/cni/net.d),
 * CNI_PATH, CNI_ARGS ("K=V;K=V", each pair with a non-empty key and
 * value), CAP_ARGS (a JSON object of capability arguments), CNI_IFNAME
 * (default eth0). The container id is "cnitool-" and 20 hex digits of the
 * SHA-512 of the absolute NETNS path, as the reference computes it, so an
 * attachment added by one tool is deleted by the other.
 *
 * Output as the reference: add prints the result; failures print libcni's
 * one-line error on stderr and exit 1; usage errors exit 1.
 *
 * Differences: CNI_CACHE_DIR selects the cache directory (the reference
 * always uses /var/lib/cni); built-in plugin types run in-process; gc keeps
 * the attachments whose namespace still exists (the reference's gc passes
 * no valid attachments, which deletes every attachment of the network);
 * a network defined by two files is an error. */
#include <getopt.h>
#include <stdio.h>

#include "applet.h"
#include "plugin.h"
#include "tool.h"

static const char cnitool_usage[] =
	"Usage:\n"
	"  cnitool add    <net> <netns>\n"
	"  cnitool check  <net> <netns>\n"
	"  cnitool del    <net> <netns>\n"
	"  cnitool gc     <net> <netns>\n"
	"  cnitool status <net> <netns>\n"
	"Options: -i, --ifname NAME (default $CNI_IFNAME, else eth0)\n"
	"Environment: NETCONFPATH CNI_PATH CNI_ARGS CAP_ARGS CNI_IFNAME CNI_CACHE_DIR\n"
	"See cnitool(8).\n";

/* The reference's CNI_ARGS rules, stricter than the plugins': every pair
 * has exactly one '=' with text on both sides, and no empty pairs. */
static int cnitool_check_args(const char *s)
{
	const char *p = s;
	for (;;) {
		const char *end = strchrnul(p, ';');
		const char *eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || eq == p || eq + 1 == end || memchr(eq + 1, '=', (size_t)(end - eq - 1))) {
			fprintf(stderr, "invalid CNI_ARGS pair \"%.*s\"\n", (int)(end - p), p);
			return -1;
		}
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* libcni's wording: "plugin type=\"bridge\" failed (add): msg; details"
 * for ADD and DEL, the plugin's own error for CHECK and STATUS. */
static void cnitool_error(enum cni_cmd cmd, const struct cni_netconf *nc,
			  const struct cni_runtime *rt, const struct cni_err *err)
{
	char what[160] = "";
	if (nc && rt->failed >= 0 && (cmd == CNI_CMD_ADD || cmd == CNI_CMD_DEL)) {
		const char *pname =
			json_str(json_get(json_at(nc->plugins, (size_t)rt->failed), "name"));
		snprintf(what, sizeof(what), "plugin type=\"%s\"%s%s%s failed (%s): ",
			 rt->failed_type ? rt->failed_type : "", pname ? " name=\"" : "",
			 pname ? pname : "", pname ? "\"" : "", cmd == CNI_CMD_ADD ? "add" : "delete");
	} else if (nc && rt->failed >= 0 && cmd == CNI_CMD_GC) {
		snprintf(what, sizeof(what), "failed to GC plugin %s: ",
			 rt->failed_type ? rt->failed_type : "");
	}
	fprintf(stderr, "%s%s%s%s\n", what, err->msg, err->details[0] ? "; " : "", err->details);
}

static int cnitool_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"ifname", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	_cleanup_(tool_run_clear) struct cni_tool_run t = TOOL_RUN_INIT;
	const char *ifname = NULL;
	enum cni_cmd cmd = CNI_CMD_NONE;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		if (c == 'i') {
			ifname = optarg;
		} else if (c == 'h') {
			fputs(cnitool_usage, stdout);
			return 0;
		} else {
			fputs(cnitool_usage, stderr);
			return 1;
		}
	}
	if (argc - optind < 3) {
		fputs(cnitool_usage, stderr);
		return 1;
	}
	cmd = tool_parse_verb(argv[optind], false);
	if (cmd == CNI_CMD_NONE) {
		fprintf(stderr, "unknown command \"%s\"\n", argv[optind]);
		fputs(cnitool_usage, stderr);
		return 1;
	}
	const char *name = argv[optind + 1];

	t.nc = runtime_find(runtime_conf_dir(), name, &t.err);
	if (!t.nc)
		goto fail;
	const char *ca = getenv("CAP_ARGS");
	if (!strempty(ca) && tool_parse_caps(&t, ca, "CAP_ARGS") < 0)
		goto fail;
	t.args = getenv("CNI_ARGS");
	if (strempty(t.args))
		t.args = NULL;
	else if (cnitool_check_args(t.args) < 0)
		return 1;
	if (!ifname)
		ifname = getenv("CNI_IFNAME");
	if (strempty(ifname))
		ifname = "eth0";
	t.ifname = ifname;
	t.netns = runtime_abs_path(argv[optind + 2]);
	if (!t.netns) {
		fprintf(stderr, "%s: %m\n", argv[optind + 2]);
		return 1;
	}
	t.container_id = runtime_netns_id(t.netns);

	t.rt.cni_path = getenv("CNI_PATH") ? getenv("CNI_PATH") : "";
	t.rt.cache_dir = runtime_cache_dir();
	/* As libcni: a list before 0.4.0 cannot be checked. */
	if (cmd == CNI_CMD_CHECK && version_cmp(t.nc->version, "0.4.0") < 0) {
		fprintf(stderr, "configuration version \"%s\" does not support the CHECK command\n",
			t.nc->version);
		return 1;
	}
	if (tool_run(&t, cmd) < 0 || (cmd == CNI_CMD_ADD && tool_print_result(&t, true) < 0))
		goto fail;
	return fflush(stdout) == 0 ? 0 : 1;
fail:
	cnitool_error(cmd, t.nc, &t.rt, &t.err);
	return 1;
}

const struct cni_applet cnitool_applet = {
	.name = "cnitool",
	.summary = "the reference cnitool's command line",
	.usage = cnitool_usage,
	.flags = APPLET_TOOL,
	.main = cnitool_main,
};
