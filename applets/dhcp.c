/* dhcp: addresses from a DHCP server on the container's network, through
 * the lease daemon (`cni dhcp daemon`, src/dhcp-daemon.c), since a lease
 * must be renewed for as long as the container lives.
 *
 * ADD asks the daemon to acquire a lease on CNI_IFNAME inside CNI_NETNS and
 * returns it; DEL has it sent back (DHCPRELEASE); CHECK asks whether the
 * lease is still bound and that its address is the one in prevResult;
 * STATUS fails with code 50 when the daemon cannot be reached; GC releases
 * the network's leases that are not valid attachments.
 *
 * Differences from the reference, and why:
 *  - The result carries the DNS servers and domain from the lease; the
 *    reference drops them, leaving the runtime without a resolver.
 *  - The default parameter request list also asks for DNS, domain name and
 *    both static route options, which the result reports.
 *  - CHECK does not acquire a lease when there is none (the reference's
 *    CHECK runs ADD); it fails instead.
 *  - An unreachable daemon is code 11 (try again later) for ADD, DEL,
 *    CHECK and GC, 50 for STATUS; the reference has STATUS unimplemented
 *    and every other failure as 999.
 *  - provide/request options are validated at parse time; codes the
 *    client itself manages (50, 52-55) and 0/255 are refused.
 *  - The daemon speaks line-delimited JSON, not Go's net/rpc, so it does
 *    not interoperate with the reference's plugin binary.
 *  - The wait for the daemon is bounded (DH_ALLOCATE_TIMEOUT_SEC for ADD,
 *    DH_TIMEOUT_SEC otherwise), then code 11 (50 for STATUS); the
 *    reference's net/rpc call waits for ever on a wedged daemon. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

#include "applet.h"
#include "caps.h"
#include "dhcp-daemon.h"
#include "dhcp.h"
#include "plugin.h"

extern const struct cni_applet dhcp_applet;

/* How long the plugin waits for the daemon, from connect() to the end of
 * its reply. The daemon answers allocate once the lease is bound or once
 * it has given up after its -resendtimeout (3m28s by default): the bound
 * for ADD leaves half a minute beyond that, and stays under the usual
 * runtime limit on a plugin (cni exec's CNI_EXEC_TIMEOUT default, 300 s).
 * Every other operation is answered at once. CNI_TEST_DHCP_TIMEOUT
 * (seconds) overrides both, for the tests. */
#define DH_ALLOCATE_TIMEOUT_SEC 240
#define DH_TIMEOUT_SEC 30
#define DH_MAX_REPLY (4u << 20)

/* Asked for unless a request entry sets skipDefault. */
static const uint8_t dh_default_request[] = {
	DHCP_OPT_SUBNET_MASK,	 DHCP_OPT_ROUTER,	 DHCP_OPT_DNS,
	DHCP_OPT_DOMAIN_NAME,	 DHCP_OPT_STATIC_ROUTES, DHCP_OPT_CLASSLESS_ROUTES,
};

struct dh_conf {
	const char *socket;
	int64_t priority;
	uint8_t request[254];
	size_t n_request;
	struct cni_json *provide; /* [{code, value}], owned */
};

static void dh_free(void *p)
{
	struct dh_conf *c = p;
	if (!c)
		return;
	json_free(c->provide);
	free(c);
}

static void dh_freep(struct dh_conf **c)
{
	dh_free(*c);
}

/* An option given as a dhcp-options(5) name, or its code as a string or a
 * number. */
static int dh_option(const struct cni_json *obj, const char *key, bool required, int *code,
		     struct cni_err *err)
{
	const struct cni_json *v = json_get(obj, key);
	*code = -1;
	if (!v) {
		if (required)
			return json_err_key(err, obj, key, "missing DHCP option");
		return 0;
	}
	if (json_is(v, JSON_STRING)) {
		if (!*json_str(v))
			return required ? json_err(err, v, "empty DHCP option") : 0;
		*code = dhcp_option_code(json_str(v));
	} else if (json_is(v, JSON_NUMBER)) {
		int64_t n;
		if (json_as_int(v, 1, 254, &n, err) < 0)
			return -1;
		*code = (int)n;
	}
	if (*code < 0)
		return json_err(err, v, "unknown DHCP option (a dhcp-options(5) name or 1-254)");
	return 1;
}

