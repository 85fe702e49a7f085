/* tuning: change network sysctls and attributes of CNI_IFNAME inside the
 * container namespace (a chained plugin; it creates nothing).
 *
 * ADD saves what it is about to change in <dataDir>/<id>_<ifname>.json
 * (the reference's file, same fields), then applies, in order: the rename
 * (ifName), the sysctls, mac, promisc, mtu, allmulti, txQLen. Each change
 * pushes its undo, so a failed ADD leaves the namespace as it found it.
 * The result is prevResult with the interface's mac (and name, mtu)
 * updated. DEL puts the saved values back and removes the file; it never
 * fails because of a value it cannot restore (as the reference), it only
 * logs. CHECK compares every configured value with the kernel's.
 *
 * Differences from the reference:
 *  - all validation happens before anything is touched, with code 7
 *    naming the field: a sysctl outside net.*, one containing '/' or an
 *    empty component ("..") — the reference checks these one by one while
 *    applying, after earlier sysctls were already written — a malformed,
 *    multicast or zero MAC, a negative mtu or txQLen;
 *  - sysctls are applied in configuration order (the reference: random)
 *    and are restored on DEL too, each only if it still holds the value
 *    ADD wrote, so a later change by someone else is kept;
 *  - "ifName" (rename the interface, back again on DEL) and
 *    runtimeConfig.mtu are ours;
 *  - allowlist patterns are POSIX extended regular expressions (Go's RE2
 *    in the reference; the usual ^net\.ipv4\..*$ forms mean the same);
 *  - DEL removes the backup file also when the interface or namespace is
 *    gone (the reference leaves it behind);
 *  - a key repeated in "sysctl" is refused on ADD and CHECK, as by the
 *    reference, but with code 7 (the reference: 999). Like the reference,
 *    only the configuration's own text counts: a runtime that decoded and
 *    re-encoded it (libcni, our own chain) has already kept the last. */
#include <errno.h>
#include <net/if.h>
#include <regex.h>
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "sysctl.h"

#define TN_DATA_DIR "/run/cni/tuning"
#define TN_ALLOWLIST "/etc/cni/tuning/allowlist.conf"
#define TN_VALUE_MAX 4096
#define TN_PATH_MAX 256

struct tn_sysctl {
	const char *key;	     /* as configured (borrowed) */
	const struct cni_json *node; /* its value, for error paths */
	const char *value;	     /* borrowed */
	char path[TN_PATH_MAX];	     /* slashed, IFNAME replaced */
};

struct tn_conf {
	struct tn_sysctl *sysctls;
	size_t n_sysctls, cap_sysctls;
	bool has_mac;
	uint8_t mac[6];
	bool promisc;	    /* only true acts, as the reference */
	unsigned mtu;	    /* 0: unset */
	int allmulti;	    /* -1: unset */
	int64_t txqlen;	    /* -1: unset */
	const char *rename; /* "ifName": new name, or NULL */
	const char *ifname; /* the name the link has after ADD */
	const char *data_dir;
	char *backup;	   /* <dataDir>/<id>_<CNI_IFNAME>.json */
	struct cni_nl *nl; /* container socket, kept for the undo steps */
};

static void tn_free(void *priv)
{
	struct tn_conf *c = priv;
	if (!c)
		return;
	free(c->sysctls);
	free(c->backup);
	netlink_close(c->nl);
	free(c);
}

static void tn_freep(struct tn_conf **c)
{
	tn_free(*c);
}

/* Add or replace (args.cni.sysctl overrides the top-level entry) one
 * sysctl; the path is built once the final interface name is known. */
static int tn_add_sysctl(struct tn_conf *c, const char *key, const struct cni_json *v,
			 struct cni_err *err)
{
	if (!json_is(v, JSON_STRING))
		return json_err(err, v, "expected a string value");
	for (size_t i = 0; i < c->n_sysctls; i++)
		if (streq(c->sysctls[i].key, key)) {
			c->sysctls[i].node = v;
			c->sysctls[i].value = json_str(v);
			return 0;
		}
	xgrow(&c->sysctls, &c->cap_sysctls, c->n_sysctls, sizeof(*c->sysctls));
	c->sysctls[c->n_sysctls++] =
	    (struct tn_sysctl){.key = key, .node = v, .value = json_str(v)};
	return 0;
}

