/* nftables backend, in-process through libnftables, table `inet cni`.
 *
 * Shared objects (per feature, prefixed pm_, masq_, fw_) are hook chains
 * and verdict maps, declared with their few rules (the skeleton) by the
 * first ADD, and by any ADD that finds them incomplete (plan_apply).
 *
 * Per attachment, tag = H16(net) "-" H16(ifname ":" id), there are chains
 * "<kind>-<tag>" and map elements "key : jump <kind>-<tag>". The first
 * chain of an attachment is its record: each of its rules has the comment
 * "<map> <key>" for a key the attachment holds (keys whose rules live in
 * a second chain get an inert "continue" rule there). So:
 * - ADD is one transaction and reads nothing: it *creates* the record
 *   chain, which fails if the attachment already exists (a re-ADD) or a
 *   key is held by someone else; only then does it read (slow path).
 * - DEL reads the record chain and removes its elements and chains in one
 *   transaction. Neither reads the shared maps, and each transaction holds
 *   only the attachment's own objects. (libnftables 1.0 still loads its
 *   object cache for every command, a cost that grows with the ruleset;
 *   we keep the number of commands per operation at one or two.)
 *
 * The shared maps are read on the slow path, by CHECK and by GC. Taking
 * over another attachment's key also deletes its record rule, so its DEL
 * cannot remove our element.
 *
 * We read with JSON output (`list chain`, `list map`) and parse it with
 * json.c; we write with the nft language, one buffer per transaction. */
#define CNI_FW_INTERNAL
#include "fw.h"
#include "link.h"
#include "nfnl.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <nftables/libnftables.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

#define T "inet cni"

/* What libnftables says when the object we list does not exist. */
#define NFT_ENOENT "No such file or directory"

/* libnftables, loaded on first use (see meson.build). */
static struct {
	__typeof__(nft_ctx_new) *ctx_new;
	__typeof__(nft_ctx_free) *ctx_free;
	__typeof__(nft_ctx_buffer_output) *ctx_buffer_output;
	__typeof__(nft_ctx_buffer_error) *ctx_buffer_error;
	__typeof__(nft_ctx_output_set_flags) *ctx_output_set_flags;
	__typeof__(nft_ctx_get_output_buffer) *ctx_get_output_buffer;
	__typeof__(nft_ctx_get_error_buffer) *ctx_get_error_buffer;
	__typeof__(nft_run_cmd_from_buffer) *run_cmd_from_buffer;
	__typeof__(nft_ctx_set_dry_run) *ctx_set_dry_run;
} nft;

static bool nft_load(void)
{
	static int loaded = -1;
	if (loaded >= 0)
		return loaded;
	void *h = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
	loaded = 0;
	if (!h) {
		fprintf(stderr, "cni: nftables: %s\n", dlerror());
		return false;
	}
#define SYM(field, name)                                                                           \
	if (!(*(void **)&nft.field = dlsym(h, name)))                                              \
		return false;
	SYM(ctx_new, "nft_ctx_new")
	SYM(ctx_free, "nft_ctx_free")
	SYM(ctx_buffer_output, "nft_ctx_buffer_output")
	SYM(ctx_buffer_error, "nft_ctx_buffer_error")
	SYM(ctx_output_set_flags, "nft_ctx_output_set_flags")
	SYM(ctx_get_output_buffer, "nft_ctx_get_output_buffer")
	SYM(ctx_get_error_buffer, "nft_ctx_get_error_buffer")
	SYM(run_cmd_from_buffer, "nft_run_cmd_from_buffer")
	SYM(ctx_set_dry_run, "nft_ctx_set_dry_run")
#undef SYM
	loaded = 1;
	return true;
}

static void ctx_freep(struct nft_ctx **c)
{
	if (*c)
		nft.ctx_free(*c);
}

static struct nft_ctx *ctx_new(void)
{
	if (!nft_load())
		return NULL;
	struct nft_ctx *c = nft.ctx_new(NFT_CTX_DEFAULT);
	if (!c)
		return NULL;
	nft.ctx_buffer_output(c);
	nft.ctx_buffer_error(c);
	return c;
}

/* The process's context, for everything but dry runs. One context means
 * one netlink socket and one object cache for every command of an
 * operation: libnftables refreshes the cache only when the ruleset's
 * generation has moved, and the kernel's deferred destroy work (an RCU
 * grace period, flushed when an nftables socket closes) is waited for once,
 * at exit, instead of once per command. A context's socket belongs to the
 * network namespace it was made in, so it is remade when we have moved. */
static struct nft_ctx *ctx_get(bool json)
{
	static struct nft_ctx *ctx;
	static struct nfnl_ns ns;
	if (!nfnl_same_netns(&ns) && ctx) {
		nft.ctx_free(ctx);
		ctx = NULL;
	}
	if (!ctx) {
		ctx = ctx_new();
		if (!ctx)
			return NULL;
	}
	nft.ctx_output_set_flags(ctx, json ? NFT_CTX_OUTPUT_JSON : 0);
	/* Both rewind their buffer: start each command with empty ones. */
	nft.ctx_get_output_buffer(ctx);
	nft.ctx_get_error_buffer(ctx);
	return ctx;
}

/* Why there is no context: libnftables is missing, or out of memory. */
static int nft_ctx_err(struct cni_err *err)
{
	if (!nft_load())
		return err_set(err, CNI_ERR_NOT_AVAILABLE,
			       "nftables backend unavailable: cannot load libnftables.so.1");
	return err_set(err, CNI_ERR_INTERNAL, "nftables: cannot create a context");
}

/* The useful part of libnftables' error text: the first line, trimmed. */
static void nft_errtext(struct nft_ctx *c, char *buf, size_t size)
{
	const char *e = nft.ctx_get_error_buffer(c);
	buf[0] = 0;
	if (!e)
		return;
	while (*e == '\n' || *e == ' ')
		e++;
	size_t n = strcspn(e, "\n");
	if (n >= size)
		n = size - 1;
	memcpy(buf, e, n);
	buf[n] = 0;
}

/* Run cmds as one transaction. err may be NULL (a try). */
static int nft_run(const char *cmds, const char *what, struct cni_err *err)
{
	struct nft_ctx *c = ctx_get(false);
	if (!c)
		return nft_ctx_err(err);
	if (nft.run_cmd_from_buffer(c, cmds) == 0)
		return 0;
	if (err) {
		char e[400];
		nft_errtext(c, e, sizeof(e));
		err_set(err, CNI_ERR_INTERNAL, "nftables: %s failed", what);
		err_append(err, "%s", e);
	}
	return -1;
}

/* Raw reads (nfnl.c): no libnftables cache to load. ------------------*/

#define NFNL_NFT(msg) ((uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | (msg)))
_Static_assert(AF_INET == NFPROTO_IPV4 && AF_INET6 == NFPROTO_IPV6 && AF_BRIDGE == NFPROTO_BRIDGE,
	       "fw.h passes table families as AF_* numbers");
/* libnftnl's user data type of a rule comment. */
#define UDATA_RULE_COMMENT 0

/* GETCHAIN (cb sees the chain) or, dump, GETRULE of one chain (cb sees
 * each rule). 0, -ENOENT when there is no such chain (GETCHAIN), -errno. */
static int chain_query(bool rules, int family, const char *table, const char *chain, nfnl_cb cb,
		       void *arg)
{
	if (strlen(table) >= NFT_TABLE_MAXNAMELEN || strlen(chain) >= NFT_CHAIN_MAXNAMELEN)
		return -ENAMETOOLONG;
	struct nfnl_buf a = {0};
	nfnl_put_strz(&a, rules ? NFTA_RULE_TABLE : NFTA_CHAIN_TABLE, table);
	nfnl_put_strz(&a, rules ? NFTA_RULE_CHAIN : NFTA_CHAIN_NAME, chain);
	int r = nfnl_request(NFNL_NFT(rules ? NFT_MSG_GETRULE : NFT_MSG_GETCHAIN),
			     rules ? NLM_F_DUMP : 0, (uint8_t)family, a.buf, a.len, cb, arg);
	nfnl_buf_free(&a);
	return r;
}

