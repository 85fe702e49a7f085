#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE 0xb703 /* _IO(0xb7, 0x3) */
#endif

static int host_fd = -1;

static int host_ns_fd(void)
{
	if (host_fd < 0) {
		host_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (host_fd < 0)
			abort();
	}
	return host_fd;
}

struct cni_netns *netns_open(const char *path, int *errnum, struct cni_err *err)
{
	if (errnum)
		*errnum = 0;
	if (strempty(path)) {
		err_set(err, CNI_ERR_INVALID_ENV, "CNI_NETNS: empty");
		return NULL;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		if (errnum)
			*errnum = e;
		err_errno(err, e == ENOENT ? CNI_ERR_UNKNOWN_CONTAINER : CNI_ERR_INVALID_ENV, e,
			  "CNI_NETNS: cannot open %s", path);
		return NULL;
	}
	struct statfs sfs;
	if (fstatfs(fd, &sfs) < 0 || (sfs.f_type != NSFS_MAGIC && sfs.f_type != 0x9fa0 /* proc */) ||
	    ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		close(fd);
		if (errnum)
			*errnum = EINVAL;
		err_set(err, CNI_ERR_INVALID_ENV, "CNI_NETNS: %s is not a network namespace", path);
		return NULL;
	}
	host_ns_fd();
	struct cni_netns *ns = xcalloc(1, sizeof(*ns));
	ns->fd = fd;
	ns->path = xstrdup(path);
	return ns;
}

void netns_close(struct cni_netns *ns)
{
	if (!ns)
		return;
	close(ns->fd);
	free(ns->path);
	free(ns);
}

int netns_run(const struct cni_netns *ns, int (*fn)(void *arg), void *arg)
{
	int hfd = host_ns_fd();
	struct stat cur, want;
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		abort();
	int target = ns ? ns->fd : hfd;
	if (fstat(self, &cur) < 0 || fstat(target, &want) < 0)
		abort();
	bool switch_ns = cur.st_ino != want.st_ino || cur.st_dev != want.st_dev;
	if (switch_ns && setns(target, CLONE_NEWNET) < 0) {
		int e = errno;
		close(self);
		errno = e;
		return -1;
	}
	int r = fn(arg);
	int e = errno;
	/* Return to where the caller was, which is the host except in nested
	 * calls. */
	if (switch_ns && setns(self, CLONE_NEWNET) < 0)
		abort();
	close(self);
	errno = e;
	return r;
}

bool netns_same(const struct cni_netns *a, const struct cni_netns *b)
{
	struct stat sa, sb;
	if (fstat(a ? a->fd : host_ns_fd(), &sa) < 0 || fstat(b ? b->fd : host_ns_fd(), &sb) < 0)
		return false;
	return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}
