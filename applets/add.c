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
#include "applet.h"
#include "tool.h"

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
	return tool_kurma_main(argc, argv, CNI_CMD_ADD, kurma_add_usage, kurma_result);
}

const struct cni_applet add_applet = {
	.name = "add",
	.summary = "Kurma network API: attach a pod (NETNS UUID [IFNAME], config on stdin)",
	.usage = kurma_add_usage,
	.flags = APPLET_TOOL,
	.main = kurma_add_main,
};
