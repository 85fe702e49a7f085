#include "dhcp-daemon.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "dhcp.h"
#include "json.h"
#include "netns.h"

#define NEVER INT64_MAX
#define MAX_REQUEST (64 * 1024)
#define MAX_CONNS 1024
#define READ_TIMEOUT_MS 10000

struct dd_opts {
	const char *pidfile;
	const char *hostprefix;
	const char *socketpath;
	const char *statedir;
	bool broadcast;
	int64_t timeout;       /* ms: REQUEST unanswered -> back to DISCOVER */
	int64_t resendmax;     /* ms: longest pause between retransmissions */
	int64_t resendtimeout; /* ms: give up acquiring after this */
};

enum lstate {
	L_SELECTING,
	L_REQUESTING,
	L_BOUND,
	L_RENEWING,
	L_REBINDING,
	L_REBOOTING,
	L_LOST,
};

static const char *const state_names[] = {
	"selecting", "requesting", "bound", "renewing", "rebinding", "rebooting", "lost",
};

struct provide {
	uint8_t code;
	char *value;
};

struct conn;

struct lease {
	struct lease *next;
	bool dead;
	char *key; /* containerID/network/ifname */
	char *container_id, *network, *ifname, *netns;
	dev_t ns_dev;
	ino_t ns_ino;
	int ifindex;
	uint8_t mac[6];
	uint8_t prl[256];
	size_t n_prl;
	struct provide *prov;
	size_t n_prov;
	unsigned priority;

	enum lstate st;
	int fd; /* AF_PACKET socket in the container, only while exchanging */
	uint32_t xid;
	unsigned attempts;
	int64_t ex_start, ex_deadline, req_deadline, next_send;
	uint32_t offer_ip, offer_server;

	uint8_t ack[DHCP_MAX_MSG];
	size_t ack_len;
	uint32_t addr, server;
	uint8_t server_mac[6];
	int64_t bound_wall; /* epoch seconds of the last ACK */
	int64_t t1_at, t2_at, expire_at;

	struct conn **waiters;
	size_t n_waiters, cap_waiters;
};

struct conn {
	struct conn *next;
	bool dead;
	int fd;
	char *in;
	size_t in_len;
	char *out;
	size_t out_len, out_off;
	struct lease *wait;
	int64_t deadline;
};

struct daemon {
	struct dd_opts o;
	char *sock_path;
	int lfd, sfd;
	bool activated, stop;
	struct lease *leases;
	struct conn *conns;
	size_t n_conns;
};

static _printf_(1, 2) void dlog(const char *fmt, ...)
{
	int saved = errno;
	char ts[32] = "";
	/* journald stamps lines itself. */
	if (!getenv("JOURNAL_STREAM")) {
		time_t t = time(NULL);
		struct tm tm;
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S ", localtime_r(&t, &tm));
	}
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	errno = saved;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	fprintf(stderr, "%sdhcp: %s\n", ts, msg ? msg : fmt);
	free(msg);
}

/* Lease timers survive suspend: BOOTTIME keeps counting while asleep. */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t jitter(int64_t span)
{
	uint32_t r;
	random_bytes(&r, sizeof(r));
	return (int64_t)(r % (uint32_t)(2 * span + 1)) - span;
}

static uint32_t new_xid(void)
{
	uint32_t x;
	random_bytes(&x, sizeof(x));
	return x;
}

static void fmt_mac(const uint8_t *m, char *b)
{
	sprintf(b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static int parse_mac(const char *s, uint8_t *m)
{
	unsigned v[6];
	char end;
	if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			 &end) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

static const char *fmt_ip4(uint32_t a, char *b)
{
	return inet_ntop(AF_INET, &a, b, INET_ADDRSTRLEN);
}

/* A Go duration ("10s", "1m30s", "500ms", "0") in milliseconds; -1 if
 * malformed or negative. */
static int64_t parse_duration(const char *s)
{
	static const struct {
		const char *u;
		double ms;
	} units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"ms", 1},
		     {"s", 1e3},   {"m", 6e4},   {"h", 3.6e6}};
	if (streq(s, "0"))
		return 0;
	double total = 0;
	const char *p = s;
	if (!*p)
		return -1;
	while (*p) {
		char *e;
		if (!(*p >= '0' && *p <= '9') && *p != '.')
			return -1;
		double v = strtod(p, &e);
		if (e == p)
			return -1;
		p = e;
		size_t best = 0;
		double mult = 0;
		for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
			size_t n = strlen(units[i].u);
			/* "ms" must not be read as "m" then "s". */
			if (strncmp(p, units[i].u, n) == 0 && n > best) {
				best = n;
				mult = units[i].ms;
			}
		}
		if (!best)
			return -1;
		p += best;
		total += v * mult;
	}
	return total > 1e15 ? -1 : (int64_t)(total + 0.999);
}

static const char daemon_usage[] =
	"usage: cni dhcp daemon [flags]\n"
	"  -socketpath PATH      unix socket to listen on (default " DHCP_DEFAULT_SOCKET ")\n"
	"  -hostprefix DIR       prefix for the socket and every CNI_NETNS path\n"
	"  -statedir DIR         where leases are kept across restarts\n"
	"                        (default " DHCP_DEFAULT_STATEDIR ")\n"
	"  -pidfile PATH         write the daemon's pid there (absolute path)\n"
	"  -broadcast[=BOOL]     ask servers to broadcast their replies\n"
	"  -timeout DURATION     wait for a DHCPACK before starting over (default 10s)\n"
	"  -resendmax DURATION   longest pause between retransmissions (default 62s)\n"
	"  -resendtimeout DURATION  give up acquiring a lease after this (default 3m28s)\n"
	"Runs in the foreground and logs to stderr; see cni-dhcp(8).\n";

static int parse_bool(const char *v, bool *out)
{
	static const char *const t[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const f[] = {"0", "f", "F", "false", "FALSE", "False"};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		if (streq(v, t[i]))
			return *out = true, 0;
		if (streq(v, f[i]))
			return *out = false, 0;
	}
	return -1;
}

/* Returns 0, 1 for --help, -1 on a bad flag (message printed). */
static int parse_flags(int argc, char **argv, struct dd_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (streq(a, "--"))
			break;
		if (a[0] != '-' || !a[1]) {
			fprintf(stderr, "dhcp daemon: unexpected argument %s\n%s", a, daemon_usage);
			return -1;
		}
		a += a[1] == '-' ? 2 : 1;
		_cleanup_free_ char *name = xstrdup(a);
		char *val = strchr(name, '=');
		if (val)
			*val++ = 0;
		if (streq(name, "h") || streq(name, "help")) {
			fputs(daemon_usage, stdout);
			return 1;
		}
		if (streq(name, "broadcast")) {
			if (val && parse_bool(val, &o->broadcast) < 0) {
				fprintf(stderr, "dhcp daemon: -broadcast: invalid boolean \"%s\"\n",
					val);
				return -1;
			}
			if (!val)
				o->broadcast = true;
			continue;
		}
		const char **str = streq(name, "pidfile")      ? &o->pidfile
				   : streq(name, "hostprefix") ? &o->hostprefix
				   : streq(name, "socketpath") ? &o->socketpath
				   : streq(name, "statedir")   ? &o->statedir
							       : NULL;
		int64_t *dur = streq(name, "timeout")	    ? &o->timeout
			       : streq(name, "resendmax")     ? &o->resendmax
			       : streq(name, "resendtimeout") ? &o->resendtimeout
							      : NULL;
		if (!str && !dur) {
			fprintf(stderr, "dhcp daemon: flag provided but not defined: -%s\n%s", name,
				daemon_usage);
			return -1;
		}
		const char *eq = strchr(a, '=');
		const char *v = eq ? eq + 1 : NULL;
		if (!v) {
			if (i + 1 >= argc) {
				fprintf(stderr, "dhcp daemon: flag needs an argument: -%s\n", name);
				return -1;
			}
			v = argv[++i];
		}
		if (str) {
			*str = v;
		} else if ((*dur = parse_duration(v)) < 0) {
			fprintf(stderr, "dhcp daemon: invalid duration \"%s\" for -%s\n", v, name);
			return -1;
		}
	}
	return 0;
}

