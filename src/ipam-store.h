/* The host-local reservation store, in the reference's on-disk layout so
 * that a host moving between the two keeps every allocation:
 *
 *   <dataDir>/<network>/<ip>                 "<container id>\r\n<ifname>"
 *   <dataDir>/<network>/last_reserved_ip.<N> the last address given from
 *                                            range set N (no newline)
 *   <dataDir>/<network>/lock                 flock(LOCK_EX) around changes;
 *                                            holds our owner cache (below)
 *
 * Files written before the reference recorded the interface hold only the
 * container id; they match any ifname of that container. A file whose name
 * is an address always counts as taken, whatever it holds (empty, garbage,
 * a directory): the store never hands an address out twice. Other names
 * are not ours and are left alone.
 *
 * All access goes through a directory fd (openat and friends), so nothing
 * outside <dataDir>/<network> is touched. Reservations are created by
 * writing a temporary file and link()ing it to the address's name, which
 * is atomic and fails if the name exists: a reader never sees a partial
 * owner, and a crash leaves at worst a temporary file, removed by the next
 * scan. The lock is the reference's, so the two can run side by side.
 *
 * The owner cache. An ADD must know whether the attachment already holds
 * an address, and only the files' contents tell; reading a thousand of
 * them costs milliseconds. So the lock file, whose contents the reference
 * never uses, holds a header line ("# cni host-local owner cache ...")
 * and one line per reservation read or made:
 *
 *   "<16 hex: hash of the owner record> <inode number> <file name>\n"
 *
 * and, after each of our operations that changed the directory, a stamp
 * "@ <sec> <nsec>\n" of the directory's ctime. The lines are believed only
 * when the file still ends with the stamp of the directory's ctime now:
 * nobody else created, removed or renamed anything since (a reservation
 * is never rewritten in place). Then a line counts for the name readdir
 * shows with that inode number (the latest line, as a name we removed and
 * made again may get its inode number back), and a hash matching the
 * attachment is confirmed by reading the file. Otherwise (the reference,
 * an older cni, a crash, a filesystem without sub-second timestamps) the
 * next ADD reads every file and rewrites the cache. (Without fine-grained
 * timestamps, a change made in the clock tick of our stamp keeps the
 * ctime: a line then misleads only if that change also gave a name and
 * its inode number to another owner, and a wrong line can only hide a
 * duplicate ADD, which runtimes must not make; one that names the
 * attachment is always confirmed.) Dead lines are dropped when they are
 * many. The reference reads the lock file like any other in
 * its walks and compares its trimmed contents with "<id>\r\n<ifname>" or
 * "<id>": several lines holding no "\r" can equal neither, and nothing of
 * its own reads or writes the lock's contents. */
#ifndef CNI_IPAM_STORE_H
#define CNI_IPAM_STORE_H

#include "err.h"
#include "ip.h"

#define STORE_LOCK_NAME "lock"
#define STORE_LAST_PREFIX "last_reserved_ip."

struct cni_store;

struct cni_store_entry {
	struct cni_ip ip;
	char *name;   /* the file name as found */
	char *id;     /* owner's container id; NULL if unreadable or not a file */
	char *ifname; /* NULL: written without an ifname (legacy), or no owner */
	bool regular; /* a regular file (GC and DEL only ever remove these) */
	/* From readdir, for the store's own use: */
	uint64_t ino;
	unsigned char type; /* DT_* */
};

/* The reservations present, sorted by address. */
struct cni_store_scan {
	struct cni_store_entry *e;
	size_t n, cap;
};

/* Open <data_dir>/<network> (network must be one safe path component).
 * With create, make the directories (0700) and the lock file as needed.
 * Without it, a missing directory returns NULL with *absent = true and no
 * error: nothing was ever reserved there. Owned: store_close. */
struct cni_store *store_open(const char *data_dir, const char *network, bool create, bool *absent,
			     struct cni_err *err);
/* Close (releasing the lock if held). Takes NULL. */
void store_close(struct cni_store *s);
static inline void store_closep(struct cni_store **s)
{
	store_close(*s);
}
/* "<data_dir>/<network>", for messages. Borrowed. */
const char *store_path(const struct cni_store *s);

/* Take the exclusive lock, waiting for it; shared with the reference and
 * every process using the same directory. Everything below needs it. */
int store_lock(struct cni_store *s, struct cni_err *err);
void store_unlock(struct cni_store *s);

/* Read every reservation (and remove temporary files a crash left).
 * Fills *out (owned: store_scan_clear). */
int store_scan(struct cni_store *s, struct cni_store_scan *out, struct cni_err *err);
void store_scan_clear(struct cni_store_scan *sc);
static inline void store_scan_clearp(struct cni_store_scan *sc)
{
	store_scan_clear(sc);
}
/* For an ADD of (id, ifname): every reservation, as store_scan finds
 * them, but the owner (id, ifname, regular) read only of those the owner
 * cache does not show belonging to someone else; so store_entry_owned()
 * answers for (id, ifname) as after store_scan, for the others it is
 * false. With the lock held, the cache is brought up to date. With id NULL,
 * the addresses only, no file read, the cache untouched (STATUS). */
int store_scan_owner(struct cni_store *s, const char *id, const char *ifname,
		     struct cni_store_scan *out, struct cni_err *err);
/* The entry reserving ip, or NULL (binary search). */
const struct cni_store_entry *store_scan_find(const struct cni_store_scan *sc,
					      const struct cni_ip *ip);
/* Whether e belongs to (id, ifname): same id and ifname, or same id and no
 * recorded ifname. */
bool store_entry_owned(const struct cni_store_entry *e, const char *id, const char *ifname);

/* Reserve ip for (id, ifname): 1 reserved, 0 already taken, -1 error. */
int store_reserve(struct cni_store *s, const struct cni_ip *ip, const char *id, const char *ifname,
		  struct cni_err *err);
/* Remove the reservation of ip written by store_reserve (rollback of a
 * failed ADD). Missing is success. */
int store_unreserve(struct cni_store *s, const struct cni_ip *ip, struct cni_err *err);
/* The round-robin cursor of range set `set`: 1 with *ip, 0 when absent or
 * unreadable. */
int store_get_last(struct cni_store *s, size_t set, struct cni_ip *ip);
int store_set_last(struct cni_store *s, size_t set, const struct cni_ip *ip, struct cni_err *err);

/* The reservation of ip under its canonical name (the one store_reserve
 * and the reference write), read without a scan: 1 with *e filled (owned:
 * store_entry_clear), 0 when no such name. */
int store_read(struct cni_store *s, const struct cni_ip *ip, struct cni_store_entry *e);
void store_entry_clear(struct cni_store_entry *e);
/* Remove the file of e, if it is a regular file. Missing is success. */
int store_remove(struct cni_store *s, const struct cni_store_entry *e, struct cni_err *err);

/* Release every reservation of (id, ifname); when there is none, those
 * written for id without an ifname (the reference's fallback). Reads the
 * files store_scan_owner reads. Returns the number removed, or -1 (after
 * removing what it could). */
int store_release(struct cni_store *s, const char *id, const char *ifname, struct cni_err *err);
/* Release every reservation that keep() refuses. keep gets ifname NULL for
 * a legacy reservation and id "" for one without a readable owner. Returns
 * the number removed, or -1 after removing what it could. */
int store_gc(struct cni_store *s, bool (*keep)(void *arg, const char *id, const char *ifname),
	     void *arg, struct cni_err *err);

#endif