static void dh_add_request(struct dh_conf *c, uint8_t code)
{
	for (size_t i = 0; i < c->n_request; i++)
		if (c->request[i] == code)
			return;
	if (c->n_request < sizeof(c->request))
		c->request[c->n_request++] = code;
}

static int dh_parse(struct cni_req *req, struct cni_err *err)
{
	const struct cni_json *ipam = req->ipam, *list = NULL;
	_cleanup_(dh_freep) struct dh_conf *c = xcalloc(1, sizeof(*c));
	c->socket = DHCP_DEFAULT_SOCKET;
	c->provide = json_new(JSON_ARRAY);
	if (json_get_str(ipam, "daemonSocketPath", 0, &c->socket, err) < 0 ||
	    json_get_int(ipam, "priority", 0, 0, UINT32_MAX, &c->priority, err) < 0)
		return -1;
	if (!*c->socket)
		c->socket = DHCP_DEFAULT_SOCKET;

	/* skipDefault in any entry drops the defaults, as in the reference. */
	bool any_skip = false;
	if (json_get_arr(ipam, "request", 0, &list, err) < 0)
		return -1;
	for (size_t i = 0; i < json_len(list); i++) {
		const struct cni_json *o = json_at(list, i);
		bool skip = false;
		int code;
		if (!json_is(o, JSON_OBJECT))
			return json_err(err, o, "expected an object");
		if (json_get_bool(o, "skipDefault", 0, &skip, err) < 0 ||
		    dh_option(o, "option", false, &code, err) < 0)
			return -1;
		any_skip |= skip;
		if (code > 0)
			dh_add_request(c, (uint8_t)code);
	}
	if (!any_skip)
		for (size_t i = 0; i < ARRAY_SIZE(dh_default_request); i++)
			dh_add_request(c, dh_default_request[i]);

	if (json_get_arr(ipam, "provide", 0, &list, err) < 0)
		return -1;
	for (size_t i = 0; i < json_len(list); i++) {
		const struct cni_json *o = json_at(list, i);
		const char *value = NULL, *from = NULL;
		int code;
		if (!json_is(o, JSON_OBJECT))
			return json_err(err, o, "expected an object");
		if (dh_option(o, "option", true, &code, err) < 0 ||
		    json_get_str(o, "value", 0, &value, err) < 0 ||
		    json_get_str(o, "fromArg", 0, &from, err) < 0)
			return -1;
		if (code == DHCP_OPT_REQUESTED_IP ||
		    (code >= DHCP_OPT_OVERLOAD && code <= DHCP_OPT_PARAM_LIST))
			return json_err_key(err, o, "option", "option %d is managed by the client",
					    code);
		/* From CNI_ARGS when the argument is there, else the value. */
		const char *arg = from ? args_get(&req->args, from) : NULL;
		const char *v = arg ? arg : value;
		if (strempty(v))
			continue;
		if (strlen(v) > 255)
			return json_err(err, o, "value for option %d longer than 255 bytes", code);
		struct cni_json *p = json_push(c->provide, json_new(JSON_OBJECT));
		json_set(p, "code", json_new_int(code));
		json_set(p, "value", json_new_str(v));
	}
	req->priv = TAKE_PTR(c);
	return 0;
}

static unsigned dh_timeout(const char *op)
{
	const char *s = getenv("CNI_TEST_DHCP_TIMEOUT");
	if (!strempty(s) && *s >= '0' && *s <= '9') {
		char *end;
		errno = 0;
		unsigned long v = strtoul(s, &end, 10);
		if (!errno && !*end && v > 0 && v <= 24 * 3600)
			return (unsigned)v;
	}
	return streq(op, "allocate") ? DH_ALLOCATE_TIMEOUT_SEC : DH_TIMEOUT_SEC;
}

/* Wait for events on fd until deadline (monotonic ms): 1 when ready (or
 * the peer hung up: the next call says how), 0 when the time is up,
 * -errno. */
static int dh_wait(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - monotonic_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* The request line out, the whole reply (up to EOF) in, before deadline.
 * 0; -ETIMEDOUT when the time is up; another -errno. */
static int dh_exchange(int fd, const char *line, int64_t deadline, char **reply, size_t *rlen)
{
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t w = send(fd, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w >= 0) {
			off += (size_t)w;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		int r = dh_wait(fd, POLLOUT, deadline);
		if (r <= 0)
			return r ? r : -ETIMEDOUT;
	}
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n > DH_MAX_REPLY) {
			free(buf);
			return -E2BIG;
		}
		if (n + 1 >= cap) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t k = recv(fd, buf + n, cap - n - 1, MSG_DONTWAIT);
		if (k > 0) {
			n += (size_t)k;
			continue;
		}
		if (k == 0)
			break;
		int r = errno == EAGAIN || errno == EINTR ? dh_wait(fd, POLLIN, deadline) : -errno;
		if (r <= 0) {
			free(buf);
			return r ? r : -ETIMEDOUT;
		}
	}
	buf[n] = 0;
	*reply = buf;
	*rlen = n;
	return 0;
}