enum ns_action {
	NS_PROBE,     /* look the interface up, change nothing */
	NS_SOCKET,    /* open the packet socket */
	NS_SOCKET_UP, /* the same, bringing the interface up first */
	NS_DOWN,      /* bring the interface down */
};

struct ns_op {
	enum ns_action act;
	const char *ifname;
	int ifindex;
	uint8_t mac[6];
	int fd;
	const char *what; /* the step that failed */
};

/* Accept only UDP to port 68 that is not a fragment: the socket otherwise
 * wakes for every IPv4 packet of the container. Offsets are from the IP
 * header (SOCK_DGRAM packet socket). */
static const struct sock_filter dhcp_filter[] = {
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 6),
	BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 4, 0),
	BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
	BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DHCP_CLIENT_PORT, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, 0xffff),
	BPF_STMT(BPF_RET | BPF_K, 0),
};

/* Runs inside the container namespace: find the interface and act on it.
 * Only a first acquisition brings it up (as the reference does): the
 * interface plugin may not have yet. */
static int ns_work(void *arg)
{
	struct ns_op *op = arg;
	struct ifreq ifr = {0};
	op->fd = -1;
	if (strlen(op->ifname) >= IFNAMSIZ)
		return op->what = "interface name", errno = EINVAL, -1;
	strcpy(ifr.ifr_name, op->ifname);
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return op->what = "socket", -1;
	if (ioctl(s, SIOCGIFINDEX, &ifr) < 0)
		return op->what = "interface lookup", -1;
	op->ifindex = ifr.ifr_ifindex;
	if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
		return op->what = "hardware address", -1;
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return op->what = "link type (not Ethernet)", errno = EPROTONOSUPPORT, -1;
	memcpy(op->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return op->what = "interface flags", -1;
	bool up = ifr.ifr_flags & IFF_UP;
	if ((op->act == NS_SOCKET_UP && !up) || (op->act == NS_DOWN && up)) {
		if (op->act == NS_DOWN)
			ifr.ifr_flags &= ~IFF_UP;
		else
			ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			return op->what = up ? "bring down" : "bring up", -1;
	}
	if (op->act == NS_PROBE || op->act == NS_DOWN)
		return 0;

	_cleanup_close_ int fd =
		socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (fd < 0)
		return op->what = "packet socket", -1;
	struct sock_fprog prog = {ARRAY_SIZE(dhcp_filter), (struct sock_filter *)dhcp_filter};
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0)
		return op->what = "socket options", -1;
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = op->ifindex};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return op->what = "bind", -1;
	op->fd = TAKE_FD(fd);
	return 0;
}

enum { OPEN_OK = 0, OPEN_FAIL = -1, OPEN_GONE = -2 };

/* Open the lease's namespace and run op there. For a lease that already
 * has an identity, a namespace that is missing or is another one, or an
 * interface that vanished or changed its address, is OPEN_GONE: the
 * container went away without DEL. */
static int lease_ns(struct daemon *d, struct lease *l, struct ns_op *op, struct cni_err *err)
{
	_cleanup_free_ char *path = xasprintf("%s%s", d->o.hostprefix, l->netns);
	int e = 0;
	bool known = l->ns_ino != 0;
	struct cni_netns *ns = netns_open(path, &e, err);
	if (!ns)
		return known && (e == ENOENT || e == EINVAL) ? OPEN_GONE : OPEN_FAIL;
	struct stat st;
	if (fstat(ns->fd, &st) < 0) {
		err_errno(err, CNI_ERR_INTERNAL, errno, "%s", path);
		netns_close(ns);
		return OPEN_FAIL;
	}
	if (known && (st.st_dev != l->ns_dev || st.st_ino != l->ns_ino)) {
		netns_close(ns);
		err_set(err, CNI_ERR_INTERNAL, "%s is now another namespace", path);
		return OPEN_GONE;
	}
	op->ifname = l->ifname;
	int r = netns_run(ns, ns_work, op);
	e = errno;
	netns_close(ns);
	if (r < 0) {
		err_errno(err, CNI_ERR_INTERNAL, e, "%s %s in %s", op->what ? op->what : "setns",
			  l->ifname, path);
		return known && e == ENODEV ? OPEN_GONE : OPEN_FAIL;
	}
	if (known && memcmp(op->mac, l->mac, 6)) {
		if (op->fd >= 0)
			close(op->fd);
		op->fd = -1;
		err_set(err, CNI_ERR_INTERNAL, "%s in %s has a new hardware address", l->ifname,
			path);
		return OPEN_GONE;
	}
	if (!known) {
		l->ns_dev = st.st_dev;
		l->ns_ino = st.st_ino;
		memcpy(l->mac, op->mac, 6);
	}
	l->ifindex = op->ifindex;
	return OPEN_OK;
}

static int lease_open_socket(struct daemon *d, struct lease *l, bool bring_up, struct cni_err *err)
{
	if (l->fd >= 0)
		return OPEN_OK;
	struct ns_op op = {.act = bring_up ? NS_SOCKET_UP : NS_SOCKET, .fd = -1};
	int r = lease_ns(d, l, &op, err);
	if (r == OPEN_OK)
		l->fd = op.fd;
	return r;
}

static void lease_close_socket(struct lease *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

static char *state_path(struct daemon *d, const char *key)
{
	/* FNV-1a: the key holds '/' and may be long; the file says which key
	 * it is, the name only has to be stable. */
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return xasprintf("%s/%016llx.json", d->o.statedir, (unsigned long long)h);
}

static void lease_save(struct daemon *d, struct lease *l)
{
	char b[32];
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "key", json_new_str(l->key));
	json_set(o, "containerID", json_new_str(l->container_id));
	json_set(o, "network", json_new_str(l->network));
	json_set(o, "ifname", json_new_str(l->ifname));
	json_set(o, "netns", json_new_str(l->netns));
	json_set(o, "nsDev", json_new_uint((uint64_t)l->ns_dev));
	json_set(o, "nsIno", json_new_uint((uint64_t)l->ns_ino));
	fmt_mac(l->mac, b);
	json_set(o, "mac", json_new_str(b));
	fmt_mac(l->server_mac, b);
	json_set(o, "serverMac", json_new_str(b));
	json_set(o, "bound", json_new_int(l->bound_wall));
	json_set(o, "priority", json_new_uint(l->priority));
	struct cni_json *req = json_set(o, "request", json_new(JSON_ARRAY));
	for (size_t i = 0; i < l->n_prl; i++)
		json_push(req, json_new_uint(l->prl[i]));
	struct cni_json *prov = json_set(o, "provide", json_new(JSON_ARRAY));
	for (size_t i = 0; i < l->n_prov; i++) {
		struct cni_json *p = json_push(prov, json_new(JSON_OBJECT));
		json_set(p, "code", json_new_uint(l->prov[i].code));
		json_set(p, "value", json_new_str(l->prov[i].value));
	}
	_cleanup_free_ char *hex = xmalloc(l->ack_len * 2 + 1);
	for (size_t i = 0; i < l->ack_len; i++)
		sprintf(hex + 2 * i, "%02x", l->ack[i]);
	hex[l->ack_len * 2] = 0;
	json_set(o, "ack", json_new_str(hex));
	_cleanup_free_ char *s = json_dump(o, true);
	json_free(o);
	_cleanup_free_ char *path = state_path(d, l->key);
	int e = write_file_atomic(path, s, strlen(s));
	if (e < 0)
		dlog("%s: cannot save lease to %s: %s", l->key, path, strerror(-e));
}