static int tn_get_sysctls(struct tn_conf *c, const struct cni_json *obj, struct cni_err *err)
{
	const struct cni_json *s = NULL;
	if (json_get_obj(obj, "sysctl", 0, &s, err) < 0)
		return -1;
	for (size_t i = 0; s && i < s->obj.n; i++)
		if (tn_add_sysctl(c, s->obj.k[i], s->obj.v[i], err) < 0)
			return -1;
	return 0;
}

/* The sysctl file for key: dots become slashes, then the first "IFNAME"
 * becomes the interface name (which may itself hold dots, as eth0.100),
 * as in the reference. Only keys below net, the container namespace's
 * part of /proc/sys, with no '/' and no empty component. */
static int tn_sysctl_path(struct tn_sysctl *s, const char *ifname, struct cni_err *err)
{
	size_t kl = strlen(s->key);
	if (strchr(s->key, '/'))
		return json_err(err, s->node, "'/' is not allowed in a sysctl key (use dots)");
	if (!kl || s->key[0] == '.' || s->key[kl - 1] == '.' || strstr(s->key, ".."))
		return json_err(err, s->node, "empty component in sysctl key");
	char dotted[TN_PATH_MAX];
	if (strlcpy_(dotted, s->key, sizeof(dotted)) >= sizeof(dotted))
		return json_err(err, s->node, "sysctl key too long");
	for (char *p = dotted; *p; p++)
		if (*p == '.')
			*p = '/';
	const char *at = strstr(dotted, "IFNAME");
	int n = at ? snprintf(s->path, sizeof(s->path), "%.*s%s%s", (int)(at - dotted), dotted,
			      ifname, at + 6)
		   : snprintf(s->path, sizeof(s->path), "%s", dotted);
	if (n < 0 || (size_t)n >= sizeof(s->path))
		return json_err(err, s->node, "sysctl key too long");
	char buf[TN_PATH_MAX + 16];
	struct cni_err ignore = {0};
	if (strncmp(s->path, "net/", 4) || sysctl_path(s->path, buf, sizeof(buf), &ignore) < 0)
		return json_err(
		    err, s->node,
		    "not a net.* sysctl (only the container's network sysctls may be set)");
	return 0;
}

/* /etc/cni/tuning/allowlist.conf: one pattern per line; when the file
 * exists, every sysctl key (as configured) must match one of them. */
static int tn_check_allowlist(const struct tn_conf *c, struct cni_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = read_file(TN_ALLOWLIST, 1 << 20, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "failed to read %s", TN_ALLOWLIST);
	regex_t *re = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (char *line = text, *next; line && !rc; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
		size_t l = strlen(line);
		while (l && (line[l - 1] == ' ' || line[l - 1] == '\t' || line[l - 1] == '\r'))
			line[--l] = 0;
		if (!l)
			continue;
		xgrow(&re, &cap, n, sizeof(*re));
		if (regcomp(&re[n], line, REG_EXTENDED | REG_NOSUB) != 0)
			rc = err_set(err, CNI_ERR_INVALID_CONFIG, "%s: bad pattern \"%.64s\"",
				     TN_ALLOWLIST, line);
		else
			n++;
	}
	for (size_t i = 0; i < c->n_sysctls && !rc; i++) {
		bool ok = false;
		for (size_t k = 0; k < n && !ok; k++)
			ok = regexec(&re[k], c->sysctls[i].key, 0, NULL, 0) == 0;
		if (!ok)
			rc = json_err(err, c->sysctls[i].node, "sysctl %s is not allowed by %s",
				      c->sysctls[i].key, TN_ALLOWLIST);
	}
	for (size_t k = 0; k < n; k++)
		regfree(&re[k]);
	free(re);
	return rc;
}

static int tn_get_mac(struct tn_conf *c, const struct cni_json *obj, const char *key,
		      struct cni_err *err)
{
	const char *s = NULL;
	int r = json_get_str(obj, key, 0, &s, err);
	if (r <= 0 || strempty(s))
		return r < 0 ? -1 : 0;
	if (link_parse_mac(s, c->mac) < 0)
		return json_err_key(err, obj, key, "malformed MAC address \"%.32s\"", s);
	c->has_mac = true;
	return 0;
}

