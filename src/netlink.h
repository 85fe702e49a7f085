/* rtnetlink sockets. One struct cni_nl is one NETLINK_ROUTE socket bound,
 * for its whole life, to the network namespace it was opened in: applets
 * open the container's socket once and never switch namespaces again.
 *
 * Every request asks for an ACK, so a failure always carries the kernel's
 * errno and, when the kernel gives one, its extended ACK message. Both are
 * kept on the socket (netlink_errno, netlink_extack) and copied into the
 * caller's struct cni_err as "<strerror> (kernel: <extack>)".
 *
 * The object modules (link.c, addr.c, route.c) build their requests with
 * libnl; libnl types never appear in the public part of this header. */
#ifndef CNI_NETLINK_H
#define CNI_NETLINK_H

#include "err.h"
#include "netns.h"

struct cni_nl;

/* Open an rtnetlink socket inside ns (NULL: the host namespace) through
 * netns_run(), with extended ACKs and strict dump checking enabled. Returns
 * an owned socket, or NULL with CNI_ERR_INTERNAL naming the namespace. */
struct cni_nl *netlink_open(const struct cni_netns *ns, struct cni_err *err);
void netlink_close(struct cni_nl *nl);
static inline void netlink_closep(struct cni_nl **nl)
{
	netlink_close(*nl);
}

/* The errno (positive) of the last failed request on nl, 0 if the last
 * request succeeded. Functions of link.c, addr.c and route.c also return it
 * negated, so callers rarely need this. */
int netlink_errno(const struct cni_nl *nl);
/* The kernel's extended ACK message for that failure, "" if none. Borrowed,
 * valid until the next request. */
const char *netlink_extack(const struct cni_nl *nl);

/* Whether a negative return means "the object is not there" (ENODEV,
 * ENOENT, ESRCH, EADDRNOTAVAIL): what DEL treats as already done. */
bool netlink_is_gone(int r);

#ifdef CNI_NETLINK_INTERNAL
/* For src/link.c, addr.c, route.c only: they include libnl themselves. */
struct nl_msg;
struct nlmsghdr;
struct nlattr;

/* A request message: header type and flags (NLM_F_REQUEST and NLM_F_ACK
 * are added when sent) followed by the family header hdr of len bytes.
 * Never NULL (aborts on allocation failure). */
struct nl_msg *netlink_msg(int type, int flags, const void *hdr, size_t len);
/* Attribute writers; they abort on overflow, which only a bug can cause:
 * every request is small and of fixed shape. */
void netlink_put(struct nl_msg *m, int type, const void *data, size_t len);
void netlink_put_u8(struct nl_msg *m, int type, uint8_t v);
void netlink_put_u16(struct nl_msg *m, int type, uint16_t v);
void netlink_put_u32(struct nl_msg *m, int type, uint32_t v);
void netlink_put_str(struct nl_msg *m, int type, const char *s);
struct nlattr *netlink_nest(struct nl_msg *m, int type);
void netlink_nest_end(struct nl_msg *m, struct nlattr *nest);

/* Send m (consumed) and read replies until the ACK, NLMSG_DONE or an
 * error. Each reply message is passed to fn (may be NULL); a negative
 * value from fn fails the request with that value once the replies are
 * drained. Returns 0, or -errno with netlink_errno/netlink_extack set. A
 * dump the kernel marks as interrupted returns -EINTR: rebuild and retry. */
int netlink_request(struct cni_nl *nl, struct nl_msg *m,
		    int (*fn)(const struct nlmsghdr *h, void *arg), void *arg);
/* Record the last failure of nl in err: code CNI_ERR_INTERNAL, msg from
 * fmt, details "<strerror(-r)> (kernel: <extack>)". Returns r. */
int netlink_fail(struct cni_nl *nl, int r, struct cni_err *err, const char *fmt, ...)
    _printf_(4, 5);
/* Restore the last failure (after a look-up made to name the object). */
void netlink_set_last(struct cni_nl *nl, int error, const char *extack);
/* Copy string attribute a (need not be NUL-terminated) into dst of size
 * bytes, truncating; an absent attribute gives "". Returns the length. */
size_t netlink_attr_str(char *dst, size_t size, const struct nlattr *a);
#endif

#endif
