/* list: the attachments recorded in the result cache.
 *
 *   cni list [NET] [--id ID] [--cache-dir DIR] [--json]
 *
 * One line per attachment: network, container id, interface, netns and
 * the addresses of its cached result. This reads the cache only (libcni's
 * layout, so attachments made by podman, cnitool or containerd with the
 * same cache directory show too); it does not look at the kernel. A
 * netns that no longer exists is marked "(gone)": `cni exec NET gc`
 * collects such attachments. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "applet.h"
#include "plugin.h"
#include "runtime.h"

static const char list_usage[] =
	"Usage: cni list [NET] [--id ID] [--cache-dir DIR] [--json]\n"
	"List the attachments in the result cache (default $CNI_CACHE_DIR, else\n"
	"/var/lib/cni). See cni-exec(8).\n";

/* The addresses of a cached result, in whatever version it was cached. */
static struct cni_result *list_result(const struct cni_cache_entry *e)
{
	struct cni_err ignore = {0};
	if (!e->result)
		return NULL;
	const char *v = json_str(json_get(e->result, "cniVersion"));
	return result_decode(e->result, v ? v : "0.1.0", &ignore);
}

static bool list_netns_gone(const char *path)
{
	int e = 0;
	struct cni_err ignore = {0};
	if (strempty(path))
		return false;
	struct cni_netns *ns = netns_open(path, &e, &ignore);
	netns_close(ns);
	return !ns && (e == ENOENT || e == EINVAL);
}

static int list_main(int argc, char **argv)
{
	enum { O_ID = 256, O_CACHE, O_JSON };
	static const struct option longopts[] = {
		{"id", required_argument, NULL, O_ID},
		{"cache-dir", required_argument, NULL, O_CACHE},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *id = NULL, *dir = NULL, *net = NULL;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_ID:
			id = optarg;
			break;
		case O_CACHE:
			dir = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			fputs(list_usage, stdout);
			return 0;
		default:
			fputs(list_usage, stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fputs(list_usage, stderr);
		return 2;
	}
	if (optind < argc)
		net = argv[optind];
	if (!dir)
		dir = runtime_cache_dir();

	struct cni_err err = {0};
	struct cni_cache_entry **v = NULL;
	size_t n = 0;
	if (cache_list(dir, net, &v, &n, &err) < 0) {
		fprintf(stderr, "cni list: %s%s%s\n", err.msg, err.details[0] ? ": " : "",
			err.details);
		return 1;
	}
	_cleanup_(json_freep) struct cni_json *out = json ? json_new(JSON_ARRAY) : NULL;
	if (!json)
		printf("%-16s %-28s %-10s %-32s %s\n", "NETWORK", "CONTAINER", "IFNAME", "NETNS",
		       "ADDRESSES");
	for (size_t i = 0; i < n; i++) {
		const struct cni_cache_entry *e = v[i];
		if (id && !streq(e->container_id, id))
			continue;
		_cleanup_(result_freep) struct cni_result *r = list_result(e);
		bool gone = list_netns_gone(e->netns);
		char addrs[512] = "";
		struct cni_json *o = NULL, *a = NULL;
		if (json) {
			o = json_push(out, json_new(JSON_OBJECT));
			json_set(o, "network", json_new_str(e->network));
			json_set(o, "containerID", json_new_str(e->container_id));
			json_set(o, "ifname", json_new_str(e->ifname));
			json_set(o, "netns", json_new_str(e->netns ? e->netns : ""));
			json_set(o, "netnsGone", json_new_bool(gone));
			a = json_set(o, "addresses", json_new(JSON_ARRAY));
			json_set(o, "cacheFile", json_new_str(e->path));
		}
		for (size_t k = 0; r && k < r->n_ips; k++) {
			char b[CIDR_STRLEN];
			ip_cidr_format(&r->ips[k].address, b);
			if (a)
				json_push(a, json_new_str(b));
			size_t l = strlen(addrs);
			snprintf(addrs + l, sizeof(addrs) - l, "%s%s", l ? "," : "", b);
		}
		if (!json) {
			_cleanup_free_ char *ns = xasprintf("%s%s", strempty(e->netns) ? "-" : e->netns,
							    gone ? " (gone)" : "");
			printf("%-16s %-28s %-10s %-32s %s\n", e->network, e->container_id,
			       e->ifname, ns, *addrs ? addrs : "-");
		}
	}
	if (json) {
		_cleanup_free_ char *s = json_dump(out, true);
		printf("%s\n", s);
	}
	cache_list_free(v, n);
	return fflush(stdout) == 0 ? 0 : 1;
}

const struct cni_applet list_applet = {
	.name = "list",
	.summary = "list the attachments in the result cache",
	.usage = list_usage,
	.flags = APPLET_TOOL | APPLET_NOLINK,
	.main = list_main,
};