/* The interface settings of one object (the config, or args.cni). */
static int tn_get_attrs(struct tn_conf *c, const struct cni_json *obj, struct cni_err *err)
{
	int64_t v;
	int r;
	if (tn_get_mac(c, obj, "mac", err) < 0 ||
	    json_get_bool(obj, "promisc", 0, &c->promisc, err) < 0)
		return -1;
	if ((r = json_get_int(obj, "mtu", 0, 0, INT32_MAX, &v, err)) < 0)
		return -1;
	if (r)
		c->mtu = (unsigned)v;
	bool b;
	if ((r = json_get_bool(obj, "allmulti", 0, &b, err)) < 0)
		return -1;
	if (r)
		c->allmulti = b;
	if ((r = json_get_int(obj, "txQLen", 0, 0, INT32_MAX, &v, err)) < 0)
		return -1;
	if (r)
		c->txqlen = v;
	return 0;
}

static int tn_parse(struct cni_req *req, struct cni_err *err)
{
	const struct cni_json *conf = req->conf;
	_cleanup_(tn_freep) struct tn_conf *c = xcalloc(1, sizeof(*c));
	c->allmulti = -1;
	c->txqlen = -1;
	c->data_dir = TN_DATA_DIR;

	if (json_get_str(conf, "dataDir", 0, &c->data_dir, err) < 0)
		return -1;
	if (strempty(c->data_dir))
		c->data_dir = TN_DATA_DIR;
	if (req->container_id && req->ifname)
		c->backup = xasprintf("%s/%s_%s.json", c->data_dir, req->container_id, req->ifname);
	/* DEL restores from the backup alone: a value ADD would have refused
	 * must not keep DEL from cleaning up. */
	if (req->cmd == CNI_CMD_DEL) {
		req->priv = TAKE_PTR(c);
		return 0;
	}
	if (tn_get_sysctls(c, conf, err) < 0 || tn_get_attrs(c, conf, err) < 0)
		return -1;
	/* The reference refuses them rather than let one value win. */
	if (json_has_duplicate_keys(json_get(conf, "sysctl")))
		return json_err(err, json_get(conf, "sysctl"),
				"duplicated sysctl keys are not allowed");

	/* The MAC: CNI_ARGS, then the "mac" capability, then args.cni, each
	 * overriding the one before, in the reference's order. */
	if (!strempty(req->args_raw)) {
		static const char *const known[] = {"MAC", NULL};
		if (args_check_known(&req->args, known, err) < 0)
			return -1;
		const char *m = args_get(&req->args, "MAC");
		if (!strempty(m)) {
			if (link_parse_mac(m, c->mac) < 0)
				return err_set(err, CNI_ERR_INVALID_CONFIG,
					       "CNI_ARGS: MAC: malformed MAC address \"%.32s\"", m);
			c->has_mac = true;
		}
	}
	if (req->rt) {
		int64_t v;
		int r;
		if (tn_get_mac(c, req->rt, "mac", err) < 0 ||
		    (r = json_get_int(req->rt, "mtu", 0, 0, INT32_MAX, &v, err)) < 0)
			return -1;
		if (r && v)
			c->mtu = (unsigned)v;
	}
	const struct cni_json *args = NULL, *cni = NULL;
	if (json_get_obj(conf, "args", 0, &args, err) < 0 ||
	    json_get_obj(args, "cni", 0, &cni, err) < 0)
		return -1;
	if (cni && (tn_get_sysctls(c, cni, err) < 0 || tn_get_attrs(c, cni, err) < 0))
		return -1;
	if (c->has_mac && ((c->mac[0] & 1) || !memcmp(c->mac, "\0\0\0\0\0\0", 6)))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "mac: not a unicast address (multicast bit set, or all zero)");

	if (json_get_str(conf, "ifName", 0, &c->rename, err) < 0)
		return -1;
	if (!strempty(c->rename)) {
		if (env_check_ifname(c->rename, "ifName", err) < 0) {
			err->code = CNI_ERR_INVALID_CONFIG;
			return -1;
		}
	} else {
		c->rename = NULL;
	}
	c->ifname = c->rename ? c->rename : req->ifname;
	/* GC and STATUS have no CNI_IFNAME: the keys are still checked, with
	 * a stand-in name (an empty one would be an empty component). */
	for (size_t i = 0; i < c->n_sysctls; i++)
		if (tn_sysctl_path(&c->sysctls[i], c->ifname ? c->ifname : "IFNAME", err) < 0)
			return -1;
	if (req->cmd == CNI_CMD_ADD && tn_check_allowlist(c, err) < 0)
		return -1;
	req->priv = TAKE_PTR(c);
	return 0;
}

