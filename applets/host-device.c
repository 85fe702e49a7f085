/* host-device: move an existing host interface into the container, and
 * back on DEL.
 *
 * The device is named by `device`, `hwaddr`, `kernelpath` (a
 * /sys/devices/... path whose net/ directory holds it) or `pciBusID`;
 * runtimeConfig.deviceID (capability "deviceID") names a PCI or auxiliary
 * bus device and replaces pciBusID. ADD records the host name in the
 * device's alias (IFLA_IFALIAS, as the reference, so either implementation
 * can undo the other's ADD), moves it into CNI_NETNS renamed to CNI_IFNAME
 * in the same request, brings it up and applies the IPAM allocation when
 * ipam is set. A failed ADD moves the device back under its name, restores
 * its up state and alias, and releases the allocation.
 * DEL releases the allocation (also when the namespace is gone: the kernel
 * then returns a physical device to the initial namespace by itself and
 * destroys a virtual one), then takes CNI_IFNAME down, moves it back to the
 * host renamed to its alias and clears the alias; the device stays down,
 * its earlier state being unknown. A missing namespace or interface is
 * success; an interface without alias is refused (it is not ours to move).
 * A PCI device bound to a userspace driver (vfio-pci, uio_pci_generic,
 * igb_uio: DPDK) has no netdev: it is neither moved nor configured, and
 * the result names CNI_IFNAME without a MAC, as the reference.
 * CHECK runs the IPAM CHECK and compares the live link (MAC), its
 * addresses and the routes with prevResult.
 *
 * Differences from the reference: no temporary namespace for the rename
 * (the move and the rename are one request, after checking that neither
 * name is taken on the other side); a device or PCI address that does not
 * exist, a bad hwaddr or kernelpath are code 7 naming the field; DEL
 * succeeds when the interface is already gone from the namespace; STATUS
 * and GC are delegated to the IPAM plugin. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "iface.h"
#include "link.h"
#include "linkplug.h"
#include "netlink.h"
#include "plugin.h"

#define HD_SYS_PCI "/sys/bus/pci/devices/"
#define HD_SYS_AUX "/sys/bus/auxiliary/devices/"

struct hd_conf {
	/* First: the shared handlers take req->priv. Its sockets stay
	 * unused; the device moves between the two below. */
	struct cni_linkplug lp;
	const char *device;
	const char *hwaddr_s;
	uint8_t hwaddr[6];
	const char *kernelpath;
	const char *pci;
	const char *aux; /* runtimeConfig.deviceID naming an auxiliary device */
	const char *rt_id;

	/* Kept here so that the undo steps, which run after ADD returns,
	 * can still use them. */
	struct cni_nl *hnl, *cnl;
	struct cni_netns *host; /* the namespace the device comes from */
	char host_name[LINK_NAME_MAX];
	bool was_up;
};
_Static_assert(offsetof(struct hd_conf, lp) == 0, "lp must come first");

static void hd_free(void *priv)
{
	struct hd_conf *c = priv;
	if (!c)
		return;
	linkplug_clear(&c->lp);
	netlink_close(c->hnl);
	netlink_close(c->cnl);
	netns_close(c->host);
	free(c);
}

/* --- Config. --- */

/* A bus device name ("0000:3d:00.1", "mlx5_core.sf.4"): one path
 * component. */
static int hd_check_busid(const struct cni_json *obj, const char *key, const char *v,
			  struct cni_err *err)
{
	if (!strempty(v) && !name_is_safe(v, 64))
		return json_err(err, json_get(obj, key), "not a device address");
	return 0;
}

