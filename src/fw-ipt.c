/* iptables backend: the reference plugins' chains and rule shapes, written
 * with one `iptables-restore --noflush -w` per operation and family.
 *
 * Each operation reads the table once with iptables-save, decides what is
 * missing or must go, and writes the difference in one restore. Rules we
 * must find again are written in the exact form iptables-save prints them
 * (options in its order, "/32" on hosts, "-m tcp" after "-p tcp"), so a
 * saved line can be compared as text; rules we delete are deleted with the
 * line iptables-save gave, which always matches. Per-container rules in
 * shared chains (CNI-HOSTPORT-DNAT, POSTROUTING) are found by their jump
 * target, which embeds the hash of network and container id.
 *
 * Declaring ":CHAIN - [0:0]" in a --noflush restore creates the chain, or
 * empties it when it exists: we declare shared chains only when they are
 * missing, and a container's own chain always (that resets it). */
#define CNI_FW_INTERNAL
#include "fw.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#define HOSTPORT_DNAT "CNI-HOSTPORT-DNAT"
#define HOSTPORT_SETMARK "CNI-HOSTPORT-SETMARK"
#define HOSTPORT_MASQ "CNI-HOSTPORT-MASQ"
#define HOSTPORT_SNAT_OLD "CNI-HOSTPORT-SNAT"
#define FILTER_FORWARD "CNI-FORWARD"
#define ISOLATION_1 "CNI-ISOLATION-STAGE-1"
#define ISOLATION_2 "CNI-ISOLATION-STAGE-2"

/* The reference keeps iptables comments within 255 bytes. */
#define IPT_COMMENT_MAX 255

struct irule {
	char *chain, *spec, *target;
};

/* One table as iptables-save showed it, plus what this operation adds. */
struct itab {
	const char *table;
	char **chains;
	size_t n_chains, cap_chains;
	struct irule *rules;
	size_t n_rules, cap_rules;
	struct strbuf decl, body; /* the restore being built */
};

static void itab_free(struct itab *t)
{
	for (size_t i = 0; i < t->n_chains; i++)
		free(t->chains[i]);
	free(t->chains);
	for (size_t i = 0; i < t->n_rules; i++) {
		free(t->rules[i].chain);
		free(t->rules[i].spec);
		free(t->rules[i].target);
	}
	free(t->rules);
	strbuf_free(&t->decl);
	strbuf_free(&t->body);
}

static const char *tool(int family, const char *what)
{
	static char buf[64];
	snprintf(buf, sizeof(buf), "%s-%s", family == AF_INET6 ? "ip6tables" : "iptables", what);
	return buf;
}

/* The word of a saved rule starting at p, "..." unquoted with \-escapes:
 * owned in *out; returns where it ends. */
static const char *spec_word(const char *p, char **out)
{
	/* Never longer than what is left of p. */
	char *w = xmalloc(strlen(p) + 1), *o = w;
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			*o++ = *p;
		}
		if (*p)
			p++;
	} else {
		while (*p && *p != ' ')
			*o++ = *p++;
	}
	*o = 0;
	*out = w;
	return p;
}

/* Split one saved rule into words. Returns the word after "-j" (owned),
 * or NULL. */
static char *spec_target(const char *spec)
{
	const char *p = spec;
	bool want = false;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		char *w;
		p = spec_word(p, &w);
		if (want)
			return w;
		want = streq(w, "-j") || streq(w, "-g");
		free(w);
	}
	return NULL;
}

static bool has_chain(const struct itab *t, const char *chain)
{
	for (size_t i = 0; i < t->n_chains; i++)
		if (streq(t->chains[i], chain))
			return true;
	return false;
}

static void note_chain(struct itab *t, const char *chain)
{
	xgrow(&t->chains, &t->cap_chains, t->n_chains, sizeof(*t->chains));
	t->chains[t->n_chains++] = xstrdup(chain);
}

static void note_rule(struct itab *t, const char *chain, const char *spec)
{
	xgrow(&t->rules, &t->cap_rules, t->n_rules, sizeof(*t->rules));
	t->rules[t->n_rules++] = (struct irule){xstrdup(chain), xstrdup(spec), spec_target(spec)};
}

static bool has_rule(const struct itab *t, const char *chain, const char *spec)
{
	for (size_t i = 0; i < t->n_rules; i++)
		if (streq(t->rules[i].chain, chain) && streq(t->rules[i].spec, spec))
			return true;
	return false;
}

