/* The result cache reader: one file of <cache dir>/results as libcni or we
 * wrote it (or anyone with write access to the directory did), then what
 * the runtime does with an entry: the cached list parsed again, CNI_ARGS
 * rebuilt from cniArgs, the result decoded for DEL and CHECK in every
 * version, and the entry written back. */
#include "cache.h"
#include "fuzz.h"
#include "plugin.h"
#include "runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cni_err err = {0};
	struct cni_cache_entry *e = NULL;
	if (cache_decode("fuzz", (const char *)data, size, &e, &err) < 0)
		return 0;
	if (e->config) {
		struct cni_netconf *nc = runtime_parse(e->config, e->config_len, NULL,
						       RUNTIME_LOAD_LIST | RUNTIME_LOAD_NO_SIBLINGS, &err);
		runtime_netconf_free(nc);
	}
	char *args = cache_args_string(e->cni_args);
	struct cni_json *pairs = cache_args_json(args);
	struct cni_args parsed = {0};
	if (args && args_parse(args, &parsed, &err) == 0)
		args_free(&parsed);
	json_free(pairs);
	free(args);
	for (size_t i = 0; e->result && cni_versions[i]; i++) {
		err_clear(&err);
		struct cni_result *r = result_decode(e->result, cni_versions[i], &err);
		struct cni_json *j = r ? result_encode(r, CNI_SPEC_VERSION, &err) : NULL;
		json_free(j);
		result_free(r);
	}
	if (e->network && e->container_id && e->ifname)
		free(cache_entry_dump(e));
	cache_entry_free(e);
	return 0;
}