/* Whether a dumped rule belongs to chain (older kernels may not filter). */
static bool rule_in(const void *attrs, size_t len, const char *chain)
{
	const struct nlattr *c = nfa_find(attrs, len, NFTA_RULE_CHAIN);
	return c && strnlen(nfa_data(c), nfa_len(c)) == strlen(chain) &&
	       memcmp(nfa_data(c), chain, strlen(chain)) == 0;
}

bool fw_nft_chain_exists(int family, const char *table, const char *chain)
{
	return chain_query(false, family, table, chain, NULL, NULL) == 0;
}

struct bytes_arg {
	const char *chain;
	const void *bytes;
	size_t n;
};

static int rule_has_bytes(const struct nlmsghdr *h, const void *attrs, size_t len, void *arg)
{
	(void)h;
	const struct bytes_arg *b = arg;
	const struct nlattr *ex = nfa_find(attrs, len, NFTA_RULE_EXPRESSIONS);
	return rule_in(attrs, len, b->chain) && ex && memmem(nfa_data(ex), nfa_len(ex), b->bytes, b->n);
}

bool fw_nft_chain_has_bytes(int family, const char *table, const char *chain, const void *bytes,
			    size_t n)
{
	struct bytes_arg b = {chain, bytes, n};
	int r = chain_query(true, family, table, chain, rule_has_bytes, &b);
	return r != 0 && r != -ENOENT; /* found, or cannot tell */
}

static int chain_policy(const struct nlmsghdr *h, const void *attrs, size_t len, void *arg)
{
	(void)h;
	const struct nlattr *p = nfa_find(attrs, len, NFTA_CHAIN_POLICY);
	uint32_t v;
	if (p && nfa_len(p) == 4) {
		memcpy(&v, nfa_data(p), 4);
		*(int *)arg = (int)ntohl(v);
	}
	return 0;
}

/* Whether a rule ends with a jump or goto to a CNI-* chain. */
static bool rule_jumps_to_cni(const void *attrs, size_t len)
{
	const struct nlattr *ex = nfa_find(attrs, len, NFTA_RULE_EXPRESSIONS), *last = NULL;
	if (!ex)
		return false;
	size_t left = nfa_len(ex);
	for (const struct nlattr *e = nfa_data(ex); nfa_ok(e, left); e = nfa_next(e, &left))
		last = e;
	if (!last)
		return false;
	const struct nlattr *name = nfa_find(nfa_data(last), nfa_len(last), NFTA_EXPR_NAME);
	const struct nlattr *data = nfa_find(nfa_data(last), nfa_len(last), NFTA_EXPR_DATA);
	if (!name || !data || strncmp(nfa_data(name), "immediate", nfa_len(name)) != 0)
		return false;
	const struct nlattr *d = nfa_find(nfa_data(data), nfa_len(data), NFTA_IMMEDIATE_DATA);
	const struct nlattr *v = d ? nfa_find(nfa_data(d), nfa_len(d), NFTA_DATA_VERDICT) : NULL;
	const struct nlattr *code = v ? nfa_find(nfa_data(v), nfa_len(v), NFTA_VERDICT_CODE) : NULL;
	const struct nlattr *to = v ? nfa_find(nfa_data(v), nfa_len(v), NFTA_VERDICT_CHAIN) : NULL;
	uint32_t c;
	if (!code || nfa_len(code) != 4 || !to || nfa_len(to) < 5)
		return false;
	memcpy(&c, nfa_data(code), 4);
	int verdict = (int)ntohl(c);
	return (verdict == NFT_JUMP || verdict == NFT_GOTO) && !memcmp(nfa_data(to), "CNI-", 4);
}

static int rule_may_drop(const struct nlmsghdr *h, const void *attrs, size_t len, void *arg)
{
	(void)h;
	return rule_in(attrs, len, arg) && !rule_jumps_to_cni(attrs, len);
}

int fw_nft_forward_may_drop(int family)
{
	int policy = -1;
	int r = chain_query(false, family, "filter", "FORWARD", chain_policy, &policy);
	if (r == -ENOENT)
		return -1;
	if (r != 0 || policy != NF_ACCEPT)
		return 1;
	r = chain_query(true, family, "filter", "FORWARD", rule_may_drop, (void *)"FORWARD");
	return r != 0; /* a rule that may drop, or cannot tell */
}

bool fw_nft_available(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = nfnl_request(NFNL_NFT(NFT_MSG_GETGEN), 0, AF_UNSPEC, NULL, 0, NULL, NULL) == 0;
	return cached;
}

/* `list <what>` as JSON; NULL when absent (*gone) or on error (err). */
static struct cni_json *nft_list(const char *what, bool *gone, struct cni_err *err)
{
	*gone = false;
	struct nft_ctx *c = ctx_get(true);
	if (!c) {
		nft_ctx_err(err);
		return NULL;
	}
	_cleanup_free_ char *cmd = xasprintf("list %s", what);
	if (nft.run_cmd_from_buffer(c, cmd) != 0) {
		char e[400];
		nft_errtext(c, e, sizeof(e));
		if (strstr(e, NFT_ENOENT)) {
			*gone = true;
			return NULL;
		}
		err_set(err, CNI_ERR_INTERNAL, "nftables: %s failed", cmd);
		err_append(err, "%s", e);
		return NULL;
	}
	const char *out = nft.ctx_get_output_buffer(c);
	struct cni_err perr = {0};
	struct cni_json *j = json_parse(out, strlen(out), &perr);
	if (!j) {
		err_set(err, CNI_ERR_INTERNAL, "nftables: cannot read the output of %s", cmd);
		err_append(err, "%s", perr.msg);
	}
	return j;
}

/* The items of {"nftables": [...]} that are objects with key kind. */
static size_t items(const struct cni_json *j, const char *kind, const struct cni_json ***out)
{
	const struct cni_json *arr = json_get(j, "nftables");
	size_t n = 0, cap = 0;
	const struct cni_json **v = NULL;
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct cni_json *o = json_get(json_at(arr, i), kind);
		if (!o)
			continue;
		xgrow(&v, &cap, n, sizeof(*v));
		v[n++] = o;
	}
	*out = v;
	return n;
}

/* A key as nft writes it in a command: concatenations joined by " . ". */
static void key_text(const struct cni_json *k, struct strbuf *b)
{
	if (json_is(k, JSON_STRING)) {
		strbuf_add(b, "%s", json_str(k));
	} else if (json_is(k, JSON_NUMBER)) {
		strbuf_add(b, "%s", k->num);
	} else if (json_get(k, "concat")) {
		const struct cni_json *c = json_get(k, "concat");
		for (size_t i = 0; i < json_len(c); i++) {
			if (i)
				strbuf_add(b, " . ");
			key_text(json_at(c, i), b);
		}
	} else if (json_get(k, "prefix")) {
		const struct cni_json *p = json_get(k, "prefix");
		key_text(json_get(p, "addr"), b);
		strbuf_add(b, "/");
		key_text(json_get(p, "len"), b);
	} else {
		strbuf_add(b, "?");
	}
}

/* One record or element: map, key and the chain holding/targeted. */
struct nrec {
	char *map, *key, *chain;
	char *handle; /* rule handle (records read from a chain) */
};

struct nrecs {
	struct nrec *v;
	size_t n, cap;
};

static void recs_add(struct nrecs *r, const char *map, const char *key, const char *chain,
		     const char *handle)
{
	xgrow(&r->v, &r->cap, r->n, sizeof(*r->v));
	r->v[r->n++] = (struct nrec){xstrdup(map), xstrdup(key), xstrdup(chain),
				     handle ? xstrdup(handle) : NULL};
}

static void recs_free(struct nrecs *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].map);
		free(r->v[i].key);
		free(r->v[i].chain);
		free(r->v[i].handle);
	}
	free(r->v);
	*r = (struct nrecs){0};
}

static bool recs_has(const struct nrecs *r, const char *map, const char *key)
{
	for (size_t i = 0; i < r->n; i++)
		if (streq(r->v[i].map, map) && streq(r->v[i].key, key))
			return true;
	return false;
}

/* A rule of a record chain: its comment "<map> <key>" and handle. */
struct rec_arg {
	const char *chain;
	struct nrecs *r;
};

