/* Network sysctls: files under /proc/sys/net, and nothing else.
 *
 * /proc/sys/net shows the network namespace of the thread that opens a
 * file, so sysctl_get / sysctl_set act in the CALLER THREAD's namespace.
 * To target a container, run them inside netns_run(), or use the *_in
 * variants that do exactly that.
 *
 * A key is dotted ("net.ipv4.ip_forward") or slashed
 * ("net/ipv4/conf/eth0.100/forwarding": the form to use when a component,
 * such as a VLAN interface name, contains a dot). It must start with "net",
 * have no empty, "." or ".." component and no leading '/'; anything else
 * fails with CNI_ERR_INVALID_CONFIG before touching the filesystem. */
#ifndef CNI_SYSCTL_H
#define CNI_SYSCTL_H

#include "err.h"
#include "netns.h"

/* Path under /proc/sys for key into buf; 0 or -EINVAL (err set). */
int sysctl_path(const char *key, char *buf, size_t size, struct cni_err *err);

/* Read the value, without the trailing newline, into buf. 0 or -errno
 * (ENOENT: no such sysctl, e.g. an interface that does not exist). */
int sysctl_get(const char *key, char *buf, size_t size, struct cni_err *err);
/* Write value (a newline is not needed). 0 or -errno. Idempotent. */
int sysctl_set(const char *key, const char *value, struct cni_err *err);

/* The same inside ns (NULL: the host namespace). */
int sysctl_get_in(const struct cni_netns *ns, const char *key, char *buf, size_t size,
		  struct cni_err *err);
int sysctl_set_in(const struct cni_netns *ns, const char *key, const char *value,
		  struct cni_err *err);

#endif
