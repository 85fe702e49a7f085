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
#include <stdio.h>

#include "applet.h"
#include "plugin.h"
#include "tool.h"

static const char list_usage[] =
	"Usage: cni list [NET] [--id ID] [--cache-dir DIR] [--json]\n"
	"List the attachments in the result cache (default $CNI_CACHE_DIR, else\n"
	"/var/lib/cni). See cni-exec(8).\n";

static int list_main(int argc, char **argv)
{
	struct cni_tool_opts opt = {0};
	int rc = tool_parse_opts(argc, argv, list_usage, "cache-dir", true, &opt);
	if (rc != TOOL_CONTINUE)
		return rc;
	const char *id = opt.id, *dir = opt.dir ? opt.dir : runtime_cache_dir();
	bool json = opt.json;

	struct cni_err err = {0};
	struct cni_cache_entry **v = NULL;
	size_t n = 0;
	if (cache_list(dir, opt.arg, &v, &n, &err) < 0) {
		err_log(&err, "cni list");
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
		/* The addresses, in whatever version the result was cached. */
		struct cni_err ignore = {0};
		_cleanup_(result_freep) struct cni_result *r = cache_entry_result(e, "0.1.0", &ignore);
		bool gone = runtime_netns_gone(e->netns);
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
			str_append_item(addrs, sizeof(addrs), ",", b);
		}
		if (!json) {
			_cleanup_free_ char *ns = xasprintf("%s%s", strempty(e->netns) ? "-" : e->netns,
							    gone ? " (gone)" : "");
			printf("%-16s %-28s %-10s %-32s %s\n", e->network, e->container_id,
			       e->ifname, ns, *addrs ? addrs : "-");
		}
	}
	if (json)
		tool_print_json(out, true);
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
