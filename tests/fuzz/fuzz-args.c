/* CNI_ARGS and the name validators: the input is one environment value. */
#include "fuzz.h"
#include "plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size);
	struct cni_args a = {0};
	struct cni_err err = {0};
	if (args_parse(s, &a, &err) == 0) {
		static const char *const known[] = {"IP", "MAC", "K8S_POD_NAME", NULL};
		args_check_known(&a, known, &err);
		args_get(&a, "IP");
		args_free(&a);
	}
	env_check_ifname(s, "CNI_IFNAME", &err);
	env_check_container_id(s, "CNI_CONTAINERID", &err);
	env_check_netname(s, "name", &err);
	free(s);
	return 0;
}
