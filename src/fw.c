/* Netfilter front: backend names and selection, the reference's naming
 * hashes, dispatch to fw-nft.c / fw-ipt.c, the firewalld backend, and the
 * small helpers (exec, lock, string buffer) both backends share. */
#define CNI_FW_INTERNAL
#include "fw.h"
#include "nfnl.h"
#include "sha512.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

/* Tools' output we are willing to hold (iptables-save of a large host). */
#define FW_EXEC_MAX (64u << 20)

static const char *const backend_names[] = {
    [FW_BACKEND_AUTO] = "auto",
    [FW_BACKEND_NFTABLES] = "nftables",
    [FW_BACKEND_IPTABLES] = "iptables",
    [FW_BACKEND_FIREWALLD] = "firewalld",
};

const char *fw_backend_name(enum fw_backend b)
{
	return (unsigned)b < ARRAY_SIZE(backend_names) ? backend_names[b] : "?";
}

int fw_parse_backend(const struct cni_json *obj, const char *key, unsigned allowed,
		     enum fw_backend *out, struct cni_err *err)
{
	const char *s = NULL;
	*out = FW_BACKEND_AUTO;
	int r = json_get_str(obj, key, 0, &s, err);
	if (r <= 0)
		return r;
	for (size_t i = FW_BACKEND_NFTABLES; i < ARRAY_SIZE(backend_names); i++) {
		if (streq(s, backend_names[i]) && (allowed & FW_ALLOW(i))) {
			*out = (enum fw_backend)i;
			return 0;
		}
	}
	char list[64] = "";
	for (size_t i = FW_BACKEND_NFTABLES; i < ARRAY_SIZE(backend_names); i++) {
		if (!(allowed & FW_ALLOW(i)))
			continue;
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s\"%s\"", l ? ", " : "", backend_names[i]);
	}
	return json_err_key(err, obj, key, "unknown backend \"%s\" (expected %s)", s, list);
}

static bool firewalld_running(void)
{
	_cleanup_free_ char *tool = fw_find_tool("firewall-cmd");
	if (!tool)
		return false;
	_cleanup_free_ char *out = NULL;
	char *argv[] = {tool, "--state", NULL};
	return fw_exec(argv, NULL, &out, NULL) == 0 && out && strncmp(out, "running", 7) == 0;
}

bool fw_backend_available(enum fw_backend b)
{
	switch (b) {
	case FW_BACKEND_NFTABLES:
		return fw_nft_available();
	case FW_BACKEND_IPTABLES:
		return fw_ipt_available(AF_INET);
	case FW_BACKEND_FIREWALLD:
		return firewalld_running();
	default:
		return false;
	}
}

int fw_backend_resolve(enum fw_backend *b, struct cni_err *err)
{
	if (*b == FW_BACKEND_AUTO) {
		if (fw_nft_available())
			*b = FW_BACKEND_NFTABLES;
		else if (fw_ipt_available(AF_INET))
			*b = FW_BACKEND_IPTABLES;
		else
			return err_set(err, CNI_ERR_NOT_AVAILABLE,
				       "no netfilter backend available (neither libnftables nor "
				       "iptables-restore can reach the kernel)");
		return 0;
	}
	if (!fw_backend_available(*b)) {
		if (*b == FW_BACKEND_FIREWALLD)
			return err_set(err, CNI_ERR_NOT_AVAILABLE,
				       "firewalld backend unavailable: firewalld is not running");
		return err_set(err, CNI_ERR_NOT_AVAILABLE, "%s backend unavailable on this host",
			       fw_backend_name(*b));
	}
	return 0;
}

int fw_backend_status(enum fw_backend b, struct cni_err *err)
{
	return fw_backend_resolve(&b, err);
}

