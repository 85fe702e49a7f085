/* The runtime's loading of network configuration lists from bytes: a
 * .conflist, a single .conf wrapped as a list, Kurma's network definition
 * (what cni exec, cnitool and the Kurma API read before anything runs),
 * and the path cleaning cni exec applies to a netns argument. No source
 * file is named, so nothing is read from disk. */
#include "fuzz.h"
#include "plugin.h"
#include "runtime.h"

static void one(const char *text, size_t size, unsigned flags)
{
	struct cni_err err = {0};
	struct cni_netconf *nc = runtime_parse(text, size, NULL, flags, &err);
	if (!nc)
		return;
	/* What the cache stores as "config" must load again, as cni exec does
	 * for a network gone from the configuration directory. (Only for a
	 * list: wrapping a single configuration nests it two levels deeper,
	 * which may pass JSON_MAX_DEPTH.) */
	if (!(flags & RUNTIME_LOAD_LIST)) {
		runtime_netconf_free(nc);
		return;
	}
	char *s = json_dump(nc->conf, false);
	struct cni_netconf *again = runtime_parse(s, strlen(s), NULL, RUNTIME_LOAD_LIST, &err);
	if (!again || again->n_plugins != nc->n_plugins || !streq(again->version, nc->version))
		__builtin_trap();
	runtime_netconf_free(again);
	free(s);
	runtime_netconf_free(nc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	one(text, size, 0);
	one(text, size, RUNTIME_LOAD_LIST);
	struct cni_err err = {0};
	char *ifname = NULL;
	struct cni_netconf *nc = runtime_parse_kurma(text, size, &ifname, &err);
	runtime_netconf_free(nc);
	free(ifname);
	if (size && size < 4096 && !memchr(data, 0, size)) {
		char *p = xasprintf("/%.*s", (int)size, text);
		free(runtime_abs_path(p));
		free(p);
	}
	return 0;
}