static void lease_unsave(struct daemon *d, struct lease *l)
{
	_cleanup_free_ char *path = state_path(d, l->key);
	if (unlink(path) < 0 && errno != ENOENT)
		dlog("%s: cannot remove %s: %m", l->key, path);
}

static void conn_send(struct conn *c, struct cni_json *o)
{
	char *s = json_dump(o, false);
	json_free(o);
	free(c->out);
	c->out = xasprintf("%s\n", s);
	free(s);
	c->out_len = strlen(c->out);
	c->out_off = 0;
	c->wait = NULL;
}

static void conn_send_err(struct conn *c, const struct cni_err *err)
{
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "ok", json_new_bool(false));
	json_set(o, "code", json_new_int(err->code ? err->code : CNI_ERR_INTERNAL));
	json_set(o, "msg", json_new_str(err->msg));
	if (err->details[0])
		json_set(o, "details", json_new_str(err->details));
	conn_send(c, o);
}

static void conn_send_ok(struct conn *c, struct cni_json *result)
{
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "ok", json_new_bool(true));
	if (result)
		json_set(o, "result", result);
	conn_send(c, o);
}

static struct cni_json *lease_result(const struct lease *l, struct cni_err *err)
{
	struct dhcp_msg m;
	if (dhcp_msg_parse(l->ack, l->ack_len, &m) < 0) {
		err_set(err, CNI_ERR_INTERNAL, "%s: stored DHCPACK is malformed", l->key);
		return NULL;
	}
	_cleanup_(result_freep) struct cni_result *r = result_new("1.1.0");
	if (dhcp_msg_result(&m, l->priority, r, err) < 0)
		return NULL;
	return result_encode(r, "1.1.0", err);
}

static void lease_reply_waiters(struct lease *l, const struct cni_err *fail)
{
	for (size_t i = 0; i < l->n_waiters; i++) {
		struct conn *c = l->waiters[i];
		struct cni_err err = {0};
		struct cni_json *r = fail ? NULL : lease_result(l, &err);
		if (fail)
			conn_send_err(c, fail);
		else if (!r)
			conn_send_err(c, &err);
		else
			conn_send_ok(c, r);
	}
	l->n_waiters = 0;
}

static bool lease_live(const struct lease *l)
{
	return l->st == L_BOUND || l->st == L_RENEWING || l->st == L_REBINDING;
}

static bool lease_acquiring(const struct lease *l)
{
	return l->st == L_SELECTING || l->st == L_REQUESTING;
}

static void lease_drop(struct daemon *d, struct lease *l, const struct cni_err *why)
{
	if (l->dead)
		return;
	if (l->n_waiters) {
		struct cni_err e = {0};
		if (!why)
			err_set(&e, CNI_ERR_INTERNAL, "%s: lease dropped", l->key);
		lease_reply_waiters(l, why ? why : &e);
	}
	lease_close_socket(l);
	lease_unsave(d, l);
	l->dead = true;
}

static void lease_free(struct lease *l)
{
	if (!l)
		return;
	lease_close_socket(l);
	free(l->key);
	free(l->container_id);
	free(l->network);
	free(l->ifname);
	free(l->netns);
	for (size_t i = 0; i < l->n_prov; i++)
		free(l->prov[i].value);
	free(l->prov);
	free(l->waiters);
	free(l);
}

/* Pause before retransmission number n (1-based): a few quick resends at
 * 2s, then RFC 2131's doubling from 4s up to -resendmax, each +-1s. */
static int64_t backoff(struct daemon *d, unsigned n)
{
	int64_t base;
	if (n <= 4) {
		base = 2000;
	} else {
		unsigned k = n - 5 > 20 ? 20 : n - 5;
		base = (int64_t)4000 << k;
		if (base > d->o.resendmax)
			base = d->o.resendmax;
	}
	int64_t v = base + jitter(1000);
	return v < 500 ? 500 : v;
}