static int record_rule(const struct nlmsghdr *h, const void *attrs, size_t len, void *arg)
{
	(void)h;
	const struct rec_arg *ra = arg;
	const struct nlattr *hd = nfa_find(attrs, len, NFTA_RULE_HANDLE);
	const struct nlattr *ud = nfa_find(attrs, len, NFTA_RULE_USERDATA);
	if (!rule_in(attrs, len, ra->chain) || !hd || nfa_len(hd) != 8 || !ud)
		return 0;
	/* User data: (type, length, value) triples, as libnftnl writes them. */
	const uint8_t *u = nfa_data(ud), *end = u + nfa_len(ud);
	while (end - u >= 2 && end - u - 2 >= u[1]) {
		if (u[0] == UDATA_RULE_COMMENT) {
			_cleanup_free_ char *c = xstrndup((const char *)u + 2, u[1]);
			const char *sp = strchr(c, ' ');
			uint64_t be;
			memcpy(&be, nfa_data(hd), 8);
			char handle[24];
			snprintf(handle, sizeof(handle), "%llu", (unsigned long long)be64toh(be));
			if (sp) {
				_cleanup_free_ char *map = xstrndup(c, (size_t)(sp - c));
				recs_add(ra->r, map, sp + 1, ra->chain, handle);
			}
			break;
		}
		u += 2 + u[1];
	}
	return 0;
}

/* Read the records of a per-attachment chain into r. *exists tells whether
 * the chain is there. Records without our comment shape are ignored. */
static int read_chain(const char *chain, struct nrecs *r, bool *exists, struct cni_err *err)
{
	*exists = false;
	int e = chain_query(false, NFPROTO_INET, "cni", chain, NULL, NULL);
	if (e == -ENOENT)
		return 0;
	struct rec_arg ra = {chain, r};
	if (e == 0)
		e = chain_query(true, NFPROTO_INET, "cni", chain, record_rule, &ra);
	if (e < 0)
		return err_errno(err, CNI_ERR_INTERNAL, -e, "nftables: cannot read chain %s", chain);
	*exists = true;
	return 0;
}

/* Read the elements of a verdict map: key and the chain each jumps to. */
static int read_map(const char *map, struct nrecs *r, struct cni_err *err)
{
	bool gone;
	_cleanup_free_ char *what = xasprintf("map " T " %s", map);
	_cleanup_(json_freep) struct cni_json *j = nft_list(what, &gone, err);
	if (!j)
		return gone ? 0 : -1;
	_cleanup_free_ const struct cni_json **maps = NULL;
	size_t n = items(j, "map", &maps);
	for (size_t m = 0; m < n; m++) {
		const struct cni_json *elems = json_get(maps[m], "elem");
		for (size_t i = 0; i < json_len(elems); i++) {
			const struct cni_json *pair = json_at(elems, i);
			const struct cni_json *k = json_at(pair, 0), *v = json_at(pair, 1);
			if (json_get(k, "elem"))
				k = json_get(json_get(k, "elem"), "val");
			const char *target = json_str(json_get(json_get(v, "jump"), "target"));
			if (!target)
				target = json_str(json_get(json_get(v, "goto"), "target"));
			struct strbuf kb = {0};
			key_text(k, &kb);
			recs_add(r, map, kb.s ? kb.s : "", target ? target : "", NULL);
			strbuf_free(&kb);
		}
	}
	return 0;
}

/* What one attachment should hold: its chains, their rules (each with the
 * map key it records), and the comment its map elements carry. */
struct nrule {
	int chain; /* index into plan.chains */
	char *map, *key, *body;
};

struct nplan {
	const char *skel;	 /* declares and rebuilds the shared objects */
	const char *extra;	 /* more shared changes for the same transaction */
	const char *const *maps; /* every verdict map of the feature */
	char chains[2][48];
	size_t n_chains;
	struct nrule *rules;
	size_t n_rules, cap;
	char comment[128];
};

static void plan_init(struct nplan *p, const char *skel, const char *const *maps,
		      const char *const *kinds, size_t n_kinds, const struct fw_att *a)
{
	*p = (struct nplan){.skel = skel, .maps = maps, .n_chains = n_kinds};
	char tag[FW_TAG_LEN + 1];
	fw_tag(a, tag);
	for (size_t i = 0; i < n_kinds; i++)
		snprintf(p->chains[i], sizeof(p->chains[i]), "%s-%s", kinds[i], tag);
	/* Element comments are for people reading the ruleset; the owner is
	 * the chain the element jumps to. nft allows 128 bytes, no quotes. */
	snprintf(p->comment, sizeof(p->comment), "net %s if %s id %s", a->net ? a->net : "",
		 a->ifname ? a->ifname : "", a->id ? a->id : "");
	for (char *s = p->comment; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			*s = '_';
}

static void plan_rule(struct nplan *p, int chain, const char *map, const char *key, const char *fmt,
		      ...) _printf_(5, 6);
static void plan_rule(struct nplan *p, int chain, const char *map, const char *key, const char *fmt,
		      ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *body = NULL;
	if (vasprintf(&body, fmt, ap) < 0)
		abort();
	va_end(ap);
	xgrow(&p->rules, &p->cap, p->n_rules, sizeof(*p->rules));
	p->rules[p->n_rules++] = (struct nrule){chain, xstrdup(map), xstrdup(key), body};
}

/* Whether rules[i] is the first of the plan with its (map, key). */
static bool plan_first_key(const struct nplan *p, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (streq(p->rules[k].map, p->rules[i].map) &&
		    streq(p->rules[k].key, p->rules[i].key))
			return false;
	return true;
}

static void plan_free(struct nplan *p)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].map);
		free(p->rules[i].key);
		free(p->rules[i].body);
	}
	free(p->rules);
	p->rules = NULL;
	p->n_rules = p->cap = 0;
}

static bool plan_owns(const struct nplan *p, const char *chain)
{
	for (size_t i = 0; i < p->n_chains; i++)
		if (streq(p->chains[i], chain))
			return true;
	return false;
}

static bool plan_wants(const struct nplan *p, const char *map, const char *key)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (streq(p->rules[i].map, map) && streq(p->rules[i].key, key))
			return true;
	return false;
}

/* Append "delete element" once per distinct (map, key) of r. */
static void add_deletes(struct strbuf *b, const struct nrecs *r)
{
	for (size_t i = 0; i < r->n; i++) {
		bool dup = false;
		for (size_t k = 0; k < i && !dup; k++)
			dup = streq(r->v[k].map, r->v[i].map) && streq(r->v[k].key, r->v[i].key);
		if (!dup)
			strbuf_add(b, "delete element " T " %s { %s }\n", r->v[i].map, r->v[i].key);
	}
}

/* Chains, rules and elements of the plan (after any deletes). fresh: the
 * record chain must not exist yet ("create" fails on a re-ADD). */
static void add_plan(struct strbuf *b, const struct nplan *p, bool fresh)
{
	for (size_t i = 0; i < p->n_chains; i++) {
		if (i == 0 && fresh)
			strbuf_add(b, "create chain " T " %s\n", p->chains[i]);
		else
			strbuf_add(b, "add chain " T " %s\nflush chain " T " %s\n", p->chains[i],
				   p->chains[i]);
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct nrule *r = &p->rules[i];
		if (r->chain == 0)
			strbuf_add(b, "add rule " T " %s %s comment \"%s %s\"\n", p->chains[0],
				   r->body, r->map, r->key);
		else
			strbuf_add(b, "add rule " T " %s %s\n", p->chains[r->chain], r->body);
	}
	/* Keys whose rules live in another chain are recorded by an inert
	 * rule in the record chain. */
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct nrule *r = &p->rules[i];
		bool recorded = false;
		for (size_t k = 0; k < p->n_rules && !recorded; k++)
			recorded = p->rules[k].chain == 0 && streq(p->rules[k].map, r->map) &&
				   streq(p->rules[k].key, r->key);
		if (!recorded && plan_first_key(p, i))
			strbuf_add(b, "add rule " T " %s continue comment \"%s %s\"\n",
				   p->chains[0], r->map, r->key);
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct nrule *r = &p->rules[i];
		if (plan_first_key(p, i))
			strbuf_add(b, "add element " T " %s { %s comment \"%s\" : jump %s }\n",
				   r->map, r->key, p->comment, p->chains[r->chain]);
	}
}

/* The record chain of the attachment owning chain ("pmm-<tag>" ->
 * "pm-<tag>"): the first kind of the plan, same tag. */
