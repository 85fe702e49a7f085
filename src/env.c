#include <ctype.h>
#include <stdio.h>

#include "plugin.h"

static const char *const cmd_names[] = {
	[CNI_CMD_NONE] = "", [CNI_CMD_ADD] = "ADD", [CNI_CMD_DEL] = "DEL",
	[CNI_CMD_CHECK] = "CHECK", [CNI_CMD_STATUS] = "STATUS", [CNI_CMD_GC] = "GC",
	[CNI_CMD_VERSION] = "VERSION",
};

const char *cmd_name(enum cni_cmd c)
{
	return (size_t)c < ARRAY_SIZE(cmd_names) ? cmd_names[c] : "";
}

enum cni_cmd cmd_parse(const char *s)
{
	for (size_t i = 1; s && i < ARRAY_SIZE(cmd_names); i++)
		if (streq(s, cmd_names[i]))
			return (enum cni_cmd)i;
	return CNI_CMD_NONE;
}

const char *args_get(const struct cni_args *a, const char *key)
{
	/* The last occurrence wins, as the reference assigns in order. */
	for (size_t i = a->n; i-- > 0;)
		if (streq(a->kv[i].key, key))
			return a->kv[i].val;
	return NULL;
}

void args_free(struct cni_args *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->kv[i].key);
		free(a->kv[i].val);
	}
	free(a->kv);
	memset(a, 0, sizeof(*a));
}