static int lease_send(struct daemon *d, struct lease *l, uint8_t type, int64_t now)
{
	bool renew = l->st == L_RENEWING || type == DHCPRELEASE;
	bool has_addr = renew || l->st == L_REBINDING;
	int64_t secs = (now - l->ex_start) / 1000;
	struct dhcp_hdr h = {
		.type = type,
		.xid = l->xid,
		.secs = (uint16_t)(secs > 0xffff ? 0xffff : secs < 0 ? 0 : secs),
		.flags = d->o.broadcast && !has_addr ? DHCP_FLAG_BROADCAST : 0,
		.ciaddr = has_addr ? l->addr : 0,
		.mac = l->mac,
	};
	struct dhcp_buf b;
	dhcp_buf_start(&b, &h);
	int r = 0;
	if (type == DHCPREQUEST && l->st == L_REQUESTING) {
		r |= dhcp_buf_opt_u32(&b, DHCP_OPT_REQUESTED_IP, l->offer_ip);
		r |= dhcp_buf_opt_u32(&b, DHCP_OPT_SERVER_ID, l->offer_server);
	} else if (type == DHCPREQUEST && l->st == L_REBOOTING) {
		r |= dhcp_buf_opt_u32(&b, DHCP_OPT_REQUESTED_IP, l->addr);
	} else if (type == DHCPRELEASE) {
		r |= dhcp_buf_opt_u32(&b, DHCP_OPT_SERVER_ID, l->server);
	}
	bool own_id = false;
	for (size_t i = 0; i < l->n_prov; i++)
		own_id |= l->prov[i].code == DHCP_OPT_CLIENT_ID;
	if (!own_id) {
		/* Type 0 ("not a hardware address") and the lease name, cut
		 * to fit one option as the reference does. */
		uint8_t id[255];
		size_t n = strlen(l->key);
		if (n > 254)
			n = 254;
		id[0] = 0;
		memcpy(id + 1, l->key, n);
		r |= dhcp_buf_opt(&b, DHCP_OPT_CLIENT_ID, id, n + 1);
	}
	for (size_t i = 0; i < l->n_prov; i++) {
		if (type == DHCPRELEASE && l->prov[i].code != DHCP_OPT_CLIENT_ID)
			continue;
		r |= dhcp_buf_opt(&b, l->prov[i].code, l->prov[i].value, strlen(l->prov[i].value));
	}
	if (type != DHCPRELEASE && l->n_prl)
		r |= dhcp_buf_opt(&b, DHCP_OPT_PARAM_LIST, l->prl, l->n_prl);
	r |= dhcp_buf_finish(&b);
	if (r) {
		errno = EMSGSIZE;
		return -1;
	}

	/* RENEWING and RELEASE go to the server itself; everything else is
	 * broadcast, since the interface may have no address yet. */
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	bool unicast = renew && l->server;
	uint8_t pkt[DHCP_MAX_MSG + DHCP_UDP_HDR];
	size_t n = dhcp_udp_wrap(pkt, sizeof(pkt), has_addr ? l->addr : 0,
				 unicast ? l->server : INADDR_BROADCAST, b.b, b.len);
	struct sockaddr_ll to = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_IP),
				 .sll_ifindex = l->ifindex,
				 .sll_halen = 6};
	memcpy(to.sll_addr, unicast ? l->server_mac : bcast, 6);
	if (sendto(l->fd, pkt, n, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -1;
	return 0;
}

static void lease_lost(struct daemon *d, struct lease *l, const char *why)
{
	char a[INET_ADDRSTRLEN];
	dlog("%s: %s; lease on %s lost, bringing %s down", l->key, why, fmt_ip4(l->addr, a),
	     l->ifname);
	lease_close_socket(l);
	/* RFC 2131: the client must stop using the address. The CNI result
	 * cannot change, so the interface goes down, as the reference does on
	 * expiry. */
	struct ns_op op = {.act = NS_DOWN, .fd = -1};
	struct cni_err err = {0};
	if (lease_ns(d, l, &op, &err) != OPEN_OK)
		dlog("%s: %s %s", l->key, err.msg, err.details);
	lease_unsave(d, l);
	l->st = L_LOST;
	if (l->n_waiters) {
		struct cni_err e = {0};
		err_set(&e, CNI_ERR_INTERNAL, "the DHCP lease for %s was lost: %s", l->key, why);
		lease_reply_waiters(l, &e);
	}
}

static void lease_set_times(struct lease *l, const struct dhcp_msg *m, int64_t now, int64_t elapsed)
{
	uint32_t lt, t1, t2;
	dhcp_msg_times(m, &lt, &t1, &t2);
	if (lt == UINT32_MAX) {
		l->t1_at = l->t2_at = l->expire_at = NEVER;
		return;
	}
	l->t1_at = now + ((int64_t)t1 - elapsed) * 1000;
	l->t2_at = now + ((int64_t)t2 - elapsed) * 1000;
	l->expire_at = now + ((int64_t)lt - elapsed) * 1000;
}

/* Start (or restart) an exchange in state st with a fresh transaction id.
 * Returns the lease_ns result. */
static int lease_begin(struct daemon *d, struct lease *l, enum lstate st, int64_t now,
		       struct cni_err *err)
{
	int r = lease_open_socket(d, l, st == L_SELECTING, err);
	if (r != OPEN_OK)
		return r;
	l->st = st;
	l->xid = new_xid();
	l->attempts = 0;
	l->ex_start = now;
	l->next_send = now;
	if (st == L_SELECTING || st == L_REBOOTING)
		l->ex_deadline = now + d->o.resendtimeout;
	return OPEN_OK;
}

/* A renewal-time exchange could not start: the container is gone (drop
 * the lease quietly) or something else failed (try again shortly). */
static void lease_begin_or_drop(struct daemon *d, struct lease *l, enum lstate st, int64_t now)
{
	struct cni_err err = {0};
	int r = lease_begin(d, l, st, now, &err);
	if (r == OPEN_OK) {
		dlog("%s: %s", l->key, state_names[st]);
		return;
	}
	if (r == OPEN_GONE) {
		dlog("%s: container gone (%s%s%s), forgetting its lease", l->key, err.msg,
		     err.details[0] ? ": " : "", err.details);
		lease_drop(d, l, NULL);
		return;
	}
	dlog("%s: cannot start %s: %s %s", l->key, state_names[st], err.msg, err.details);
	l->st = st;
	l->next_send = now + 5000;
}

static void lease_commit(struct daemon *d, struct lease *l, const uint8_t *raw, size_t len,
			 const struct dhcp_msg *m, const uint8_t *from_mac, uint32_t from_ip,
			 int64_t now)
{
	bool first = lease_acquiring(l);
	enum lstate was = l->st;
	memcpy(l->ack, raw, len);
	l->ack_len = len;
	l->addr = m->yiaddr;
	if (dhcp_msg_opt_u32(m, DHCP_OPT_SERVER_ID, &l->server) < 0)
		l->server = from_ip;
	memcpy(l->server_mac, from_mac, 6);
	l->bound_wall = time(NULL);
	lease_set_times(l, m, now, 0);
	l->st = L_BOUND;

	char a[INET_ADDRSTRLEN], s[INET_ADDRSTRLEN];
	uint32_t lt, t1, t2;
	dhcp_msg_times(m, &lt, &t1, &t2);
	if (first)
		dlog("%s: bound to %s from %s, lease %us, renew in %us", l->key,
		     fmt_ip4(l->addr, a), fmt_ip4(l->server, s), lt, t1);
	else
		dlog("%s: renewed %s from %s (%s), lease %us, renew in %us", l->key,
		     fmt_ip4(l->addr, a), fmt_ip4(l->server, s), state_names[was], lt, t1);

	/* A new lease whose result cannot be expressed is given back. */
	struct cni_err err = {0};
	struct cni_json *r = lease_result(l, &err);
	if (!r && first) {
		lease_send(d, l, DHCPRELEASE, now);
		lease_drop(d, l, &err);
		return;
	}
	json_free(r);
	lease_reply_waiters(l, NULL);
	lease_close_socket(l);
	lease_save(d, l);
}

static void lease_input_msg(struct daemon *d, struct lease *l, const uint8_t *raw, size_t len,
			    const struct dhcp_msg *m, const uint8_t *from_mac, uint32_t from_ip,
			    int64_t now)
{
	char a[INET_ADDRSTRLEN];
	uint32_t sid = 0;
	bool has_sid = dhcp_msg_opt_u32(m, DHCP_OPT_SERVER_ID, &sid) == 0;
	switch (l->st) {
	case L_SELECTING:
		if (m->type != DHCPOFFER || !m->yiaddr || !has_sid)
			return;
		l->offer_ip = m->yiaddr;
		l->offer_server = sid;
		l->st = L_REQUESTING;
		l->attempts = 0;
		l->next_send = now;
		l->req_deadline = now + d->o.timeout;
		dlog("%s: offered %s by %s", l->key, fmt_ip4(m->yiaddr, a),
		     fmt_ip4(sid, (char[INET_ADDRSTRLEN]){0}));
		return;
	case L_REQUESTING:
		if (has_sid && sid != l->offer_server)
			return;
		if (m->type == DHCPNAK) {
			dlog("%s: DHCPNAK from %s, starting over", l->key, fmt_ip4(sid, a));
			l->st = L_SELECTING;
			l->xid = new_xid();
			l->next_send = now + 1000;
			return;
		}
		if (m->type == DHCPACK && m->yiaddr == l->offer_ip)
			lease_commit(d, l, raw, len, m, from_mac, from_ip, now);
		return;
	case L_RENEWING:
	case L_REBINDING:
	case L_REBOOTING:
		if (m->type == DHCPNAK) {
			lease_lost(d, l, "DHCPNAK");
			return;
		}
		if (m->type != DHCPACK)
			return;
		if (m->yiaddr != l->addr) {
			lease_lost(d, l, "server offered another address");
			return;
		}
		lease_commit(d, l, raw, len, m, from_mac, from_ip, now);
		return;
	default:
		return;
	}
}

static void lease_input(struct daemon *d, struct lease *l, int64_t now)
{
	while (!l->dead && l->fd >= 0) {
		uint8_t buf[DHCP_MAX_MSG + 64];
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
		} cbuf;
		struct sockaddr_ll from = {0};
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_name = &from,
				    .msg_namelen = sizeof(from),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = &cbuf,
				    .msg_controllen = sizeof(cbuf)};
		ssize_t n = recvmsg(l->fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				dlog("%s: receive on %s: %m", l->key, l->ifname);
				lease_close_socket(l);
			}
			return;
		}
		if ((mh.msg_flags & MSG_TRUNC) || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		bool csum_ready = true;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA)
				continue;
			struct tpacket_auxdata aux;
			memcpy(&aux, CMSG_DATA(c), sizeof(aux));
			/* Packets from a local sender (another namespace on the
			 * same host) may carry a checksum still to be filled. */
			csum_ready = !(aux.tp_status & TP_STATUS_CSUMNOTREADY);
		}
		const uint8_t *p;
		size_t plen;
		uint32_t src;
		struct dhcp_msg m;
		if (dhcp_udp_unwrap(buf, (size_t)n, csum_ready, &p, &plen, &src) < 0 ||
		    dhcp_msg_parse(p, plen, &m) < 0)
			continue;
		if (m.op != DHCP_BOOTREPLY || m.xid != l->xid || m.hlen != 6 ||
		    memcmp(m.chaddr, l->mac, 6))
			continue;
		lease_input_msg(d, l, p, plen, &m, from.sll_addr, src, now);
	}
}