/* What ADD changed, undone in reverse when a later step fails. */
enum tn_what {
	TN_U_FILE,
	TN_U_NAME,
	TN_U_SYSCTL,
	TN_U_MAC,
	TN_U_PROMISC,
	TN_U_MTU,
	TN_U_ALLMULTI,
	TN_U_TXQLEN
};

struct tn_undo {
	enum tn_what what;
	int ifindex;
	unsigned num;
	bool up;
	uint8_t mac[6];
	char name[LINK_NAME_MAX];
	char *path, *value;
};

static void tn_undo_free(void *arg)
{
	struct tn_undo *u = arg;
	free(u->path);
	free(u->value);
	free(u);
}

/* Rename with the link down: the kernel refuses to rename a running
 * interface (EBUSY). Its up state is put back. */
static int tn_rename(struct cni_nl *nl, int ifindex, const char *name, bool up, struct cni_err *err)
{
	if (up && link_set_down(nl, ifindex, err) < 0)
		return -1;
	if (link_rename(nl, ifindex, name, err) < 0) {
		if (up)
			link_set_up(nl, ifindex, NULL);
		return -1;
	}
	if (up && link_set_up(nl, ifindex, err) < 0)
		return -1;
	return 0;
}

static void tn_undo(struct cni_req *req, void *arg)
{
	struct tn_conf *c = req->priv;
	struct tn_undo *u = arg;
	struct cni_err e = {0};
	switch (u->what) {
	case TN_U_FILE:
		unlink(u->path);
		break;
	case TN_U_NAME:
		tn_rename(c->nl, u->ifindex, u->name, u->up, &e);
		break;
	case TN_U_SYSCTL:
		sysctl_set_in(req->ns, u->path, u->value, &e);
		break;
	case TN_U_MAC:
		link_set_mac(c->nl, u->ifindex, u->mac, &e);
		break;
	case TN_U_PROMISC:
		link_set_promisc(c->nl, u->ifindex, u->up, &e);
		break;
	case TN_U_MTU:
		link_set_mtu(c->nl, u->ifindex, u->num, &e);
		break;
	case TN_U_ALLMULTI:
		link_set_allmulti(c->nl, u->ifindex, u->up, &e);
		break;
	case TN_U_TXQLEN:
		link_set_txqlen(c->nl, u->ifindex, u->num, &e);
		break;
	}
	if (err_isset(&e))
		fprintf(stderr, "tuning: undo: %s: %s\n", e.msg, e.details);
}

static struct tn_undo *tn_push(struct cni_req *req, enum tn_what what, int ifindex)
{
	struct tn_undo *u = xcalloc(1, sizeof(*u));
	u->what = what;
	u->ifindex = ifindex;
	req_push_undo(req, tn_undo, u, tn_undo_free);
	return u;
}

static bool tn_link_needed(const struct tn_conf *c)
{
	return c->has_mac || c->promisc || c->mtu || c->allmulti >= 0 || c->txqlen >= 0 ||
	       c->rename;
}

/* The backup: the reference's fields for the link attributes, plus ours
 * for the rename and the sysctls ({"path": {"old": .., "new": ..}}). */
