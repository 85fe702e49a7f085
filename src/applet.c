#include "applet.h"

const struct cni_applet *applet_find(const char *name)
{
	/* Two dozen entries: a scan is cheaper than keeping them sorted. */
	for (size_t i = 0; name && i < cni_applets_count; i++)
		if (streq(cni_applets[i]->name, name))
			return cni_applets[i];
	return NULL;
}
