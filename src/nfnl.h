/* nfnetlink over a raw socket: the few nftables reads on hot paths (does a
 * chain exist, what do its rules carry) and the conntrack dump, without
 * libnftables' object cache, whose load grows with the ruleset.
 *
 * One socket per process and network namespace: closing a netfilter
 * netlink socket waits for the kernel's deferred nf_tables destroy work
 * (an RCU grace period), so we close it only at exit. */
#ifndef CNI_NFNL_H
#define CNI_NFNL_H

#include <linux/netlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Attribute walking within len bytes at data. */
bool nfa_ok(const struct nlattr *a, size_t left);
const struct nlattr *nfa_next(const struct nlattr *a, size_t *left);
/* The attribute of type in data (len bytes), or NULL. */
const struct nlattr *nfa_find(const void *data, size_t len, int type);
const void *nfa_data(const struct nlattr *a);
size_t nfa_len(const struct nlattr *a);


/* Called with each reply message and its attributes (after the nfgenmsg
 * header); non-zero stops the walk and becomes nfnl_request's result. */
typedef int (*nfnl_cb)(const struct nlmsghdr *h, const void *attrs, size_t len, void *arg);

/* One request on the process's socket: type is (subsystem << 8 | message),
 * attrs (alen bytes) follow the nfgenmsg header. flags: NLM_F_DUMP, or 0
 * for a single object (an ACK is asked for). Returns 0, -errno from the
 * kernel (-ENOENT: no such object), or cb's non-zero result. */
int nfnl_request(uint16_t type, uint16_t flags, uint8_t family, const void *attrs, size_t alen,
		 nfnl_cb cb, void *arg);

/* Whether the current network namespace is the one *key recorded (a
 * key of zeros matches none); if not, *key is set to it. Per-process
 * netfilter sockets are made again when this says no. */
struct nfnl_ns {
	unsigned long long dev, ino;
};
bool nfnl_same_netns(struct nfnl_ns *key);



/* A growing buffer of netlink messages (a batch of nf_tables changes,
 * applied whole or not at all) or, zero-initialised and given only
 * attributes, the attributes of one request. */
struct nfnl_buf {
	char *buf;
	size_t len, cap;
	size_t msg;	   /* offset of the message being built */
	size_t nest[8];	   /* offsets of the open nests */
	size_t depth;
	uint32_t seq0, seq; /* first and last sequence numbers */
};
void nfnl_batch_init(struct nfnl_buf *b);
void nfnl_buf_free(struct nfnl_buf *b);
/* Start a message of nf_tables type msg (NFT_MSG_*) with extra flags
 * (NLM_F_CREATE, ...) for family. */
void nfnl_batch_msg(struct nfnl_buf *b, int msg, uint16_t flags, uint8_t family);
void nfnl_put(struct nfnl_buf *b, int type, const void *data, size_t len);
void nfnl_put_strz(struct nfnl_buf *b, int type, const char *s);
void nfnl_put_be32(struct nfnl_buf *b, int type, uint32_t v);
void nfnl_nest(struct nfnl_buf *b, int type);
void nfnl_nest_end(struct nfnl_buf *b);
/* Send the batch; 0, or the kernel's first error (-errno). */
int nfnl_batch_send(struct nfnl_buf *b);

#endif
