/* prevResult decoding for every version, and re-encoding what decoded in
 * every version (the runtime converts cached results). */
#include "fuzz.h"
#include "plugin.h"
#include "result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cni_err err = {0};
	struct cni_json *j = json_parse((const char *)data, size, &err);
	if (!j)
		return 0;
	for (size_t i = 0; cni_versions[i]; i++) {
		err_clear(&err);
		struct cni_result *r = result_decode(j, cni_versions[i], &err);
		if (!r)
			continue;
		struct cni_result *c = result_clone(r);
		for (size_t k = 0; cni_versions[k]; k++) {
			err_clear(&err);
			struct cni_json *e = result_encode(c, cni_versions[k], &err);
			free(e ? json_dump(e, false) : NULL);
			json_free(e);
		}
		result_free(c);
		result_free(r);
	}
	json_free(j);
	return 0;
}
