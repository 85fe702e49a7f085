#include "ipam-store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

/* Temporary files start with a dot: never an address, never a name the
 * reference writes. */
#define STORE_TMP_PREFIX ".cni-tmp-"
/* An owner is "<id>\r\n<ifname>": ids are at most 200 bytes, ifnames 15. */
#define STORE_MAX_FILE 4096

struct cni_store {
	int dirfd;
	int lockfd;
	bool locked;
	char *path;
};

const char *store_path(const struct cni_store *s)
{
	return s->path;
}

struct cni_store *store_open(const char *data_dir, const char *network, bool create, bool *absent,
			     struct cni_err *err)
{
	if (absent)
		*absent = false;
	if (!name_is_safe(network, 255) || strchr(network, '\\')) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "name: \"%.64s\" cannot be a directory name",
			network);
		return NULL;
	}
	_cleanup_free_ char *path = xasprintf("%s/%s", data_dir, network);
	/* 0700: the records name every container of the network. */
	if (create) {
		int r = mkdir_p(path, 0700);
		if (r < 0) {
			err_errno(err, CNI_ERR_IO, r, "cannot create %.100s", path);
			return NULL;
		}
	}
	/* O_NOFOLLOW: a symlink planted as the network's directory would make
	 * us create and delete files where it points. */
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT && !create && absent) {
			*absent = true;
			return NULL;
		}
		err_errno(err, CNI_ERR_IO, errno, "cannot open %.100s", path);
		return NULL;
	}
	int lfd = openat(dfd, STORE_LOCK_NAME, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0) {
		err_errno(err, CNI_ERR_IO, errno, "cannot open %.100s/" STORE_LOCK_NAME, path);
		return NULL;
	}
	struct cni_store *s = xcalloc(1, sizeof(*s));
	s->dirfd = TAKE_FD(dfd);
	s->lockfd = lfd;
	s->path = TAKE_PTR(path);
	return s;
}

void store_close(struct cni_store *s)
{
	if (!s)
		return;
	store_unlock(s);
	close(s->lockfd);
	close(s->dirfd);
	free(s->path);
	free(s);
}

