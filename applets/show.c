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
#include <getopt.h>
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "plugin.h"
#include "runtime.h"

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
		fprintf(stderr, "cni show: %s%s%s\n", err.msg, err.details[0] ? ": " : "",
			err.details);
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
			size_t l = strlen(types);
			snprintf(types + l, sizeof(types) - l, "%s%s", l ? "," : "", t);
		}
		if (!o)
			printf("%-20s %-8s %-40s %s\n", nc->name, nc->version, types, files[i]);
	}
	if (json) {
		_cleanup_free_ char *s = json_dump(out, true);
		printf("%s\n", s);
	}
	runtime_strv_free(files, n);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int show_main(int argc, char **argv)
{
	enum { O_CONF = 256, O_JSON };
	static const struct option longopts[] = {
		{"conf-dir", required_argument, NULL, O_CONF},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *dir = NULL;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_CONF:
			dir = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			fputs(show_usage, stdout);
			return 0;
		default:
			fputs(show_usage, stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(show_usage, stderr);
		return 2;
	}
	if (!dir)
		dir = runtime_conf_dir();
	if (optind == argc)
		return show_all(dir, json);

	const char *t = argv[optind];
	struct cni_err err = {0};
	struct stat st;
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc =
		strchr(t, '/') || (stat(t, &st) == 0 && S_ISREG(st.st_mode))
			? runtime_load_file(t, &err)
			: runtime_find(dir, t, &err);
	if (!nc) {
		err_print(&err, CNI_SPEC_VERSION, stdout);
		fprintf(stderr, "cni show: %s: %s%s%s\n", t, err.msg, err.details[0] ? ": " : "",
			err.details);
		return 1;
	}
	_cleanup_free_ char *s = json_dump(nc->conf, !json);
	printf("%s\n", s);
	return fflush(stdout) == 0 ? 0 : 1;
}

const struct cni_applet show_applet = {
	.name = "show",
	.summary = "print a network's normalized configuration list",
	.usage = show_usage,
	.flags = APPLET_TOOL | APPLET_NOLINK,
	.main = show_main,
};