/* Read `iptables-save -t table`. */
static int itab_load(struct itab *t, int family, const char *table, struct cni_err *err)
{
	*t = (struct itab){.table = table};
	_cleanup_free_ char *path = fw_find_tool(tool(family, "save"));
	if (!path)
		return err_set(err, CNI_ERR_NOT_AVAILABLE, "iptables backend: %s not found",
			       tool(family, "save"));
	_cleanup_free_ char *out = NULL, *eo = NULL;
	char *argv[] = {path, "-t", (char *)table, NULL};
	int r = fw_exec(argv, NULL, &out, &eo);
	if (r != 0) {
		err_set(err, CNI_ERR_INTERNAL, "%s -t %s failed (%d)", tool(family, "save"), table,
			r);
		return err_append(err, "%s", eo ? eo : "");
	}
	char *save = NULL;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == ':') {
			size_t n = strcspn(l + 1, " ");
			_cleanup_free_ char *c = xstrndup(l + 1, n);
			note_chain(t, c);
		} else if (strncmp(l, "-A ", 3) == 0) {
			char *sp = strchr(l + 3, ' ');
			if (!sp)
				continue;
			*sp = 0;
			note_rule(t, l + 3, sp + 1);
		}
	}
	return 0;
}

/* Ensure a chain exists (declaring it if missing). */
static void ensure_chain(struct itab *t, const char *chain)
{
	if (has_chain(t, chain))
		return;
	strbuf_add(&t->decl, ":%s - [0:0]\n", chain);
	note_chain(t, chain);
}

/* Append (or insert first) spec to chain unless an identical rule exists. */
static void ensure_rule(struct itab *t, const char *chain, bool first, const char *spec)
{
	if (has_rule(t, chain, spec))
		return;
	strbuf_add(&t->body, "%s %s %s%s\n", first ? "-I" : "-A", chain, first ? "1 " : "", spec);
	note_rule(t, chain, spec);
}

/* Delete every rule jumping to target, then flush and delete the chain
 * target if it exists. */
static void drop_chain(struct itab *t, const char *target)
{
	for (size_t i = 0; i < t->n_rules; i++) {
		if (!streq(t->rules[i].target, target) || !t->rules[i].spec[0])
			continue;
		strbuf_add(&t->body, "-D %s %s\n", t->rules[i].chain, t->rules[i].spec);
		t->rules[i].spec[0] = 0; /* gone */
	}
	if (has_chain(t, target)) {
		strbuf_add(&t->body, "-F %s\n-X %s\n", target, target);
		for (size_t i = 0; i < t->n_chains; i++)
			if (streq(t->chains[i], target))
				t->chains[i][0] = 0;
	}
}

static void drop_rule(struct itab *t, const char *chain, const char *spec)
{
	for (size_t i = 0; i < t->n_rules; i++) {
		if (streq(t->rules[i].chain, chain) && streq(t->rules[i].spec, spec)) {
			strbuf_add(&t->body, "-D %s %s\n", chain, spec);
			t->rules[i].spec[0] = 0;
			return;
		}
	}
}

/* Run the restore built in t, if it has anything to do. */
static int itab_commit(struct itab *t, int family, bool test, struct cni_err *err)
{
	if (!t->decl.len && !t->body.len)
		return 0;
	_cleanup_free_ char *path = fw_find_tool(tool(family, "restore"));
	if (!path)
		return err_set(err, CNI_ERR_NOT_AVAILABLE, "iptables backend: %s not found",
			       tool(family, "restore"));
	struct strbuf in = {0};
	strbuf_add(&in, "*%s\n%s%sCOMMIT\n", t->table, t->decl.s ? t->decl.s : "",
		   t->body.s ? t->body.s : "");
	_cleanup_free_ char *eo = NULL;
	char *argv[] = {path, "--noflush", "-w", test ? "--test" : NULL, NULL};
	int r = fw_exec(argv, in.s, NULL, &eo);
	if (r != 0) {
		if (eo) /* one line is enough */
			eo[strcspn(eo, "\n")] = 0;
		err_set(err, CNI_ERR_INTERNAL, "%s failed (%d)", tool(family, "restore"), r);
		err_append(err, "%s", eo ? eo : "");
	}
	strbuf_free(&in);
	return r == 0 ? 0 : -1;
}

/* A read-modify-write of one table, serialised with other cni processes:
 * itab_begin takes the lock and loads table into t (0, or -1 with err);
 * itab_end commits t when r is 0, frees it, unlocks and returns the
 * outcome. Call itab_end whatever itab_begin returned. */
static int itab_begin(struct itab *t, int family, const char *table, int *lock,
		      struct cni_err *err)
{
	*lock = fw_lock();
	return itab_load(t, family, table, err);
}