int store_lock(struct cni_store *s, struct cni_err *err)
{
	while (flock(s->lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return err_errno(err, CNI_ERR_IO, errno, "cannot lock %.100s", s->path);
	s->locked = true;
	return 0;
}

void store_unlock(struct cni_store *s)
{
	if (s->locked)
		flock(s->lockfd, LOCK_UN);
	s->locked = false;
}

static void entry_clear(struct cni_store_entry *e)
{
	free(e->name);
	free(e->id);
	free(e->ifname);
}

void store_scan_clear(struct cni_store_scan *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		entry_clear(&sc->e[i]);
	free(sc->e);
	memset(sc, 0, sizeof(*sc));
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Split an owner record; the reference compares the trimmed content with
 * "<id>\r\n<ifname>" and, for old files, with "<id>". */
static void owner_parse(const char *buf, size_t len, struct cni_store_entry *e)
{
	while (len && is_space(*buf))
		buf++, len--;
	while (len && is_space(buf[len - 1]))
		len--;
	const char *sep = NULL;
	for (size_t i = 0; i + 1 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n') {
			sep = buf + i;
			break;
		}
	if (sep) {
		e->id = xstrndup(buf, (size_t)(sep - buf));
		e->ifname = xstrndup(sep + 2, len - (size_t)(sep - buf) - 2);
	} else {
		e->id = xstrndup(buf, len);
	}
}

static void entry_read(struct cni_store *s, struct cni_store_entry *e)
{
	_cleanup_close_ int fd =
	    openat(s->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	e->regular = true;
	char buf[STORE_MAX_FILE];
	size_t n = 0;
	while (n < sizeof(buf)) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	owner_parse(buf, n, e);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cni_store_entry *x = a, *y = b;
	int c = ip_cmp(&x->ip, &y->ip);
	return c ? c : strcmp(x->name, y->name);
}

int store_scan(struct cni_store *s, struct cni_store_scan *out, struct cni_err *err)
{
	memset(out, 0, sizeof(*out));
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return err_errno(err, CNI_ERR_IO, e, "cannot read %.100s", s->path);
	}
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		struct cni_ip ip;
		if (!strncmp(de->d_name, STORE_TMP_PREFIX, strlen(STORE_TMP_PREFIX))) {
			/* Every writer holds the lock, so this is a crash's leftover. */
			if (s->locked)
				unlinkat(s->dirfd, de->d_name, 0);
			continue;
		}
		/* Any spelling of an address (upper case, IPv4-mapped) reserves
		 * it: creating the canonical name beside it would not fail. */
		if (ip_parse(de->d_name, &ip) < 0)
			continue;
		xgrow(&out->e, &out->cap, out->n, sizeof(*out->e));
		struct cni_store_entry *e = &out->e[out->n++];
		memset(e, 0, sizeof(*e));
		e->ip = ip;
		e->name = xstrdup(de->d_name);
		entry_read(s, e);
		errno = 0;
	}
	int e = errno;
	closedir(d);
	if (e) {
		store_scan_clear(out);
		return err_errno(err, CNI_ERR_IO, e, "cannot read %.100s", s->path);
	}
	if (out->n)
		qsort(out->e, out->n, sizeof(*out->e), entry_cmp);
	return 0;
}

const struct cni_store_entry *store_scan_find(const struct cni_store_scan *sc,
					      const struct cni_ip *ip)
{
	size_t lo = 0, hi = sc->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ip_cmp(&sc->e[mid].ip, ip);
		if (c == 0) {
			while (mid > 0 && ip_eq(&sc->e[mid - 1].ip, ip))
				mid--;
			return &sc->e[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool store_entry_owned(const struct cni_store_entry *e, const char *id, const char *ifname)
{
	if (!e->id || !streq(e->id, id))
		return false;
	return !e->ifname || streq(e->ifname, ifname);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Create a temporary file holding data; returns its fd, name in tmp. */
static int tmp_create(struct cni_store *s, const char *data, size_t len, char tmp[32])
{
	uint8_t r[6];
	random_bytes(r, sizeof(r));
	snprintf(tmp, 32, STORE_TMP_PREFIX "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4],
		 r[5]);
	int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Not fsync'd, as the reference: reservations name containers that
	 * a power loss ends, and the link below is atomic without it. */
	int e = write_all(fd, data, len);
	if (e) {
		close(fd);
		unlinkat(s->dirfd, tmp, 0);
		return e;
	}
	return fd;
}

int store_reserve(struct cni_store *s, const struct cni_ip *ip, const char *id, const char *ifname,
		  struct cni_err *err)
{
	char name[IP_STRLEN], tmp[32];
	ip_format(ip, name);
	_cleanup_free_ char *data = xasprintf("%s\r\n%s", id, ifname);
	size_t len = strlen(data);

	int fd = tmp_create(s, data, len, tmp);
	if (fd < 0)
		return err_errno(err, CNI_ERR_IO, fd, "cannot write in %.100s", s->path);
	close(fd);
	int r = linkat(s->dirfd, tmp, s->dirfd, name, 0);
	int e = errno;
	unlinkat(s->dirfd, tmp, 0);
	if (r < 0 && e == EEXIST)
		return 0;
	if (r < 0 && (e == EPERM || e == ENOTSUP || e == EOPNOTSUPP || e == ENOSYS)) {
		/* No hard links here (some FUSE and vfat mounts): an exclusive
		 * create still never takes an address twice. */
		fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0 && errno == EEXIST)
			return 0;
		if (fd < 0)
			return err_errno(err, CNI_ERR_IO, errno, "cannot create %.100s/%s", s->path,
					 name);
		e = write_all(fd, data, len);
		close(fd);
		if (e) {
			unlinkat(s->dirfd, name, 0);
			return err_errno(err, CNI_ERR_IO, e, "cannot write %.100s/%s", s->path,
					 name);
		}
	} else if (r < 0) {
		return err_errno(err, CNI_ERR_IO, e, "cannot create %.100s/%s", s->path, name);
	}
	return 1;
}

int store_unreserve(struct cni_store *s, const struct cni_ip *ip, struct cni_err *err)
{
	char name[IP_STRLEN];
	if (unlinkat(s->dirfd, ip_format(ip, name), 0) < 0 && errno != ENOENT)
		return err_errno(err, CNI_ERR_IO, errno, "cannot remove %.100s/%s", s->path, name);
	return 0;
}

int store_get_last(struct cni_store *s, size_t set, struct cni_ip *ip)
{
	char name[48], buf[64];
	snprintf(name, sizeof(name), STORE_LAST_PREFIX "%zu", set);
	_cleanup_close_ int fd =
	    openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	buf[strcspn(buf, " \t\r\n")] = 0;
	return ip_parse(buf, ip) == 0 ? 1 : 0;
}

int store_set_last(struct cni_store *s, size_t set, const struct cni_ip *ip, struct cni_err *err)
{
	char name[48], tmp[32], a[IP_STRLEN];
	snprintf(name, sizeof(name), STORE_LAST_PREFIX "%zu", set);
	ip_format(ip, a);
	int fd = tmp_create(s, a, strlen(a), tmp);
	if (fd < 0)
		return err_errno(err, CNI_ERR_IO, fd, "cannot write in %.100s", s->path);
	close(fd);
	if (renameat(s->dirfd, tmp, s->dirfd, name) < 0) {
		int e = errno;
		unlinkat(s->dirfd, tmp, 0);
		return err_errno(err, CNI_ERR_IO, e, "cannot write %.100s/%s", s->path, name);
	}
	return 0;
}

static int entry_remove(struct cni_store *s, const struct cni_store_entry *e, struct cni_err *err)
{
	if (unlinkat(s->dirfd, e->name, 0) < 0 && errno != ENOENT)
		return err_errno(err, CNI_ERR_IO, errno, "cannot remove %.100s/%s", s->path,
				 e->name);
	return 0;
}

int store_release(struct cni_store *s, const char *id, const char *ifname, struct cni_err *err)
{
	struct cni_store_scan sc;
	if (store_scan(s, &sc, err) < 0)
		return -1;
	int removed = 0, rc = 0;
	/* Pass 0: the exact owner. Pass 1, only if pass 0 found nothing:
	 * records without an ifname, as the reference falls back to. */
	for (int pass = 0; pass < 2 && !removed; pass++) {
		for (size_t i = 0; i < sc.n; i++) {
			const struct cni_store_entry *e = &sc.e[i];
			if (!e->regular || !streq(e->id, id))
				continue;
			if (pass == 0 ? !streq(e->ifname, ifname) : e->ifname != NULL)
				continue;
			if (entry_remove(s, e, err) < 0)
				rc = -1;
			else
				removed++;
		}
	}
	store_scan_clear(&sc);
	return rc < 0 ? -1 : removed;
}

int store_gc(struct cni_store *s, bool (*keep)(void *arg, const char *id, const char *ifname),
	     void *arg, struct cni_err *err)
{
	struct cni_store_scan sc;
	if (store_scan(s, &sc, err) < 0)
		return -1;
	int removed = 0, rc = 0;
	for (size_t i = 0; i < sc.n; i++) {
		const struct cni_store_entry *e = &sc.e[i];
		if (!e->regular || keep(arg, e->id ? e->id : "", e->ifname))
			continue;
		if (entry_remove(s, e, err) < 0)
			rc = -1;
		else
			removed++;
	}
	store_scan_clear(&sc);
	return rc < 0 ? -1 : removed;
}