/* Send when due, move between states when their time is up. */
static void lease_tick(struct daemon *d, struct lease *l, int64_t now)
{
	struct cni_err err = {0};
	switch (l->st) {
	case L_SELECTING:
	case L_REQUESTING:
		if (now >= l->ex_deadline) {
			err_set(&err, CNI_ERR_INTERNAL, "no DHCP lease for %s", l->ifname);
			snprintf(err.details, sizeof(err.details),
				 "%s: no %s from any DHCP server within %llds", l->key,
				 l->st == L_SELECTING ? "DHCPOFFER" : "DHCPACK",
				 (long long)(d->o.resendtimeout / 1000));
			dlog("%s", err.details);
			lease_drop(d, l, &err);
			return;
		}
		if (l->st == L_REQUESTING && now >= l->req_deadline) {
			dlog("%s: no DHCPACK within %llds, starting over", l->key,
			     (long long)(d->o.timeout / 1000));
			l->st = L_SELECTING;
			l->xid = new_xid();
			l->next_send = now;
		}
		break;
	case L_REBOOTING:
		if (now >= l->ex_deadline) {
			lease_lost(d, l, "no answer to INIT-REBOOT");
			return;
		}
		break;
	case L_BOUND:
		if (now >= l->t1_at)
			lease_begin_or_drop(d, l, now >= l->t2_at ? L_REBINDING : L_RENEWING, now);
		return;
	case L_RENEWING:
		if (now >= l->t2_at) {
			l->st = L_REBINDING;
			l->xid = new_xid();
			l->next_send = now;
			dlog("%s: no answer from the server, rebinding", l->key);
		}
		/* fall through */
	case L_REBINDING:
		if (now >= l->expire_at) {
			lease_lost(d, l, "lease expired");
			return;
		}
		break;
	case L_LOST:
		return;
	}
	if (l->dead || now < l->next_send)
		return;
	if (l->fd < 0) {
		int r = lease_open_socket(d, l, lease_acquiring(l), &err);
		if (r == OPEN_GONE) {
			dlog("%s: container gone (%s%s%s), forgetting its lease", l->key, err.msg,
			     err.details[0] ? ": " : "", err.details);
			lease_drop(d, l, &err);
			return;
		}
		if (r != OPEN_OK) {
			dlog("%s: %s %s", l->key, err.msg, err.details);
			l->next_send = now + 5000;
			return;
		}
	}
	static const uint8_t type_of[] = {
		[L_SELECTING] = DHCPDISCOVER, [L_REQUESTING] = DHCPREQUEST,
		[L_RENEWING] = DHCPREQUEST,   [L_REBINDING] = DHCPREQUEST,
		[L_REBOOTING] = DHCPREQUEST,
	};
	if (lease_send(d, l, type_of[l->st], now) < 0) {
		int e = errno;
		dlog("%s: send on %s: %s", l->key, l->ifname, strerror(e));
		lease_close_socket(l);
		if (e == ENXIO || e == ENODEV) {
			dlog("%s: %s is gone, forgetting its lease", l->key, l->ifname);
			err_set(&err, CNI_ERR_INTERNAL, "%s disappeared", l->ifname);
			lease_drop(d, l, &err);
			return;
		}
	}
	l->attempts++;
	if (l->st == L_RENEWING || l->st == L_REBINDING) {
		/* RFC 2131 4.4.5: wait half the time left until T2 (or the
		 * end of the lease). Its floor of a minute would leave a short
		 * lease a single attempt; a 2s floor still bounds the traffic
		 * near the deadline. */
		int64_t end = l->st == L_RENEWING ? l->t2_at : l->expire_at;
		int64_t w = (end - now) / 2;
		w = w < 2000 ? 2000 : w;
		l->next_send = now + w < end ? now + w : end;
	} else {
		l->next_send = now + backoff(d, l->attempts);
	}
}

static int64_t lease_wake(const struct lease *l)
{
	int64_t w = NEVER;
#define EARLIER(t) (w = (t) < w ? (t) : w)
	switch (l->st) {
	case L_SELECTING:
	case L_REQUESTING:
		EARLIER(l->ex_deadline);
		EARLIER(l->next_send);
		if (l->st == L_REQUESTING)
			EARLIER(l->req_deadline);
		break;
	case L_REBOOTING:
		EARLIER(l->ex_deadline);
		EARLIER(l->next_send);
		break;
	case L_BOUND:
		EARLIER(l->t1_at);
		break;
	case L_RENEWING:
		EARLIER(l->t2_at);
		/* fall through */
	case L_REBINDING:
		EARLIER(l->expire_at);
		EARLIER(l->next_send);
		break;
	case L_LOST:
		break;
	}
#undef EARLIER
	return w;
}

/* DHCPRELEASE, best effort: the namespace may be gone already. */
static void lease_release(struct daemon *d, struct lease *l, int64_t now)
{
	if (l->addr && l->st != L_LOST) {
		struct cni_err err = {0};
		int r = lease_open_socket(d, l, false, &err);
		char a[INET_ADDRSTRLEN];
		if (r == OPEN_OK && lease_send(d, l, DHCPRELEASE, now) == 0)
			dlog("%s: released %s", l->key, fmt_ip4(l->addr, a));
		else if (r == OPEN_OK)
			dlog("%s: DHCPRELEASE: %m", l->key);
		else
			dlog("%s: not released (%s %s)", l->key, err.msg, err.details);
	} else {
		dlog("%s: forgotten", l->key);
	}
	struct cni_err e = {0};
	err_set(&e, CNI_ERR_INTERNAL, "%s: released while being acquired", l->key);
	lease_drop(d, l, &e);
}

static struct lease *lease_find(struct daemon *d, const char *key)
{
	for (struct lease *l = d->leases; l; l = l->next)
		if (!l->dead && streq(l->key, key))
			return l;
	return NULL;
}

static void lease_wait(struct lease *l, struct conn *c)
{
	xgrow(&l->waiters, &l->cap_waiters, l->n_waiters, sizeof(*l->waiters));
	l->waiters[l->n_waiters++] = c;
	c->wait = l;
}

static char *make_key(const char *cid, const char *net, const char *ifname)
{
	return xasprintf("%s/%s/%s", cid, net, ifname);
}

