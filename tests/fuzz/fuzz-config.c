/* The config path of every applet: JSON parse, the common fields, then
 * each applet's .parse (which must not touch the kernel), for ADD and DEL,
 * and for GC and STATUS as runtimes send them: without CNI_CONTAINERID,
 * CNI_IFNAME or CNI_NETNS. */
#include "applet.h"
#include "fuzz.h"
#include "plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cni_err err = {0};
	struct cni_json *j = json_parse((const char *)data, size, &err);
	if (!j)
		return 0;
	free(json_dump(j, true));
	static const enum cni_cmd cmds[] = {CNI_CMD_ADD, CNI_CMD_DEL, CNI_CMD_GC, CNI_CMD_STATUS};
	for (size_t i = 0; i < cni_applets_count; i++) {
		const struct cni_applet *a = cni_applets[i];
		if (!a->parse)
			continue;
		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			bool attach = cmds[c] == CNI_CMD_ADD || cmds[c] == CNI_CMD_DEL;
			struct cni_req req = {
				.cmd = cmds[c],
				.container_id = attach ? "fuzz" : NULL,
				.ifname = attach ? "eth0" : NULL,
				.netns_path = attach ? "/nonexistent/fuzz" : NULL,
				.cni_path = "/nonexistent",
				.applet = a,
			};
			err_clear(&err);
			if (req_init_conf(&req, json_clone(j), &err) == 0)
				a->parse(&req, &err);
			req_free(&req);
		}
	}
	json_free(j);
	return 0;
}