/* One request, one reply, over the daemon's socket, within dh_timeout().
 * Returns the reply's "result" (or an empty object) owned, or NULL with
 * err set. */
static struct cni_json *dh_call(struct cni_req *req, struct cni_json *msg, struct cni_err *err)
{
	const struct dh_conf *c = req->priv;
	int down = req->cmd == CNI_CMD_STATUS ? CNI_ERR_NOT_AVAILABLE : CNI_ERR_TRY_AGAIN;
	unsigned timeout = dh_timeout(json_str(json_get(msg, "op")));
	int64_t deadline = monotonic_ms() + (int64_t)timeout * 1000;
	_cleanup_free_ char *dump = json_dump(msg, false);
	json_free(msg);
	_cleanup_free_ char *line = xasprintf("%s\n", dump);

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(c->socket) >= sizeof(sa.sun_path)) {
		err_set(err, CNI_ERR_INVALID_CONFIG, "ipam.daemonSocketPath: path too long");
		return NULL;
	}
	strcpy(sa.sun_path, c->socket);
	/* A blocking connect() waits while the daemon's listen queue is
	 * full (a daemon that stopped accepting): SO_SNDTIMEO bounds it,
	 * failing with EAGAIN. Everything after it polls up to deadline. */
	struct timeval tv = {.tv_sec = (time_t)timeout};
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int e = 0;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		e = errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (e < 0 && e != -ETIMEDOUT) {
		err_errno(err, down, e, "error dialing DHCP daemon at %s", c->socket);
		err_append(err, "is `cni dhcp daemon` running?");
		return NULL;
	}
	_cleanup_free_ char *reply = NULL;
	size_t rlen = 0;
	if (!e)
		e = dh_exchange(fd, line, deadline, &reply, &rlen);
	if (e == -ETIMEDOUT) {
		err_set(err, down, "no reply from the DHCP daemon at %s", c->socket);
		err_append(err, "gave up after %us; is `cni dhcp daemon` stuck?", timeout);
		return NULL;
	}
	if (e < 0) {
		err_errno(err, down, e, "error talking to the DHCP daemon at %s", c->socket);
		return NULL;
	}
	if (!rlen) {
		err_set(err, down, "the DHCP daemon closed the connection without a reply");
		return NULL;
	}
	struct cni_err perr = {0};
	_cleanup_(json_freep) struct cni_json *j = json_parse(reply, rlen, &perr);
	bool ok = false;
	if (!j || json_get_bool(j, "ok", JSON_REQ, &ok, &perr) < 0) {
		err_set(err, CNI_ERR_INTERNAL, "malformed reply from the DHCP daemon");
		err_append(err, "%s", perr.msg);
		return NULL;
	}
	if (!ok) {
		int64_t code = CNI_ERR_INTERNAL;
		const char *m = NULL, *d = NULL;
		json_get_int(j, "code", 0, 1, 9999, &code, &perr);
		json_get_str(j, "msg", 0, &m, &perr);
		json_get_str(j, "details", 0, &d, &perr);
		err_set(err, (int)code, "%s", m ? m : "the DHCP daemon failed");
		if (d)
			snprintf(err->details, sizeof(err->details), "%s", d);
		return NULL;
	}
	struct cni_json *r = json_take(j, "result");
	return r ? r : json_new(JSON_OBJECT);
}

static struct cni_json *dh_msg(struct cni_req *req, const char *op)
{
	struct cni_json *m = json_new(JSON_OBJECT);
	json_set(m, "op", json_new_str(op));
	if (streq(op, "status") || streq(op, "gc"))
		return m;
	json_set(m, "containerID", json_new_str(req->container_id));
	json_set(m, "network", json_new_str(req->name ? req->name : ""));
	json_set(m, "ifname", json_new_str(req->ifname));
	return m;
}