static int req_ident(const struct cni_json *j, const char **cid, const char **net,
		     const char **ifname, struct cni_err *err)
{
	if (json_get_str(j, "containerID", JSON_REQ | JSON_NONEMPTY, cid, err) < 0 ||
	    json_get_str(j, "network", JSON_REQ, net, err) < 0 ||
	    json_get_str(j, "ifname", JSON_REQ | JSON_NONEMPTY, ifname, err) < 0)
		return -1;
	if (!name_is_safe(*ifname, IFNAMSIZ - 1))
		return err_set(err, CNI_ERR_INVALID_ENV, "ifname: invalid interface name");
	return 0;
}

/* The request and provide lists, shared by allocate and the state file. */
static int lease_parse_opts(struct lease *l, const struct cni_json *j, struct cni_err *err)
{
	const struct cni_json *req = NULL, *prov = NULL;
	int64_t prio = 0;
	if (json_get_arr(j, "request", 0, &req, err) < 0 ||
	    json_get_arr(j, "provide", 0, &prov, err) < 0 ||
	    json_get_int(j, "priority", 0, 0, UINT32_MAX, &prio, err) < 0)
		return -1;
	l->priority = (unsigned)prio;
	for (size_t i = 0; i < json_len(req) && l->n_prl < sizeof(l->prl); i++) {
		int64_t c;
		if (json_as_int(json_at(req, i), 1, 254, &c, err) < 0)
			return -1;
		l->prl[l->n_prl++] = (uint8_t)c;
	}
	l->prov = xcalloc(json_len(prov) + 1, sizeof(*l->prov));
	for (size_t i = 0; i < json_len(prov); i++) {
		const struct cni_json *p = json_at(prov, i);
		int64_t c;
		const char *v;
		if (json_get_int(p, "code", JSON_REQ, 1, 254, &c, err) < 0 ||
		    json_get_str(p, "value", JSON_REQ, &v, err) < 0)
			return -1;
		if (strlen(v) > 255)
			return json_err(err, p, "value longer than 255 bytes");
		l->prov[l->n_prov].code = (uint8_t)c;
		l->prov[l->n_prov++].value = xstrdup(v);
	}
	return 0;
}

static int op_allocate(struct daemon *d, struct conn *c, const struct cni_json *j, int64_t now,
		       struct cni_err *err)
{
	const char *cid, *net, *ifname, *netns;
	if (req_ident(j, &cid, &net, &ifname, err) < 0 ||
	    json_get_str(j, "netns", JSON_REQ | JSON_NONEMPTY, &netns, err) < 0)
		return -1;
	if (netns[0] != '/') {
		err_set(err, CNI_ERR_INVALID_ENV, "netns: not an absolute path");
		return -1;
	}
	_cleanup_free_ char *key = make_key(cid, net, ifname);
	struct lease *l = lease_find(d, key);
	if (l && !streq(l->netns, netns)) {
		/* The same attachment in a new namespace: the old lease
		 * belongs to a container that is gone. */
		dlog("%s: new namespace %s, giving up the lease in %s", key, netns, l->netns);
		lease_release(d, l, now);
		l = NULL;
	}
	if (l && l->st == L_LOST) {
		lease_drop(d, l, NULL);
		l = NULL;
	}
	if (l && lease_live(l)) {
		struct cni_json *r = lease_result(l, err);
		if (!r)
			return -1;
		conn_send_ok(c, r);
		return 0;
	}
	if (l) {
		/* Being acquired for an earlier, identical request. */
		lease_wait(l, c);
		return 0;
	}

	l = xcalloc(1, sizeof(*l));
	l->fd = -1;
	l->key = TAKE_PTR(key);
	l->container_id = xstrdup(cid);
	l->network = xstrdup(net);
	l->ifname = xstrdup(ifname);
	l->netns = xstrdup(netns);
	if (lease_parse_opts(l, j, err) < 0 ||
	    lease_begin(d, l, L_SELECTING, now, err) != OPEN_OK) {
		dlog("%s: %s%s%s", l->key, err->msg, err->details[0] ? ": " : "", err->details);
		lease_free(l);
		return -1;
	}
	char m[18];
	fmt_mac(l->mac, m);
	dlog("%s: acquiring a lease on %s (%s) in %s", l->key, l->ifname, m, l->netns);
	l->next = d->leases;
	d->leases = l;
	lease_wait(l, c);
	return 0;
}

static int op_check(struct daemon *d, struct conn *c, const struct cni_json *j, struct cni_err *err)
{
	const char *cid, *net, *ifname;
	if (req_ident(j, &cid, &net, &ifname, err) < 0)
		return -1;
	_cleanup_free_ char *key = make_key(cid, net, ifname);
	struct lease *l = lease_find(d, key);
	if (!l)
		err_set(err, CNI_ERR_INTERNAL, "no DHCP lease for %s", key);
	else if (l->st == L_LOST)
		err_set(err, CNI_ERR_INTERNAL, "the DHCP lease for %s was lost", key);
	else if (!lease_live(l))
		err_set(err, CNI_ERR_INTERNAL, "the DHCP lease for %s is not bound (%s)", key,
			state_names[l->st]);
	if (err_isset(err))
		return -1;
	struct cni_json *r = lease_result(l, err);
	if (!r)
		return -1;
	conn_send_ok(c, r);
	return 0;
}

static int op_release(struct daemon *d, struct conn *c, const struct cni_json *j, int64_t now,
		      struct cni_err *err)
{
	const char *cid, *net, *ifname;
	if (req_ident(j, &cid, &net, &ifname, err) < 0)
		return -1;
	_cleanup_free_ char *key = make_key(cid, net, ifname);
	struct lease *l = lease_find(d, key);
	if (l)
		lease_release(d, l, now);
	conn_send_ok(c, NULL);
	return 0;
}

static int op_gc(struct daemon *d, struct conn *c, const struct cni_json *j, int64_t now,
		 struct cni_err *err)
{
	const char *net;
	const struct cni_json *valid = NULL;
	if (json_get_str(j, "network", JSON_REQ | JSON_NONEMPTY, &net, err) < 0 ||
	    json_get_arr(j, "valid", 0, &valid, err) < 0)
		return -1;
	for (struct lease *l = d->leases; l; l = l->next) {
		if (l->dead || !streq(l->network, net))
			continue;
		bool keep = false;
		for (size_t i = 0; i < json_len(valid) && !keep; i++) {
			const struct cni_json *v = json_at(valid, i);
			keep = streq(json_str(json_get(v, "containerID")), l->container_id) &&
			       streq(json_str(json_get(v, "ifname")), l->ifname);
		}
		if (!keep) {
			dlog("%s: not a valid attachment (GC)", l->key);
			lease_release(d, l, now);
		}
	}
	conn_send_ok(c, NULL);
	return 0;
}

static void conn_request(struct daemon *d, struct conn *c, int64_t now)
{
	struct cni_err err = {0};
	_cleanup_(json_freep) struct cni_json *j = json_parse(c->in, c->in_len, &err);
	const char *op = NULL;
	int r = -1;
	if (!j || json_get_str(j, "op", JSON_REQ, &op, &err) < 0) {
		conn_send_err(c, &err);
		return;
	}
	if (streq(op, "allocate"))
		r = op_allocate(d, c, j, now, &err);
	else if (streq(op, "check"))
		r = op_check(d, c, j, &err);
	else if (streq(op, "release"))
		r = op_release(d, c, j, now, &err);
	else if (streq(op, "gc"))
		r = op_gc(d, c, j, now, &err);
	else if (streq(op, "status")) {
		conn_send_ok(c, NULL);
		r = 0;
	} else
		err_set(&err, CNI_ERR_INVALID_CONFIG, "op: unknown operation \"%.32s\"", op);
	if (r < 0)
		conn_send_err(c, &err);
}

