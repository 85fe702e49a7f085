/* rtnetlink sockets on libnl-3, keeping what libnl's NLE_* codes lose: the
 * kernel's errno and its extended ACK text. Requests are sent with libnl
 * and read back through a per-request set of callbacks that accepts only
 * replies to that request's sequence number. */
#define CNI_NETLINK_INTERNAL
#include "netlink.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define EXTACK_MAX 256

struct cni_nl {
	struct nl_sock *sk;
	int error;		 /* errno of the last failed request */
	char extack[EXTACK_MAX]; /* and the kernel's message for it */
};

/* State of one request while its replies are read. */
struct nl_req {
	uint32_t seq;
	int (*fn)(const struct nlmsghdr *h, void *arg);
	void *arg;
	bool done, intr;
	int error;    /* positive errno from NLMSG_ERROR / NLMSG_DONE */
	int fn_error; /* first negative return of fn */
	char extack[EXTACK_MAX];
};

struct open_ctx {
	struct nl_sock *sk;
	int error;
};

static int setsockopt_int(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_NETLINK, opt, &v, sizeof(v));
}

/* Runs inside the target namespace: the socket is bound to it for life. */
static int open_in_ns(void *arg)
{
	struct open_ctx *c = arg;
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		abort();
	int r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		c->error = errno ? errno : EIO;
		nl_socket_free(sk);
		return -1;
	}
	int fd = nl_socket_get_fd(sk);
	/* Old kernels lack these; errors then simply carry no text. */
	setsockopt_int(fd, NETLINK_EXT_ACK, 1);
	/* Errors need not echo our request back: we only parse the TLVs. */
	setsockopt_int(fd, NETLINK_CAP_ACK, 1);
	/* Have the kernel reject malformed dump requests instead of
	 * ignoring the filters in them. */
	setsockopt_int(fd, NETLINK_GET_STRICT_CHK, 1);
	/* Link dumps can exceed libnl's default receive buffer. */
	nl_socket_enable_msg_peek(sk);
	c->sk = sk;
	return 0;
}

struct cni_nl *netlink_open(const struct cni_netns *ns, struct cni_err *err)
{
	struct open_ctx c = {0};
	errno = 0;
	if (netns_run(ns, open_in_ns, &c) < 0) {
		int e = c.error ? c.error : (errno ? errno : EIO);
		err_errno(err, CNI_ERR_INTERNAL, e, "failed to open netlink socket in %s",
			  ns ? ns->path : "host namespace");
		return NULL;
	}
	struct cni_nl *nl = xcalloc(1, sizeof(*nl));
	nl->sk = c.sk;
	return nl;
}

void netlink_close(struct cni_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl);
}

int netlink_errno(const struct cni_nl *nl)
{
	return nl->error;
}

const char *netlink_extack(const struct cni_nl *nl)
{
	return nl->extack;
}

bool netlink_is_gone(int r)
{
	return r == -ENODEV || r == -ENOENT || r == -ESRCH || r == -EADDRNOTAVAIL;
}

struct nl_msg *netlink_msg(int type, int flags, const void *hdr, size_t len)
{
	struct nl_msg *m = nlmsg_alloc_simple(type, flags);
	if (!m || nlmsg_append(m, (void *)hdr, len, NLMSG_ALIGNTO) < 0)
		abort();
	return m;
}

void netlink_put(struct nl_msg *m, int type, const void *data, size_t len)
{
	if (nla_put(m, type, (int)len, data) < 0)
		abort();
}

void netlink_put_u8(struct nl_msg *m, int type, uint8_t v)
{
	netlink_put(m, type, &v, sizeof(v));
}

void netlink_put_u16(struct nl_msg *m, int type, uint16_t v)
{
	netlink_put(m, type, &v, sizeof(v));
}

void netlink_put_u32(struct nl_msg *m, int type, uint32_t v)
{
	netlink_put(m, type, &v, sizeof(v));
}

void netlink_put_str(struct nl_msg *m, int type, const char *s)
{
	netlink_put(m, type, s, strlen(s) + 1);
}

struct nlattr *netlink_nest(struct nl_msg *m, int type)
{
	/* The kernel only takes bridge port settings (IFLA_PROTINFO) as a
	 * nest when NLA_F_NESTED is set; older libnl does not set it. */
	struct nlattr *a = nla_nest_start(m, type | NLA_F_NESTED);
	if (!a)
		abort();
	return a;
}

void netlink_nest_end(struct nl_msg *m, struct nlattr *nest)
{
	if (nla_nest_end(m, nest) < 0)
		abort();
}

/* The TLVs after an NLMSG_ERROR or NLMSG_DONE payload of off bytes. */
static void save_extack(struct nl_req *q, const struct nlmsghdr *h, size_t off)
{
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	size_t start = NLMSG_HDRLEN + NLMSG_ALIGN(off);
	if (h->nlmsg_len <= start)
		return;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)h + start),
		      (int)(h->nlmsg_len - start), NULL) < 0)
		return;
	struct nlattr *a = tb[NLMSGERR_ATTR_MSG];
	if (!a || nla_len(a) <= 0)
		return;
	size_t n = netlink_attr_str(q->extack, sizeof(q->extack), a);
	/* The kernel's messages have no final period; some subsystems add
	 * one. Keep "(kernel: ...)" uniform. */
	while (n && (q->extack[n - 1] == '.' || q->extack[n - 1] == '\n'))
		q->extack[--n] = 0;
}

