/* The one in-memory result model (interfaces, ips, routes, dns) and its
 * codec for every spec version: 0.1.0/0.2.0 ("ip4"/"ip6" objects),
 * 0.3.x/0.4.0 ("version" in ips), 1.0.0 and 1.1.0 (route and interface
 * extras). A prevResult of any version decodes into the same model. */
#ifndef CNI_RESULT_H
#define CNI_RESULT_H

#include "json.h"

struct cni_iface {
	char *name;
	char *mac;
	char *sandbox;
	char *socket_path;
	char *pci_id;
	unsigned mtu; /* 0: unset */
};

struct cni_ipconf {
	struct cni_cidr address;
	struct cni_ip gateway; /* family 0: none */
	int iface;	       /* index into interfaces, -1: none */
};

struct cni_route {
	struct cni_cidr dst;
	struct cni_ip gw; /* family 0: none */
	unsigned mtu, advmss, priority, table;
	int scope; /* -1: unset */
};

struct cni_dns {
	char **nameservers;
	size_t n_nameservers;
	char *domain;
	char **search;
	size_t n_search;
	char **options;
	size_t n_options;
};

struct cni_result {
	char *cni_version; /* version it was decoded from / will be encoded as */
	struct cni_iface *ifaces;
	size_t n_ifaces, cap_ifaces;
	struct cni_ipconf *ips;
	size_t n_ips, cap_ips;
	struct cni_route *routes;
	size_t n_routes, cap_routes;
	struct cni_dns dns;
};

struct cni_result *result_new(const char *cni_version);
void result_free(struct cni_result *r);
static inline void result_freep(struct cni_result **r)
{
	result_free(*r);
}
struct cni_result *result_clone(const struct cni_result *r);

/* Append and return the index of the new element (its strings copied). */
int result_add_iface(struct cni_result *r, const char *name, const char *mac,
		     const char *sandbox);
int result_add_ip(struct cni_result *r, const struct cni_cidr *addr, const struct cni_ip *gw,
		  int iface);
int result_add_route(struct cni_result *r, const struct cni_cidr *dst, const struct cni_ip *gw);
/* Find an interface by name and sandbox ("" or NULL: host); -1 if none. */
int result_find_iface(const struct cni_result *r, const char *name, const char *sandbox);
void dns_add(char ***list, size_t *n, const char *s);
void dns_clear(struct cni_dns *d);
void dns_copy(struct cni_dns *dst, const struct cni_dns *src);
/* Parse a "dns" object ({nameservers, domain, search, options}). 0 / -1. */
int dns_parse(const struct cni_json *obj, struct cni_dns *out, struct cni_err *err);

/* Decode a result object of version `version` (the version of the config
 * that carried it). An IPAM result simply has no interfaces. Errors are
 * CNI_ERR_DECODE naming the path. */
struct cni_result *result_decode(const struct cni_json *j, const char *version,
				 struct cni_err *err);
/* Encode in version (NULL: r->cni_version). Versions before 0.3.0 cannot
 * express more than one address per family: an error (code 1), as the
 * reference's converter reports. Returns an owned tree or NULL. */
struct cni_json *result_encode(const struct cni_result *r, const char *version,
			       struct cni_err *err);

#endif