/* Replace res's content by the daemon's result, keeping res's version. */
static int dh_take_result(struct cni_json *j, struct cni_result *res, struct cni_err *err)
{
	struct cni_result *got = result_decode(j, "1.1.0", err);
	json_free(j);
	if (!got)
		return -1;
	struct cni_result tmp = *res;
	*res = *got;
	*got = tmp;
	char *v = res->cni_version;
	res->cni_version = got->cni_version;
	got->cni_version = v;
	result_free(got);
	return 0;
}

static int dh_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct dh_conf *c = req->priv;
	struct cni_json *m = dh_msg(req, "allocate");
	/* The daemon may run elsewhere: make the path absolute here. */
	_cleanup_free_ char *cwd = req->netns_path[0] == '/' ? NULL : getcwd(NULL, 0);
	_cleanup_free_ char *ns = cwd ? xasprintf("%s/%s", cwd, req->netns_path)
				      : xstrdup(req->netns_path);
	json_set(m, "netns", json_new_str(ns));
	struct cni_json *rq = json_set(m, "request", json_new(JSON_ARRAY));
	for (size_t i = 0; i < c->n_request; i++)
		json_push(rq, json_new_uint(c->request[i]));
	json_set(m, "provide", json_clone(c->provide));
	json_set(m, "priority", json_new_int(c->priority));
	struct cni_json *r = dh_call(req, m, err);
	return r ? dh_take_result(r, res, err) : -1;
}

static int dh_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_json *r = dh_call(req, dh_msg(req, "release"), err);
	json_free(r);
	return r ? 0 : -1;
}

static int dh_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_json *r = dh_call(req, dh_msg(req, "check"), err);
	if (!r)
		return -1;
	_cleanup_(result_freep) struct cni_result *lease = result_decode(r, "1.1.0", err);
	json_free(r);
	if (!lease)
		return -1;
	if (!req->prev)
		return 0;
	for (size_t i = 0; i < lease->n_ips; i++) {
		const struct cni_cidr *a = &lease->ips[i].address;
		bool found = false;
		for (size_t k = 0; k < req->prev->n_ips && !found; k++)
			found = ip_eq(&req->prev->ips[k].address.ip, &a->ip) &&
				req->prev->ips[k].address.prefix == a->prefix;
		if (!found) {
			char b[CIDR_STRLEN];
			return err_set(err, CNI_ERR_INTERNAL, "leased %s is not in prevResult",
				       ip_cidr_format(a, b));
		}
	}
	return 0;
}

static int dh_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_json *r = dh_call(req, dh_msg(req, "status"), err);
	json_free(r);
	return r ? 0 : -1;
}

static int dh_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct cni_json *m = dh_msg(req, "gc");
	json_set(m, "network", json_new_str(req->name));
	const struct cni_json *va = json_get(req->conf, "cni.dev/valid-attachments");
	json_set(m, "valid", va ? json_clone(va) : json_new(JSON_ARRAY));
	struct cni_json *r = dh_call(req, m, err);
	json_free(r);
	return r ? 0 : -1;
}

static int dh_main(int argc, char **argv)
{
	if (argc > 1 && streq(argv[1], "daemon")) {
		caps_drop_for(&dhcp_applet);
		return dhcp_daemon_main(argc - 1, argv + 1);
	}
	return plugin_main(&dhcp_applet, argc, argv);
}

const struct cni_applet dhcp_applet = {
	.name = "dhcp",
	.summary = "IPAM: addresses from a DHCP server, via the lease daemon",
	.usage = "Plugin: {\"ipam\": {\"type\": \"dhcp\", \"daemonSocketPath\": PATH,\n"
		 "          \"request\": [{\"option\": NAME, \"skipDefault\": BOOL}],\n"
		 "          \"provide\": [{\"option\": NAME, \"value\": STR, \"fromArg\": ARG}],\n"
		 "          \"priority\": N}}\n"
		 "Daemon: cni dhcp daemon [-socketpath PATH] [-statedir DIR] [-hostprefix DIR]\n"
		 "          [-pidfile PATH] [-broadcast] [-timeout D] [-resendmax D]\n"
		 "          [-resendtimeout D]   (cni dhcp daemon -h for details)\n",
	.flags = APPLET_IPAM,
	.main = dh_main,
	.parse = dh_parse,
	.free = dh_free,
	.add = dh_add,
	.del = dh_del,
	.check = dh_check,
	.status = dh_status,
	.gc = dh_gc,
};
