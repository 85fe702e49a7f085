/* Network namespaces. This is the only module that calls setns().
 *
 * A socket opened inside a namespace stays bound to it, so applets open
 * their container-side netlink socket once through netns_run() and never
 * switch again. Work that needs the thread inside (sysctls under
 * /proc/sys/net, which follow the caller's namespace) also uses netns_run. */
#ifndef CNI_NETNS_H
#define CNI_NETNS_H

#include "err.h"

struct cni_netns {
	int fd;
	char *path;
};

/* Open the namespace at path and verify that it is a network namespace
 * (nsfs, type CLONE_NEWNET). A missing path fails with errno ENOENT kept in
 * *errnum (so DEL can treat "already gone" as success); anything that is not
 * a netns is code CNI_ERR_INVALID_ENV naming CNI_NETNS. Returns an owned
 * namespace or NULL. */
struct cni_netns *netns_open(const char *path, int *errnum, struct cni_err *err);
void netns_close(struct cni_netns *ns);
static inline void netns_closep(struct cni_netns **ns)
{
	netns_close(*ns);
}

/* Run fn(arg) with the calling thread inside ns (NULL: the host namespace,
 * i.e. the one the process started in) and return fn's value. The thread
 * is always back in the host namespace afterwards; if it cannot get back
 * the process aborts, since running on in the wrong namespace is worse than
 * dying. Nested calls are allowed. */
int netns_run(const struct cni_netns *ns, int (*fn)(void *arg), void *arg);

/* Whether two references name the same namespace (same nsfs inode). */
bool netns_same(const struct cni_netns *a, const struct cni_netns *b);

#endif
