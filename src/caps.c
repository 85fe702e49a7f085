#include "caps.h"

#include <stdio.h>
#include <sys/capability.h>

#include "applet.h"

const uint64_t CAPS_NET = 1ull << CAP_NET_ADMIN | 1ull << CAP_NET_RAW | 1ull << CAP_SYS_ADMIN |
			  1ull << CAP_SYS_PTRACE | 1ull << CAP_DAC_OVERRIDE;

static void keep_only(uint64_t keep)
{
	cap_t c = cap_get_proc();
	if (!c)
		return;
	for (cap_value_t v = 0; v <= CAP_LAST_CAP && v < 64; v++) {
		if (keep & (1ull << v))
			continue;
		cap_value_t one[1] = {v};
		cap_set_flag(c, CAP_EFFECTIVE, 1, one, CAP_CLEAR);
		cap_set_flag(c, CAP_PERMITTED, 1, one, CAP_CLEAR);
		cap_set_flag(c, CAP_INHERITABLE, 1, one, CAP_CLEAR);
	}
	if (cap_set_proc(c) < 0)
		fprintf(stderr, "cni: warning: cannot drop capabilities: %m\n");
	cap_free(c);
}

void caps_drop_for(const struct cni_applet *a)
{
	keep_only(a && a->caps ? a->caps : CAPS_NET);
}

void caps_drop_all(void)
{
	keep_only(0);
}

uint64_t caps_effective(void)
{
	uint64_t bits = 0;
	cap_t c = cap_get_proc();
	if (!c)
		return 0;
	for (cap_value_t v = 0; v <= CAP_LAST_CAP && v < 64; v++) {
		cap_flag_value_t f = CAP_CLEAR;
		if (cap_get_flag(c, v, CAP_EFFECTIVE, &f) == 0 && f == CAP_SET)
			bits |= 1ull << v;
	}
	cap_free(c);
	return bits;
}