static struct cni_json *tn_backup_new(const struct tn_conf *c, const struct cni_link *l,
				      char (*old)[TN_VALUE_MAX])
{
	struct cni_json *o = json_new(JSON_OBJECT);
	char mac[LINK_MAC_STRLEN];
	if (c->has_mac)
		json_set(o, "mac", json_new_str(link_format_mac(l->mac, 6, mac)));
	if (c->promisc)
		json_set(o, "promisc", json_new_bool(l->flags & IFF_PROMISC));
	if (c->mtu)
		json_set(o, "mtu", json_new_uint(l->mtu));
	if (c->allmulti >= 0)
		json_set(o, "allmulti", json_new_bool(l->flags & IFF_ALLMULTI));
	if (c->txqlen >= 0)
		json_set(o, "txQLen", json_new_uint(l->txqlen));
	if (c->rename)
		json_set(o, "ifName", json_new_str(c->rename));
	if (c->n_sysctls) {
		struct cni_json *s = json_set(o, "sysctl", json_new(JSON_OBJECT));
		for (size_t i = 0; i < c->n_sysctls; i++) {
			struct cni_json *e = json_set(s, c->sysctls[i].path, json_new(JSON_OBJECT));
			json_set(e, "old", json_new_str(old[i]));
			json_set(e, "new", json_new_str(c->sysctls[i].value));
		}
	}
	return o;
}

static int tn_write_backup(struct cni_req *req, struct tn_conf *c, const struct cni_link *l,
			   char (*old)[TN_VALUE_MAX], struct cni_err *err)
{
	int r = mkdir_p(c->data_dir, 0700);
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "failed to create backup directory %s",
				 c->data_dir);
	struct cni_json *o = tn_backup_new(c, l, old);
	_cleanup_free_ char *text = json_dump(o, true);
	json_free(o);
	r = write_file_atomic(c->backup, text, strlen(text));
	if (r < 0)
		return err_errno(err, CNI_ERR_IO, r, "failed to save %s", c->backup);
	tn_push(req, TN_U_FILE, 0)->path = xstrdup(c->backup);
	return 0;
}

static void tn_update_result(const struct tn_conf *c, const char *ifname, struct cni_result *res)
{
	char mac[LINK_MAC_STRLEN];
	for (size_t i = 0; i < res->n_ifaces; i++) {
		struct cni_iface *f = &res->ifaces[i];
		if (!streq(f->name, ifname))
			continue;
		if (c->has_mac) {
			free(f->mac);
			f->mac = xstrdup(link_format_mac(c->mac, 6, mac));
		}
		if (c->mtu)
			f->mtu = c->mtu;
		if (c->rename) {
			free(f->name);
			f->name = xstrdup(c->rename);
		}
	}
}

static int tn_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tn_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "prevResult: missing (tuning must be chained after an interface "
			       "plugin)");
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0)
		return -1;

	struct cni_link l = {0};
	if (tn_link_needed(c)) {
		int r = link_get_by_name(c->nl, req->ifname, &l, err);
		if (r == -ENODEV)
			return err_set(err, CNI_ERR_INTERNAL, "failed to get %s: no such interface",
				       req->ifname);
		if (r < 0)
			return -1;
	}

	/* The current values, read before anything changes. Per-interface
	 * sysctls are read under the current name: they follow the device
	 * when it is renamed. */
	_cleanup_free_ char(*old)[TN_VALUE_MAX] = xcalloc(c->n_sysctls + 1, TN_VALUE_MAX);
	for (size_t i = 0; i < c->n_sysctls; i++) {
		struct tn_sysctl now = c->sysctls[i];
		if (c->rename && tn_sysctl_path(&now, req->ifname, err) < 0)
			return -1;
		if (sysctl_get_in(req->ns, now.path, old[i], TN_VALUE_MAX, err) < 0)
			return -1;
	}
	if ((tn_link_needed(c) || c->n_sysctls) && tn_write_backup(req, c, &l, old, err) < 0)
		return -1;

	if (c->rename && !streq(c->rename, req->ifname)) {
		bool up = l.flags & IFF_UP;
		if (tn_rename(c->nl, l.ifindex, c->rename, up, err) < 0)
			return -1;
		struct tn_undo *u = tn_push(req, TN_U_NAME, l.ifindex);
		u->up = up;
		strlcpy_(u->name, req->ifname, sizeof(u->name));
	}
	for (size_t i = 0; i < c->n_sysctls; i++) {
		const struct tn_sysctl *s = &c->sysctls[i];
		if (sysctl_set_in(req->ns, s->path, s->value, err) < 0)
			return -1;
		struct tn_undo *u = tn_push(req, TN_U_SYSCTL, 0);
		u->path = xstrdup(s->path);
		u->value = xstrdup(old[i]);
	}
	if (c->has_mac) {
		if (link_set_mac(c->nl, l.ifindex, c->mac, err) < 0)
			return -1;
		memcpy(tn_push(req, TN_U_MAC, l.ifindex)->mac, l.mac, 6);
	}
	if (c->promisc) {
		if (link_set_promisc(c->nl, l.ifindex, true, err) < 0)
			return -1;
		tn_push(req, TN_U_PROMISC, l.ifindex)->up = l.flags & IFF_PROMISC;
	}
	if (c->mtu) {
		if (link_set_mtu(c->nl, l.ifindex, c->mtu, err) < 0)
			return -1;
		tn_push(req, TN_U_MTU, l.ifindex)->num = l.mtu;
	}
	if (c->allmulti >= 0) {
		if (link_set_allmulti(c->nl, l.ifindex, c->allmulti, err) < 0)
			return -1;
		tn_push(req, TN_U_ALLMULTI, l.ifindex)->up = l.flags & IFF_ALLMULTI;
	}
	if (c->txqlen >= 0) {
		if (link_set_txqlen(c->nl, l.ifindex, (unsigned)c->txqlen, err) < 0)
			return -1;
		tn_push(req, TN_U_TXQLEN, l.ifindex)->num = l.txqlen;
	}
	tn_update_result(c, req->ifname, res);
	return 0;
}