static int hd_parse(struct cni_req *req, struct cni_err *err)
{
	struct hd_conf *c = xcalloc(1, sizeof(*c));
	req->priv = c;
	if (json_get_str(req->conf, "device", 0, &c->device, err) < 0 ||
	    json_get_str(req->conf, "hwaddr", 0, &c->hwaddr_s, err) < 0 ||
	    json_get_str(req->conf, "kernelpath", 0, &c->kernelpath, err) < 0 ||
	    json_get_str(req->conf, "pciBusID", 0, &c->pci, err) < 0 ||
	    json_get_str(req->rt, "deviceID", 0, &c->rt_id, err) < 0 ||
	    hd_check_busid(req->conf, "pciBusID", c->pci, err) < 0 ||
	    hd_check_busid(req->rt, "deviceID", c->rt_id, err) < 0)
		return -1;
	if (!strempty(c->device) && !name_is_safe(c->device, LINK_NAME_MAX - 1))
		return json_err(err, json_get(req->conf, "device"), "not a valid interface name");
	if (!strempty(c->hwaddr_s) && link_parse_mac(c->hwaddr_s, c->hwaddr) < 0)
		return json_err(err, json_get(req->conf, "hwaddr"), "invalid MAC address \"%.40s\"",
				c->hwaddr_s);
	if (!strempty(c->kernelpath) &&
	    (strncmp(c->kernelpath, "/sys/devices/", 13) || strstr(c->kernelpath, "/..") ||
	     strlen(c->kernelpath) > PATH_MAX - 64))
		return json_err(err, json_get(req->conf, "kernelpath"),
				"kernel device path \"%.64s\" must be absolute and begin with "
				"/sys/devices/",
				c->kernelpath);
	if (strempty(c->device) && strempty(c->hwaddr_s) && strempty(c->kernelpath) &&
	    strempty(c->pci) && strempty(c->rt_id))
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "specify either \"device\", \"hwaddr\", \"kernelpath\" or "
			       "\"pciBusID\"");
	return linkplug_parse(req, &c->lp, LINKPLUG_DNS, err);
}

/* runtimeConfig.deviceID replaces pciBusID when it is a PCI device, and is
 * an auxiliary bus device otherwise. Read-only (sysfs). */
static int hd_resolve_id(struct hd_conf *c, struct cni_err *err)
{
	char path[PATH_MAX];
	struct stat st;
	if (strempty(c->rt_id))
		return 0;
	snprintf(path, sizeof(path), HD_SYS_PCI "%s", c->rt_id);
	if (stat(path, &st) == 0) {
		c->pci = c->rt_id;
		return 0;
	}
	snprintf(path, sizeof(path), HD_SYS_AUX "%s", c->rt_id);
	if (stat(path, &st) == 0) {
		c->pci = NULL;
		c->aux = c->rt_id;
		return 0;
	}
	return err_set(err, CNI_ERR_INVALID_CONFIG,
		       "runtimeConfig.deviceID: device %s not found on the PCI or auxiliary bus",
		       c->rt_id);
}

/* Whether pciBusID is bound to a userspace (DPDK) driver. */
static int hd_dpdk(const struct hd_conf *c, bool *dpdk, struct cni_err *err)
{
	static const char *const drivers[] = {"vfio-pci", "uio_pci_generic", "igb_uio"};
	char path[PATH_MAX], target[PATH_MAX];
	*dpdk = false;
	if (strempty(c->pci))
		return 0;
	snprintf(path, sizeof(path), HD_SYS_PCI "%s/driver", c->pci);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return err_errno(err, CNI_ERR_INVALID_CONFIG, errno,
				 "pciBusID: no driver for PCI device %s", c->pci);
	target[n] = 0;
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	for (size_t i = 0; i < ARRAY_SIZE(drivers); i++)
		if (streq(base, drivers[i]))
			*dpdk = true;
	return 0;
}

/* The first network device listed in dir (a sysfs .../net directory). */
static int hd_from_dir(struct hd_conf *c, const char *dir, const char *field,
		       struct cni_link *out, struct cni_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return err_errno(err, CNI_ERR_INVALID_CONFIG, errno,
				 "%s: failed to read network devices at %s", field, dir);
	int r = -ENODEV;
	struct dirent *e;
	while (r == -ENODEV && (e = readdir(d)))
		if (e->d_name[0] != '.' && strlen(e->d_name) < LINK_NAME_MAX)
			r = link_get_by_name(c->hnl, e->d_name, out, err);
	closedir(d);
	if (r == -ENODEV)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: no network device in %s", field,
			       dir);
	return r < 0 ? -1 : 0;
}