const char *fw_hash(const char *s, size_t n, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t d[SHA512_DIGEST_SIZE];
	sha512_digest(s, strlen(s), d);
	if (n > 128)
		n = 128;
	for (size_t i = 0; i < n; i++)
		buf[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
	buf[n] = 0;
	return buf;
}

const char *fw_chain_name(const char *prefix, const char *net, const char *id, char *buf)
{
	/* The reference hashes the plain concatenation name+id and keeps 28
	 * characters of "CNI-" prefix hex (MustFormatChainNameWithPrefix). */
	_cleanup_free_ char *in = xasprintf("%s%s", net ? net : "", id ? id : "");
	char h[129];
	fw_hash(in, 128, h);
	size_t pl = strlen(prefix);
	if (pl > 24)
		pl = 24;
	memcpy(buf, "CNI-", 4);
	memcpy(buf + 4, prefix, pl);
	memcpy(buf + 4 + pl, h, 24 - pl);
	buf[28] = 0;
	return buf;
}

void fw_tag_net(const char *net, char *buf)
{
	fw_hash(net ? net : "", 16, buf);
}

void fw_tag(const struct fw_att *a, char *buf)
{
	_cleanup_free_ char *in =
	    xasprintf("%s:%s", a->ifname ? a->ifname : "", a->id ? a->id : "");
	fw_tag_net(a->net, buf);
	buf[16] = '-';
	fw_hash(in, 16, buf + 17);
}

int fw_lock(void)
{
	/* Rulesets are per network namespace, and so are abstract unix
	 * socket names: holding the bound name is the lock. It needs no file,
	 * and dies with its holder. We poll, at most every 2 ms: holders
	 * keep it for a few ms. */
	static const char name[] = "\0cni-netfilter-lock";
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, name, sizeof(name) - 1);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(name) - 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* Up to about two minutes: iptables-restore -w waits as long. */
	for (unsigned waited = 0, step = 1000; waited < 120u * 1000 * 1000; waited += step) {
		if (bind(fd, (struct sockaddr *)&a, len) == 0)
			return fd;
		if (errno != EADDRINUSE)
			break;
		usleep(step);
		if (step < 2000)
			step *= 2;
	}
	close(fd);
	return -1;
}

void fw_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

char *fw_find_tool(const char *name)
{
	/* Runtimes often exec plugins with a minimal PATH; the tools live in
	 * sbin, so look there too. */
	const char *path = getenv("PATH");
	_cleanup_free_ char *all =
	    xasprintf("%s%s/usr/sbin:/sbin:/usr/bin:/bin", path ? path : "", path ? ":" : "");
	char *save = NULL;
	for (char *dir = strtok_r(all, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		if (dir[0] != '/')
			continue;
		char *p = xasprintf("%s/%s", dir, name);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

struct sink {
	int fd;
	char *buf;
	size_t len, cap;
};

static int sink_read(struct sink *s)
{
	if (s->len + 4096 + 1 > s->cap) {
		if (s->cap >= FW_EXEC_MAX)
			return -E2BIG;
		s->cap = s->cap ? s->cap * 2 : 8192;
		s->buf = xrealloc(s->buf, s->cap);
	}
	ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (n == 0)
		return 0;
	s->len += (size_t)n;
	s->buf[s->len] = 0;
	return 1;
}

int fw_exec(char *const argv[], const char *in, char **out, char **errout)
{
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		int e = -errno;
		for (int i = 0; i < 2; i++) {
			if (pin[i] >= 0)
				close(pin[i]);
			if (pout[i] >= 0)
				close(pout[i]);
			if (perr[i] >= 0)
				close(perr[i]);
		}
		return e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(pin[0]), close(pin[1]), close(pout[0]), close(pout[1]);
		close(perr[0]), close(perr[1]);
		return e;
	}
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);

	/* Feed stdin and drain both outputs together: iptables-save output
	 * can be far larger than a pipe buffer. */
	struct sink so = {.fd = pout[0]}, se = {.fd = perr[0]};
	size_t inlen = in ? strlen(in) : 0, off = 0;
	int wfd = pin[1];
	if (!inlen) {
		close(wfd);
		wfd = -1;
	} else {
		fcntl(wfd, F_SETFL, O_NONBLOCK);
	}
	void (*oldpipe)(int) = signal(SIGPIPE, SIG_IGN);
	int rc = 0;
	while (so.fd >= 0 || se.fd >= 0 || wfd >= 0) {
		struct pollfd p[3] = {{.fd = so.fd, .events = POLLIN},
				      {.fd = se.fd, .events = POLLIN},
				      {.fd = wfd, .events = POLLOUT}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (p[2].revents) {
			ssize_t n = write(wfd, in + off, inlen - off);
			if (n > 0)
				off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || off == inlen) {
				close(wfd);
				wfd = -1;
			}
		}
		struct sink *sk[2] = {&so, &se};
		for (int i = 0; i < 2; i++) {
			if (!p[i].revents)
				continue;
			int r = sink_read(sk[i]);
			if (r <= 0) {
				if (r < 0 && !rc)
					rc = r;
				close(sk[i]->fd);
				sk[i]->fd = -1;
			}
		}
	}
	signal(SIGPIPE, oldpipe);
	if (wfd >= 0)
		close(wfd);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!rc)
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (out)
		*out = so.buf ? so.buf : xstrdup("");
	else
		free(so.buf);
	if (errout)
		*errout = se.buf ? se.buf : xstrdup("");
	else
		free(se.buf);
	return rc;
}