static void tn_log(struct cni_err *e)
{
	if (err_isset(e))
		fprintf(stderr, "tuning: %s%s%s\n", e->msg, e->details[0] ? ": " : "", e->details);
	err_clear(e);
}

/* Put one saved sysctl back, unless someone changed it since ADD. */
static void tn_restore_sysctl(const struct cni_netns *ns, const char *path,
			      const struct cni_json *e)
{
	const char *old = json_str(json_get(e, "old")), *set = json_str(json_get(e, "new"));
	char now[TN_VALUE_MAX];
	struct cni_err ig = {0};
	if (!old || !set || sysctl_get_in(ns, path, now, sizeof(now), &ig) < 0) {
		tn_log(&ig);
		return;
	}
	if (streq(now, set))
		sysctl_set_in(ns, path, old, &ig);
	tn_log(&ig);
}

static void tn_restore(struct cni_req *req, struct tn_conf *c, const struct cni_json *b)
{
	struct cni_err e = {0};
	const char *renamed = json_str(json_get(b, "ifName"));
	struct cni_link l;
	int r = link_get_by_name(c->nl, renamed ? renamed : req->ifname, &l, &e);
	if (r == -ENODEV && renamed)
		r = link_get_by_name(c->nl, req->ifname, &l, &e);
	if (r < 0) {
		/* The interface is gone: nothing left to restore. */
		tn_log(&e);
		return;
	}
	const struct cni_json *s = json_get(b, "sysctl");
	for (size_t i = 0; json_is(s, JSON_OBJECT) && i < s->obj.n; i++)
		tn_restore_sysctl(req->ns, s->obj.k[i], s->obj.v[i]);

	int64_t v;
	bool on;
	const char *mac = NULL;
	uint8_t m[6];
	if (json_get_int(b, "mtu", 0, 1, INT32_MAX, &v, &e) > 0)
		link_set_mtu(c->nl, l.ifindex, (unsigned)v, &e);
	tn_log(&e);
	if (json_get_str(b, "mac", 0, &mac, &e) > 0 && link_parse_mac(mac, m) == 0)
		link_set_mac(c->nl, l.ifindex, m, &e);
	tn_log(&e);
	if (json_get_bool(b, "promisc", 0, &on, &e) > 0)
		link_set_promisc(c->nl, l.ifindex, on, &e);
	tn_log(&e);
	if (json_get_bool(b, "allmulti", 0, &on, &e) > 0)
		link_set_allmulti(c->nl, l.ifindex, on, &e);
	tn_log(&e);
	if (json_get_int(b, "txQLen", 0, 0, INT32_MAX, &v, &e) > 0)
		link_set_txqlen(c->nl, l.ifindex, (unsigned)v, &e);
	tn_log(&e);
	if (!streq(l.name, req->ifname))
		tn_rename(c->nl, l.ifindex, req->ifname, l.flags & IFF_UP, &e);
	tn_log(&e);
}