static void record_chain(const struct nplan *p, const char *chain, char *buf, size_t size)
{
	const char *tag = strchr(chain, '-');
	const char *first = p->chains[0];
	snprintf(buf, size, "%.*s%s", (int)(strchr(first, '-') - first), first, tag ? tag : "");
}

/* The slow path's deletes: every element jumping to our chains, every
 * element holding a key we want, and the record rules of the attachments
 * those keys are taken from. */
static int add_takeover(struct strbuf *b, const struct nplan *p, struct cni_err *err)
{
	struct nrecs elems = {0}, victims = {0};
	char **read = NULL;
	size_t n_read = 0;
	int r = 0;
	for (size_t m = 0; p->maps[m] && r == 0; m++)
		r = read_map(p->maps[m], &elems, err);
	for (size_t i = 0; i < elems.n && r == 0; i++) {
		struct nrec *e = &elems.v[i];
		if (plan_owns(p, e->chain)) {
			strbuf_add(b, "delete element " T " %s { %s }\n", e->map, e->key);
		} else if (plan_wants(p, e->map, e->key)) {
			strbuf_add(b, "delete element " T " %s { %s }\n", e->map, e->key);
			fprintf(stderr, "cni: nftables: %s { %s } taken over from chain %s\n",
				e->map, e->key, e->chain);
			/* Fix the loser's record so that its DEL leaves ours. */
			char rc[64];
			bool seen = false, exists;
			record_chain(p, e->chain, rc, sizeof(rc));
			for (size_t k = 0; k < n_read && !seen; k++)
				seen = streq(read[k], rc);
			if (!seen && e->chain[0]) {
				read = xrealloc(read, (n_read + 1) * sizeof(*read));
				read[n_read++] = xstrdup(rc);
				r = read_chain(rc, &victims, &exists, err);
			}
		}
	}
	for (size_t i = 0; i < victims.n && r == 0; i++) {
		struct nrec *v = &victims.v[i];
		if (plan_wants(p, v->map, v->key))
			strbuf_add(b, "delete rule " T " %s handle %s\n", v->chain, v->handle);
	}
	recs_free(&elems);
	recs_free(&victims);
	for (size_t i = 0; i < n_read; i++)
		free(read[i]);
	free(read);
	return r;
}

/* Replace what the attachment holds with plan p, in one transaction.
 *
 * The fast path sends only the attachment's own objects: re-declaring the
 * shared chains or flushing the hook chains would make the kernel defer
 * work behind an RCU grace period, which the next close of an nftables
 * socket waits for (10-20 ms). The skeleton is sent when that transaction
 * fails, which it does when the table, a map or a chain it names is
 * missing. So a change to a skeleton must rename a map or chain the
 * fast path names (an old table then fails the fast path once). */
static int plan_apply(const struct nplan *p, const char *what, struct cni_err *err)
{
	struct strbuf b = {0};
	strbuf_add(&b, "%s", p->extra ? p->extra : "");
	add_plan(&b, p, true);
	int r = nft_run(b.s, what, NULL);
	strbuf_free(&b);
	if (r == 0)
		return 0;

	/* A new or incomplete table. */
	strbuf_add(&b, "%s%s", p->skel, p->extra ? p->extra : "");
	add_plan(&b, p, true);
	r = nft_run(b.s, what, NULL);
	strbuf_free(&b);
	if (r == 0)
		return 0;

	/* Slow path (a re-ADD, or keys held by others): drop every element
	 * that points at us, take our keys over, and rebuild our chains. */
	strbuf_add(&b, "%s%s", p->skel, p->extra ? p->extra : "");
	r = add_takeover(&b, p, err);
	if (r == 0) {
		add_plan(&b, p, false);
		r = nft_run(b.s, what, err);
	}
	strbuf_free(&b);
	return r;
}

/* Remove the attachment's chains and the elements its record chain lists
 * (or, on the slow path, that jump to them). Nothing there is success;
 * force (GC) also clears a second chain left without its record chain. */
static int chains_remove(const struct nplan *p, bool force, const char *what, struct cni_err *err)
{
	struct nrecs rec = {0};
	bool exists;
	if (read_chain(p->chains[0], &rec, &exists, err) < 0)
		return -1;
	if (!exists && !force)
		return 0;
	struct strbuf b = {0};
	add_deletes(&b, &rec);
	recs_free(&rec);
	/* Deleting a chain deletes its rules. "add" first where the chain
	 * may not be there: a chain that is not there is no error. */
	for (size_t i = 0; i < p->n_chains; i++) {
		if (i || !exists)
			strbuf_add(&b, "add chain " T " %s\n", p->chains[i]);
		strbuf_add(&b, "delete chain " T " %s\n", p->chains[i]);
	}

	int r = 0;
	if (nft_run(b.s, what, NULL) < 0) {
		/* A record out of step with the maps: find what jumps to us. */
		struct nrecs elems = {0};
		for (size_t m = 0; p->maps[m] && r == 0; m++)
			r = read_map(p->maps[m], &elems, err);
		if (r == 0) {
			strbuf_free(&b);
			for (size_t i = 0; i < elems.n; i++)
				if (plan_owns(p, elems.v[i].chain))
					strbuf_add(&b, "delete element " T " %s { %s }\n",
						   elems.v[i].map, elems.v[i].key);
			/* Declare them all: the record chain may be gone. */
			for (size_t i = 0; i < p->n_chains; i++)
				strbuf_add(&b, "add chain " T " %s\ndelete chain " T " %s\n",
					   p->chains[i], p->chains[i]);
			r = nft_run(b.s, what, err);
		}
		recs_free(&elems);
	}
	strbuf_free(&b);
	return r;
}

/* CHECK: every record and element of the plan is there and ours. */
static int plan_check(const struct nplan *p, const char *const *hooks, struct cni_err *err)
{
	for (size_t i = 0; hooks[i]; i++) {
		bool gone;
		_cleanup_free_ char *what = xasprintf("chain " T " %s", hooks[i]);
		_cleanup_(json_freep) struct cni_json *j = nft_list(what, &gone, err);
		if (!j)
			return gone ? err_set(err, CNI_ERR_INTERNAL, "nftables: chain %s missing",
					      hooks[i])
				    : -1;
	}
	struct nrecs rec = {0}, elems = {0};
	int r = 0;
	for (size_t i = 0; i < p->n_chains && r == 0; i++) {
		bool exists;
		bool used = false;
		for (size_t k = 0; k < p->n_rules; k++)
			used |= p->rules[k].chain == (int)i;
		r = read_chain(p->chains[i], &rec, &exists, err);
		if (r == 0 && used && !exists)
			r = err_set(err, CNI_ERR_INTERNAL, "nftables: chain %s missing",
				    p->chains[i]);
	}
	for (size_t m = 0; p->maps[m] && r == 0; m++)
		r = read_map(p->maps[m], &elems, err);
	for (size_t i = 0; i < p->n_rules && r == 0; i++) {
		const struct nrule *x = &p->rules[i];
		if (!recs_has(&rec, x->map, x->key)) {
			r = err_set(err, CNI_ERR_INTERNAL,
				    "nftables: record of %s { %s } missing in %s", x->map, x->key,
				    p->chains[0]);
			break;
		}
		bool ok = false;
		for (size_t k = 0; k < elems.n && !ok; k++)
			ok = streq(elems.v[k].map, x->map) && streq(elems.v[k].key, x->key) &&
			     streq(elems.v[k].chain, p->chains[x->chain]);
		if (!ok)
			r = err_set(
			    err, CNI_ERR_INTERNAL,
			    "nftables: element %s { %s } missing or held by another attachment",
			    x->map, x->key);
	}
	recs_free(&rec);
	recs_free(&elems);
	return r;
}