enum fw_backend fw_conditions_backend(const char *const *cond, size_t n)
{
	if (!n || !cond[0] || !cond[0][0])
		return FW_BACKEND_AUTO;
	return cond[0][0] == '-' || cond[0][0] == '!' ? FW_BACKEND_IPTABLES : FW_BACKEND_NFTABLES;
}

int fw_check_conditions(enum fw_backend b, int family, const char *const *cond, size_t n,
			const char *field, struct cni_err *err)
{
	/* Each word becomes part of one rule line: a newline, ';' or '#'
	 * would end that rule or command early and could start another. */
	for (size_t i = 0; i < n; i++) {
		for (const char *p = cond[i]; *p; p++) {
			if (*p == ';' || *p == '#' || (unsigned char)*p < 0x20 || *p == 0x7f)
				return err_set(err, CNI_ERR_INVALID_CONFIG,
					       "%s[%zu]: character '%s' not allowed", field, i,
					       *p == ';'   ? ";"
					       : *p == '#' ? "#"
							   : "\\x..");
		}
	}
	if (!n)
		return 0;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_check_conditions(family, cond, n, field, err);
	if (b == FW_BACKEND_IPTABLES)
		return fw_ipt_check_conditions(family, cond, n, field, err);
	return 0;
}

/* Families a portmap config has addresses for. */
static int pm_each_family(const struct fw_pm_conf *c,
			  int (*fn)(int, const struct fw_pm_conf *, struct cni_err *),
			  struct cni_err *err)
{
	if (ip_isset(&c->ip4.ip) && fn(AF_INET, c, err) < 0)
		return -1;
	if (ip_isset(&c->ip6.ip) && fn(AF_INET6, c, err) < 0) {
		return -1;
	}
	return 0;
}

const char *fw_proto_name(int proto)
{
	return proto == IPPROTO_UDP ? "udp" : proto == IPPROTO_SCTP ? "sctp" : "tcp";
}

bool fw_ip_unspecified(const struct cni_ip *ip)
{
	for (int i = 0; i < ip_len(ip); i++)
		if (ip->a[i])
			return false;
	return true;
}

/* Cleanup in every backend, since ADD may have used another version or
 * configuration: failures of the backend in effect (b, AUTO resolved)
 * are errors, those of the other backend are logged. */
struct sweep {
	int (*nft)(const void *arg, struct cni_err *err);
	int (*ipt)(int family, const void *arg, struct cni_err *err);
	const void *arg;
};