static int itab_end(struct itab *t, int family, int r, int lock, struct cni_err *err)
{
	if (r == 0)
		r = itab_commit(t, family, false, err);
	itab_free(t);
	fw_unlock(lock);
	return r;
}

/* A token as iptables-save writes it: bare if only [-_A-Za-z0-9], else in
 * double quotes with ", \ and ' escaped. */
static void add_quoted(struct strbuf *b, const char *s)
{
	size_t n = strspn(s, "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	if (n > 0 && !s[n]) {
		strbuf_add(b, "%s", s);
		return;
	}
	strbuf_add(b, "\"");
	for (; *s; s++)
		strbuf_add(b, "%s%c", strchr("\"\\'", *s) ? "\\" : "", *s);
	strbuf_add(b, "\"");
}

/* Go's %q of a string, for the reference's ipMasq comment. Names and ids
 * are validated, so only the plain branch matters in practice. */
static void add_goquote(struct strbuf *b, const char *s)
{
	strbuf_add(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			strbuf_add(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			strbuf_add(b, "\\x%02x", c);
		else
			strbuf_add(b, "%c", c);
	}
	strbuf_add(b, "\"");
}

static char *comment_arg(const char *comment)
{
	struct strbuf b = {0};
	strbuf_add(&b, "-m comment --comment ");
	add_quoted(&b, comment);
	return b.s;
}

static const char *host_cidr(const struct cni_ip *ip, char *buf)
{
	char s[IP_STRLEN];
	snprintf(buf, CIDR_STRLEN, "%s/%d", ip_format(ip, s), ip_bits(ip));
	return buf;
}

bool fw_ipt_tools(int family)
{
	static int cached[2] = {-1, -1};
	int i = family == AF_INET6;
	if (cached[i] < 0) {
		_cleanup_free_ char *save = fw_find_tool(tool(family, "save"));
		_cleanup_free_ char *restore = fw_find_tool(tool(family, "restore"));
		cached[i] = save && restore;
	}
	return cached[i];
}

bool fw_ipt_available(int family)
{
	/* As the reference's SupportsIPTables: the tools exist and can read a
	 * table. Probed once per process and family. */
	static int cached[2] = {-1, -1};
	int i = family == AF_INET6;
	if (cached[i] < 0) {
		_cleanup_free_ char *save = fw_find_tool(tool(family, "save"));
		_cleanup_free_ char *restore = fw_find_tool(tool(family, "restore"));
		cached[i] = 0;
		if (save && restore) {
			char *argv[] = {save, "-t", "nat", NULL};
			cached[i] = fw_exec(argv, NULL, NULL, NULL) == 0;
		}
	}
	return cached[i];
}

/* Whether x_tables (legacy iptables) has table for family. */
static bool legacy_table(int family, const char *table)
{
	_cleanup_free_ char *list = NULL;
	size_t len;
	if (read_file(family == AF_INET6 ? "/proc/net/ip6_tables_names" : "/proc/net/ip_tables_names",
		      4096, &list, &len) < 0)
		return false;
	for (char *l = strtok(list, "\n"); l; l = strtok(NULL, "\n"))
		if (streq(l, table))
			return true;
	return false;
}

/* Whether iptables may hold chain in table, with a rule carrying address
 * ip if not NULL: DEL reads and rewrites a table (two processes) only then.
 * iptables-nft keeps its chains in nftables, which answers in-process;
 * legacy tables cannot be asked cheaply. */
static bool may_hold(int family, const char *table, const char *chain, const struct cni_ip *ip)
{
	if (legacy_table(family, table) || !fw_nft_available())
		return true;
	if (!ip)
		return fw_nft_chain_exists(family, table, chain);
	return fw_nft_chain_has_bytes(family, table, chain, ip->a, family == AF_INET6 ? 16 : 4);
}

bool fw_ipt_forward_may_drop(void)
{
	/* iptables-save always shows the built-in chains, even of a table
	 * nobody created; ask the kernel instead: iptables-nft keeps them in
	 * nftables tables "ip filter" and "ip6 filter", where we can read the
	 * policy and rules; legacy iptables in x_tables, where we cannot
	 * cheaply, so a legacy filter table counts as dropping. */
	if (fw_nft_available()) {
		if (fw_nft_forward_may_drop(AF_INET) > 0 || fw_nft_forward_may_drop(AF_INET6) > 0)
			return true;
	}
	return legacy_table(AF_INET, "filter") || legacy_table(AF_INET6, "filter");
}

int fw_ipt_check_conditions(int family, const char *const *cond, size_t n, const char *field,
			    struct cni_err *err)
{
	/* `iptables-restore --test` parses and builds a rule shaped like ours
	 * in a scratch chain, and commits nothing. */
	struct itab t = {.table = "nat"};
	strbuf_add(&t.decl, ":CNI-CONDITIONS-CHECK - [0:0]\n");
	strbuf_add(&t.body, "-A CNI-CONDITIONS-CHECK -p tcp");
	for (size_t i = 0; i < n; i++) {
		strbuf_add(&t.body, " ");
		if (strpbrk(cond[i], " \t\"'\\") || !cond[i][0])
			add_quoted(&t.body, cond[i]);
		else
			strbuf_add(&t.body, "%s", cond[i]);
	}
	strbuf_add(&t.body, " -j RETURN\n");
	struct cni_err e = {0};
	int r = itab_commit(&t, family, true, &e);
	itab_free(&t);
	if (r < 0 && e.code == CNI_ERR_INTERNAL) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "%s: not a valid iptables match", field);
		return err_append(err, "%s", e.details);
	}
	if (r < 0) {
		*err = e;
		return -1;
	}
	return 0;
}

