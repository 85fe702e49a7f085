/* host-local: IPAM from ranges kept in files on this host.
 *
 * ADD reserves one address from each range set (so a v4 and a v6 set give
 * a dual-stack result) and reports it with the range's gateway, the
 * configured routes and the DNS of resolvConf. It walks round-robin from
 * the set's last reserved address, so a released address is reused only
 * after the whole set has been walked. A requested address (args.cni.ips,
 * runtimeConfig.ips, or CNI_ARGS IP=) is taken from the set that holds it;
 * one that no set holds, or that is taken, fails the ADD. The whole ADD
 * holds the store lock, and a failure releases what it reserved.
 * DEL releases every address of (CNI_CONTAINERID, CNI_IFNAME); it is
 * idempotent and never creates the store. With a prevResult showing the
 * attachment's address in every range set it reads only those files;
 * otherwise it lists the directory, as ADD does, and reads only the files
 * the owner cache (src/ipam-store.h) cannot show to be someone else's:
 * neither reads a file per container of the network. CHECK verifies that
 * each range set holds a reservation of the attachment (and that each
 * address of prevResult in a set is one). GC (spec 1.1) releases every
 * reservation whose owner is not in cni.dev/valid-attachments; STATUS
 * fails with code 50 when a range set has no free address left.
 *
 * The store is the reference's layout (src/ipam-store.h): either plugin
 * reads the other's reservations. Differences from the reference (v1.1.1):
 * a gateway outside its subnet, rangeStart after rangeEnd, and a relative
 * dataDir or one with a ".." component are refused (code 7) rather than
 * accepted; CNI_ARGS IP= is ignored when args or runtimeConfig request
 * addresses (CONVENTIONS.md); a second ADD of one attachment fails even
 * with a requested address; GC and STATUS exist. */
#include <errno.h>
#include <linux/capability.h>

#include "applet.h"
#include "ipam-range.h"
#include "ipam-store.h"
#include "plugin.h"

#define HL_RESOLV_MAX (64u << 10)

static int hl_parse(struct cni_req *req, struct cni_err *err)
{
	req->priv = ipam_conf_parse(req, err);
	return req->priv ? 0 : -1;
}

static void hl_free(void *priv)
{
	ipam_conf_free(priv);
}

/* Open (and lock) the store. Without create a missing store is *absent. */
static struct cni_store *hl_store(const struct cni_ipam_conf *c, bool create, bool *absent,
				  struct cni_err *err)
{
	struct cni_store *s = store_open(c->data_dir, c->network, create, absent, err);
	if (s && store_lock(s, err) < 0) {
		store_close(s);
		return NULL;
	}
	return s;
}

/* One address from every range set, in set order, each from the first
 * unused requested address the set holds if any. On failure *ngot tells
 * what to release. */
static int hl_reserve_all(struct cni_store *s, const struct cni_store_scan *sc,
			  const struct cni_req *req, struct cni_ipconf *got, size_t *ngot,
			  struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	_cleanup_free_ bool *used = xcalloc(c->n_want + 1, sizeof(*used));
	char a[IP_STRLEN], list[256] = "";

	for (size_t idx = 0; idx < c->n_sets; idx++) {
		const struct cni_ip *want = NULL;
		for (size_t k = 0; k < c->n_want && !want; k++) {
			if (!used[k] && ipam_rangeset_find(&c->sets[idx], &c->want[k])) {
				used[k] = true;
				want = &c->want[k];
			}
		}
		if (ipam_alloc(s, sc, &c->sets[idx], idx, req->container_id, req->ifname, want,
			       &got[*ngot], err) < 0)
			return -1;
		(*ngot)++;
	}
	for (size_t k = 0; k < c->n_want; k++) {
		size_t n = strlen(list);
		if (!used[k])
			snprintf(list + n, sizeof(list) - n, "%s%s", n ? " " : "",
				 ip_format(&c->want[k], a));
	}
	if (*list) {
		err_set(err, CNI_ERR_INTERNAL, "failed to allocate all requested IPs: %.80s", list);
		return err_append(err, "each address must lie in a different range set");
	}
	return 0;
}