int args_parse(const char *s, struct cni_args *out, struct cni_err *err)
{
	if (strempty(s))
		return 0;
	const char *p = s;
	for (;;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		/* Exactly one '=' per pair, as the reference's LoadArgs. */
		if (!eq || memchr(eq + 1, '=', len - (size_t)(eq - p) - 1)) {
			err_set(err, CNI_ERR_INVALID_ENV, "CNI_ARGS: invalid pair \"%.*s\"", (int)len,
				p);
			args_free(out);
			return -1;
		}
		xgrow(&out->kv, &out->cap, out->n, sizeof(*out->kv));
		out->kv[out->n].key = xstrndup(p, (size_t)(eq - p));
		out->kv[out->n].val = xstrndup(eq + 1, len - (size_t)(eq - p) - 1);
		out->n++;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

int args_check_known(const struct cni_args *a, const char *const *known, struct cni_err *err)
{
	const char *ign = args_get(a, "IgnoreUnknown");
	if (ign) {
		if (!strcasecmp(ign, "1") || !strcasecmp(ign, "true"))
			return 0;
		if (strcasecmp(ign, "0") && strcasecmp(ign, "false"))
			return err_set(err, CNI_ERR_INVALID_CONFIG,
				       "CNI_ARGS: IgnoreUnknown: invalid boolean \"%s\"", ign);
	}
	char unknown[256] = "";
	for (size_t i = 0; i < a->n; i++) {
		bool ok = streq(a->kv[i].key, "IgnoreUnknown");
		for (size_t k = 0; known && known[k] && !ok; k++)
			ok = streq(a->kv[i].key, known[k]);
		if (!ok)
			str_append_item(unknown, sizeof(unknown), ", ", a->kv[i].key);
	}
	if (*unknown)
		return err_set(err, CNI_ERR_INVALID_CONFIG, "CNI_ARGS: unknown args [%s]", unknown);
	return 0;
}

/* Names that become file names and map keys: the spec's pattern
 * [a-zA-Z0-9][a-zA-Z0-9_.-]*. */
static bool valid_name(const char *s, size_t max)
{
	if (strempty(s) || strlen(s) > max || !isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* A container id or network name (what): present and valid_name. */
static int check_name(const char *s, size_t max, const char *what, int code, const char *field,
		      struct cni_err *err)
{
	if (strempty(s))
		return err_set(err, code, "%s: missing %s", field, what);
	if (!valid_name(s, max))
		return err_set(err, code,
			       "%s: invalid %s \"%.64s\" (want [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most %zu "
			       "characters)",
			       field, what, s, max);
	return 0;
}

int env_check_container_id(const char *id, const char *var, struct cni_err *err)
{
	return check_name(id, 200, "container id", CNI_ERR_INVALID_ENV, var, err);
}

int env_check_ifname(const char *ifname, const char *var, struct cni_err *err)
{
	if (strempty(ifname))
		return err_set(err, CNI_ERR_INVALID_ENV, "%s: interface name is empty", var);
	if (strlen(ifname) > 15)
		return err_set(err, CNI_ERR_INVALID_ENV,
			       "%s: interface name \"%.32s\" is longer than 15 characters", var,
			       ifname);
	if (streq(ifname, ".") || streq(ifname, ".."))
		return err_set(err, CNI_ERR_INVALID_ENV, "%s: interface name is . or ..", var);
	for (const char *p = ifname; *p; p++)
		if (*p == '/' || *p == ':' || isspace((unsigned char)*p) || (unsigned char)*p < 0x20)
			return err_set(err, CNI_ERR_INVALID_ENV,
				       "%s: interface name \"%s\" contains / or : or whitespace", var,
				       ifname);
	return 0;
}

int env_check_netname(const char *name, const char *field, struct cni_err *err)
{
	return check_name(name, 128, "network name", CNI_ERR_INVALID_CONFIG, field, err);
}

/* Which variables each command requires, per SPEC.md section 2. */
enum { NEED_ID = 1, NEED_NETNS = 2, NEED_IFNAME = 4, NEED_PATH = 8 };
static unsigned required(enum cni_cmd c)
{
	switch (c) {
	case CNI_CMD_ADD:
	case CNI_CMD_CHECK:
		return NEED_ID | NEED_NETNS | NEED_IFNAME;
	case CNI_CMD_DEL:
		return NEED_ID | NEED_IFNAME;
	case CNI_CMD_GC:
		return NEED_PATH;
	default:
		return 0;
	}
}



int env_load(struct cni_req *req, struct cni_err *err)
{
	const char *cmd = getenv("CNI_COMMAND");
	if (strempty(cmd))
		return err_set(err, CNI_ERR_INVALID_ENV, "CNI_COMMAND: required env variable missing");
	req->cmd = cmd_parse(cmd);
	if (req->cmd == CNI_CMD_NONE)
		return err_set(err, CNI_ERR_INVALID_ENV, "CNI_COMMAND: unknown command \"%.32s\"",
			       cmd);
	req->container_id = getenv("CNI_CONTAINERID");
	req->netns_path = getenv("CNI_NETNS");
	req->ifname = getenv("CNI_IFNAME");
	req->args_raw = getenv("CNI_ARGS");
	req->cni_path = getenv("CNI_PATH");
	return env_validate(req, err);
}

int env_validate(struct cni_req *req, struct cni_err *err)
{
	if (req->cmd == CNI_CMD_VERSION)
		return 0;
	unsigned need = required(req->cmd);
	char missing[128] = "";
	struct {
		unsigned bit;
		const char *name, *val;
	} vars[] = {
		{NEED_ID, "CNI_CONTAINERID", req->container_id},
		{NEED_NETNS, "CNI_NETNS", req->netns_path},
		{NEED_IFNAME, "CNI_IFNAME", req->ifname},
		{NEED_PATH, "CNI_PATH", req->cni_path},
	};
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		if ((need & vars[i].bit) && strempty(vars[i].val))
			str_append_item(missing, sizeof(missing), ",", vars[i].name);
	}
	if (*missing)
		return err_set(err, CNI_ERR_INVALID_ENV, "required env variables [%s] missing",
			       missing);
	if (!strempty(req->container_id) &&
	    env_check_container_id(req->container_id, "CNI_CONTAINERID", err) < 0)
		return -1;
	if (!strempty(req->ifname) && env_check_ifname(req->ifname, "CNI_IFNAME", err) < 0)
		return -1;
	if (args_parse(req->args_raw, &req->args, err) < 0)
		return -1;
	return 0;
}
