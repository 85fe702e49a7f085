/* ptp: a point-to-point veth link between the container and the host,
 * routed rather than bridged.
 *
 * ADD runs IPAM first, enables forwarding for the families it returned,
 * then creates a veth pair: "veth" + 8 random hex digits in the host and
 * CNI_IFNAME created directly inside the container. Each container
 * address keeps its prefix (10.1.1.5/24), but its on-link route is
 * replaced by "gateway/32 dev eth0" plus "10.1.1.0/24 via gateway", so
 * everything, neighbours included, goes through the host. The host end
 * carries each gateway as a /32 (/128) and a host route to each container
 * address. The result lists the host veth and the container interface.
 * A failed ADD deletes the pair, removes the ipMasq rules and releases the
 * IPAM reservation. DEL releases IPAM first (as the reference), then
 * deletes the pair and the ipMasq rules; a namespace already gone is
 * success. CHECK compares the container interface, addresses and routes
 * with prevResult. STATUS and GC delegate to IPAM.
 *
 * Differences from the reference:
 *  - IPv6 addresses, the container's and the gateway on the host end, are
 *    added without duplicate address detection (IFA_F_NODAD): an ADD
 *    never waits for DAD and the link is usable at once.
 *  - An IPAM address without a gateway is an error naming it; the
 *    reference fails later with a route error.
 *  - DEL removes the ipMasq rules of the attachment even when the
 *    container namespace or interface is already gone.
 *  - A missing ipam.type is code 7 at parse time. */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include "addr.h"
#include "applet.h"
#include "fw.h"
#include "iface.h"
#include "invoke.h"
#include "link.h"
#include "netlink.h"
#include "plugin.h"
#include "route.h"
#include "sysctl.h"

struct ptp_conf {
	bool ip_masq;
	enum fw_backend masq_backend;
	unsigned mtu;
	bool l3;
	struct cni_dns dns;

	/* Sockets kept for the undo steps, which run after the handler. */
	struct cni_nl *host_nl, *cont_nl;
};

static void ptp_free(void *priv)
{
	struct ptp_conf *c = priv;
	if (!c)
		return;
	dns_clear(&c->dns);
	netlink_close(c->host_nl);
	netlink_close(c->cont_nl);
	free(c);
}

static void ptp_freep(struct ptp_conf **c)
{
	ptp_free(*c);
}

static int ptp_parse(struct cni_req *req, struct cni_err *err)
{
	_cleanup_(ptp_freep) struct ptp_conf *c = xcalloc(1, sizeof(*c));
	const struct cni_json *j = req->conf, *dns = NULL;
	const char *ipam_type = NULL;
	int64_t mtu = 0;

	if (json_get_bool(j, "ipMasq", 0, &c->ip_masq, err) < 0 ||
	    fw_parse_backend(j, "ipMasqBackend",
			     FW_ALLOW(FW_BACKEND_IPTABLES) | FW_ALLOW(FW_BACKEND_NFTABLES),
			     &c->masq_backend, err) < 0 ||
	    json_get_int(j, "mtu", 0, 0, 65535, &mtu, err) < 0 ||
	    json_get_obj(j, "dns", 0, &dns, err) < 0 || dns_parse(dns, &c->dns, err) < 0 ||
	    json_get_str(req->ipam, "type", 0, &ipam_type, err) < 0)
		return -1;
	c->mtu = (unsigned)mtu;
	c->l3 = !strempty(ipam_type);
	if (c->l3 && invoke_check_type(ipam_type, "ipam.type", err) < 0)
		return -1;
	/* DEL and GC clean up what they can without it. */
	if (!c->l3 && req->cmd != CNI_CMD_DEL && req->cmd != CNI_CMD_GC)
		return err_set(err, CNI_ERR_INVALID_CONFIG,
			       "ipam.type: required (ptp needs addresses from an IPAM plugin)");
	req->priv = TAKE_PTR(c);
	return 0;
}