/* The host device the config names. Read-only. */
static int hd_find(struct hd_conf *c, struct cni_link *out, struct cni_err *err)
{
	char dir[PATH_MAX];
	if (!strempty(c->device)) {
		int r = link_get_by_name(c->hnl, c->device, out, err);
		if (r == -ENODEV)
			return err_set(err, CNI_ERR_INVALID_CONFIG, "device: link \"%s\" not found",
				       c->device);
		return r < 0 ? -1 : 0;
	}
	if (!strempty(c->hwaddr_s)) {
		_cleanup_free_ struct cni_link *links = NULL;
		size_t n = 0;
		if (link_list(c->hnl, &links, &n, err) < 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (links[i].mac_len == 6 && !memcmp(links[i].mac, c->hwaddr, 6)) {
				*out = links[i];
				return 0;
			}
		return err_set(err, CNI_ERR_INVALID_CONFIG, "hwaddr: no link with MAC %s",
			       c->hwaddr_s);
	}
	if (!strempty(c->kernelpath)) {
		snprintf(dir, sizeof(dir), "%s/net", c->kernelpath);
		return hd_from_dir(c, dir, "kernelpath", out, err);
	}
	if (!strempty(c->pci)) {
		snprintf(dir, sizeof(dir), HD_SYS_PCI "%s/net", c->pci);
		struct stat st;
		if (lstat(dir, &st) < 0) {
			/* A virtio device has its netdev one level down. */
			glob_t g = {0};
			snprintf(dir, sizeof(dir), HD_SYS_PCI "%s/virtio*/net", c->pci);
			int gr = glob(dir, 0, NULL, &g);
			if (gr == 0 && g.gl_pathc > 0)
				strlcpy_(dir, g.gl_pathv[0], sizeof(dir));
			globfree(&g);
			if (gr != 0)
				return err_set(err, CNI_ERR_INVALID_CONFIG,
					       "pciBusID: no net directory under PCI device %s",
					       c->pci);
		}
		return hd_from_dir(c, dir, "pciBusID", out, err);
	}
	snprintf(dir, sizeof(dir), HD_SYS_AUX "%s/net", c->aux);
	return hd_from_dir(c, dir, "runtimeConfig.deviceID", out, err);
}

static int hd_open(struct cni_req *req, struct hd_conf *c, bool *gone, struct cni_err *err)
{
	struct cni_netns *ns = req_netns(req, gone, err);
	if (!ns)
		return gone && *gone ? 0 : -1;
	/* The handlers run in the host namespace: this thread's. */
	if (!c->host && !(c->host = netns_open("/proc/thread-self/ns/net", NULL, err)))
		return -1;
	if (!c->hnl && !(c->hnl = netlink_open(NULL, err)))
		return -1;
	if (!c->cnl && !(c->cnl = netlink_open(ns, err)))
		return -1;
	return 0;
}

/* Whether nl's namespace has a link called name: 1, 0, or -1 (err). */
static int hd_exists(struct cni_nl *nl, const char *name, struct cni_err *err)
{
	struct cni_link l;
	int r = link_get_by_name(nl, name, &l, err);
	return r == 0 ? 1 : r == -ENODEV ? 0 : -1;
}

/* --- ADD and its undo steps. --- */

/* Clear the alias we set, wherever the device is now (back home after the
 * move was undone, or never moved). */
static void hd_undo_alias(struct cni_req *req, void *arg)
{
	struct hd_conf *c = req->priv;
	struct cni_link l;
	struct cni_err e = {0};
	if (link_get_by_name(c->hnl, c->host_name, &l, &e) == 0)
		link_set_alias(c->hnl, l.ifindex, "", &e);
}

/* Move the device back from the container under its host name, and up if
 * it was. */
static void hd_undo_move(struct cni_req *req, void *arg)
{
	struct hd_conf *c = req->priv;
	struct cni_link l;
	struct cni_err e = {0};
	if (link_get_by_name(c->cnl, req->ifname, &l, &e) < 0)
		return;
	link_set_down(c->cnl, l.ifindex, &e);
	if (link_set_netns(c->cnl, l.ifindex, c->host, c->host_name, &e) < 0)
		return;
	if (c->was_up && link_get_by_name(c->hnl, c->host_name, &l, &e) == 0)
		link_set_up(c->hnl, l.ifindex, &e);
}

/* The kernel moves first and renames after; a refused rename leaves the
 * device in the container under its host name. Bring it back. */
static void hd_recover(struct hd_conf *c, struct cni_req *req)
{
	struct cni_link l;
	struct cni_err e = {0};
	if (link_get_by_name(c->cnl, c->host_name, &l, &e) == 0)
		link_set_netns(c->cnl, l.ifindex, c->host, NULL, &e);
}

static int hd_move_in(struct cni_req *req, struct hd_conf *c, struct cni_link *dev,
		      struct cni_err *err)
{
	int r = hd_exists(c->cnl, req->ifname, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, CNI_ERR_INTERNAL,
					    "container already has an interface named %s",
					    req->ifname);
	strlcpy_(c->host_name, dev->name, sizeof(c->host_name));
	c->was_up = dev->flags & IFF_UP;
	if (link_set_alias(c->hnl, dev->ifindex, dev->name, err) < 0)
		return -1;
	req_push_undo(req, hd_undo_alias, NULL, NULL);
	if (link_set_netns(c->hnl, dev->ifindex, req->ns, req->ifname, err) < 0) {
		hd_recover(c, req);
		if (c->was_up) {
			struct cni_err e = {0};
			struct cni_link l;
			if (link_get_by_name(c->hnl, c->host_name, &l, &e) == 0)
				link_set_up(c->hnl, l.ifindex, &e);
		}
		return -1;
	}
	req_push_undo(req, hd_undo_move, NULL, NULL);
	r = link_get_by_name(c->cnl, req->ifname, dev, err);
	if (r < 0)
		return r == -ENODEV ? err_set(err, CNI_ERR_INTERNAL, "device %s vanished from %s",
					      req->ifname, req->netns_path)
				    : -1;
	return link_set_up(c->cnl, dev->ifindex, err);
}

static int hd_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct hd_conf *c = req->priv;
	struct cni_link dev = {0};
	bool dpdk = false;
	if (hd_open(req, c, NULL, err) < 0 || hd_resolve_id(c, err) < 0 ||
	    hd_dpdk(c, &dpdk, err) < 0)
		return -1;
	if (!dpdk && (hd_find(c, &dev, err) < 0 || hd_move_in(req, c, &dev, err) < 0))
		return -1;
	return linkplug_add_result(req, &c->lp, c->cnl, dpdk ? NULL : &dev, res, err);
}