static int hl_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	_cleanup_(store_closep) struct cni_store *s = NULL;
	_cleanup_(store_scan_clearp) struct cni_store_scan sc = {0};
	_cleanup_free_ struct cni_ipconf *got = xcalloc(c->n_sets, sizeof(*got));
	size_t ngot = 0;

	if (c->resolv_conf) {
		_cleanup_free_ char *text = NULL;
		int e = read_file(c->resolv_conf, HL_RESOLV_MAX, &text, NULL);
		if (e < 0)
			return err_errno(err, CNI_ERR_IO, e, "ipam.resolvConf: cannot read %.80s",
					 c->resolv_conf);
		ipam_resolv_conf_parse(text, &res->dns);
	}
	s = hl_store(c, true, NULL, err);
	/* Only this attachment's reservations matter beyond the names. */
	if (!s || store_scan_owner(s, req->container_id, req->ifname, &sc, err) < 0)
		return -1;
	if (hl_reserve_all(s, &sc, req, got, &ngot, err) < 0) {
		for (size_t i = 0; i < ngot; i++)
			store_unreserve(s, &got[i].address.ip, NULL);
		return -1;
	}
	for (size_t i = 0; i < ngot; i++)
		result_add_ip(res, &got[i].address, &got[i].gateway, -1);
	for (size_t i = 0; i < c->n_routes; i++) {
		xgrow(&res->routes, &res->cap_routes, res->n_routes, sizeof(*res->routes));
		res->routes[res->n_routes++] = c->routes[i];
	}
	return 0;
}

/* DEL without a scan, from prevResult: 1 when done, 0 when the scan is
 * needed. prevResult must show, in every range set, an address whose file
 * is this attachment's exact record ("<id>\r\n<ifname>"), and no address
 * of our ranges held by anything else (a record without an ifname,
 * someone else's, none). Then the container holds what prevResult says
 * and removing those files is what store_release would do: its first pass
 * finds them (so its fallback to records without an ifname does not run),
 * and an ADD never gives one attachment a second address in a set. What
 * prevResult holds outside our ranges is removed only when its file is
 * ours exactly too. */
static int hl_del_prev(struct cni_store *s, const struct cni_req *req, struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	const struct cni_result *prev = req->prev;
	if (!prev || !prev->n_ips || prev->n_ips > 64 || !c->n_sets || c->n_sets > 64)
		return 0;
	struct cni_store_entry e[64];
	bool mine[64];
	uint64_t covered = 0;
	int rc = 1;
	size_t n = 0;
	for (; n < prev->n_ips && rc == 1; n++) {
		const struct cni_ip *ip = &prev->ips[n].address.ip;
		bool found = store_read(s, ip, &e[n]) == 1;
		mine[n] = found && e[n].regular && e[n].ifname &&
			  store_entry_owned(&e[n], req->container_id, req->ifname);
		size_t idx = 0;
		while (idx < c->n_sets && !ipam_rangeset_find(&c->sets[idx], ip))
			idx++;
		if (idx == c->n_sets)
			continue; /* not from our ranges */
		if (!mine[n])
			rc = 0;
		else
			covered |= 1ull << idx;
	}
	if (rc == 1 && covered != (c->n_sets == 64 ? ~0ull : (1ull << c->n_sets) - 1))
		rc = 0;
	bool failed = false;
	for (size_t i = 0; i < n; i++) {
		if (rc == 1 && mine[i] && store_remove(s, &e[i], err) < 0)
			failed = true; /* the rest still go */
		store_entry_clear(&e[i]);
	}
	return failed ? -1 : rc;
}

static int hl_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	bool absent = false;
	_cleanup_(store_closep) struct cni_store *s = hl_store(c, false, &absent, err);
	if (!s)
		return absent ? 0 : -1;
	int r = hl_del_prev(s, req, err);
	if (r != 0)
		return r < 0 ? -1 : 0;
	return store_release(s, req->container_id, req->ifname, err) < 0 ? -1 : 0;
}

