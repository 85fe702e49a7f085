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

/* The owner cache in the lock file (ipam-store.h). */
#define CACHE_HEADER "# cni host-local owner cache: <owner hash> <inode> <file>\n"
/* Past this the contents are not a cache we wrote: rewritten. */
#define CACHE_MAX (16u << 20)

struct cni_store {
	int dirfd;
	int lockfd;
	bool locked;
	bool lock_rw; /* lockfd writable (O_APPEND): the owner cache can be kept */
	/* The cache describes the directory as it is: its last line was the
	 * stamp of the directory's ctime when we took the lock, or a scan
	 * rewrote it from every file. Then the unlock stamps the ctime again. */
	bool cache_good;
	/* store_scan_owner read it in this session: store_reserve appends the
	 * line of what it creates. */
	bool cache_on;
	struct timespec stamp; /* the ctime of the last stamp, when cache_good */
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
	/* Writable for the owner cache; read-only when the file refuses. */
	bool rw = true;
	int lfd = openat(dfd, STORE_LOCK_NAME,
			 O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (lfd < 0) {
		rw = false;
		lfd = openat(dfd, STORE_LOCK_NAME, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			     0600);
	}
	if (lfd < 0) {
		err_errno(err, CNI_ERR_IO, errno, "cannot open %.100s/" STORE_LOCK_NAME, path);
		return NULL;
	}
	struct cni_store *s = xcalloc(1, sizeof(*s));
	s->dirfd = TAKE_FD(dfd);
	s->lockfd = lfd;
	s->lock_rw = rw;
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

static bool cache_stamp_check(struct cni_store *s);
static void cache_stamp(struct cni_store *s);

int store_lock(struct cni_store *s, struct cni_err *err)
{
	while (flock(s->lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return err_errno(err, CNI_ERR_IO, errno, "cannot lock %.100s", s->path);
	s->locked = true;
	s->cache_good = cache_stamp_check(s);
	return 0;
}

void store_unlock(struct cni_store *s)
{
	if (s->locked) {
		cache_stamp(s);
		flock(s->lockfd, LOCK_UN);
	}
	s->locked = false;
	s->cache_good = s->cache_on = false;
}

void store_entry_clear(struct cni_store_entry *e)
{
	free(e->name);
	free(e->id);
	free(e->ifname);
	memset(e, 0, sizeof(*e));
}

void store_scan_clear(struct cni_store_scan *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		store_entry_clear(&sc->e[i]);
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

/* Read the owner of e. Never follows a symlink, never opens what readdir
 * calls anything but a regular file (or does not know), never blocks on a
 * FIFO put there since. Three system calls for a regular file: a short
 * read of a regular file is its end. */
static void entry_read(struct cni_store *s, struct cni_store_entry *e)
{
	if (e->type != DT_REG && e->type != DT_UNKNOWN)
		return;
	_cleanup_close_ int fd =
	    openat(s->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	if (e->type == DT_UNKNOWN) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			return;
	}
	char buf[STORE_MAX_FILE];
	size_t n = 0;
	while (n < sizeof(buf)) {
		size_t want = sizeof(buf) - n;
		ssize_t r = read(fd, buf + n, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EISDIR)
			return; /* replaced since readdir: not a reservation file */
		if (r <= 0)
			break;
		n += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	e->regular = true;
	owner_parse(buf, n, e);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cni_store_entry *x = a, *y = b;
	int c = ip_cmp(&x->ip, &y->ip);
	return c ? c : strcmp(x->name, y->name);
}

/* Every address-named entry of the directory, owners unread, unsorted
 * (and remove temporary files a crash left). */
static int dir_list(struct cni_store *s, struct cni_store_scan *out, struct cni_err *err)
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
			errno = 0;
			continue;
		}
		/* Any spelling of an address (upper case, IPv4-mapped) reserves
		 * it: creating the canonical name beside it would not fail. */
		if (ip_parse(de->d_name, &ip) < 0) {
			errno = 0;
			continue;
		}
		xgrow(&out->e, &out->cap, out->n, sizeof(*out->e));
		struct cni_store_entry *e = &out->e[out->n++];
		memset(e, 0, sizeof(*e));
		e->ip = ip;
		e->name = xstrdup(de->d_name);
		e->ino = de->d_ino;
		e->type = de->d_type;
		errno = 0;
	}
	int e = errno;
	closedir(d);
	if (e) {
		store_scan_clear(out);
		return err_errno(err, CNI_ERR_IO, e, "cannot read %.100s", s->path);
	}
	return 0;
}

static void scan_sort(struct cni_store_scan *sc)
{
	if (sc->n)
		qsort(sc->e, sc->n, sizeof(*sc->e), entry_cmp);
}

int store_scan(struct cni_store *s, struct cni_store_scan *out, struct cni_err *err)
{
	if (dir_list(s, out, err) < 0)
		return -1;
	for (size_t i = 0; i < out->n; i++)
		entry_read(s, &out->e[i]);
	scan_sort(out);
	return 0;
}

/* --- The owner cache ------------------------------------------------------ */

static uint64_t fnv_add(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/* The hash of an owner record as owner_parse splits it: "<id>\r\n<ifname>",
 * or "<id>" for one without an ifname (the two never collide as strings:
 * a parsed id holds no "\r\n"). */
static uint64_t owner_hash(const char *id, const char *ifname)
{
	uint64_t h = fnv_add(FNV_INIT, id, strlen(id));
	if (ifname) {
		h = fnv_add(h, "\r\n", 2);
		h = fnv_add(h, ifname, strlen(ifname));
	}
	return h;
}

struct cache_line {
	const char *name; /* into the buffer */
	uint64_t ino, hash;
};

struct cache {
	char *buf;
	size_t len; /* the file's size when read */
	struct cache_line *l;
	size_t n, cap;
	size_t *slot; /* open addressing on the inode: index + 1, 0 empty */
	size_t mask;
	bool header; /* starts with CACHE_HEADER */
	bool torn;   /* the last line has no "\n" */
};

static void cache_free(struct cache *c)
{
	free(c->buf);
	free(c->l);
	free(c->slot);
}

/* One line without its "\n", NUL-terminated: 1 and *l when well formed. */
static int cache_parse_line(char *p, struct cache_line *l)
{
	uint64_t h = 0, ino = 0;
	for (int i = 0; i < 16; i++, p++) {
		/* We write lower case: anything else is not our line. */
		int v = *p >= 'A' && *p <= 'F' ? -1 : hex_digit(*p);
		if (v < 0)
			return 0;
		h = h << 4 | (uint64_t)v;
	}
	if (*p++ != ' ' || *p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (ino > (UINT64_MAX - 9) / 10)
			return 0;
		ino = ino * 10 + (uint64_t)(*p - '0');
	}
	if (*p++ != ' ' || !*p || strlen(p) >= IP_STRLEN + 16)
		return 0;
	l->hash = h;
	l->ino = ino;
	l->name = p;
	return 1;
}

static size_t ino_slot(uint64_t ino, size_t mask)
{
	return (size_t)(ino * 0x9e3779b97f4a7c15ull >> 32) & mask;
}

/* Read and index the lock file's lines: false when it cannot hold the
 * cache (not a regular file, not writable, unreadable). */
static bool cache_load(struct cni_store *s, struct cache *c)
{
	memset(c, 0, sizeof(*c));
	struct stat st;
	if (!s->lock_rw || !s->locked || fstat(s->lockfd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	size_t size = st.st_size > (off_t)CACHE_MAX ? CACHE_MAX : (size_t)st.st_size;
	c->buf = xmalloc(size + 1);
	while (c->len < size) {
		ssize_t r = pread(s->lockfd, c->buf + c->len, size - c->len, (off_t)c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return false;
		if (r == 0)
			break;
		c->len += (size_t)r;
	}
	c->buf[c->len] = 0;
	c->header = c->len >= strlen(CACHE_HEADER) &&
		    !memcmp(c->buf, CACHE_HEADER, strlen(CACHE_HEADER));
	c->torn = c->len && c->buf[c->len - 1] != '\n';
	/* A line counts only whole: one a crash cut short has no "\n". */
	for (char *p = c->buf, *nl; (nl = memchr(p, '\n', c->len - (size_t)(p - c->buf)));
	     p = nl + 1) {
		*nl = 0;
		struct cache_line l;
		if (!cache_parse_line(p, &l))
			continue;
		xgrow(&c->l, &c->cap, c->n, sizeof(*c->l));
		c->l[c->n++] = l;
	}
	size_t sz = 16;
	while (sz < 2 * c->n)
		sz *= 2;
	c->mask = sz - 1;
	c->slot = xcalloc(sz, sizeof(*c->slot));
	for (size_t i = 0; i < c->n; i++) {
		size_t k = ino_slot(c->l[i].ino, c->mask);
		while (c->slot[k])
			k = (k + 1) & c->mask;
		c->slot[k] = i + 1;
	}
	return true;
}

/* The last line of (name, ino) (a reservation removed and made again by
 * us may get the inode number back: its new line comes later): its index,
 * or -1. */
static ssize_t cache_find(const struct cache *c, const char *name, uint64_t ino)
{
	ssize_t found = -1;
	if (!c->n)
		return -1;
	for (size_t k = ino_slot(ino, c->mask); c->slot[k]; k = (k + 1) & c->mask) {
		const struct cache_line *l = &c->l[c->slot[k] - 1];
		if (l->ino == ino && (ssize_t)(c->slot[k] - 1) > found && streq(l->name, name))
			found = (ssize_t)(c->slot[k] - 1);
	}
	return found;
}

/* "@ <sec> <nsec>": the directory's ctime after one of our changes. */
static bool stamp_parse(const char *p, size_t n, struct timespec *ts)
{
	char buf[64];
	long long sec;
	long nsec;
	int end = 0;
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = 0;
	if (sscanf(buf, "@ %lld %ld%n", &sec, &nsec, &end) != 2 || (size_t)end != n)
		return false;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = nsec;
	return true;
}

/* The directory's ctime; false also when it has no sub-second part: a
 * filesystem with whole-second timestamps would hide another's change made
 * in the same second as ours. */
static bool dir_ctime(struct cni_store *s, struct timespec *ts)
{
	struct stat st;
	if (fstat(s->dirfd, &st) < 0 || st.st_ctim.tv_nsec == 0)
		return false;
	*ts = st.st_ctim;
	return true;
}

/* Whether the lock file ends with a stamp of the directory's ctime now:
 * then nobody but us changed the directory since that stamp (they all
 * change its ctime: a reservation is created, linked, renamed or removed,
 * never rewritten in place), and the cache holds a line for every
 * reservation we made since. */
static bool cache_stamp_check(struct cni_store *s)
{
	struct stat st;
	char tail[64];
	struct timespec now;
	s->stamp.tv_sec = -1, s->stamp.tv_nsec = -1;
	if (!s->lock_rw || fstat(s->lockfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)strlen(CACHE_HEADER))
		return false;
	size_t n = st.st_size < (off_t)sizeof(tail) ? (size_t)st.st_size : sizeof(tail);
	if (pread(s->lockfd, tail, n, st.st_size - (off_t)n) != (ssize_t)n || tail[n - 1] != '\n')
		return false;
	size_t b = n - 1;
	while (b > 0 && tail[b - 1] != '\n')
		b--;
	struct timespec ts;
	if (!stamp_parse(tail + b, n - 1 - b, &ts) || !dir_ctime(s, &now))
		return false;
	s->stamp = ts;
	return now.tv_sec == ts.tv_sec && now.tv_nsec == ts.tv_nsec;
}

/* At unlock: stamp the directory's ctime if we changed it and the cache
 * still describes it. */
static void cache_stamp(struct cni_store *s)
{
	struct timespec now;
	char line[64];
	if (!s->cache_good || !dir_ctime(s, &now) ||
	    (now.tv_sec == s->stamp.tv_sec && now.tv_nsec == s->stamp.tv_nsec))
		return;
	int n = snprintf(line, sizeof(line), "@ %lld %ld\n", (long long)now.tv_sec,
			 (long)now.tv_nsec);
	write_all(s->lockfd, line, (size_t)n);
}

static void line_add(struct strbuf *b, uint64_t hash, uint64_t ino, const char *name)
{
	strbuf_add(b, "%016llx %llu %s\n", (unsigned long long)hash, (unsigned long long)ino, name);
}

/* The inode numbers readdir gives are the files' identity only if no two
 * names share one (a filesystem without stable inode numbers, or hard
 * links made by hand): otherwise the cache is not used. */
static bool inos_unique(const struct cni_store_scan *sc)
{
	size_t sz = 16;
	while (sz < 2 * sc->n)
		sz *= 2;
	_cleanup_free_ uint64_t *set = xcalloc(sz, sizeof(*set));
	for (size_t i = 0; i < sc->n; i++) {
		uint64_t ino = sc->e[i].ino;
		if (!ino)
			return false;
		size_t k = ino_slot(ino, sz - 1);
		for (; set[k]; k = (k + 1) & (sz - 1))
			if (set[k] == ino)
				return false;
		set[k] = ino;
	}
	return true;
}

int store_scan_owner(struct cni_store *s, const char *id, const char *ifname,
		     struct cni_store_scan *out, struct cni_err *err)
{
	if (dir_list(s, out, err) < 0)
		return -1;
	if (!id) {
		scan_sort(out);
		return 0;
	}
	uint64_t mine = owner_hash(id, ifname), mine_legacy = owner_hash(id, NULL);
	struct cache c;
	bool on = cache_load(s, &c) && inos_unique(out);
	/* Believed only when nobody else changed the directory since our
	 * last stamp; otherwise every file is read and the cache rewritten. */
	bool trust = on && s->cache_good;
	/* Per entry: 0 no line, 1 a live line, 2 a line to add; and its hash. */
	_cleanup_free_ unsigned char *state = xcalloc(out->n + 1, 1);
	_cleanup_free_ uint64_t *hash = xcalloc(out->n + 1, sizeof(*hash));
	size_t live = 0;
	for (size_t i = 0; i < out->n; i++) {
		struct cni_store_entry *e = &out->e[i];
		if (e->type != DT_REG && e->type != DT_UNKNOWN)
			continue; /* no owner: nothing to read */
		ssize_t k = trust ? cache_find(&c, e->name, e->ino) : -1;
		if (k >= 0) {
			state[i] = 1, hash[i] = c.l[k].hash, live++;
			if (hash[i] == mine || hash[i] == mine_legacy)
				entry_read(s, e); /* confirmed by the file itself */
			else
				e->regular = e->type == DT_REG;
			continue;
		}
		entry_read(s, e);
		if (on && e->regular && e->id)
			state[i] = 2, hash[i] = owner_hash(e->id, e->ifname);
	}
	s->cache_good = s->cache_on = false;
	if (on) {
		/* Append what is new; rewrite when it was not believed, or
		 * dead lines (released reservations, stamps, foreign bytes)
		 * are many. A crash in the middle leaves no stamp of the
		 * directory as it is then: the next scan reads every file. */
		size_t dead = c.n - live;
		bool rewrite = !trust || !c.header || c.torn || c.len >= CACHE_MAX ||
			       (dead > 32 && dead > live / 4);
		struct strbuf b = {0};
		if (rewrite)
			strbuf_add(&b, "%s", CACHE_HEADER);
		for (size_t i = 0; i < out->n; i++)
			if (state[i] == 2 || (rewrite && state[i] == 1))
				line_add(&b, hash[i], out->e[i].ino, out->e[i].name);
		bool ok = !rewrite || ftruncate(s->lockfd, 0) == 0;
		if (ok && b.len)
			ok = write_all(s->lockfd, b.s, b.len) == 0;
		strbuf_free(&b);
		s->cache_good = s->cache_on = ok;
		if (rewrite) /* the stamp went with the old lines: the unlock writes one */
			s->stamp.tv_sec = -1, s->stamp.tv_nsec = -1;
	}
	cache_free(&c);
	scan_sort(out);
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
	struct stat st;
	if (!s->cache_on || fstat(fd, &st) < 0)
		st.st_ino = 0;
	close(fd);
	s->cache_good = s->cache_good && st.st_ino; /* a reservation without its line */
	int r = linkat(s->dirfd, tmp, s->dirfd, name, 0);
	int e = errno;
	unlinkat(s->dirfd, tmp, 0);
	if (r < 0 && e == EEXIST)
		return 0;
	if (r == 0 && st.st_ino) {
		/* The owner cache learns the new reservation. */
		struct strbuf b = {0};
		line_add(&b, owner_hash(id, ifname), st.st_ino, name);
		if (write_all(s->lockfd, b.s, b.len) < 0)
			s->cache_good = s->cache_on = false;
		strbuf_free(&b);
	}
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
		s->cache_good = s->cache_on = false; /* a reservation without its line */
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

int store_read(struct cni_store *s, const struct cni_ip *ip, struct cni_store_entry *e)
{
	char name[IP_STRLEN];
	memset(e, 0, sizeof(*e));
	ip_format(ip, name);
	struct stat st;
	if (fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	e->ip = *ip;
	e->name = xstrdup(name);
	e->ino = st.st_ino;
	e->type = S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
	if (S_ISREG(st.st_mode))
		entry_read(s, e);
	return 1;
}

int store_remove(struct cni_store *s, const struct cni_store_entry *e, struct cni_err *err)
{
	return e->regular ? entry_remove(s, e, err) : 0;
}

int store_release(struct cni_store *s, const char *id, const char *ifname, struct cni_err *err)
{
	struct cni_store_scan sc;
	/* Only (id, ifname)'s exact and id-only records matter: the owner
	 * scan reads every file that may be either. */
	if (store_scan_owner(s, id, ifname, &sc, err) < 0)
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