static int sweep(enum fw_backend b, const struct sweep *s, struct cni_err *err)
{
	if (b != FW_BACKEND_AUTO && fw_backend_resolve(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_AUTO)
		b = fw_nft_available() ? FW_BACKEND_NFTABLES : FW_BACKEND_IPTABLES;
	if (fw_nft_available()) {
		struct cni_err e = {0};
		if (s->nft(s->arg, &e) < 0) {
			if (b == FW_BACKEND_NFTABLES) {
				*err = e;
				return -1;
			}
			fprintf(stderr, "cni: nftables cleanup: %s %s\n", e.msg, e.details);
		}
	}
	for (int f = AF_INET; f; f = f == AF_INET ? AF_INET6 : 0) {
		struct cni_err e = {0};
		if (fw_ipt_tools(f) && s->ipt(f, s->arg, &e) < 0) {
			if (b == FW_BACKEND_IPTABLES) {
				*err = e;
				return -1;
			}
			fprintf(stderr, "cni: iptables cleanup: %s %s\n", e.msg, e.details);
		}
	}
	return 0;
}

/* A feature's DEL of one attachment, in each backend. */
struct del_arg {
	int (*nft)(const struct fw_att *a, struct cni_err *err);
	int (*ipt)(int family, const struct fw_att *a, struct cni_err *err);
	const struct fw_att *att;
};

static int del_nft(const void *arg, struct cni_err *err)
{
	const struct del_arg *d = arg;
	return d->nft(d->att, err);
}
static int del_ipt(int f, const void *arg, struct cni_err *err)
{
	const struct del_arg *d = arg;
	return d->ipt(f, d->att, err);
}

static int sweep_del(enum fw_backend b, const struct del_arg *d, struct cni_err *err)
{
	struct sweep s = {del_nft, del_ipt, d};
	return sweep(b, &s, err);
}

/* A feature's GC of net, keeping valid, in each backend (ipt NULL: the
 * feature's iptables rules carry no owner). */
struct gc_arg {
	int (*nft)(const char *net, const struct fw_att *valid, size_t n, struct cni_err *err);
	int (*ipt)(int family, const char *net, const struct fw_att *valid, size_t n,
		   struct cni_err *err);
	const char *net;
	const struct fw_att *valid;
	size_t n;
};

static int gc_nft(const void *arg, struct cni_err *err)
{
	const struct gc_arg *g = arg;
	return g->nft(g->net, g->valid, g->n, err);
}
static int gc_ipt(int f, const void *arg, struct cni_err *err)
{
	const struct gc_arg *g = arg;
	return g->ipt ? g->ipt(f, g->net, g->valid, g->n, err) : 0;
}

static int sweep_gc(const struct gc_arg *g, struct cni_err *err)
{
	struct sweep s = {gc_nft, gc_ipt, g};
	return sweep(FW_BACKEND_AUTO, &s, err);
}

static int filter_del_nft(const void *a, struct cni_err *err)
{
	return fw_nft_filter_del(&((const struct fw_filter_conf *)a)->att, err);
}
static int filter_del_ipt(int f, const void *a, struct cni_err *err)
{
	return fw_ipt_filter_del(f, a, err);
}

int fw_portmap_add(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err)
{
	if (fw_backend_resolve(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_portmap_add(c, err);
	if (b != FW_BACKEND_IPTABLES)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "backend: %s not supported by portmap",
			       fw_backend_name(b));
	if (ip_isset(&c->ip4.ip) && fw_ipt_portmap_add(AF_INET, c, err) < 0)
		return -1;
	if (ip_isset(&c->ip6.ip) && fw_ipt_portmap_add(AF_INET6, c, err) < 0) {
		/* One attachment, two tables: take the v4 half back. */
		struct cni_err ignored = {0};
		if (ip_isset(&c->ip4.ip))
			fw_ipt_portmap_del(AF_INET, &c->att, &ignored);
		return -1;
	}
	return 0;
}

int fw_portmap_check(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err)
{
	if (fw_backend_resolve(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_portmap_check(c, err);
	return pm_each_family(c, fw_ipt_portmap_check, err);
}

int fw_portmap_del(enum fw_backend b, const struct fw_pm_conf *c, struct cni_err *err)
{
	struct del_arg d = {fw_nft_portmap_del, fw_ipt_portmap_del, &c->att};
	return sweep_del(b, &d, err);
}

int fw_portmap_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err)
{
	struct gc_arg g = {fw_nft_portmap_gc, fw_ipt_portmap_gc, net, valid, n_valid};
	return sweep_gc(&g, err);
}

static int masq_families(const struct cni_cidr *nets, size_t n)
{
	int m = 0;
	for (size_t i = 0; i < n; i++)
		m |= nets[i].ip.family == AF_INET ? 1 : 2;
	return m;
}

int fw_masq_add(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		size_t n, enum fw_backend b, struct cni_err *err)
{
	struct fw_att a = {net, id, ifname};
	if (fw_backend_resolve(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_masq_add(&a, nets, n, err);
	if (b != FW_BACKEND_IPTABLES)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "ipMasqBackend: %s not supported",
			       fw_backend_name(b));
	int fams = masq_families(nets, n);
	if ((fams & 1) && fw_ipt_masq_add(AF_INET, &a, nets, n, err) < 0)
		return -1;
	if ((fams & 2) && fw_ipt_masq_add(AF_INET6, &a, nets, n, err) < 0) {
		struct cni_err ignored = {0};
		if (fams & 1)
			fw_ipt_masq_del(AF_INET, &a, &ignored);
		return -1;
	}
	return 0;
}

int fw_masq_check(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		  size_t n, enum fw_backend b, struct cni_err *err)
{
	struct fw_att a = {net, id, ifname};
	if (fw_backend_resolve(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_masq_check(&a, nets, n, err);
	int fams = masq_families(nets, n);
	if ((fams & 1) && fw_ipt_masq_check(AF_INET, &a, nets, n, err) < 0)
		return -1;
	if ((fams & 2) && fw_ipt_masq_check(AF_INET6, &a, nets, n, err) < 0)
		return -1;
	return 0;
}

int fw_masq_del(const char *net, const char *id, const char *ifname, const struct cni_cidr *nets,
		size_t n, struct cni_err *err)
{
	/* Both backends, as the reference's TeardownIPMasqForNetworks: the
	 * attachment may come from another version or configuration. */
	(void)nets, (void)n;
	struct fw_att a = {net, id, ifname};
	struct del_arg d = {fw_nft_masq_del, fw_ipt_masq_del, &a};
	return sweep_del(FW_BACKEND_AUTO, &d, err);
}

int fw_masq_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err)
{
	struct gc_arg g = {fw_nft_masq_gc, fw_ipt_masq_gc, net, valid, n_valid};
	return sweep_gc(&g, err);
}

/* firewalld: put each address in a zone (runtime configuration), as the
 * reference does over D-Bus; we use firewall-cmd to avoid a D-Bus client. */
static int firewalld_source(const char *op, const struct fw_filter_conf *c, bool ignore_fail,
			    struct cni_err *err)
{
	_cleanup_free_ char *tool = fw_find_tool("firewall-cmd");
	if (!tool)
		return err_set(err, CNI_ERR_NOT_AVAILABLE,
			       "firewalld backend unavailable: no firewall-cmd");
	const char *zone = c->zone ? c->zone : "trusted";
	for (size_t i = 0; i < c->n_ips; i++) {
		char ip[IP_STRLEN];
		ip_format(&c->ips[i].ip, ip);
		_cleanup_free_ char *z = xasprintf("--zone=%s", zone);
		_cleanup_free_ char *s = xasprintf("--%s-source=%s/%d", op, ip,
						   c->ips[i].ip.family == AF_INET ? 32 : 128);
		_cleanup_free_ char *eo = NULL;
		char *argv[] = {tool, z, s, NULL};
		int r = fw_exec(argv, NULL, NULL, &eo);
		if (r != 0 && !ignore_fail) {
			err_set(err, CNI_ERR_INTERNAL, "firewall-cmd %s %s failed", z, s);
			return err_append(err, "%s", eo ? eo : "");
		}
	}
	return 0;
}

/* The filter's backend: AUTO prefers a running firewalld, as the
 * reference. Otherwise the rules go to iptables when its FORWARD chain may
 * drop (a DROP policy, Docker's or kube-proxy's rules): an accept in our
 * own nftables table cannot override a drop in iptables' chain. Then as
 * fw_backend_resolve. */
static int filter_backend(enum fw_backend *b, struct cni_err *err)
{
	if (*b == FW_BACKEND_AUTO) {
		if (firewalld_running())
			*b = FW_BACKEND_FIREWALLD;
		else if (fw_ipt_forward_may_drop() && fw_ipt_available(AF_INET))
			*b = FW_BACKEND_IPTABLES;
	}
	return fw_backend_resolve(b, err);
}

/* Whether c has IPv4 (*v4) and IPv6 (*v6) addresses. */
static void filter_families(const struct fw_filter_conf *c, bool *v4, bool *v6)
{
	*v4 = *v6 = false;
	for (size_t i = 0; i < c->n_ips; i++)
		*(c->ips[i].ip.family == AF_INET ? v4 : v6) = true;
}

int fw_filter_add(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err)
{
	if (filter_backend(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_filter_add(c, err);
	if (b == FW_BACKEND_FIREWALLD) {
		if (firewalld_source("add", c, false, err) < 0)
			return -1;
		/* Ingress policies are iptables rules whatever the backend, as
		 * in the reference. */
		if (c->ingress == FW_INGRESS_OPEN)
			return 0;
	}
	bool v4, v6;
	filter_families(c, &v4, &v6);
	if (v4 && fw_ipt_filter_add(AF_INET, c, err) < 0)
		return -1;
	if (v6 && fw_ipt_filter_add(AF_INET6, c, err) < 0) {
		struct cni_err ignored = {0};
		if (v4)
			fw_ipt_filter_del(AF_INET, c, &ignored);
		return -1;
	}
	return 0;
}

int fw_filter_check(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err)
{
	if (filter_backend(&b, err) < 0)
		return -1;
	if (b == FW_BACKEND_NFTABLES)
		return fw_nft_filter_check(c, err);
	if (b == FW_BACKEND_FIREWALLD)
		return firewalld_source("query", c, false, err);
	bool v4, v6;
	filter_families(c, &v4, &v6);
	if (v4 && fw_ipt_filter_check(AF_INET, c, err) < 0)
		return -1;
	if (v6 && fw_ipt_filter_check(AF_INET6, c, err) < 0)
		return -1;
	return 0;
}

int fw_filter_del(enum fw_backend b, const struct fw_filter_conf *c, struct cni_err *err)
{
	if (b == FW_BACKEND_FIREWALLD || (b == FW_BACKEND_AUTO && firewalld_running())) {
		if (firewalld_running())
			firewalld_source("remove", c, true, err);
		b = FW_BACKEND_AUTO;
	}
	struct sweep s = {filter_del_nft, filter_del_ipt, c};
	return sweep(b, &s, err);
}

int fw_filter_gc(const char *net, const struct fw_att *valid, size_t n_valid, struct cni_err *err)
{
	struct gc_arg g = {fw_nft_filter_gc, NULL, net, valid, n_valid};
	return sweep_gc(&g, err);
}

int fw_parse_attachments(const struct cni_json *conf, const char *net, struct fw_att **out,
			 size_t *n, struct cni_err *err)
{
	const struct cni_json *arr = NULL;
	*out = NULL;
	*n = 0;
	if (json_get_arr(conf, "cni.dev/valid-attachments", 0, &arr, err) < 0)
		return -1;
	size_t len = json_len(arr);
	_cleanup_free_ struct fw_att *v = xcalloc(len ? len : 1, sizeof(*v));
	for (size_t i = 0; i < len; i++) {
		const struct cni_json *o = json_at(arr, i);
		if (!json_is(o, JSON_OBJECT))
			return json_err(err, o, "not an object");
		if (json_get_str(o, "containerID", JSON_REQ, &v[i].id, err) < 0 ||
		    json_get_str(o, "ifname", 0, &v[i].ifname, err) < 0)
			return -1;
		v[i].net = net;
	}
	*n = len;
	*out = TAKE_PTR(v);
	return 0;
}

int fw_gc_valid(const struct cni_json *conf, const char *net,
		int (*gc)(const char *net, const struct fw_att *valid, size_t n_valid,
			  struct cni_err *err),
		struct cni_err *err)
{
	_cleanup_free_ struct fw_att *valid = NULL;
	size_t n = 0;
	if (fw_parse_attachments(conf, net, &valid, &n, err) < 0)
		return -1;
	return gc(net, valid, n, err);
}

/* Conntrack through nfnl.c's socket: dump, pick, delete. */

/* Whether a conntrack entry's original tuple is UDP to one of ports. */
static bool ct_matches(const struct nlattr *orig, const uint16_t *ports, size_t n)
{
	const struct nlattr *proto = nfa_find(nfa_data(orig), nfa_len(orig), CTA_TUPLE_PROTO);
	if (!proto)
		return false;
	const struct nlattr *num = nfa_find(nfa_data(proto), nfa_len(proto), CTA_PROTO_NUM);
	const struct nlattr *dport = nfa_find(nfa_data(proto), nfa_len(proto), CTA_PROTO_DST_PORT);
	if (!num || !dport || nfa_len(dport) < 2 || *(const uint8_t *)nfa_data(num) != IPPROTO_UDP)
		return false;
	uint16_t p;
	memcpy(&p, nfa_data(dport), 2);
	for (size_t i = 0; i < n; i++)
		if (ntohs(p) == ports[i])
			return true;
	return false;
}

/* One entry to delete: its original tuple and zone attributes, as the
 * kernel sent them. */
struct ct_victim {
	size_t len;
	char attrs[256];
};

struct ct_dump {
	const uint16_t *ports;
	size_t n_ports;
	struct ct_victim *v;
	size_t n, cap;
};

static int ct_collect(const struct nlmsghdr *h, const void *attrs, size_t alen, void *arg)
{
	(void)h;
	struct ct_dump *d = arg;
	const struct nlattr *orig = nfa_find(attrs, alen, CTA_TUPLE_ORIG);
	const struct nlattr *zone = nfa_find(attrs, alen, CTA_ZONE);
	size_t olen = orig ? NLA_ALIGN(orig->nla_len) : 0;
	size_t zlen = zone ? NLA_ALIGN(zone->nla_len) : 0;
	if (!orig || !ct_matches(orig, d->ports, d->n_ports) || olen + zlen > sizeof(d->v->attrs))
		return 0;
	xgrow(&d->v, &d->cap, d->n, sizeof(*d->v));
	struct ct_victim *v = &d->v[d->n++];
	*v = (struct ct_victim){.len = olen + zlen};
	memcpy(v->attrs, orig, orig->nla_len);
	if (zone)
		memcpy(v->attrs + olen, zone, zone->nla_len);
	return 0;
}

int fw_conntrack_flush_udp(int family, const uint16_t *ports, size_t n, struct cni_err *err)
{
	if (!n)
		return 0;
	/* Collect the matching tuples first: deleting while the dump runs
	 * would disturb it. */
	struct ct_dump d = {.ports = ports, .n_ports = n};
	int r = nfnl_request((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET, NLM_F_DUMP,
			     (uint8_t)family, NULL, 0, ct_collect, &d);
	if (r < 0)
		err_errno(err, CNI_ERR_INTERNAL, -r, "conntrack: dump");
	for (size_t i = 0; r == 0 && i < d.n; i++) {
		r = nfnl_request((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE, 0,
				 (uint8_t)family, d.v[i].attrs, d.v[i].len, NULL, NULL);
		if (r == -ENOENT) /* expired meanwhile */
			r = 0;
		else if (r < 0)
			err_errno(err, CNI_ERR_INTERNAL, -r, "conntrack: delete");
	}
	free(d.v);
	return r < 0 ? -1 : 0;
}