static int hl_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	_cleanup_(store_scan_clearp) struct cni_store_scan sc = {0};
	bool absent = false;
	char a[IP_STRLEN];

	_cleanup_(store_closep) struct cni_store *s = hl_store(c, false, &absent, err);
	if (!s && !absent)
		return -1;
	if (s && store_scan(s, &sc, err) < 0)
		return -1;
	for (size_t idx = 0; idx < c->n_sets; idx++) {
		bool found = false;
		for (size_t i = 0; i < sc.n && !found; i++)
			found = store_entry_owned(&sc.e[i], req->container_id, req->ifname) &&
				ipam_rangeset_find(&c->sets[idx], &sc.e[i].ip);
		if (!found) {
			err_set(err, CNI_ERR_INTERNAL,
				"no address reserved for %.64s in range set %zu", req->container_id,
				idx);
			return err_append(err, "ifname %s, store %s/%s", req->ifname, c->data_dir,
					  c->network);
		}
	}
	for (size_t i = 0; req->prev && i < req->prev->n_ips; i++) {
		const struct cni_ip *ip = &req->prev->ips[i].address.ip;
		bool ours = false;
		for (size_t idx = 0; idx < c->n_sets && !ours; idx++)
			ours = ipam_rangeset_find(&c->sets[idx], ip) != NULL;
		if (!ours)
			continue; /* not from our ranges: some other IPAM's */
		const struct cni_store_entry *e = store_scan_find(&sc, ip);
		if (!e || !store_entry_owned(e, req->container_id, req->ifname))
			return err_set(err, CNI_ERR_INTERNAL,
				       "%s of prevResult is not reserved for %.64s",
				       ip_format(ip, a), req->container_id);
	}
	return 0;
}

/* cni.dev/valid-attachments; a record without an ifname is kept when its
 * container holds any valid attachment (it may be any of them). */
static bool hl_gc_keep(void *arg, const char *id, const char *ifname)
{
	const struct cni_req *req = arg;
	if (ifname)
		return req_gc_is_valid(req, id, ifname);
	const struct cni_json *va = json_get(req->conf, "cni.dev/valid-attachments");
	for (size_t i = 0; i < json_len(va); i++)
		if (streq(json_str(json_get(json_at(va, i), "containerID")), id))
			return true;
	return false;
}

static int hl_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	bool absent = false;
	_cleanup_(store_closep) struct cni_store *s = hl_store(req->priv, false, &absent, err);
	if (!s)
		return absent ? 0 : -1;
	return store_gc(s, hl_gc_keep, req, err) < 0 ? -1 : 0;
}

static int hl_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	const struct cni_ipam_conf *c = req->priv;
	_cleanup_(store_scan_clearp) struct cni_store_scan sc = {0};
	bool absent = false;
	char rs[256];

	_cleanup_(store_closep) struct cni_store *s = hl_store(c, false, &absent, err);
	if (!s)
		return absent ? 0 : -1;
	if (store_scan_owner(s, NULL, NULL, &sc, err) < 0)
		return -1;
	/* An ADD needs an address from every set: one full set is enough to
	 * refuse ADDs. Two spellings of one address count once. */
	for (size_t idx = 0; idx < c->n_sets; idx++) {
		const struct cni_rangeset *set = &c->sets[idx];
		uint64_t size = 0, taken = 0;
		for (size_t i = 0; i < set->n; i++) {
			uint64_t n = ipam_range_size(&set->r[i]);
			size = size > UINT64_MAX - n ? UINT64_MAX : size + n;
		}
		for (size_t i = 0; i < sc.n; i++) {
			const struct cni_range *r = ipam_rangeset_find(set, &sc.e[i].ip);
			if (r && !ip_eq(&sc.e[i].ip, &r->gateway) &&
			    (i == 0 || !ip_eq(&sc.e[i - 1].ip, &sc.e[i].ip)))
				taken++;
		}
		if (taken >= size) {
			err_set(err, CNI_ERR_NOT_AVAILABLE,
				"no IP addresses available in range set %zu", idx);
			return err_append(err, "%s", ipam_rangeset_format(set, rs, sizeof(rs)));
		}
	}
	return 0;
}

const struct cni_applet host_local_applet = {
	.name = "host-local",
	.summary = "IPAM: allocate addresses from ranges, state in files on the host",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": ..., \"ipam\": {\n"
		 "  \"type\": \"host-local\",\n"
		 "  \"ranges\": [[{\"subnet\": CIDR, \"rangeStart\": IP, \"rangeEnd\": IP,\n"
		 "               \"gateway\": IP}, ...], ...],\n"
		 "  \"routes\": [{\"dst\": CIDR, \"gw\": IP}], \"dataDir\": DIR,\n"
		 "  \"resolvConf\": FILE}}\n"
		 "Requested addresses: args.cni.ips, runtimeConfig.ips, CNI_ARGS IP=.\n",
	.flags = APPLET_IPAM,
	/* Files only: no netlink, no namespace. */
	.caps = 1ull << CAP_DAC_OVERRIDE,
	.parse = hl_parse,
	.free = hl_free,
	.add = hl_add,
	.del = hl_del,
	.check = hl_check,
	.status = hl_status,
	.gc = hl_gc,
};
