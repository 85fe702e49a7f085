/* Least privilege: each applet keeps only the capabilities it needs. */
#ifndef CNI_CAPS_H
#define CNI_CAPS_H

#include <stdint.h>

struct cni_applet;

/* Bits are 1ull << CAP_*. CAPS_NET is what a network plugin keeps by
 * default: NET_ADMIN (netlink, netfilter), NET_RAW (raw sockets, iptables),
 * SYS_ADMIN (setns), SYS_PTRACE (open /proc/<pid>/ns/net of another
 * process), DAC_OVERRIDE (state files under /var/lib/cni). */
extern const uint64_t CAPS_NET;

/* Drop every capability not in the applet's set (applet->caps, or CAPS_NET
 * when 0) from the effective, permitted and inheritable sets. Failure to
 * drop is logged, never fatal: dropping is hardening, not a feature. */
void caps_drop_for(const struct cni_applet *a);
/* Drop all capabilities (for --version, VERSION and --help). */
void caps_drop_all(void);
/* The effective set as bits (for tests and `cni --caps`). */
uint64_t caps_effective(void);

#endif
