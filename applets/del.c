/* del: the Kurma network API's del executable (kurma-network-spec.md).
 *
 *   del NETNS UUID [IFNAME]     (network definition on stdin)
 *
 * The counterpart of `add`: runs DEL of the network defined on stdin for
 * the pod UUID, with the result `add` cached as prevResult, and removes
 * the cache entry. Prints nothing on success. DEL is idempotent: a pod
 * already gone, or deleted twice, is success. On failure it exits 1 with
 * the CNI error on stdout and a one-line message on stderr. */
#include <errno.h>
#include <stdio.h>

#include "applet.h"
#include "plugin.h"
#include "runtime.h"

static const char kurma_del_usage[] =
	"Usage: del NETNS UUID [IFNAME] < network-definition.json\n"
	"Kurma network API: detach the pod from the network defined on stdin.\n"
	"Environment: CNI_PATH, CNI_CACHE_DIR. See cni-kurma(8).\n";

static int kurma_del_main(int argc, char **argv)
{
	struct cni_err err = {0};
	struct cni_runtime rt = {.failed = -1};
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc = NULL;
	_cleanup_free_ char *input = NULL, *netns = NULL, *ci = NULL;
	size_t len = 0;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		fputs(kurma_del_usage, stdout);
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fputs(kurma_del_usage, stderr);
		return 2;
	}
	int r = read_all_fd(0, JSON_MAX_BYTES, &input, &len);
	if (r < 0) {
		err_errno(&err, CNI_ERR_IO, r, "cannot read the network definition from stdin");
		goto fail;
	}
	if (!(nc = runtime_parse_kurma(input, len, &ci, &err)))
		goto fail;
	if (!(netns = runtime_abs_path(argv[1]))) {
		err_errno(&err, CNI_ERR_INVALID_ENV, errno, "cannot resolve %s", argv[1]);
		goto fail;
	}
	rt.cni_path = runtime_cni_path();
	rt.cache_dir = runtime_cache_dir();
	struct cni_attachment at = {
		.container_id = argv[2],
		.netns = netns,
		.ifname = argc > 3 ? argv[3] : ci ? ci : "eth0",
	};
	if (runtime_del(&rt, nc, &at, &err) < 0)
		goto fail;
	return 0;
fail:
	err_print(&err, nc ? nc->version : CNI_SPEC_VERSION, stdout);
	fprintf(stderr, "del: %s%s%s%s%s\n", rt.failed_type ? rt.failed_type : "",
		rt.failed_type ? ": " : "", err.msg, err.details[0] ? ": " : "", err.details);
	return 1;
}

const struct cni_applet del_applet = {
	.name = "del",
	.summary = "Kurma network API: detach a pod (NETNS UUID [IFNAME], config on stdin)",
	.usage = kurma_del_usage,
	.flags = APPLET_TOOL,
	.main = kurma_del_main,
};