/* portmap ---------------------------------------------------------------*/

static char *dnat_comment(const struct fw_att *a)
{
	char *c = xasprintf("dnat name: \"%s\" id: \"%s\"", a->net, a->id);
	if (strlen(c) > IPT_COMMENT_MAX)
		strcpy(c + IPT_COMMENT_MAX - 2, "...");
	return c;
}

/* The per-container chain's rules, in iptables-save form. */
static size_t dn_rules(const struct fw_pm_conf *c, int family, char ***out)
{
	const struct cni_cidr *ct = family == AF_INET ? &c->ip4 : &c->ip6;
	bool v4 = family == AF_INET;
	const char *setmark = c->setmark_chain ? c->setmark_chain : HOSTPORT_SETMARK;
	char cip[IP_STRLEN];
	ip_format(&ct->ip, cip);
	struct cni_cidr nw = ip_cidr_network(ct);
	char src[CIDR_STRLEN + 8] = "";
	if (!c->masq_all && nw.prefix > 0) { /* iptables-save omits "-s 0.0.0.0/0" */
		char s[CIDR_STRLEN];
		snprintf(src, sizeof(src), "-s %s ", ip_cidr_format(&nw, s));
	}
	char **v = xcalloc(c->n_maps * 3 + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < c->n_maps; i++) {
		const struct fw_portmap *m = &c->maps[i];
		char dst[CIDR_STRLEN + 8] = "", h[CIDR_STRLEN];
		if (ip_isset(&m->host_ip)) {
			if (m->host_ip.family != family)
				continue;
			if (!fw_ip_unspecified(&m->host_ip))
				snprintf(dst, sizeof(dst), "-d %s ", host_cidr(&m->host_ip, h));
		}
		const char *p = fw_proto_name(m->proto);
		if (c->snat) {
			v[n++] = xasprintf("%s%s-p %s -m %s --dport %u -j %s", src, dst, p, p,
					   m->host_port, setmark);
			if (v4 && !c->masq_all)
				v[n++] = xasprintf("-s 127.0.0.1/32 %s-p %s -m %s --dport %u -j %s",
						   dst, p, p, m->host_port, setmark);
		}
		v[n++] = xasprintf(v4 ? "%s-p %s -m %s --dport %u -j DNAT --to-destination %s:%u"
				      : "%s-p %s -m %s --dport %u -j DNAT --to-destination [%s]:%u",
				   dst, p, p, m->host_port, cip, m->container_port);
	}
	*out = v;
	return n;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Entry rules into the container chain: per protocol (sorted, as the
 * reference), up to 15 ports per multiport match. */
static size_t dn_entries(const struct fw_pm_conf *c, int family, const char *chain, char ***out)
{
	static const int protos[] = {IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP};
	const char *const *cv = family == AF_INET ? c->cond4 : c->cond6;
	size_t cn = family == AF_INET ? c->n_cond4 : c->n_cond6;
	_cleanup_free_ char *comment = dnat_comment(&c->att);
	_cleanup_free_ char *carg = comment_arg(comment);
	char **v = xcalloc(c->n_maps + 1, sizeof(*v));
	size_t n = 0;
	for (size_t p = 0; p < ARRAY_SIZE(protos); p++) {
		size_t in_group = 0;
		struct strbuf ports = {0};
		for (size_t i = 0; i <= c->n_maps; i++) {
			bool last = i == c->n_maps;
			if (!last && c->maps[i].proto != protos[p])
				continue;
			if (!last) {
				strbuf_add(&ports, "%s%u", in_group ? "," : "",
					   c->maps[i].host_port);
				in_group++;
			}
			if (in_group && (in_group == 15 || last)) {
				struct strbuf r = {0};
				for (size_t k = 0; k < cn; k++) {
					if (strpbrk(cv[k], " \t\"'\\") || !cv[k][0])
						add_quoted(&r, cv[k]);
					else
						strbuf_add(&r, "%s", cv[k]);
					strbuf_add(&r, " ");
				}
				strbuf_add(&r, "-p %s %s -m multiport --dports %s -j %s",
					   fw_proto_name(protos[p]), carg, ports.s, chain);
				v[n++] = r.s;
				strbuf_free(&ports);
				in_group = 0;
			}
		}
		strbuf_free(&ports);
	}
	*out = v;
	return n;
}

static char *mark_arg(int bit)
{
	unsigned v = 1u << bit;
	return xasprintf("%#x/%#x", v, v);
}

int fw_ipt_portmap_add(int family, const struct fw_pm_conf *c, struct cni_err *err)
{
	struct itab t;
	char dn[29];
	fw_chain_name("DN-", c->att.net, c->att.id, dn);
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0) {
		if (c->snat && !c->setmark_chain) {
			_cleanup_free_ char *mark = mark_arg(c->mark_bit);
			_cleanup_free_ char *setmark =
			    xasprintf("-m comment --comment \"CNI portfwd masquerade mark\" -j "
				      "MARK --set-xmark %s",
				      mark);
			_cleanup_free_ char *masq =
			    xasprintf("-m mark --mark %s -j MASQUERADE", mark);
			ensure_chain(&t, HOSTPORT_SETMARK);
			ensure_rule(&t, HOSTPORT_SETMARK, false, setmark);
			ensure_chain(&t, HOSTPORT_MASQ);
			ensure_rule(&t, HOSTPORT_MASQ, false, masq);
			/* First in POSTROUTING, ahead of ipMasq's chains. */
			ensure_rule(&t, "POSTROUTING", true,
				    "-m comment --comment \"CNI portfwd requiring masquerade\" "
				    "-j " HOSTPORT_MASQ);
		}
		ensure_chain(&t, HOSTPORT_DNAT);
		ensure_rule(&t, "PREROUTING", false,
			    "-m addrtype --dst-type LOCAL -j " HOSTPORT_DNAT);
		ensure_rule(&t, "OUTPUT", false, "-m addrtype --dst-type LOCAL -j " HOSTPORT_DNAT);

		/* Reset the container's chain: drop old entry rules, declare
		 * the chain (which empties it), fill it, enter it. */
		for (size_t i = 0; i < t.n_rules; i++)
			if (streq(t.rules[i].target, dn) && t.rules[i].spec[0]) {
				strbuf_add(&t.body, "-D %s %s\n", t.rules[i].chain,
					   t.rules[i].spec);
				t.rules[i].spec[0] = 0;
			}
		strbuf_add(&t.decl, ":%s - [0:0]\n", dn);
		char **rules, **entries;
		size_t nr = dn_rules(c, family, &rules), ne = dn_entries(c, family, dn, &entries);
		for (size_t i = 0; i < nr; i++)
			strbuf_add(&t.body, "-A %s %s\n", dn, rules[i]);
		for (size_t i = 0; i < ne; i++)
			strbuf_add(&t.body, "-A " HOSTPORT_DNAT " %s\n", entries[i]);
		strv_free(rules, nr);
		strv_free(entries, ne);
	}
	return itab_end(&t, family, r, lock, err);
}