static void conn_kill(struct conn *c)
{
	if (c->wait) {
		struct lease *l = c->wait;
		for (size_t i = 0; i < l->n_waiters; i++)
			if (l->waiters[i] == c) {
				l->waiters[i] = l->waiters[--l->n_waiters];
				break;
			}
		c->wait = NULL;
	}
	c->dead = true;
}

static void conn_io(struct daemon *d, struct conn *c, short revents, int64_t now)
{
	if (c->out) {
		while (c->out_off < c->out_len) {
			ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					return;
				break;
			}
			c->out_off += (size_t)n;
		}
		conn_kill(c);
		return;
	}
	if (c->wait) {
		/* The client gave up (the runtime's timeout). Nobody else
		 * waits for an acquisition that is not bound yet: stop it. */
		if (revents & (POLLHUP | POLLERR)) {
			struct lease *l = c->wait;
			conn_kill(c);
			if (!l->n_waiters && lease_acquiring(l)) {
				dlog("%s: client went away, abandoning the acquisition", l->key);
				lease_drop(d, l, NULL);
			}
		}
		return;
	}
	for (;;) {
		char buf[4096];
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_kill(c);
			return;
		}
		char *nl = memchr(buf, '\n', (size_t)n);
		size_t take = nl ? (size_t)(nl - buf) : (size_t)n;
		if (c->in_len + take > MAX_REQUEST) {
			conn_kill(c);
			return;
		}
		c->in = xrealloc(c->in, c->in_len + take + 1);
		memcpy(c->in + c->in_len, buf, take);
		c->in_len += take;
		c->in[c->in_len] = 0;
		if (nl) {
			conn_request(d, c, now);
			return;
		}
	}
}

static void conn_accept(struct daemon *d, int64_t now)
{
	for (;;) {
		int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				dlog("accept: %m");
			return;
		}
		if (d->n_conns >= MAX_CONNS) {
			close(fd);
			continue;
		}
		struct conn *c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->deadline = now + READ_TIMEOUT_MS;
		c->next = d->conns;
		d->conns = c;
		d->n_conns++;
	}
}

static void reap(struct daemon *d)
{
	for (struct conn **pc = &d->conns; *pc;) {
		struct conn *c = *pc;
		if (!c->dead) {
			pc = &c->next;
			continue;
		}
		*pc = c->next;
		close(c->fd);
		free(c->in);
		free(c->out);
		free(c);
		d->n_conns--;
	}
	for (struct lease **pl = &d->leases; *pl;) {
		struct lease *l = *pl;
		if (!l->dead) {
			pl = &l->next;
			continue;
		}
		*pl = l->next;
		lease_free(l);
	}
}

static int hex_decode(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(s);
	if (n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	*len = n / 2;
	return 0;
}

static struct lease *load_one(struct daemon *d, const char *path, struct cni_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int e = read_state_file(path, 1 << 20, &text, &len);
	if (e < 0) {
		err_errno(err, CNI_ERR_IO, e, "cannot read");
		return NULL;
	}
	_cleanup_(json_freep) struct cni_json *j = json_parse(text, len, err);
	if (!j)
		return NULL;
	const char *key, *cid, *net, *ifname, *netns, *mac, *smac, *ack;
	uint64_t dev, ino;
	int64_t bound;
	if (json_get_str(j, "key", JSON_REQ, &key, err) < 0 ||
	    req_ident(j, &cid, &net, &ifname, err) < 0 ||
	    json_get_str(j, "netns", JSON_REQ, &netns, err) < 0 ||
	    json_get_uint(j, "nsDev", JSON_REQ, UINT64_MAX, &dev, err) < 0 ||
	    json_get_uint(j, "nsIno", JSON_REQ, UINT64_MAX, &ino, err) < 0 ||
	    json_get_str(j, "mac", JSON_REQ, &mac, err) < 0 ||
	    json_get_str(j, "serverMac", JSON_REQ, &smac, err) < 0 ||
	    json_get_int(j, "bound", JSON_REQ, 0, INT64_MAX, &bound, err) < 0 ||
	    json_get_str(j, "ack", JSON_REQ, &ack, err) < 0)
		return NULL;
	struct lease *l = xcalloc(1, sizeof(*l));
	l->fd = -1;
	l->key = xstrdup(key);
	l->container_id = xstrdup(cid);
	l->network = xstrdup(net);
	l->ifname = xstrdup(ifname);
	l->netns = xstrdup(netns);
	l->ns_dev = (dev_t)dev;
	l->ns_ino = (ino_t)ino;
	l->bound_wall = bound;
	struct dhcp_msg m;
	_cleanup_free_ char *want = make_key(cid, net, ifname);
	if (!streq(want, key) || ino == 0 || parse_mac(mac, l->mac) < 0 ||
	    parse_mac(smac, l->server_mac) < 0 ||
	    hex_decode(ack, l->ack, sizeof(l->ack), &l->ack_len) < 0 ||
	    dhcp_msg_parse(l->ack, l->ack_len, &m) < 0 || m.type != DHCPACK || !m.yiaddr) {
		err_set(err, CNI_ERR_DECODE, "inconsistent lease record");
		lease_free(l);
		return NULL;
	}
	if (lease_parse_opts(l, j, err) < 0) {
		lease_free(l);
		return NULL;
	}
	l->addr = m.yiaddr;
	if (dhcp_msg_opt_u32(&m, DHCP_OPT_SERVER_ID, &l->server) < 0)
		l->server = 0;
	return l;
}

/* Resume every saved lease where its timers say it is now. */
static void load_state(struct daemon *d, int64_t now)
{
	DIR *dir = opendir(d->o.statedir);
	if (!dir) {
		if (errno != ENOENT)
			dlog("cannot read %s: %m", d->o.statedir);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", d->o.statedir, de->d_name);
		struct cni_err err = {0};
		struct lease *l = load_one(d, path, &err);
		if (!l) {
			dlog("%s: ignored: %s %s", path, err.msg, err.details);
			continue;
		}
		if (lease_find(d, l->key)) {
			lease_free(l);
			continue;
		}
		struct dhcp_msg m;
		dhcp_msg_parse(l->ack, l->ack_len, &m);
		int64_t elapsed = time(NULL) - l->bound_wall;
		lease_set_times(l, &m, now, elapsed < 0 ? 0 : elapsed);
		l->next = d->leases;
		d->leases = l;
		/* Probe the namespace now: a container that went away while we
		 * were down should not wait for its renewal time. */
		struct ns_op op = {.act = NS_PROBE, .fd = -1};
		int r = lease_ns(d, l, &op, &err);
		if (r == OPEN_GONE) {
			dlog("%s: container gone (%s %s), forgetting its lease", l->key, err.msg,
			     err.details);
			lease_drop(d, l, NULL);
			continue;
		}
		char a[INET_ADDRSTRLEN];
		if (now >= l->expire_at) {
			dlog("%s: lease on %s expired while stopped, asking for it again", l->key,
			     fmt_ip4(l->addr, a));
			lease_begin_or_drop(d, l, L_REBOOTING, now);
		} else {
			l->st = L_BOUND;
			dlog("%s: resumed lease on %s, renewal in %llds", l->key,
			     fmt_ip4(l->addr, a),
			     (long long)(l->t1_at > now ? (l->t1_at - now) / 1000 : 0));
		}
	}
	closedir(dir);
}

/* The listening socket: handed over by systemd (LISTEN_FDS), or bound at
 * the path, replacing a stale socket but never a live daemon's. */
static int open_listener(struct daemon *d)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (pid && fds && strtol(pid, NULL, 10) == getpid()) {
		long n = strtol(fds, NULL, 10);
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
		if (n != 1) {
			dlog("socket activation passed %ld sockets, expected 1", n);
			return -1;
		}
		d->lfd = 3;
		d->activated = true;
		fcntl(3, F_SETFD, FD_CLOEXEC);
		fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
		dlog("listening on the socket from systemd");
		return 0;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(d->sock_path) >= sizeof(sa.sun_path)) {
		dlog("socket path too long: %s", d->sock_path);
		return -1;
	}
	strcpy(sa.sun_path, d->sock_path);
	_cleanup_free_ char *dir = xstrdup(d->sock_path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir_p(dir, 0700) < 0) {
			dlog("cannot create %s: %m", dir);
			return -1;
		}
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return dlog("socket: %m"), -1;
	struct stat st;
	if (lstat(d->sock_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int r = connect(probe, (struct sockaddr *)&sa, sizeof(sa));
		close(probe);
		if (r == 0) {
			dlog("another daemon is listening on %s", d->sock_path);
			close(fd);
			return -1;
		}
		unlink(d->sock_path);
	}
	mode_t old = umask(0077);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 128) < 0) {
		dlog("cannot listen on %s: %m", d->sock_path);
		close(fd);
		return -1;
	}
	d->lfd = fd;
	dlog("listening on %s", d->sock_path);
	return 0;
}