/* Both sockets; on DEL a namespace already gone is 0 with *gone. */
static int open_socks(struct cni_req *req, struct ptp_conf *c, bool *gone, struct cni_err *err)
{
	bool g = false;
	if (!c->host_nl && !(c->host_nl = netlink_open(NULL, err)))
		return -1;
	int rc = iface_open_cont(req, &c->cont_nl, &g, err);
	if (gone)
		*gone = g;
	return rc < 0 && !g ? -1 : 0;
}

static struct cni_cidr host_prefix(const struct cni_ip *ip)
{
	return (struct cni_cidr){.ip = *ip, .prefix = ip_bits(ip)};
}

/* Container side (setupContainerVeth): addresses and IPAM routes, then
 * each on-link prefix route traded for a route to the gateway alone and
 * the prefix through it. veth has no IFF_POINTOPOINT, so this is how
 * every packet, even to a neighbour, is made to go through the host. */
static int setup_container(struct cni_req *req, struct ptp_conf *c, int ifindex,
			   const struct cni_result *r, struct cni_err *err)
{
	if (iface_configure(c->cont_nl, req->ns, ifindex, r, 1, 0, err) < 0)
		return -1;
	for (size_t i = 0; i < r->n_ips; i++) {
		const struct cni_ipconf *ipc = &r->ips[i];
		struct cni_cidr net = ip_cidr_network(&ipc->address);
		struct cni_rt onlink = {.dst = net, .ifindex = ifindex};
		if (route_del(c->cont_nl, &onlink, err) < 0)
			return -1;
		struct cni_rt to_gw = {
		    .dst = host_prefix(&ipc->gateway),
		    .ifindex = ifindex,
		    .scope = ROUTE_SCOPE_LINK,
		    .src = ipc->address.ip,
		};
		struct cni_rt via_gw = {
		    .dst = net,
		    .gw = ipc->gateway,
		    .ifindex = ifindex,
		    .src = ipc->address.ip,
		};
		if (route_add(c->cont_nl, &to_gw, err) < 0 ||
		    route_add(c->cont_nl, &via_gw, err) < 0)
			return -1;
	}
	return 0;
}

/* Host side (setupHostVeth): the gateway on the host end, a host route to
 * each container address. */
static int setup_host(struct ptp_conf *c, const struct cni_link *veth, const struct cni_result *r,
		      struct cni_err *err)
{
	char key[64];
	struct cni_err ignore = {0};
	/* We own the routes of this interface: no router advertisements. */
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", veth->name);
	sysctl_set_in(NULL, key, "0", &ignore);
	/* No DAD on a link whose only other end we just made: the kernel
	 * sends no neighbour solicitation while the link-local address is
	 * tentative, so forwarding to the container would stall for a
	 * second or two after ADD. */
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", veth->name);
	sysctl_set_in(NULL, key, "0", &ignore);
	if (link_set_up(c->host_nl, veth->ifindex, err) < 0)
		return -1;
	for (size_t i = 0; i < r->n_ips; i++) {
		const struct cni_ipconf *ipc = &r->ips[i];
		struct cni_cidr gw = host_prefix(&ipc->gateway);
		struct cni_err tmp = {0};
		/* Two addresses of one family may share a gateway. IPv6 skips
		 * DAD (addr_add's default): the link is usable at once. */
		int rc = addr_add(c->host_nl, veth->ifindex, &gw, 0, &tmp);
		if (rc < 0 && rc != -EEXIST) {
			*err = tmp;
			return -1;
		}
		struct cni_rt rt = {
		    .dst = host_prefix(&ipc->address.ip),
		    .ifindex = veth->ifindex,
		    .scope = ROUTE_SCOPE_HOST,
		};
		err_clear(&tmp);
		rc = route_add(c->host_nl, &rt, &tmp);
		if (rc < 0 && rc != -EEXIST) {
			*err = tmp;
			return -1;
		}
	}
	return 0;
}