int fw_ipt_portmap_check(int family, const struct fw_pm_conf *c, struct cni_err *err)
{
	struct itab t;
	char dn[29];
	fw_chain_name("DN-", c->att.net, c->att.id, dn);
	int r = itab_load(&t, family, "nat", err);
	if (r == 0 && !has_chain(&t, dn))
		r = err_set(err, CNI_ERR_INTERNAL, "chain %s not found in iptables table nat", dn);
	if (r == 0) {
		char **rules, **entries;
		size_t nr = dn_rules(c, family, &rules), ne = dn_entries(c, family, dn, &entries);
		for (size_t i = 0; i < nr && r == 0; i++)
			if (!has_rule(&t, dn, rules[i]))
				r = err_set(err, CNI_ERR_INTERNAL,
					    "rule \"%s\" not found in chain %s", rules[i], dn);
		size_t found = 0;
		for (size_t i = 0; i < t.n_rules; i++)
			found +=
			    streq(t.rules[i].chain, HOSTPORT_DNAT) && streq(t.rules[i].target, dn);
		if (r == 0 && found < ne)
			r = err_set(err, CNI_ERR_INTERNAL, "rules jumping to %s not found in %s",
				    dn, HOSTPORT_DNAT);
		strv_free(rules, nr);
		strv_free(entries, ne);
	}
	itab_free(&t);
	return r;
}