static int write_pidfile(const char *path)
{
	if (path[0] != '/') {
		dlog("pid file %s: path not absolute", path);
		return -1;
	}
	char b[32];
	int n = snprintf(b, sizeof(b), "%d\n", (int)getpid());
	int e = write_file_atomic(path, b, (size_t)n);
	if (e < 0) {
		dlog("cannot write pid file %s: %s", path, strerror(-e));
		return -1;
	}
	chmod(path, 0644);
	return 0;
}

static void run(struct daemon *d)
{
	struct pollfd *pfd = NULL;
	void **owner = NULL;
	size_t cap = 0;
	while (!d->stop) {
		int64_t now = now_ms();
		for (struct lease *l = d->leases; l; l = l->next)
			if (!l->dead)
				lease_tick(d, l, now);
		for (struct conn *c = d->conns; c; c = c->next)
			if (!c->dead && !c->out && !c->wait && now >= c->deadline)
				conn_kill(c); /* never sent its request */
		reap(d);

		int64_t wake = now + 3600 * 1000;
		size_t n = 0, want = 2 + d->n_conns;
		for (struct lease *l = d->leases; l; l = l->next) {
			int64_t w = lease_wake(l);
			wake = w < wake ? w : wake;
			want++;
		}
		if (want > cap) {
			cap = want * 2;
			pfd = xrealloc(pfd, cap * sizeof(*pfd));
			owner = xrealloc(owner, cap * sizeof(*owner));
		}
		pfd[n] = (struct pollfd){d->sfd, POLLIN, 0};
		owner[n++] = NULL;
		pfd[n] = (struct pollfd){d->lfd, POLLIN, 0};
		owner[n++] = NULL;
		size_t first_lease = n;
		for (struct lease *l = d->leases; l; l = l->next)
			if (l->fd >= 0) {
				pfd[n] = (struct pollfd){l->fd, POLLIN, 0};
				owner[n++] = l;
			}
		size_t first_conn = n;
		for (struct conn *c = d->conns; c; c = c->next) {
			short ev = c->out ? POLLOUT : c->wait ? 0 : POLLIN;
			if (!c->out && !c->wait)
				wake = c->deadline < wake ? c->deadline : wake;
			pfd[n] = (struct pollfd){c->fd, ev, 0};
			owner[n++] = c;
		}
		int64_t t = wake - now;
		int r = poll(pfd, n, t < 0 ? 0 : t > 3600000 ? 3600000 : (int)t);
		if (r < 0 && errno != EINTR) {
			dlog("poll: %m");
			break;
		}
		now = now_ms();
		if (r <= 0)
			continue;
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			if (read(d->sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGHUP) {
				dlog("signal %u, stopping; leases are kept for the next start",
				     si.ssi_signo);
				d->stop = true;
			}
		}
		if (pfd[1].revents)
			conn_accept(d, now);
		for (size_t i = first_lease; i < first_conn; i++) {
			struct lease *l = owner[i];
			if (!pfd[i].revents || l->dead)
				continue;
			if (pfd[i].revents & POLLIN)
				lease_input(d, l, now);
			else if (pfd[i].revents & (POLLERR | POLLNVAL | POLLHUP)) {
				dlog("%s: socket on %s failed", l->key, l->ifname);
				lease_close_socket(l);
			}
		}
		for (size_t i = first_conn; i < n; i++) {
			struct conn *c = owner[i];
			if (pfd[i].revents && !c->dead)
				conn_io(d, c, pfd[i].revents, now);
		}
		reap(d);
	}
	free(pfd);
	free(owner);
}

static void shutdown_all(struct daemon *d)
{
	struct cni_err e = {0};
	err_set(&e, CNI_ERR_TRY_AGAIN, "the DHCP daemon is shutting down");
	for (struct lease *l = d->leases; l; l = l->next) {
		/* An acquisition that was not bound has nothing to keep. */
		if (lease_acquiring(l) && !l->dead)
			lease_drop(d, l, &e);
		else if (l->n_waiters)
			lease_reply_waiters(l, &e);
	}
	/* Best effort: hand the replies to clients that are still there. */
	for (struct conn *c = d->conns; c; c = c->next)
		if (c->out && !c->dead)
			send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			     MSG_NOSIGNAL | MSG_DONTWAIT);
	for (struct conn *c = d->conns; c; c = c->next)
		c->dead = true;
	for (struct lease *l = d->leases; l; l = l->next)
		l->dead = true;
	reap(d);
}

int dhcp_daemon_main(int argc, char **argv)
{
	struct daemon d = {
		.o = {.hostprefix = "",
		      .socketpath = DHCP_DEFAULT_SOCKET,
		      .statedir = DHCP_DEFAULT_STATEDIR,
		      .timeout = 10000,
		      .resendmax = 62000,
		      .resendtimeout = 208000},
		.lfd = -1,
		.sfd = -1,
	};
	int r = parse_flags(argc, argv, &d.o);
	if (r)
		return r > 0 ? 0 : 2;
	if (strempty(d.o.socketpath))
		d.o.socketpath = DHCP_DEFAULT_SOCKET;
	if (d.o.resendmax < 1000)
		d.o.resendmax = 1000;
	if (d.o.timeout < 1000)
		d.o.timeout = 1000;
	d.sock_path = xasprintf("%s%s", d.o.hostprefix, d.o.socketpath);
	int rc = 1;

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d.sfd < 0) {
		dlog("signalfd: %m");
		goto out;
	}
	if (mkdir_p(d.o.statedir, 0700) < 0) {
		dlog("cannot create state directory %s: %m", d.o.statedir);
		goto out;
	}
	if (open_listener(&d) < 0)
		goto out;
	if (d.o.pidfile && write_pidfile(d.o.pidfile) < 0)
		goto out;
	load_state(&d, now_ms());
	reap(&d);
	run(&d);
	rc = 0;
out:
	shutdown_all(&d);
	if (d.lfd >= 0) {
		close(d.lfd);
		if (!d.activated)
			unlink(d.sock_path);
	}
	if (d.o.pidfile && rc == 0)
		unlink(d.o.pidfile);
	if (d.sfd >= 0)
		close(d.sfd);
	free(d.sock_path);
	return rc;
}