static int tn_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tn_conf *c = req->priv;
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (!c->backup || read_state_file(c->backup, 1 << 20, &text, &len) < 0)
		return 0; /* nothing was saved: nothing to restore */
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0) {
		if (!gone)
			return -1;
	} else {
		struct cni_err e = {0};
		struct cni_json *b = json_parse(text, len, &e);
		if (b)
			tn_restore(req, c, b);
		else
			fprintf(stderr, "tuning: ignoring unreadable %s: %s\n", c->backup, e.msg);
		json_free(b);
	}
	if (unlink(c->backup) < 0 && errno != ENOENT)
		return err_errno(err, CNI_ERR_IO, errno, "failed to remove %s", c->backup);
	return 0;
}

static int tn_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct tn_conf *c = req->priv;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	bool gone = false;
	if (iface_open_cont(req, &c->nl, &gone, err) < 0)
		return -1;
	for (size_t i = 0; i < c->n_sysctls; i++) {
		char now[TN_VALUE_MAX];
		if (sysctl_get_in(req->ns, c->sysctls[i].path, now, sizeof(now), err) < 0)
			return -1;
		if (!streq(now, c->sysctls[i].value))
			return err_set(err, CNI_ERR_INTERNAL,
				       "sysctl %s is %.64s, configured %.64s", c->sysctls[i].key,
				       now, c->sysctls[i].value);
	}
	struct cni_link l;
	int r = link_get_by_name(c->nl, c->ifname, &l, err);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INTERNAL, "cannot find container link %s", c->ifname);
	if (r < 0)
		return -1;
	char want[LINK_MAC_STRLEN];
	if (c->has_mac && memcmp(l.mac, c->mac, 6))
		return err_set(err, CNI_ERR_INTERNAL, "%s: MAC is %s, configured %s", c->ifname,
			       l.mac_str, link_format_mac(c->mac, 6, want));
	/* As the reference: promisc false (or absent) means "must be off". */
	if (c->promisc != !!(l.flags & IFF_PROMISC))
		return err_set(err, CNI_ERR_INTERNAL, "%s: promiscuous mode is %s, configured %s",
			       c->ifname, l.flags & IFF_PROMISC ? "on" : "off",
			       c->promisc ? "on" : "off");
	if (c->mtu && l.mtu != c->mtu)
		return err_set(err, CNI_ERR_INTERNAL, "%s: MTU is %u, configured %u", c->ifname,
			       l.mtu, c->mtu);
	if (c->allmulti >= 0 && c->allmulti != !!(l.flags & IFF_ALLMULTI))
		return err_set(err, CNI_ERR_INTERNAL, "%s: all-multicast mode is %s, configured %s",
			       c->ifname, l.flags & IFF_ALLMULTI ? "on" : "off",
			       c->allmulti ? "on" : "off");
	if (c->txqlen >= 0 && l.txqlen != (unsigned)c->txqlen)
		return err_set(err, CNI_ERR_INTERNAL, "%s: txqueuelen is %u, configured %u",
			       c->ifname, l.txqlen, (unsigned)c->txqlen);
	return 0;
}

const struct cni_applet tuning_applet = {
    .name = "tuning",
    .summary = "change sysctls and interface attributes in the container",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"tuning\",\n"
	     "         \"sysctl\": {\"net.core.somaxconn\": \"500\"}, \"mac\": MAC,\n"
	     "         \"mtu\": N, \"promisc\": BOOL, \"allmulti\": BOOL, \"txQLen\": N,\n"
	     "         \"ifName\": NEWNAME, \"dataDir\": \"/run/cni/tuning\"}\n"
	     "Chained after an interface plugin; needs prevResult.\n",
    .parse = tn_parse,
    .free = tn_free,
    .add = tn_add,
    .del = tn_del,
    .check = tn_check,
};