int fw_ipt_portmap_del(int family, const struct fw_att *a, struct cni_err *err)
{
	struct itab t;
	char dn[29], sn[29];
	fw_chain_name("DN-", a->net, a->id, dn);
	/* Chains of older reference versions, in case ADD predates us. */
	fw_chain_name("SN-", a->net, a->id, sn);
	if (!may_hold(family, "nat", dn, NULL) && !may_hold(family, "nat", sn, NULL))
		return 0;
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0) {
		drop_chain(&t, dn);
		drop_chain(&t, sn);
	}
	return itab_end(&t, family, r, lock, err);
}

/* The container id of a reference DNAT comment for network net, or NULL.
 * The saved spec carries it as --comment "dnat name: \"N\" id: \"I\"". */
static char *comment_field(const char *spec)
{
	const char *p = strstr(spec, "--comment ");
	if (!p)
		return NULL;
	char *w;
	spec_word(p + strlen("--comment "), &w);
	return w;
}

static bool id_valid(const char *id, const struct fw_att *valid, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(valid[i].id, id))
			return true;
	return false;
}

/* Stale chains: rules in `chain` whose comment is prefix + id + suffix,
 * with an id no valid attachment has. */
static void gc_by_comment(struct itab *t, const char *chain, const char *prefix, const char *suffix,
			  const char *target_prefix, const struct fw_att *valid, size_t n)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	size_t count = t->n_rules;
	for (size_t i = 0; i < count; i++) {
		struct irule *r = &t->rules[i];
		if (!streq(r->chain, chain) || !r->target || !r->spec[0] ||
		    strncmp(r->target, target_prefix, strlen(target_prefix)))
			continue;
		_cleanup_free_ char *c = comment_field(r->spec);
		size_t cl = c ? strlen(c) : 0;
		if (!c || cl < pl + sl || strncmp(c, prefix, pl) || strcmp(c + cl - sl, suffix))
			continue;
		c[cl - sl] = 0;
		if (id_valid(c + pl, valid, n))
			continue;
		_cleanup_free_ char *target = xstrdup(r->target);
		drop_chain(t, target);
	}
}

int fw_ipt_portmap_gc(int family, const char *net, const struct fw_att *valid, size_t n,
		      struct cni_err *err)
{
	struct itab t;
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0) {
		_cleanup_free_ char *prefix = xasprintf("dnat name: \"%s\" id: \"", net);
		gc_by_comment(&t, HOSTPORT_DNAT, prefix, "\"", "CNI-DN-", valid, n);
	}
	return itab_end(&t, family, r, lock, err);
}

/* ipMasq ----------------------------------------------------------------*/

static char *masq_comment(const struct fw_att *a)
{
	struct strbuf b = {0};
	strbuf_add(&b, "name: ");
	add_goquote(&b, a->net ? a->net : "");
	strbuf_add(&b, " id: ");
	add_goquote(&b, a->id ? a->id : "");
	return b.s;
}

/* The three rules of one address, in iptables-save form. */
static void masq_rules(const struct cni_cidr *ipn, const char *chain, const char *carg, char *r[3])
{
	bool v4 = ipn->ip.family == AF_INET;
	struct cni_cidr nw = ip_cidr_network(ipn);
	char n[CIDR_STRLEN], h[CIDR_STRLEN];
	r[0] = xasprintf("-d %s %s -j ACCEPT", ip_cidr_format(&nw, n), carg);
	r[1] = xasprintf("! -d %s %s -j MASQUERADE", v4 ? "224.0.0.0/4" : "ff00::/8", carg);
	r[2] = xasprintf("-s %s %s -j %s", host_cidr(&ipn->ip, h), carg, chain);
}

/* The attachment's chain name, and the comment argument of its rules
 * (owned). */
static char *masq_chain(const struct fw_att *a, char chain[29])
{
	fw_chain_name("", a->net, a->id, chain);
	_cleanup_free_ char *comment = masq_comment(a);
	return comment_arg(comment);
}

