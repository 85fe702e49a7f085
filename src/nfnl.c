/* nfnetlink over a raw socket; see nfnl.h. */
#include "nfnl.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NFNL_BUF (128u << 10)

bool nfa_ok(const struct nlattr *a, size_t left)
{
	return left >= sizeof(*a) && a->nla_len >= sizeof(*a) && a->nla_len <= left;
}

const struct nlattr *nfa_next(const struct nlattr *a, size_t *left)
{
	size_t len = NLA_ALIGN(a->nla_len);
	*left = len < *left ? *left - len : 0;
	return (const struct nlattr *)((const char *)a + len);
}

const struct nlattr *nfa_find(const void *data, size_t len, int type)
{
	for (const struct nlattr *a = data; nfa_ok(a, len); a = nfa_next(a, &len))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

const void *nfa_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

size_t nfa_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

bool nfnl_same_netns(struct nfnl_ns *key)
{
	struct stat st;
	struct nfnl_ns now = {0, 0};
	if (stat("/proc/self/ns/net", &st) == 0)
		now = (struct nfnl_ns){st.st_dev, st.st_ino};
	bool same = now.ino && now.dev == key->dev && now.ino == key->ino;
	*key = now;
	return same;
}

/* The process's socket in the current network namespace, or -1. */
static int nfnl_socket(void)
{
	static int fd = -1;
	static struct nfnl_ns ns;
	if (!nfnl_same_netns(&ns) && fd >= 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	return fd;
}

static uint32_t seq;

/* The sequence numbers of the batch being sent, and its first error. */
static struct {
	uint32_t lo, hi;
	int err;
} batch;

int nfnl_request(uint16_t type, uint16_t flags, uint8_t family, const void *attrs, size_t alen,
		 nfnl_cb cb, void *arg)
{
	static char *buf;
	int fd = nfnl_socket();
	if (fd < 0)
		return -errno;
	if (!buf)
		buf = xmalloc(NFNL_BUF);
	size_t hlen = NLMSG_LENGTH(sizeof(struct nfgenmsg));
	if (hlen + alen > NFNL_BUF)
		return -EMSGSIZE;
	struct nlmsghdr h = {.nlmsg_len = (uint32_t)(hlen + alen),
			     .nlmsg_type = type,
			     .nlmsg_flags = (uint16_t)(NLM_F_REQUEST | (flags ? flags : NLM_F_ACK)),
			     .nlmsg_seq = ++seq};
	struct nfgenmsg g = {.nfgen_family = family, .version = NFNETLINK_V0};
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + NLMSG_HDRLEN, &g, sizeof(g));
	if (alen)
		memcpy(buf + hlen, attrs, alen);
	if (send(fd, buf, h.nlmsg_len, 0) < 0)
		return -errno;
	int r = 0;
	for (bool done = false; !done;) {
		ssize_t got = recv(fd, buf, NFNL_BUF, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		size_t left = (size_t)got;
		for (struct nlmsghdr *m = (struct nlmsghdr *)buf; NLMSG_OK(m, left);
		     m = NLMSG_NEXT(m, left)) {
			if (m->nlmsg_seq != seq) {
				/* A batch's error, or an answer to an earlier,
				 * abandoned request. */
				const struct nlmsgerr *e = NLMSG_DATA(m);
				if (m->nlmsg_type == NLMSG_ERROR && m->nlmsg_seq >= batch.lo &&
				    m->nlmsg_seq <= batch.hi &&
				    m->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error && !batch.err)
					batch.err = e->error;
				continue;
			}
			if (m->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (m->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(m);
				if (r == 0)
					r = m->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? e->error : -EIO;
				done = true;
				break;
			}
			if (r != 0 || m->nlmsg_len < hlen)
				continue; /* cb stopped: drain the rest */
			r = cb ? cb(m, (const char *)m + hlen, m->nlmsg_len - hlen, arg) : 0;
		}
	}
	return r;
}

/* Batches ------------------------------------------------------------*/

static void *batch_room(struct nfnl_buf *b, size_t n)
{
	while (b->len + n > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 4096;
		b->buf = xrealloc(b->buf, b->cap);
	}
	void *p = b->buf + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

/* A message header and nfgenmsg; returns its offset. */
static size_t batch_header(struct nfnl_buf *b, uint16_t type, uint16_t flags, uint8_t family,
			   uint16_t res_id)
{
	size_t off = b->len;
	struct nlmsghdr *h = batch_room(b, NLMSG_LENGTH(sizeof(struct nfgenmsg)));
	h->nlmsg_type = type;
	h->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	h->nlmsg_seq = b->seq = ++seq;
	struct nfgenmsg *g = NLMSG_DATA(h);
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	return off;
}

static void batch_close(struct nfnl_buf *b)
{
	if (b->msg != (size_t)-1)
		((struct nlmsghdr *)(b->buf + b->msg))->nlmsg_len = (uint32_t)(b->len - b->msg);
	b->msg = (size_t)-1;
}

void nfnl_batch_init(struct nfnl_buf *b)
{
	*b = (struct nfnl_buf){.msg = (size_t)-1};
	b->msg = batch_header(b, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	b->seq0 = b->seq;
	batch_close(b);
}

void nfnl_buf_free(struct nfnl_buf *b)
{
	free(b->buf);
	*b = (struct nfnl_buf){.msg = (size_t)-1};
}

void nfnl_batch_msg(struct nfnl_buf *b, int msg, uint16_t flags, uint8_t family)
{
	batch_close(b);
	b->msg = batch_header(b, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | msg), flags, family, 0);
}

void nfnl_put(struct nfnl_buf *b, int type, const void *data, size_t len)
{
	struct nlattr *a = batch_room(b, NLA_ALIGN(NLA_HDRLEN + len));
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	a->nla_type = (uint16_t)type;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
}

void nfnl_put_strz(struct nfnl_buf *b, int type, const char *s)
{
	nfnl_put(b, type, s, strlen(s) + 1);
}

void nfnl_put_be32(struct nfnl_buf *b, int type, uint32_t v)
{
	v = htonl(v);
	nfnl_put(b, type, &v, sizeof(v));
}

void nfnl_nest(struct nfnl_buf *b, int type)
{
	if (b->depth == sizeof(b->nest) / sizeof(b->nest[0]))
		abort();
	b->nest[b->depth++] = b->len;
	nfnl_put(b, type | NLA_F_NESTED, NULL, 0);
}

void nfnl_nest_end(struct nfnl_buf *b)
{
	size_t off = b->nest[--b->depth];
	((struct nlattr *)(b->buf + off))->nla_len = (uint16_t)(b->len - off);
}

int nfnl_batch_send(struct nfnl_buf *b)
{
	batch_close(b);
	b->msg = batch_header(b, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	batch_close(b);
	int fd = nfnl_socket();
	if (fd < 0)
		return -errno;
	batch.lo = b->seq0;
	batch.hi = b->seq;
	batch.err = 0;
	if (send(fd, b->buf, b->len, 0) < 0)
		return -errno;
	/* The kernel answers a batch while we send it; errors come without
	 * asking, successes say nothing. A request behind it tells where its
	 * answers end. */
	int r = nfnl_request((uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETGEN), 0, AF_UNSPEC, NULL,
			     0, NULL, NULL);
	batch.lo = batch.hi = 0;
	return batch.err ? batch.err : r;
}