/* GC: chains "<kind>-<H(net)>-*" whose tag no valid attachment has. */
static int gc_kinds(const char *skel, const char *const *maps, const char *const *kinds,
		    size_t n_kinds, const char *net, const struct fw_att *valid, size_t n_valid,
		    struct cni_err *err)
{
	bool gone;
	_cleanup_(json_freep) struct cni_json *j = nft_list("chains inet", &gone, err);
	if (!j)
		return gone ? 0 : -1;
	char nh[17];
	fw_tag_net(net, nh);
	_cleanup_free_ const struct cni_json **chains = NULL;
	size_t n = items(j, "chain", &chains);
	char(*stale)[FW_TAG_LEN + 1] = xcalloc(n ? n : 1, sizeof(*stale));
	size_t n_stale = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = json_str(json_get(chains[i], "name"));
		if (!streq(json_str(json_get(chains[i], "table")), "cni") || !name)
			continue;
		for (size_t k = 0; k < n_kinds; k++) {
			size_t kl = strlen(kinds[k]);
			if (strncmp(name, kinds[k], kl) || name[kl] != '-' ||
			    strncmp(name + kl + 1, nh, 16) || strlen(name + kl + 1) != FW_TAG_LEN)
				continue;
			const char *tag = name + kl + 1;
			bool keep = false;
			for (size_t v = 0; v < n_valid && !keep; v++) {
				char vt[FW_TAG_LEN + 1];
				fw_tag(&valid[v], vt);
				keep = streq(vt, tag);
			}
			for (size_t s = 0; s < n_stale && !keep; s++)
				keep = streq(stale[s], tag);
			if (!keep)
				snprintf(stale[n_stale++], FW_TAG_LEN + 1, "%s", tag);
		}
	}
	int r = 0;
	for (size_t s = 0; s < n_stale && r == 0; s++) {
		struct nplan p = {.skel = skel, .maps = maps, .n_chains = n_kinds};
		for (size_t k = 0; k < n_kinds; k++)
			snprintf(p.chains[k], sizeof(p.chains[k]), "%s-%s", kinds[k], stale[s]);
		r = chains_remove(&p, true, "garbage collection", err);
	}
	free(stale);
	return r;
}

int fw_nft_check_conditions(int family, const char *const *cond, size_t n, const char *field,
			    struct cni_err *err)
{
	/* A dry run of a rule shaped like ours, in a scratch table: the
	 * kernel is not changed, but syntax and types are checked. */
	struct strbuf b = {0};
	strbuf_add(&b,
		   "add table inet cni_check\n"
		   "add chain inet cni_check c { type nat hook prerouting priority -100; }\n"
		   "add rule inet cni_check c meta nfproto %s tcp dport 1",
		   family == AF_INET ? "ipv4" : "ipv6");
	for (size_t i = 0; i < n; i++)
		strbuf_add(&b, " %s", cond[i]);
	strbuf_add(&b, " %s\n",
		   family == AF_INET ? "dnat ip to 127.0.0.1:1" : "dnat ip6 to [::1]:1");
	_cleanup_(ctx_freep) struct nft_ctx *c = ctx_new();
	int r = 0;
	if (c) {
		nft.ctx_set_dry_run(c, true);
		if (nft.run_cmd_from_buffer(c, b.s) != 0) {
			char e[400];
			nft_errtext(c, e, sizeof(e));
			err_set(err, CNI_ERR_INVALID_CONFIG, "%s: not a valid nftables match",
				field);
			r = err_append(err, "%s", e);
		}
	}
	strbuf_free(&b);
	return r;
}

/* portmap ---------------------------------------------------------------*/

static const char pm_skel[] =
    "add table " T "\n"
    "add map " T " pm_any { type nf_proto . inet_proto . inet_service : verdict; }\n"
    "add map " T " pm_hostip4 { type ipv4_addr . inet_proto . inet_service : verdict; }\n"
    "add map " T " pm_hostip6 { type ipv6_addr . inet_proto . inet_service : verdict; }\n"
    "add map " T " pm_masq4 { type ipv4_addr : verdict; }\n"
    "add map " T " pm_masq6 { type ipv6_addr : verdict; }\n"
    "add chain " T " pm_hostports\n"
    "flush chain " T " pm_hostports\n"
    /* An address-specific mapping wins over one for every address. */
    "add rule " T " pm_hostports ip daddr . meta l4proto . th dport vmap @pm_hostip4\n"
    "add rule " T " pm_hostports ip6 daddr . meta l4proto . th dport vmap @pm_hostip6\n"
    "add rule " T " pm_hostports meta nfproto . meta l4proto . th dport vmap @pm_any\n"
    /* nft 1.0 names "dstnat" for prerouting only: numbers for both. */
    "add chain " T " pm_prerouting { type nat hook prerouting priority -100; }\n"
    "flush chain " T " pm_prerouting\n"
    "add rule " T " pm_prerouting fib daddr type local jump pm_hostports\n"
    "add chain " T " pm_output { type nat hook output priority -100; }\n"
    "flush chain " T " pm_output\n"
    "add rule " T " pm_output fib daddr type local jump pm_hostports\n"
    "add chain " T " pm_postrouting { type nat hook postrouting priority 100; }\n"
    "flush chain " T " pm_postrouting\n"
    "add rule " T " pm_postrouting ct status dnat ip daddr vmap @pm_masq4\n"
    "add rule " T " pm_postrouting ct status dnat ip6 daddr vmap @pm_masq6\n";

static const char *const pm_maps[] = {"pm_any",	  "pm_hostip4", "pm_hostip6",
				      "pm_masq4", "pm_masq6",	NULL};
static const char *const pm_kinds[] = {"pm", "pmm"};
static const char *const pm_hooks[] = {"pm_prerouting", "pm_output", "pm_hostports",
				       "pm_postrouting", NULL};

static void pm_plan_family(struct nplan *p, const struct fw_pm_conf *c, int family)
{
	const struct cni_cidr *ct = family == AF_INET ? &c->ip4 : &c->ip6;
	bool v4 = family == AF_INET;
	const char *ipx = v4 ? "ip" : "ip6";
	char cip[IP_STRLEN], net[CIDR_STRLEN];
	ip_format(&ct->ip, cip);
	struct cni_cidr nw = ip_cidr_network(ct);
	ip_cidr_format(&nw, net);
	struct strbuf cond = {0};
	const char *const *cv = v4 ? c->cond4 : c->cond6;
	size_t cn = v4 ? c->n_cond4 : c->n_cond6;
	strbuf_add(&cond, "%s", "");
	for (size_t i = 0; i < cn; i++)
		strbuf_add(&cond, " %s", cv[i]);

	for (size_t i = 0; i < c->n_maps; i++) {
		const struct fw_portmap *m = &c->maps[i];
		if (ip_isset(&m->host_ip) && m->host_ip.family != family)
			continue; /* the reference skips other-family host IPs */
		bool specific = ip_isset(&m->host_ip) && !fw_ip_unspecified(&m->host_ip);
		const char *proto = fw_proto_name(m->proto);
		char key[128], hip[IP_STRLEN] = "";
		if (specific) {
			ip_format(&m->host_ip, hip);
			snprintf(key, sizeof(key), "%s . %s . %u", hip, proto, m->host_port);
		} else {
			snprintf(key, sizeof(key), "%s . %s . %u", v4 ? "ipv4" : "ipv6", proto,
				 m->host_port);
		}
		char dst[80];
		snprintf(dst, sizeof(dst), v4 ? "%s:%u" : "[%s]:%u", cip, m->container_port);
		plan_rule(p, 0, specific ? (v4 ? "pm_hostip4" : "pm_hostip6") : "pm_any", key,
			  "meta nfproto %s%s%s%s %s dport %u%s dnat %s to %s", v4 ? "ipv4" : "ipv6",
			  specific ? " " : "", specific ? (v4 ? "ip daddr " : "ip6 daddr ") : "",
			  hip, proto, m->host_port, cond.s, ipx, dst);

		if (!c->snat)
			continue;
		/* Masquerade only the connections this mapping made: their
		 * original destination port is the host port. */
		const char *mmap = v4 ? "pm_masq4" : "pm_masq6";
		if (c->masq_all) {
			plan_rule(
			    p, 1, mmap, cip,
			    "meta nfproto %s meta l4proto %s ct original proto-dst %u masquerade",
			    v4 ? "ipv4" : "ipv6", proto, m->host_port);
			continue;
		}
		/* Hairpin: from the container's own prefix, whose replies
		 * would otherwise bypass the host. */
		plan_rule(p, 1, mmap, cip,
			  "%s saddr %s meta l4proto %s ct original proto-dst %u masquerade", ipx,
			  net, proto, m->host_port);
		if (v4) /* localhost; there is no route_localnet for IPv6 */
			plan_rule(p, 1, mmap, cip,
				  "ip saddr 127.0.0.0/8 meta l4proto %s ct original proto-dst %u "
				  "masquerade",
				  proto, m->host_port);
	}
	strbuf_free(&cond);
}

