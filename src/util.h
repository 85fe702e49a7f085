/* Small helpers shared by every module: ownership (cleanup attributes),
 * allocation that never returns NULL, string and file helpers.
 *
 * Allocation failure aborts: a plugin that cannot allocate a few hundred
 * bytes cannot report anything useful either, and checking every strdup
 * would hide the real error paths. */
#ifndef CNI_UTIL_H
#define CNI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Hand an owned pointer (or fd) out of a cleanup scope. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})

static inline bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}
static inline bool strempty(const char *s)
{
	return !s || !*s;
}

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);

/* A growing string: s is NULL until the first append. */
struct strbuf {
	char *s;
	size_t len, cap;
};
void strbuf_add(struct strbuf *b, const char *fmt, ...) _printf_(2, 3);
void strbuf_free(struct strbuf *b);

/* Write all n bytes to fd (retrying short writes and EINTR): 0 or -errno. */
int write_all(int fd, const void *p, size_t n);

/* CLOCK_MONOTONIC in milliseconds, for deadlines. */
int64_t monotonic_ms(void);

/* The value of a hex digit (either case), or -1. */
int hex_digit(char c);
/* Grow *arr so that it can hold at least n+1 elements of size sz. */
void xgrow(void *arr, size_t *cap, size_t n, size_t sz);

/* Append item to the list in buf (a string of size bytes), after sep
 * unless the list is empty; what does not fit is cut. For messages. */
void str_append_item(char *buf, size_t size, const char *sep, const char *item);
/* Sort n strings in strcmp order. */
void strv_sort(char **v, size_t n);
/* Free n strings and the array (NULL with n 0 is fine). */
void strv_free_n(char **v, size_t n);
/* Copy at most size-1 bytes, always terminating; returns strlen(src). */
size_t strlcpy_(char *dst, const char *src, size_t size);

/* Read a whole fd into a NUL-terminated buffer; fails with E2BIG past max.
 * Returns 0 and an owned buffer, or -errno. */
int read_all_fd(int fd, size_t max, char **out, size_t *len);
/* Read a whole (small) file; -errno on failure. */
int read_file(const char *path, size_t max, char **out, size_t *len);
/* read_file for the state files we write (result cache, tuning backups,
 * dhcp leases): a symlink in the last component is -ELOOP, anything but a
 * regular file -EINVAL, so a planted link or FIFO is neither followed nor
 * waited on. */
int read_state_file(const char *path, size_t max, char **out, size_t *len);
/* The entry names of a directory but . and .., sorted; an absent one has
 * none. Returns 0 and an owned array of owned names (strv_free_n), or
 * -errno. */
int read_dir(const char *path, char ***names, size_t *n);
/* Write data to path atomically (temp file in the same directory, then
 * rename; not fsync'd: atomic for readers and crashes of the writer, not
 * durable across a power loss), mode 0600, refusing to follow a symlink at
 * path. -errno. */
int write_file_atomic(const char *path, const void *data, size_t len);
/* mkdir -p with the given mode for each created component; -errno. */
int mkdir_p(const char *path, mode_t mode);

/* A name safe to use as one path component or device name: non-empty,
 * no '/', not "." or "..", no control characters, at most max bytes. */
bool name_is_safe(const char *s, size_t max);

/* Fill buf with n random bytes (getrandom, never blocking for long). */
void random_bytes(void *buf, size_t n);

#endif
