/* add: the Kurma network API's add executable (kurma-network-spec.md).
 *
 *   add NETNS UUID [IFNAME]     (network definition on stdin)
 *
 * Kurma calls /opt/network/add with the path of the pod's network
 * namespace, its UUID and the interface to configure; stdin holds one
 * network definition: a CNI plugin configuration (or list) plus Kurma's
 * aci, default and containerInterface, which are ignored. The definition
 * runs through the built-in runtime as `cni exec FILE add` would, with the
 * UUID as container id, so the result is cached under $CNI_CACHE_DIR
 * (default /var/lib/cni) and `del` finds it. IFNAME defaults to
 * containerInterface, else eth0.
 *
 * Output is the result in the ip4/ip6 form the Kurma spec shows (the CNI
 * 0.2.0 shape without cniVersion; dns only when set). On failure it exits
 * 1 with the CNI error on stdout and a one-line message on stderr, which
 * Kurma reads. Concurrent calls for different pods are safe: each has its
 * own cache file and the plugins lock their shared state. */
#include <errno.h>
#include <stdio.h>

#include "applet.h"
#include "plugin.h"
#include "runtime.h"

static const char kurma_add_usage[] =
	"Usage: add NETNS UUID [IFNAME] < network-definition.json\n"
	"Kurma network API: attach the pod to the network defined on stdin and print\n"
	"its addresses. Environment: CNI_PATH, CNI_CACHE_DIR. See cni-kurma(8).\n";

/* The Kurma result: {"ip4": {ip, gateway, routes}, "ip6": {...}}. */
static struct cni_json *kurma_result(const struct cni_result *r, struct cni_err *err)
{
	struct cni_json *j = result_encode(r, "0.2.0", err);
	if (!j)
		return NULL;
	json_del(j, "cniVersion");
	const struct cni_json *dns = json_get(j, "dns");
	if (dns && dns->type == JSON_OBJECT && !dns->obj.n)
		json_del(j, "dns");
	return j;
}

static int kurma_add_main(int argc, char **argv)
{
	struct cni_err err = {0};
	struct cni_runtime rt = {.failed = -1};
	_cleanup_(runtime_netconf_freep) struct cni_netconf *nc = NULL;
	_cleanup_(result_freep) struct cni_result *res = NULL;
	_cleanup_(json_freep) struct cni_json *out = NULL;
	_cleanup_free_ char *input = NULL, *netns = NULL, *ci = NULL, *s = NULL;
	size_t len = 0;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		fputs(kurma_add_usage, stdout);
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fputs(kurma_add_usage, stderr);
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
	if (runtime_add(&rt, nc, &at, &res, &err) < 0 || !(out = kurma_result(res, &err)))
		goto fail;
	s = json_dump(out, true);
	printf("%s\n", s);
	return fflush(stdout) == 0 ? 0 : 1;
fail:
	err_print(&err, nc ? nc->version : CNI_SPEC_VERSION, stdout);
	fprintf(stderr, "add: %s%s%s%s%s\n", rt.failed_type ? rt.failed_type : "",
		rt.failed_type ? ": " : "", err.msg, err.details[0] ? ": " : "", err.details);
	return 1;
}

const struct cni_applet add_applet = {
	.name = "add",
	.summary = "Kurma network API: attach a pod (NETNS UUID [IFNAME], config on stdin)",
	.usage = kurma_add_usage,
	.flags = APPLET_TOOL,
	.main = kurma_add_main,
};