static void pm_plan(struct nplan *p, const struct fw_pm_conf *c)
{
	plan_init(p, pm_skel, pm_maps, pm_kinds, 2, &c->att);
	if (ip_isset(&c->ip4.ip))
		pm_plan_family(p, c, AF_INET);
	if (ip_isset(&c->ip6.ip))
		pm_plan_family(p, c, AF_INET6);
}

int fw_nft_portmap_add(const struct fw_pm_conf *c, struct cni_err *err)
{
	struct nplan p;
	pm_plan(&p, c);
	int r = plan_apply(&p, "port mapping", err);
	plan_free(&p);
	return r;
}

int fw_nft_portmap_check(const struct fw_pm_conf *c, struct cni_err *err)
{
	struct nplan p;
	pm_plan(&p, c);
	int r = plan_check(&p, pm_hooks, err);
	plan_free(&p);
	return r;
}

int fw_nft_portmap_del(const struct fw_att *a, struct cni_err *err)
{
	struct nplan p;
	plan_init(&p, pm_skel, pm_maps, pm_kinds, 2, a);
	return chains_remove(&p, false, "port mapping removal", err);
}

int fw_nft_portmap_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err)
{
	return gc_kinds(pm_skel, pm_maps, pm_kinds, 2, net, valid, n, err);
}

/* ipMasq ----------------------------------------------------------------*/

static const char masq_skel[] =
    "add table " T "\n"
    "add map " T " masq_src4 { type ipv4_addr : verdict; }\n"
    "add map " T " masq_src6 { type ipv6_addr : verdict; }\n"
    "add chain " T " masq_postrouting { type nat hook postrouting priority 100; }\n"
    "flush chain " T " masq_postrouting\n"
    /* Containers may talk multicast to their neighbours unchanged. */
    "add rule " T " masq_postrouting ip daddr 224.0.0.0/4 return\n"
    "add rule " T " masq_postrouting ip6 daddr ff00::/8 return\n"
    "add rule " T " masq_postrouting ip saddr vmap @masq_src4\n"
    "add rule " T " masq_postrouting ip6 saddr vmap @masq_src6\n";

static const char *const masq_maps[] = {"masq_src4", "masq_src6", NULL};
static const char *const masq_kinds[] = {"masq"};
static const char *const masq_hooks[] = {"masq_postrouting", NULL};

static void masq_plan(struct nplan *p, const struct fw_att *a, const struct cni_cidr *nets,
		      size_t n)
{
	plan_init(p, masq_skel, masq_maps, masq_kinds, 1, a);
	for (size_t i = 0; i < n; i++) {
		bool v4 = nets[i].ip.family == AF_INET;
		char ip[IP_STRLEN], nw[CIDR_STRLEN];
		struct cni_cidr net = ip_cidr_network(&nets[i]);
		ip_format(&nets[i].ip, ip);
		ip_cidr_format(&net, nw);
		plan_rule(p, 0, v4 ? "masq_src4" : "masq_src6", ip,
			  "%s saddr %s %s daddr != %s masquerade", v4 ? "ip" : "ip6", ip,
			  v4 ? "ip" : "ip6", nw);
	}
}

/* The fast path of masq ADD as raw nfnetlink, the expressions nft itself
 * makes of masq_plan's rules: no libnftables (its cache is 2 MiB and grows
 * with the table) in a bridge or ptp ADD. Any failure (no table yet, a
 * re-ADD, a key held by another attachment) leaves the work to plan_apply. */
static void raw_expr(struct nfnl_buf *b, const char *name)
{
	nfnl_nest(b, NFTA_LIST_ELEM);
	nfnl_put_strz(b, NFTA_EXPR_NAME, name);
	nfnl_nest(b, NFTA_EXPR_DATA);
}

static void raw_expr_end(struct nfnl_buf *b)
{
	nfnl_nest_end(b);
	nfnl_nest_end(b);
}

static void raw_value(struct nfnl_buf *b, int type, const void *v, size_t len)
{
	nfnl_nest(b, type);
	nfnl_put(b, NFTA_DATA_VALUE, v, len);
	nfnl_nest_end(b);
}

static void raw_cmp(struct nfnl_buf *b, int op, const void *v, size_t len)
{
	raw_expr(b, "cmp");
	nfnl_put_be32(b, NFTA_CMP_SREG, NFT_REG_1);
	nfnl_put_be32(b, NFTA_CMP_OP, (uint32_t)op);
	raw_value(b, NFTA_CMP_DATA, v, len);
	raw_expr_end(b);
}

static void raw_payload(struct nfnl_buf *b, uint32_t offset, uint32_t len)
{
	raw_expr(b, "payload");
	nfnl_put_be32(b, NFTA_PAYLOAD_DREG, NFT_REG_1);
	nfnl_put_be32(b, NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
	nfnl_put_be32(b, NFTA_PAYLOAD_OFFSET, offset);
	nfnl_put_be32(b, NFTA_PAYLOAD_LEN, len);
	raw_expr_end(b);
}

/* User data holding a comment, as libnftnl writes it. */
static void raw_comment(struct nfnl_buf *b, int type, const char *comment)
{
	uint8_t ud[2 + 256];
	size_t n = strlen(comment) + 1;
	if (n > 255)
		n = 255;
	ud[0] = UDATA_RULE_COMMENT; /* the element's comment type is 0 too */
	ud[1] = (uint8_t)n;
	memcpy(ud + 2, comment, n - 1);
	ud[1 + n] = 0;
	nfnl_put(b, type, ud, 2 + n);
}

/* "& mask ^ 0" on register 1 (len bytes). */
static void raw_bitwise(struct nfnl_buf *b, const void *mask, uint32_t len)
{
	static const uint8_t zero[16];
	raw_expr(b, "bitwise");
	nfnl_put_be32(b, NFTA_BITWISE_SREG, NFT_REG_1);
	nfnl_put_be32(b, NFTA_BITWISE_DREG, NFT_REG_1);
	nfnl_put_be32(b, NFTA_BITWISE_LEN, len);
	raw_value(b, NFTA_BITWISE_MASK, mask, len);
	raw_value(b, NFTA_BITWISE_XOR, zero, len);
	raw_expr_end(b);
}

/* Rule i of plan p (one of the record chain's), its expressions opened. */
static void raw_rule(struct nfnl_buf *b, const struct nplan *p)
{
	nfnl_batch_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, NFPROTO_INET);
	nfnl_put_strz(b, NFTA_RULE_TABLE, "cni");
	nfnl_put_strz(b, NFTA_RULE_CHAIN, p->chains[0]);
	nfnl_nest(b, NFTA_RULE_EXPRESSIONS);
}

/* Expressions closed, then the record comment of rule i, "<map> <key>", as
 * add_plan writes it. */
static void raw_rule_end(struct nfnl_buf *b, const struct nplan *p, size_t i)
{
	nfnl_nest_end(b);
	_cleanup_free_ char *c = xasprintf("%s %s", p->rules[i].map, p->rules[i].key);
	raw_comment(b, NFTA_RULE_USERDATA, c);
}

/* "ip saddr IP" (dst: daddr), "ip6 ..." for an IPv6 address. */
static void raw_ip_match(struct nfnl_buf *b, const struct cni_ip *ip, bool dst)
{
	bool v4 = ip->family == AF_INET;
	uint8_t proto = v4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
	raw_expr(b, "meta");
	nfnl_put_be32(b, NFTA_META_DREG, NFT_REG_1);
	nfnl_put_be32(b, NFTA_META_KEY, NFT_META_NFPROTO);
	raw_expr_end(b);
	raw_cmp(b, NFT_CMP_EQ, &proto, 1);
	raw_payload(b, v4 ? (dst ? 16 : 12) : (dst ? 24 : 8), v4 ? 4 : 16);
	raw_cmp(b, NFT_CMP_EQ, ip->a, v4 ? 4 : 16);
}

/* An expression with no data ("masq"). */
static void raw_bare(struct nfnl_buf *b, const char *name)
{
	nfnl_nest(b, NFTA_LIST_ELEM);
	nfnl_put_strz(b, NFTA_EXPR_NAME, name);
	nfnl_nest_end(b);
}

