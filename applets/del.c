/* del: the Kurma network API's del executable (kurma-network-spec.md).
 *
 *   del NETNS UUID [IFNAME]     (network definition on stdin)
 *
 * The counterpart of `add`: runs DEL of the network defined on stdin for
 * the pod UUID, with the result `add` cached as prevResult, and removes
 * the cache entry. Prints nothing on success. DEL is idempotent: a pod
 * already gone, or deleted twice, is success. On failure it exits 1 with
 * the CNI error on stdout and a one-line message on stderr. */
#include "applet.h"
#include "tool.h"

static const char kurma_del_usage[] =
	"Usage: del NETNS UUID [IFNAME] < network-definition.json\n"
	"Kurma network API: detach the pod from the network defined on stdin.\n"
	"Environment: CNI_PATH, CNI_CACHE_DIR. See cni-kurma(8).\n";

static int kurma_del_main(int argc, char **argv)
{
	return tool_kurma_main(argc, argv, CNI_CMD_DEL, kurma_del_usage, NULL);
}

const struct cni_applet del_applet = {
	.name = "del",
	.summary = "Kurma network API: detach a pod (NETNS UUID [IFNAME], config on stdin)",
	.usage = kurma_del_usage,
	.flags = APPLET_TOOL,
	.main = kurma_del_main,
};