int fw_ipt_masq_add(int family, const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		    struct cni_err *err)
{
	struct itab t;
	char chain[29];
	_cleanup_free_ char *carg = masq_chain(a, chain);
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0) {
		ensure_chain(&t, chain);
		for (size_t i = 0; i < n; i++) {
			if (nets[i].ip.family != family)
				continue;
			char *rules[3];
			masq_rules(&nets[i], chain, carg, rules);
			ensure_rule(&t, chain, false, rules[0]);
			ensure_rule(&t, chain, false, rules[1]);
			ensure_rule(&t, "POSTROUTING", false, rules[2]);
			for (int k = 0; k < 3; k++)
				free(rules[k]);
		}
	}
	return itab_end(&t, family, r, lock, err);
}

int fw_ipt_masq_check(int family, const struct fw_att *a, const struct cni_cidr *nets, size_t n,
		      struct cni_err *err)
{
	struct itab t;
	char chain[29];
	_cleanup_free_ char *carg = masq_chain(a, chain);
	int r = itab_load(&t, family, "nat", err);
	if (r == 0 && !has_chain(&t, chain))
		r = err_set(err, CNI_ERR_INTERNAL, "chain %s not found in iptables table nat",
			    chain);
	for (size_t i = 0; i < n && r == 0; i++) {
		if (nets[i].ip.family != family)
			continue;
		char *rules[3];
		masq_rules(&nets[i], chain, carg, rules);
		for (int k = 0; k < 3 && r == 0; k++)
			if (!has_rule(&t, k == 2 ? "POSTROUTING" : chain, rules[k]))
				r = err_set(err, CNI_ERR_INTERNAL, "rule \"%s\" not found",
					    rules[k]);
		for (int k = 0; k < 3; k++)
			free(rules[k]);
	}
	itab_free(&t);
	return r;
}

int fw_ipt_masq_del(int family, const struct fw_att *a, struct cni_err *err)
{
	struct itab t;
	char chain[29];
	fw_chain_name("", a->net, a->id, chain);
	if (!may_hold(family, "nat", chain, NULL))
		return 0;
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0)
		drop_chain(&t, chain);
	return itab_end(&t, family, r, lock, err);
}

int fw_ipt_masq_gc(int family, const char *net, const struct fw_att *valid, size_t n,
		   struct cni_err *err)
{
	/* The reference cannot GC its ipMasq chains; their POSTROUTING rule
	 * carries name and id in its comment, which is enough for us. */
	struct itab t;
	int lock, r = itab_begin(&t, family, "nat", &lock, err);
	if (r == 0) {
		struct strbuf p = {0};
		strbuf_add(&p, "name: ");
		add_goquote(&p, net);
		strbuf_add(&p, " id: \"");
		gc_by_comment(&t, "POSTROUTING", p.s, "\"", "CNI-", valid, n);
		strbuf_free(&p);
	}
	return itab_end(&t, family, r, lock, err);
}

/* firewall --------------------------------------------------------------*/

#define FW_PRIV_RULE "-m comment --comment \"CNI firewall plugin rules\" -j " FILTER_FORWARD
#define ISO_DEFAULT_COMMENT                                                                        \
	"-m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)\""

static void filter_rules(const struct cni_ip *ip, char *r[2])
{
	char h[CIDR_STRLEN];
	host_cidr(ip, h);
	r[0] = xasprintf("-d %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", h);
	r[1] = xasprintf("-s %s -j ACCEPT", h);
}

static char *admin_rule(const struct fw_filter_conf *c)
{
	return xasprintf("-m comment --comment \"CNI firewall plugin admin overrides\" -j %s",
			 c->admin_chain ? c->admin_chain : "CNI-ADMIN");
}

static void isolation(struct itab *t, const struct fw_filter_conf *c)
{
	bool isolated = c->ingress == FW_INGRESS_ISOLATED;
	struct strbuf b = {0};
	add_quoted(&b, c->bridge);
	const char *br = b.s;
	_cleanup_free_ char *s1 = xasprintf("-i %s ! -o %s -m comment --comment \"CNI firewall "
					    "plugin rules (ingressPolicy: %s)\" -j " ISOLATION_2,
					    br, br, isolated ? "isolated" : "same-bridge");
	_cleanup_free_ char *drop = xasprintf("-i %s -o %s -m comment --comment \"CNI firewall "
					      "plugin rules (ingressPolicy: isolated)\" -j DROP",
					      br, br);
	_cleanup_free_ char *s2 = xasprintf("-o %s " ISO_DEFAULT_COMMENT " -j DROP", br);
	ensure_chain(t, ISOLATION_1);
	ensure_chain(t, ISOLATION_2);
	/* Ahead of CNI-FORWARD, as the reference inserts it. */
	ensure_rule(t, "FORWARD", true, ISO_DEFAULT_COMMENT " -j " ISOLATION_1);
	ensure_rule(t, ISOLATION_1, true, s1);
	if (isolated)
		ensure_rule(t, ISOLATION_1, true, drop);
	ensure_rule(t, ISOLATION_1, false, ISO_DEFAULT_COMMENT " -j RETURN");
	ensure_rule(t, ISOLATION_2, true, s2);
	ensure_rule(t, ISOLATION_2, false, ISO_DEFAULT_COMMENT " -j RETURN");
	strbuf_free(&b);
}