static int ptp_add(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ptp_conf *c = req->priv;
	_cleanup_(result_freep) struct cni_result *r = NULL;
	struct cni_veth_pair p;
	char buf[CIDR_STRLEN];

	if (open_socks(req, c, NULL, err) < 0 || iface_ipam_add(req, &r, err) < 0)
		return -1;
	for (size_t i = 0; i < r->n_ips; i++)
		if (r->ips[i].gateway.family != r->ips[i].address.ip.family)
			return err_set(
			    err, CNI_ERR_INTERNAL,
			    "IPAM returned no %s gateway for %s, which ptp routes through",
			    r->ips[i].address.ip.family == AF_INET ? "IPv4" : "IPv6",
			    ip_cidr_format(&r->ips[i].address, buf));
	if (iface_enable_forward(r, err) < 0)
		return -1;

	if (iface_add_veth(c->host_nl, c->cont_nl, req->ns, req->ifname, c->mtu, NULL, &p, err) < 0)
		return -1;
	iface_push_undo_link(req, c->host_nl, p.host.ifindex);

	iface_result_from_ipam(r);
	result_add_iface(r, p.host.name, p.host.mac_str, NULL);
	result_add_iface(r, req->ifname, p.cont.mac_str, req->netns_path);
	for (size_t i = 0; i < r->n_ips; i++)
		r->ips[i].iface = 1;

	if (setup_container(req, c, p.cont.ifindex, r, err) < 0 ||
	    setup_host(c, &p.host, r, err) < 0)
		return -1;
	if (c->ip_masq && iface_masq_add(req, r, c->masq_backend, err) < 0)
		return -1;
	iface_result_finish(res, r, &c->dns, req->version);
	return 0;
}

static int ptp_del(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ptp_conf *c = req->priv;
	_cleanup_free_ struct cni_cidr *nets = NULL;
	size_t n = 0;
	bool gone = false;

	if (c->l3 && iface_ipam_run(req, CNI_CMD_DEL, err) < 0)
		return -1;
	if (open_socks(req, c, &gone, err) < 0)
		return -1;
	if (!gone && iface_del(c->cont_nl, req->ifname, &nets, &n, err) < 0)
		return -1;
	if (c->ip_masq && fw_masq_del(req->name, req->container_id, req->ifname, nets, n, err) < 0)
		return -1;
	return 0;
}

static int ptp_check(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ptp_conf *c = req->priv;
	const struct cni_result *prev = req->prev;

	if (open_socks(req, c, NULL, err) < 0 || iface_ipam_run(req, CNI_CMD_CHECK, err) < 0)
		return -1;
	if (!prev)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "prevResult: required for CHECK");
	int ci = iface_check_find(prev, req->ifname, req->netns_path, err);
	if (ci < 0 || iface_check_link(c->cont_nl, &prev->ifaces[ci], "veth", NULL, err) < 0 ||
	    iface_check_ips(c->cont_nl, req->ifname, prev, err) < 0)
		return -1;
	if (c->ip_masq && iface_masq_check(req, prev, c->masq_backend, err) < 0)
		return -1;
	return 0;
}

static int ptp_status(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	return iface_ipam_run(req, CNI_CMD_STATUS, err);
}

static int ptp_gc(struct cni_req *req, struct cni_result *res, struct cni_err *err)
{
	struct ptp_conf *c = req->priv;
	if (c->l3 && iface_ipam_run(req, CNI_CMD_GC, err) < 0)
		return -1;
	if (c->ip_masq && fw_gc_valid(req->conf, req->name, fw_masq_gc, err) < 0)
		return -1;
	return 0;
}

const struct cni_applet ptp_applet = {
    .name = "ptp",
    .summary = "routed point-to-point veth link between container and host",
    .usage = "Config: {\"cniVersion\": \"1.1.0\", \"name\": NAME, \"type\": \"ptp\",\n"
	     "  \"ipMasq\": BOOL, \"ipMasqBackend\": \"iptables\"|\"nftables\", \"mtu\": N,\n"
	     "  \"ipam\": {\"type\": ...}, \"dns\": {...}}\n",
    .parse = ptp_parse,
    .free = ptp_free,
    .add = ptp_add,
    .del = ptp_del,
    .check = ptp_check,
    .status = ptp_status,
    .gc = ptp_gc,
};
