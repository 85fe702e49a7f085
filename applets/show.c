/* show: the network configurations as the runtime sees them.
 *
 *   cni show [NET|FILE] [--conf-dir DIR] [--json]
 *
 * With NET (or a file), prints the loaded, normalized list: the cniVersion
 * the runtime selected (cniVersions resolved), a single-plugin .conf
 * wrapped as a list, plugins aggregated from <dir>/<name>/ appended: what
 * `cni exec` will run and the result cache will record. Without, one line
 * per configuration file of the directory: network name, selected
 * version, plugin types, file, or why the file cannot be used. */
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "plugin.h"
#include "tool.h"

static const char show_usage[] =
	"Usage: cni show [NET|FILE] [--conf-dir DIR] [--json]\n"
	"Print the normalized configuration list of NET, or list the networks in the\n"
	"configuration directory (default $NETCONFPATH, else /etc/cni/net.d).\n"
	"See cni-exec(8).\n";

static int show_all(const char *dir, bool json)
{
	struct cni_err err = {0};
	char **files = NULL;
	size_t n = 0;
	if (runtime_conf_files(dir, &files, &n, &err) < 0) {
		err_log(&err, "cni show");
		return 1;
	}
	_cleanup_(json_freep) struct cni_json *out = json ? json_new(JSON_ARRAY) : NULL;
	if (!json)
		printf("%-20s %-8s %-40s %s\n", "NETWORK", "VERSION", "PLUGINS", "FILE");
	for (size_t i = 0; i < n; i++) {
		struct cni_err e = {0};
		_cleanup_(runtime_netconf_freep) struct cni_netconf *nc =
			runtime_load_file(files[i], &e);
		char types[256] = "";
		struct cni_json *o = json ? json_push(out, json_new(JSON_OBJECT)) : NULL;
		if (o)
			json_set(o, "file", json_new_str(files[i]));
		if (!nc) {
			if (o) {
				json_set(o, "error", json_new_str(e.msg));
				continue;
			}
			printf("%-20s %-8s %-40s %s (%s)\n", "-", "-", "-", files[i], e.msg);
			continue;
		}
		struct cni_json *a = NULL;
		if (o) {
			json_set(o, "name", json_new_str(nc->name));
			json_set(o, "cniVersion", json_new_str(nc->version));
			a = json_set(o, "plugins", json_new(JSON_ARRAY));
		}
		for (size_t k = 0; k < nc->n_plugins; k++) {
			const char *t = json_str(json_get(json_at(nc->plugins, k), "type"));
			if (a)
				json_push(a, json_new_str(t));
			str_append_item(types, sizeof(types), ",", t);
		}
		if (!o)
			printf("%-20s %-8s %-40s %s\n", nc->name, nc->version, types, files[i]);
	}
	if (json)
		tool_print_json(out, true);
	runtime_strv_free(files, n);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int show_main(int argc, char **argv)
{
	struct cni_tool_opts opt = {0};
	int rc = tool_parse_opts(argc, argv, show_usage, "conf-dir", false, &opt);
	if (rc != TOOL_CONTINUE)
		return rc;
	const char *dir = opt.dir ? opt.dir : runtime_conf_dir();
	if (!opt.arg)
		return show_all(dir, opt.json);

	const char *t = opt.arg;
	struct cni_err err = {0};
	struct stat st;
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc =
		strchr(t, '/') || (stat(t, &st) == 0 && S_ISREG(st.st_mode))
			? runtime_load_file(t, &err)
			: runtime_find(dir, t, &err);
	if (!nc) {
		err_print(&err, CNI_SPEC_VERSION, stdout);
		err_log(&err, "cni show: %s", t);
		return 1;
	}
	tool_print_json(nc->conf, !opt.json);
	return fflush(stdout) == 0 ? 0 : 1;
}

const struct cni_applet show_applet = {
	.name = "show",
	.summary = "print a network's normalized configuration list",
	.usage = show_usage,
	.flags = APPLET_TOOL | APPLET_NOLINK,
	.main = show_main,
};