static void raw_accept(struct nfnl_buf *b)
{
	raw_expr(b, "immediate");
	nfnl_put_be32(b, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	nfnl_nest(b, NFTA_IMMEDIATE_DATA);
	nfnl_nest(b, NFTA_DATA_VERDICT);
	nfnl_put_be32(b, NFTA_VERDICT_CODE, NF_ACCEPT);
	nfnl_nest_end(b);
	nfnl_nest_end(b);
	raw_expr_end(b);
}

/* Rule i of a masq plan: "ip saddr IP ip daddr != NET masquerade". */
static void raw_masq_rule(struct nfnl_buf *b, const struct nplan *p, size_t i,
			  const struct cni_cidr *c)
{
	bool v4 = c->ip.family == AF_INET;
	uint32_t len = v4 ? 4 : 16;
	struct cni_cidr net = ip_cidr_network(c);
	raw_rule(b, p);
	raw_ip_match(b, &c->ip, false);
	/* A whole-byte prefix compares its bytes; another is masked. */
	uint32_t dst = v4 ? 16 : 24;
	if (net.prefix > 0 && net.prefix % 8 == 0) {
		raw_payload(b, dst, (uint32_t)net.prefix / 8);
		raw_cmp(b, NFT_CMP_NEQ, net.ip.a, (size_t)net.prefix / 8);
	} else {
		uint8_t mask[16] = {0};
		for (int k = 0; k < net.prefix; k++)
			mask[k / 8] |= (uint8_t)(0x80 >> (k % 8));
		raw_payload(b, dst, len);
		raw_bitwise(b, mask, len);
		raw_cmp(b, NFT_CMP_NEQ, net.ip.a, len);
	}
	raw_bare(b, "masq");
	raw_rule_end(b, p, i);
}

/* "add element T map { KEY comment C : jump CHAIN }". */
static void raw_jump_elem(struct nfnl_buf *b, const char *map, const void *key, size_t len,
			  const char *chain, const char *comment)
{
	nfnl_batch_msg(b, NFT_MSG_NEWSETELEM, NLM_F_CREATE, NFPROTO_INET);
	nfnl_put_strz(b, NFTA_SET_ELEM_LIST_TABLE, "cni");
	nfnl_put_strz(b, NFTA_SET_ELEM_LIST_SET, map);
	nfnl_nest(b, NFTA_SET_ELEM_LIST_ELEMENTS);
	nfnl_nest(b, NFTA_LIST_ELEM);
	raw_value(b, NFTA_SET_ELEM_KEY, key, len);
	nfnl_nest(b, NFTA_SET_ELEM_DATA);
	nfnl_nest(b, NFTA_DATA_VERDICT);
	nfnl_put_be32(b, NFTA_VERDICT_CODE, (uint32_t)NFT_JUMP);
	nfnl_put_strz(b, NFTA_VERDICT_CHAIN, chain);
	nfnl_nest_end(b);
	nfnl_nest_end(b);
	raw_comment(b, NFTA_SET_ELEM_USERDATA, comment);
	nfnl_nest_end(b);
	nfnl_nest_end(b);
}

/* A batch for plan p: first its record chain, created (which fails if it
 * exists: the fallback then takes over). */
static void raw_begin(struct nfnl_buf *b, const struct nplan *p)
{
	nfnl_batch_init(b);
	nfnl_batch_msg(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL, NFPROTO_INET);
	nfnl_put_strz(b, NFTA_CHAIN_TABLE, "cni");
	nfnl_put_strz(b, NFTA_CHAIN_NAME, p->chains[0]);
}

/* The map elements of p, once per key (key[i]: the address rule i keys
 * on), then the batch is sent and freed. 0 or -errno. */
static int raw_send(struct nfnl_buf *b, const struct nplan *p, const struct cni_ip *const *key)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (plan_first_key(p, i))
			raw_jump_elem(b, p->rules[i].map, key[i]->a, key[i]->family == AF_INET ? 4 : 16,
				      p->chains[0], p->comment);
	int r = nfnl_batch_send(b);
	nfnl_buf_free(b);
	return r;
}

static int masq_raw_add(const struct nplan *p, const struct cni_cidr *nets, size_t n)
{
	if (p->n_rules != n)
		return -EINVAL;
	struct nfnl_buf b;
	_cleanup_free_ const struct cni_ip **key = xcalloc(n ? n : 1, sizeof(*key));
	raw_begin(&b, p);
	for (size_t i = 0; i < n; i++) {
		raw_masq_rule(&b, p, i, &nets[i]);
		key[i] = &nets[i].ip;
	}
	return raw_send(&b, p, key);
}

int fw_nft_masq_add(const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		    struct cni_err *err)
{
	struct nplan p;
	masq_plan(&p, a, nets, n);
	int r = masq_raw_add(&p, nets, n) == 0 ? 0 : plan_apply(&p, "masquerade setup", err);
	plan_free(&p);
	return r;
}

int fw_nft_masq_check(const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		      struct cni_err *err)
{
	struct nplan p;
	masq_plan(&p, a, nets, n);
	int r = plan_check(&p, masq_hooks, err);
	plan_free(&p);
	return r;
}

int fw_nft_masq_del(const struct fw_att *a, struct cni_err *err)
{
	struct nplan p;
	plan_init(&p, masq_skel, masq_maps, masq_kinds, 1, a);
	return chains_remove(&p, false, "masquerade removal", err);
}

int fw_nft_masq_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err)
{
	return gc_kinds(masq_skel, masq_maps, masq_kinds, 1, net, valid, n, err);
}

/* firewall --------------------------------------------------------------*/

static const char fw_skel[] =
    "add table " T "\n"
    "add map " T " fw_src4 { type ipv4_addr : verdict; }\n"
    "add map " T " fw_dst4 { type ipv4_addr : verdict; }\n"
    "add map " T " fw_src6 { type ipv6_addr : verdict; }\n"
    "add map " T " fw_dst6 { type ipv6_addr : verdict; }\n"
    "add set " T " fw_bridges { type ifname; }\n"
    "add set " T " fw_bridge_self { type ifname . ifname; }\n"
    "add set " T " fw_isolated_self { type ifname . ifname; }\n"
    /* The administrator's chain: created, never flushed by us. */
    "add chain " T " fw_admin\n"
    /* Ingress policies (the reference's CNI-ISOLATION-STAGE-1/2): drop
     * from one CNI bridge to another, and within an isolated bridge. */
    "add chain " T " fw_isolation\n"
    "flush chain " T " fw_isolation\n"
    "add rule " T " fw_isolation iifname . oifname @fw_isolated_self drop\n"
    "add rule " T " fw_isolation iifname . oifname @fw_bridge_self return\n"
    "add rule " T " fw_isolation iifname @fw_bridges oifname @fw_bridges drop\n"
    "add chain " T " fw_forward { type filter hook forward priority 0; }\n"
    "flush chain " T " fw_forward\n"
    "add rule " T " fw_forward jump fw_isolation\n"
    "add rule " T " fw_forward jump fw_admin\n"
    "add rule " T " fw_forward ip daddr vmap @fw_dst4\n"
    "add rule " T " fw_forward ip6 daddr vmap @fw_dst6\n"
    "add rule " T " fw_forward ip saddr vmap @fw_src4\n"
    "add rule " T " fw_forward ip6 saddr vmap @fw_src6\n";

static const char *const fw_maps[] = {"fw_src4", "fw_dst4", "fw_src6", "fw_dst6", NULL};
static const char *const fw_kinds[] = {"fw"};
static const char *const fw_hooks[] = {"fw_forward", NULL};

static void fw_plan(struct nplan *p, const struct fw_filter_conf *c)
{
	plan_init(p, fw_skel, fw_maps, fw_kinds, 1, &c->att);
	for (size_t i = 0; i < c->n_ips; i++) {
		bool v4 = c->ips[i].ip.family == AF_INET;
		char ip[IP_STRLEN];
		ip_format(&c->ips[i].ip, ip);
		plan_rule(p, 0, v4 ? "fw_dst4" : "fw_dst6", ip,
			  "%s daddr %s ct state established,related accept", v4 ? "ip" : "ip6", ip);
		plan_rule(p, 0, v4 ? "fw_src4" : "fw_src6", ip, "%s saddr %s accept",
			  v4 ? "ip" : "ip6", ip);
	}
}

