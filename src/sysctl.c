/* Network sysctls through /proc/sys/net, in the caller thread's network
 * namespace. */
#include "sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#define SYSCTL_ROOT "/proc/sys/"

int sysctl_path(const char *key, char *buf, size_t size, struct cni_err *err)
{
	size_t rl = strlen(SYSCTL_ROOT);
	size_t kl = key ? strlen(key) : 0;
	if (!kl || kl >= 256 || rl + kl + 1 > size)
		goto bad;
	/* A key with a slash is a path; otherwise dots separate. */
	bool dotted = !strchr(key, '/');
	memcpy(buf, SYSCTL_ROOT, rl);
	char *p = buf + rl;
	for (size_t i = 0; i < kl; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c < 0x20 || c == 0x7f)
			goto bad;
		p[i] = dotted && c == '.' ? '/' : (char)c;
	}
	p[kl] = 0;
	if (strncmp(p, "net/", 4) != 0)
		goto bad;
	/* Every component non-empty and neither "." nor "..". */
	for (const char *c = p; *c;) {
		const char *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			goto bad;
		c = *e ? e + 1 : e;
		if (*e && !*c)
			goto bad; /* trailing '/' */
	}
	return 0;
bad:
	err_set(err, CNI_ERR_INVALID_CONFIG,
		"invalid sysctl \"%.64s\": only keys under net are allowed", key ? key : "");
	return -EINVAL;
}

int sysctl_get(const char *key, char *buf, size_t size, struct cni_err *err)
{
	char path[300];
	int r = sysctl_path(key, path, sizeof(path), err);
	if (r < 0)
		return r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		err_errno(err, CNI_ERR_INTERNAL, e, "failed to read sysctl %s", key);
		return -e;
	}
	size_t n = 0;
	while (n + 1 < size) {
		ssize_t k = read(fd, buf + n, size - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			close(fd);
			err_errno(err, CNI_ERR_INTERNAL, e, "failed to read sysctl %s", key);
			return -e;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (size)
		buf[n] = 0;
	while (n && (buf[n - 1] == '\n'))
		buf[--n] = 0;
	return 0;
}

int sysctl_set(const char *key, const char *value, struct cni_err *err)
{
	char path[300];
	int r = sysctl_path(key, path, sizeof(path), err);
	if (r < 0)
		return r;
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		err_errno(err, CNI_ERR_INTERNAL, e, "failed to set sysctl %s to %.64s", key, value);
		return -e;
	}
	/* One write: a proc handler parses each write on its own. */
	size_t len = strlen(value);
	ssize_t k;
	do
		k = write(fd, value, len);
	while (k < 0 && errno == EINTR);
	int e = k < 0 ? errno : (size_t)k != len ? EIO : 0;
	close(fd);
	if (e) {
		err_errno(err, CNI_ERR_INTERNAL, e, "failed to set sysctl %s to %.64s", key, value);
		return -e;
	}
	return 0;
}

struct sysctl_ctx {
	const char *key, *value;
	char *buf;
	size_t size;
	struct cni_err *err;
	int r;
};

static int get_in(void *arg)
{
	struct sysctl_ctx *c = arg;
	c->r = sysctl_get(c->key, c->buf, c->size, c->err);
	return 0;
}

static int set_in(void *arg)
{
	struct sysctl_ctx *c = arg;
	c->r = sysctl_set(c->key, c->value, c->err);
	return 0;
}

static int run_in(const struct cni_netns *ns, int (*fn)(void *), struct sysctl_ctx *c)
{
	if (netns_run(ns, fn, c) < 0) {
		int e = errno ? errno : EIO;
		err_errno(c->err, CNI_ERR_INTERNAL, e, "failed to enter namespace %s",
			  ns ? ns->path : "host");
		return -e;
	}
	return c->r;
}

int sysctl_get_in(const struct cni_netns *ns, const char *key, char *buf, size_t size,
		  struct cni_err *err)
{
	struct sysctl_ctx c = {.key = key, .buf = buf, .size = size, .err = err};
	return run_in(ns, get_in, &c);
}

int sysctl_set_in(const struct cni_netns *ns, const char *key, const char *value,
		  struct cni_err *err)
{
	struct sysctl_ctx c = {.key = key, .value = value, .err = err};
	return run_in(ns, set_in, &c);
}