/* Only replies to our request: a late reply to an earlier request that
 * failed half-way (or anything not from the kernel) is skipped. */
static int on_seq_check(struct nl_msg *msg, void *arg)
{
	struct nl_req *q = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct sockaddr_nl *src = nlmsg_get_src(msg);
	if (h->nlmsg_seq != q->seq || (src && src->nl_pid != 0))
		return NL_SKIP;
	return NL_OK;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nl_req *q = arg;
	if (q->fn && !q->fn_error) {
		int r = q->fn(nlmsg_hdr(msg), q->arg);
		if (r < 0)
			q->fn_error = r;
	}
	/* Keep reading to the end of a dump even after fn failed, so that
	 * the socket is clean for the next request. */
	return NL_OK;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct nl_req *q = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
		int e;
		memcpy(&e, nlmsg_data(h), sizeof(e));
		if (e < 0) {
			q->error = -e;
			save_extack(q, h, sizeof(int));
		}
	}
	q->done = true;
	return NL_STOP;
}

static int on_ack(_unused_ struct nl_msg *msg, void *arg)
{
	struct nl_req *q = arg;
	q->done = true;
	return NL_STOP;
}

static int on_error(_unused_ struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct nl_req *q = arg;
	struct nlmsghdr *h = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	q->error = e->error < 0 ? -e->error : e->error;
	size_t off = sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (h->nlmsg_len >= NLMSG_HDRLEN + off)
		save_extack(q, h, off);
	q->done = true;
	return NL_STOP;
}

static int on_dump_intr(_unused_ struct nl_msg *msg, void *arg)
{
	struct nl_req *q = arg;
	q->intr = true;
	return NL_OK;
}

/* errno for a libnl failure that is not a kernel error message. */
static int nle_to_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_AGAIN:
		return EAGAIN;
	case NLE_INTR:
	case NLE_DUMP_INTR:
		return EINTR;
	case NLE_BAD_SOCK:
		return EBADF;
	case NLE_PERM:
		return EPERM;
	case NLE_NOACCESS:
		return EACCES;
	case NLE_MSG_TRUNC:
	case NLE_MSGSIZE:
		return EMSGSIZE;
	case NLE_MSG_OVERFLOW:
		return ENOBUFS;
	case NLE_SEQ_MISMATCH:
		return EPROTO;
	default:
		return EIO;
	}
}

int netlink_request(struct cni_nl *nl, struct nl_msg *m,
		    int (*fn)(const struct nlmsghdr *h, void *arg), void *arg)
{
	struct nl_req q = {.fn = fn, .arg = arg};
	nl->error = 0;
	nl->extack[0] = 0;

	int r = nl_send_auto(nl->sk, m);
	q.seq = nlmsg_hdr(m)->nlmsg_seq;
	nlmsg_free(m);
	if (r < 0) {
		nl->error = nle_to_errno(r);
		return -nl->error;
	}

	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		abort();
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, on_seq_check, &q);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &q);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &q);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &q);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_dump_intr, &q);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &q);

	while (!q.done) {
		r = nl_recvmsgs(nl->sk, cb);
		if (r < 0 && !q.done) {
			q.error = nle_to_errno(r);
			break;
		}
	}
	nl_cb_put(cb);

	if (q.error) {
		nl->error = q.error;
		memcpy(nl->extack, q.extack, sizeof(nl->extack));
		return -q.error;
	}
	if (q.intr) {
		nl->error = EINTR;
		return -EINTR;
	}
	if (q.fn_error) {
		nl->error = -q.fn_error;
		return q.fn_error;
	}
	return 0;
}

void netlink_set_last(struct cni_nl *nl, int error, const char *extack)
{
	nl->error = error < 0 ? -error : error;
	strlcpy_(nl->extack, extack ? extack : "", sizeof(nl->extack));
}

int netlink_fail(struct cni_nl *nl, int r, struct cni_err *err, const char *fmt, ...)
{
	if (!err || err_isset(err))
		return r;
	char msg[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err_set(err, CNI_ERR_INTERNAL, "%s", msg);
	int e = r < 0 ? -r : r;
	if (nl && nl->extack[0])
		snprintf(err->details, sizeof(err->details), "%s (kernel: %s)", strerror(e),
			 nl->extack);
	else
		snprintf(err->details, sizeof(err->details), "%s", strerror(e));
	return r;
}

size_t netlink_attr_str(char *dst, size_t size, const struct nlattr *a)
{
	size_t n = a ? strnlen(nla_data(a), (size_t)nla_len(a)) : 0;
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, nla_data(a), n);
	dst[n] = 0;
	return n;
}