/* --- DEL, CHECK. --- */

static int hd_move_out(struct cni_req *req, struct hd_conf *c, struct cni_err *err)
{
	struct cni_link l;
	int r = link_get_by_name(c->cnl, req->ifname, &l, err);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return -1;
	const char *alias = l.alias;
	if (!*alias)
		return err_set(err, CNI_ERR_INTERNAL,
			       "failed to find original ifname for %s (alias is not set)",
			       req->ifname);
	if (!name_is_safe(alias, LINK_NAME_MAX - 1))
		return err_set(err, CNI_ERR_INTERNAL,
			       "alias of %s (\"%.32s\") is not an interface name", req->ifname,
			       alias);
	r = hd_exists(c->hnl, alias, err);
	if (r != 0)
		return r < 0 ? -1 : err_set(err, CNI_ERR_INTERNAL,
					    "cannot move %s back: the host already has a %s",
					    req->ifname, alias);
	if (link_set_down(c->cnl, l.ifindex, err) < 0 ||
	    link_set_netns(c->cnl, l.ifindex, c->host, alias, err) < 0)
		return -1;
	/* Home again: the alias was only our note of the name. */
	struct cni_link h;
	if (link_get_by_name(c->hnl, alias, &h, err) < 0)
		return err_isset(err) ? -1 : 0;
	return link_set_alias(c->hnl, h.ifindex, "", err);
}

static int hd_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct hd_conf *c = req->priv;
	bool gone = false, dpdk = false;
	if (linkplug_ipam(req, &c->lp, CNI_CMD_DEL, err) < 0 || hd_open(req, c, &gone, err) < 0)
		return -1;
	if (gone)
		return 0;
	/* A deviceID or PCI device that vanished cannot be a DPDK one we
	 * left alone: fall through to the netdev. */
	struct cni_err e = {0};
	if (hd_resolve_id(c, &e) == 0 && hd_dpdk(c, &dpdk, &e) == 0 && dpdk)
		return 0;
	return hd_move_out(req, c, err);
}

static int hd_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct hd_conf *c = req->priv;
	bool dpdk = false;
	if (linkplug_ipam(req, &c->lp, CNI_CMD_CHECK, err) < 0)
		return -1;
	if (!req->prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	if (hd_open(req, c, NULL, err) < 0 || hd_resolve_id(c, err) < 0 ||
	    hd_dpdk(c, &dpdk, err) < 0)
		return -1;
	if (dpdk)
		return 0;
	int idx = iface_check_find(req->prev, req->ifname, req->netns_path, err);
	if (idx < 0 || iface_check_link(c->cnl, &req->prev->ifaces[idx], NULL, NULL, err) < 0)
		return -1;
	return iface_check_ips(c->cnl, req->ifname, req->prev, err);
}

const struct cni_applet host_device_applet = {
	.name = "host-device",
	.summary = "move a host interface into the container",
	.usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"host-device\",\n"
		 "  \"device\": IFNAME | \"hwaddr\": MAC | \"kernelpath\": \"/sys/devices/...\"\n"
		 "  | \"pciBusID\": \"0000:00:1f.6\", \"ipam\": {...}}\n"
		 "See cni-host-device(8).\n",
	.parse = hd_parse,
	.free = hd_free,
	.add = hd_add,
	.del = hd_del,
	.check = hd_check,
	.status = linkplug_status,
	.gc = linkplug_gc,
};
