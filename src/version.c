#include <stdio.h>

#include "plugin.h"

const char *const cni_versions[] = {"0.1.0", "0.2.0", "0.3.0", "0.3.1",
				    "0.4.0", "1.0.0", "1.1.0", NULL};

/* Semantic version "x.y.z" (no pre-release tags: no CNI version has one). */
static int parse3(const char *s, long v[3])
{
	if (!s)
		return -1;
	for (int i = 0; i < 3; i++) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		v[i] = strtol(s, &end, 10);
		if (end - s > 6)
			return -1;
		s = end;
		if (i < 2 && *s++ != '.')
			return -1;
	}
	return *s ? -1 : 0;
}

int version_cmp(const char *a, const char *b)
{
	long x[3], y[3];
	if (parse3(a, x) < 0 || parse3(b, y) < 0)
		return -2;
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

bool version_supported(const char *v)
{
	for (size_t i = 0; cni_versions[i]; i++)
		if (streq(cni_versions[i], v))
			return true;
	return false;
}

int version_allows(const char *v, enum cni_cmd cmd, struct cni_err *err)
{
	const char *need = NULL;
	if (cmd == CNI_CMD_CHECK)
		need = "0.4.0";
	else if (cmd == CNI_CMD_STATUS || cmd == CNI_CMD_GC)
		need = "1.1.0";
	if (need && version_cmp(v, need) < 0)
		return err_set(err, CNI_ERR_INCOMPATIBLE_VERSION,
			       "config version \"%s\" does not allow %s (needs %s or later)", v,
			       cmd_name(cmd), need);
	return 0;
}
