#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>

static void oom(void)
{
	static const char m[] = "cni: out of memory\n";
	ssize_t r _unused_ = write(2, m, sizeof(m) - 1);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom();
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		oom();
	va_end(ap);
	return s;
}

void strbuf_add(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		b->s = xrealloc(b->s, cap);
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void strbuf_free(struct strbuf *b)
{
	free(b->s);
	*b = (struct strbuf){0};
}

int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void xgrow(void *arr, size_t *cap, size_t n, size_t sz)
{
	void **a = arr;
	if (n < *cap)
		return;
	size_t nc = *cap ? *cap * 2 : 4;
	while (nc <= n)
		nc *= 2;
	*a = xrealloc(*a, nc * sz);
	*cap = nc;
}

void str_append_item(char *buf, size_t size, const char *sep, const char *item)
{
	size_t n = strlen(buf);
	snprintf(buf + n, size - n, "%s%s", n ? sep : "", item);
}

static int strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), strv_cmp);
}

void strv_free_n(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

size_t strlcpy_(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = 0;
	}
	return n;
}

int read_all_fd(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > max + 1) {
				free(buf);
				return -E2BIG;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			return -E2BIG;
		}
	}
	buf[n] = 0;
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	int r = read_all_fd(fd, max, out, len);
	close(fd);
	return r;
}

int read_state_file(const char *path, size_t max, char **out, size_t *len)
{
	/* O_NONBLOCK: a FIFO planted under the name must not hang us. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (r == 0)
		r = read_all_fd(fd, max, out, len);
	close(fd);
	return r;
}

int read_dir(const char *path, char ***names, size_t *n)
{
	char **v = NULL;
	size_t k = 0, cap = 0;
	DIR *d = opendir(path);
	*names = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		xgrow(&v, &cap, k, sizeof(*v));
		v[k++] = xstrdup(de->d_name);
	}
	closedir(d);
	strv_sort(v, k);
	*names = v;
	*n = k;
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	_cleanup_free_ char *tmp = NULL;
	char rnd[8];
	random_bytes(rnd, sizeof(rnd));
	tmp = xasprintf("%s.tmp%02x%02x%02x%02x", path, (uint8_t)rnd[0], (uint8_t)rnd[1],
			(uint8_t)rnd[2], (uint8_t)rnd[3]);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int werr = write_all(fd, data, len);
	if (werr < 0) {
		close(fd);
		unlink(tmp);
		return werr;
	}
	/* No fsync, as libcni and the reference plugins: what we keep
	 * describes namespaces, links and rules that a power loss takes with
	 * it, and rename() alone is atomic for every reader and for a killed
	 * writer. An fsync costs a disk cache flush (1-20 ms on virtual
	 * disks, several per ADD), bench/README.md. */
	if (close(fd) < 0) {
		int e = errno;
		unlink(tmp);
		return -e;
	}
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		unlink(tmp);
		return -ELOOP;
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return -e;
	}
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == 0) {
			char c = *s;
			*s = 0;
			if (mkdir(p, mode) < 0 && errno != EEXIST)
				return -errno;
			*s = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

bool name_is_safe(const char *s, size_t max)
{
	if (strempty(s) || strlen(s) > max || streq(s, ".") || streq(s, ".."))
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p == '/' || *p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

void random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = getrandom(p, n, GRND_NONBLOCK);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* Early boot with no entropy: names need uniqueness,
			 * not secrecy, so fall back to a cheap mix. */
			static uint64_t x;
			x ^= (uint64_t)getpid() * 0x9E3779B97F4A7C15ull + (uint64_t)(uintptr_t)p;
			for (; n; n--) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				*p++ = (uint8_t)x;
			}
			return;
		}
		p += r;
		n -= (size_t)r;
	}
}