int fw_ipt_filter_add(int family, const struct fw_filter_conf *c, struct cni_err *err)
{
	struct itab t;
	int lock, r = itab_begin(&t, family, "filter", &lock, err);
	if (r == 0) {
		_cleanup_free_ char *admin = admin_rule(c);
		const char *adm = c->admin_chain ? c->admin_chain : "CNI-ADMIN";
		ensure_chain(&t, FILTER_FORWARD);
		ensure_chain(&t, adm);
		ensure_rule(&t, "FORWARD", true, FW_PRIV_RULE);
		ensure_rule(&t, FILTER_FORWARD, true, admin);
		for (size_t i = 0; i < c->n_ips; i++) {
			if (c->ips[i].ip.family != family)
				continue;
			char *rules[2];
			filter_rules(&c->ips[i].ip, rules);
			ensure_rule(&t, FILTER_FORWARD, false, rules[0]);
			ensure_rule(&t, FILTER_FORWARD, false, rules[1]);
			free(rules[0]);
			free(rules[1]);
		}
		if (c->ingress != FW_INGRESS_OPEN && c->bridge)
			isolation(&t, c);
	}
	return itab_end(&t, family, r, lock, err);
}

int fw_ipt_filter_check(int family, const struct fw_filter_conf *c, struct cni_err *err)
{
	struct itab t;
	int r = itab_load(&t, family, "filter", err);
	_cleanup_free_ char *admin = admin_rule(c);
	const char *adm = c->admin_chain ? c->admin_chain : "CNI-ADMIN";
	if (r == 0 && (!has_chain(&t, FILTER_FORWARD) || !has_chain(&t, adm)))
		r = err_set(err, CNI_ERR_INTERNAL,
			    "chains %s / %s not found in iptables table filter", FILTER_FORWARD,
			    adm);
	if (r == 0 && !has_rule(&t, "FORWARD", FW_PRIV_RULE))
		r = err_set(err, CNI_ERR_INTERNAL, "expected FORWARD rule \"%s\" not found",
			    FW_PRIV_RULE);
	if (r == 0 && !has_rule(&t, FILTER_FORWARD, admin))
		r = err_set(err, CNI_ERR_INTERNAL, "expected %s rule \"%s\" not found",
			    FILTER_FORWARD, admin);
	for (size_t i = 0; i < c->n_ips && r == 0; i++) {
		if (c->ips[i].ip.family != family)
			continue;
		char *rules[2];
		filter_rules(&c->ips[i].ip, rules);
		for (int k = 0; k < 2 && r == 0; k++)
			if (!has_rule(&t, FILTER_FORWARD, rules[k]))
				r = err_set(err, CNI_ERR_INTERNAL, "expected rule \"%s\" not found",
					    rules[k]);
		free(rules[0]);
		free(rules[1]);
	}
	itab_free(&t);
	return r;
}

int fw_ipt_filter_del(int family, const struct fw_filter_conf *c, struct cni_err *err)
{
	bool any = false;
	for (size_t i = 0; i < c->n_ips; i++)
		any |= c->ips[i].ip.family == family &&
		       may_hold(family, "filter", FILTER_FORWARD, &c->ips[i].ip);
	if (!any)
		return 0;
	struct itab t;
	int lock, r = itab_begin(&t, family, "filter", &lock, err);
	if (r == 0) {
		for (size_t i = 0; i < c->n_ips; i++) {
			if (c->ips[i].ip.family != family)
				continue;
			char *rules[2];
			filter_rules(&c->ips[i].ip, rules);
			drop_rule(&t, FILTER_FORWARD, rules[0]);
			drop_rule(&t, FILTER_FORWARD, rules[1]);
			free(rules[0]);
			free(rules[1]);
		}
	}
	return itab_end(&t, family, r, lock, err);
}