/* The fast path of the firewall's ADD (no ingress policy) as raw
 * nfnetlink, as masq_raw_add: per address "ip daddr IP ct state
 * established,related accept" and "ip saddr IP accept", and their
 * elements. */
static int fw_raw_add(const struct nplan *p, const struct fw_filter_conf *c)
{
	if (p->n_rules != 2 * c->n_ips)
		return -EINVAL;
	struct nfnl_buf b;
	_cleanup_free_ const struct cni_ip **key = xcalloc(p->n_rules ? p->n_rules : 1, sizeof(*key));
	const uint32_t est_rel = 1u << 1 | 1u << 2, zero = 0; /* ct state bits, host order */
	raw_begin(&b, p);
	for (size_t i = 0; i < p->n_rules; i++) {
		bool dst = i % 2 == 0;
		key[i] = &c->ips[i / 2].ip;
		raw_rule(&b, p);
		raw_ip_match(&b, key[i], dst);
		if (dst) {
			raw_expr(&b, "ct");
			nfnl_put_be32(&b, NFTA_CT_DREG, NFT_REG_1);
			nfnl_put_be32(&b, NFTA_CT_KEY, NFT_CT_STATE);
			raw_expr_end(&b);
			raw_bitwise(&b, &est_rel, 4);
			raw_cmp(&b, NFT_CMP_NEQ, &zero, 4);
		}
		raw_accept(&b);
		raw_rule_end(&b, p, i);
	}
	return raw_send(&b, p, key);
}

int fw_nft_filter_add(const struct fw_filter_conf *c, struct cni_err *err)
{
	struct nplan p;
	struct strbuf ingress = {0};
	fw_plan(&p, c);
	if (c->ingress != FW_INGRESS_OPEN) {
		/* Per bridge and never removed, as the reference's isolation
		 * chains: other containers may still use the bridge. */
		strbuf_add(&ingress, "add element " T " fw_bridges { \"%s\" }\n", c->bridge);
		strbuf_add(&ingress, "add element " T " %s { \"%s\" . \"%s\" }\n",
			   c->ingress == FW_INGRESS_ISOLATED ? "fw_isolated_self"
							     : "fw_bridge_self",
			   c->bridge, c->bridge);
		p.extra = ingress.s;
	}
	int r = !p.extra && fw_raw_add(&p, c) == 0 ? 0 : plan_apply(&p, "firewall setup", err);
	plan_free(&p);
	strbuf_free(&ingress);
	return r;
}

int fw_nft_filter_check(const struct fw_filter_conf *c, struct cni_err *err)
{
	struct nplan p;
	fw_plan(&p, c);
	int r = plan_check(&p, fw_hooks, err);
	plan_free(&p);
	return r;
}

int fw_nft_filter_del(const struct fw_att *a, struct cni_err *err)
{
	struct nplan p;
	plan_init(&p, fw_skel, fw_maps, fw_kinds, 1, a);
	return chains_remove(&p, false, "firewall removal", err);
}

int fw_nft_filter_gc(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err)
{
	return gc_kinds(fw_skel, fw_maps, fw_kinds, 1, net, valid, n, err);
}

/* macspoofchk (bridge) ---------------------------------------------------
 *
 * Table "bridge cni": one base chain at prerouting priority -300 (before
 * anything else sees the frame, as the reference) with one rule that drops
 * a frame entering a guarded port from any source MAC but the one allowed
 * for that port. An attachment is two set elements, so ADD and DEL are one
 * small transaction each whatever the number of containers; the allowed
 * element carries "net/id/ifname" as its comment so a DEL without
 * prevResult can still find it. */

#define SPOOF_SKEL                                                                                 \
	"add table bridge cni\n"                                                                   \
	"create chain bridge cni spoofchk { type filter hook prerouting priority -300; "           \
	"policy accept; }\n"                                                                       \
	"add set bridge cni guarded { type ifname; }\n"                                            \
	"add set bridge cni allowed { type ifname . ether_addr; }\n"                               \
	"add rule bridge cni spoofchk iifname @guarded iifname . ether saddr != @allowed drop\n"

static bool spoof_safe(const char *hostif, const char *mac)
{
	uint8_t m[6];
	return name_is_safe(hostif, 15) && !strpbrk(hostif, "\"\\ ;#{}") && mac &&
	       link_parse_mac(mac, m) == 0;
}

int fw_spoofchk_add(const struct fw_att *a, const char *hostif, const char *mac,
			struct cni_err *err)
{
	if (!spoof_safe(hostif, mac))
		return err_set(err, CNI_ERR_INTERNAL, "macspoofchk: bad interface or MAC");
	_cleanup_free_ char *cmd = xasprintf(
		"add element bridge cni guarded { \"%s\" }\n"
		"add element bridge cni allowed { \"%s\" . %s comment \"%s/%s/%s\" }\n",
		hostif, hostif, mac, a->net, a->id, a->ifname ? a->ifname : "");
	if (nft_run(cmd, "macspoofchk", NULL) == 0)
		return 0;
	/* The skeleton is created once; a concurrent ADD that lost the race
	 * to create the chain sees EEXIST here, which is fine. */
	nft_run(SPOOF_SKEL, "macspoofchk setup", NULL);
	return nft_run(cmd, "macspoofchk", err);
}

int fw_spoofchk_check(const char *hostif, const char *mac, struct cni_err *err)
{
	if (!spoof_safe(hostif, mac))
		return err_set(err, CNI_ERR_INTERNAL, "macspoofchk: bad interface or MAC");
	_cleanup_free_ char *cmd =
		xasprintf("get element bridge cni guarded { \"%s\" }\n"
			  "get element bridge cni allowed { \"%s\" . %s }\n",
			  hostif, hostif, mac);
	if (nft_run(cmd, "macspoofchk check", NULL) < 0)
		return err_set(err, CNI_ERR_INTERNAL,
			       "macspoofchk: no rule allows %s on %s", mac, hostif);
	return 0;
}

/* Delete one element if present: a missing element is success. */
static void spoof_drop(const char *set, const char *key)
{
	_cleanup_free_ char *cmd = xasprintf("delete element bridge cni %s { %s }", set, key);
	nft_run(cmd, "macspoofchk", NULL);
}

int fw_spoofchk_del(const struct fw_att *a, const char *hostif, const char *mac,
			struct cni_err *err)
{
	if (!fw_nft_chain_exists(NFPROTO_BRIDGE, "cni", "spoofchk"))
		return 0;
	_cleanup_free_ char *key = NULL;
	if (hostif && mac && spoof_safe(hostif, mac)) {
		key = xasprintf("\"%s\" . %s", hostif, mac);
		spoof_drop("allowed", key);
		_cleanup_free_ char *g = xasprintf("\"%s\"", hostif);
		spoof_drop("guarded", g);
		return 0;
	}
	/* No prevResult: find the attachment's element by its comment. */
	bool gone;
	_cleanup_(json_freep) struct cni_json *j = nft_list("set bridge cni allowed", &gone, err);
	if (!j)
		return gone ? 0 : -1;
	_cleanup_free_ char *tag =
		xasprintf("%s/%s/%s", a->net, a->id, a->ifname ? a->ifname : "");
	_cleanup_free_ const struct cni_json **sets = NULL;
	size_t ns = items(j, "set", &sets);
	for (size_t i = 0; i < ns; i++) {
		const struct cni_json *elems = json_get(sets[i], "elem");
		for (size_t k = 0; k < json_len(elems); k++) {
			const struct cni_json *e = json_get(json_at(elems, k), "elem");
			const struct cni_json *cc = json_get(json_get(e, "val"), "concat");
			const char *ifn = json_str(json_at(cc, 0)), *m = json_str(json_at(cc, 1));
			if (!streq(json_str(json_get(e, "comment")), tag) || !ifn || !m ||
			    !spoof_safe(ifn, m))
				continue;
			free(key);
			key = xasprintf("\"%s\" . %s", ifn, m);
			spoof_drop("allowed", key);
			_cleanup_free_ char *g = xasprintf("\"%s\"", ifn);
			spoof_drop("guarded", g);
		}
	}
	return 0;
}
