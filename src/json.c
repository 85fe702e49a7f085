#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

struct cni_json *json_new(enum json_type t)
{
	struct cni_json *j = xcalloc(1, sizeof(*j));
	j->type = t;
	return j;
}

struct cni_json *json_new_str(const char *s)
{
	struct cni_json *j = json_new(JSON_STRING);
	j->str = xstrdup(s);
	return j;
}

struct cni_json *json_new_int(int64_t v)
{
	struct cni_json *j = json_new(JSON_NUMBER);
	j->num = xasprintf("%" PRId64, v);
	return j;
}

struct cni_json *json_new_uint(uint64_t v)
{
	struct cni_json *j = json_new(JSON_NUMBER);
	j->num = xasprintf("%" PRIu64, v);
	return j;
}

struct cni_json *json_new_bool(bool v)
{
	struct cni_json *j = json_new(JSON_BOOL);
	j->b = v;
	return j;
}

void json_free(struct cni_json *j)
{
	if (!j)
		return;
	switch (j->type) {
	case JSON_NUMBER:
		free(j->num);
		break;
	case JSON_STRING:
		free(j->str);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < j->arr.n; i++)
			json_free(j->arr.v[i]);
		free(j->arr.v);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < j->obj.n; i++) {
			free(j->obj.k[i]);
			json_free(j->obj.v[i]);
		}
		free(j->obj.k);
		free(j->obj.v);
		break;
	default:
		break;
	}
	free(j);
}

/* Re-point children's parent, key and index after a container changed. */
static void relink(struct cni_json *c, size_t from)
{
	if (c->type == JSON_ARRAY) {
		for (size_t i = from; i < c->arr.n; i++) {
			c->arr.v[i]->parent = c;
			c->arr.v[i]->key = NULL;
			c->arr.v[i]->index = i;
		}
	} else if (c->type == JSON_OBJECT) {
		for (size_t i = from; i < c->obj.n; i++) {
			c->obj.v[i]->parent = c;
			c->obj.v[i]->key = c->obj.k[i];
			c->obj.v[i]->index = i;
		}
	}
}

struct cni_json *json_push(struct cni_json *arr, struct cni_json *val)
{
	xgrow(&arr->arr.v, &arr->arr.cap, arr->arr.n, sizeof(*arr->arr.v));
	arr->arr.v[arr->arr.n++] = val;
	relink(arr, arr->arr.n - 1);
	return val;
}

static ssize_t obj_find(const struct cni_json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return -1;
	/* Last one wins on duplicate keys, as with Go's encoding/json. */
	for (size_t i = obj->obj.n; i-- > 0;)
		if (strcmp(obj->obj.k[i], key) == 0)
			return (ssize_t)i;
	return -1;
}

struct cni_json *json_set(struct cni_json *obj, const char *key, struct cni_json *val)
{
	ssize_t i = obj_find(obj, key);
	if (i >= 0) {
		json_free(obj->obj.v[i]);
		obj->obj.v[i] = val;
		relink(obj, (size_t)i);
		return val;
	}
	size_t cap = obj->obj.cap;
	xgrow(&obj->obj.k, &cap, obj->obj.n, sizeof(*obj->obj.k));
	xgrow(&obj->obj.v, &obj->obj.cap, obj->obj.n, sizeof(*obj->obj.v));
	obj->obj.k[obj->obj.n] = xstrdup(key);
	obj->obj.v[obj->obj.n++] = val;
	relink(obj, obj->obj.n - 1);
	return val;
}

struct cni_json *json_take(struct cni_json *obj, const char *key)
{
	ssize_t i = obj_find(obj, key);
	if (i < 0)
		return NULL;
	struct cni_json *v = obj->obj.v[i];
	free(obj->obj.k[i]);
	memmove(obj->obj.k + i, obj->obj.k + i + 1, (obj->obj.n - (size_t)i - 1) * sizeof(char *));
	memmove(obj->obj.v + i, obj->obj.v + i + 1,
		(obj->obj.n - (size_t)i - 1) * sizeof(struct cni_json *));
	obj->obj.n--;
	relink(obj, (size_t)i);
	v->parent = NULL;
	v->key = NULL;
	v->index = 0;
	return v;
}

bool json_has_duplicate_keys(const struct cni_json *obj)
{
	return obj && obj->type == JSON_OBJECT && obj->dup_keys;
}

void json_del(struct cni_json *obj, const char *key)
{
	json_free(json_take(obj, key));
}

struct cni_json *json_clone(const struct cni_json *j)
{
	if (!j)
		return NULL;
	struct cni_json *c = json_new(j->type);
	switch (j->type) {
	case JSON_BOOL:
		c->b = j->b;
		break;
	case JSON_NUMBER:
		c->num = xstrdup(j->num);
		break;
	case JSON_STRING:
		c->str = xstrdup(j->str);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < j->arr.n; i++)
			json_push(c, json_clone(j->arr.v[i]));
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < j->obj.n; i++)
			json_set(c, j->obj.k[i], json_clone(j->obj.v[i]));
		break;
	default:
		break;
	}
	return c;
}

/* Parsing: yajl's event parser builds the tree, so depth and size are ours
 * to bound (yajl_tree has no limits). */
struct pstate {
	struct cni_json *root;
	struct cni_json *stack[JSON_MAX_DEPTH + 1];
	int depth;
	char *pending_key;
	bool too_deep;
};

static int p_add(struct pstate *s, struct cni_json *v)
{
	if (!s->root) {
		s->root = v;
	} else {
		struct cni_json *top = s->stack[s->depth - 1];
		if (top->type == JSON_ARRAY) {
			json_push(top, v);
		} else {
			const char *key = s->pending_key ? s->pending_key : "";
			if (obj_find(top, key) >= 0)
				top->dup_keys = true;
			json_set(top, key, v);
			free(s->pending_key);
			s->pending_key = NULL;
		}
	}
	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
		if (s->depth >= JSON_MAX_DEPTH) {
			s->too_deep = true;
			return 0;
		}
		s->stack[s->depth++] = v;
	}
	return 1;
}

static int cb_null(void *ctx)
{
	return p_add(ctx, json_new(JSON_NULL));
}
static int cb_bool(void *ctx, int b)
{
	return p_add(ctx, json_new_bool(b));
}
static int cb_number(void *ctx, const char *s, size_t n)
{
	struct cni_json *j = json_new(JSON_NUMBER);
	j->num = xstrndup(s, n);
	return p_add(ctx, j);
}
static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
	struct cni_json *j = json_new(JSON_STRING);
	j->str = xstrndup((const char *)s, n);
	if (strlen(j->str) != n) {
		/* An embedded NUL cannot be a valid name, path or address;
		 * keeping it would silently truncate. */
		json_free(j);
		return 0;
	}
	return p_add(ctx, j);
}
static int cb_start_map(void *ctx)
{
	return p_add(ctx, json_new(JSON_OBJECT));
}
static int cb_map_key(void *ctx, const unsigned char *s, size_t n)
{
	struct pstate *st = ctx;
	free(st->pending_key);
	st->pending_key = xstrndup((const char *)s, n);
	return 1;
}
static int cb_end(void *ctx)
{
	struct pstate *st = ctx;
	if (st->depth > 0)
		st->depth--;
	return 1;
}
static int cb_start_array(void *ctx)
{
	return p_add(ctx, json_new(JSON_ARRAY));
}

static const yajl_callbacks parse_cbs = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_bool,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

struct cni_json *json_parse(const char *text, size_t len, struct cni_err *err)
{
	if (len > JSON_MAX_BYTES) {
		err_set(err, CNI_ERR_DECODE, "config too large: %zu bytes (limit %u)", len,
			JSON_MAX_BYTES);
		return NULL;
	}
	size_t ws = 0;
	while (ws < len && (text[ws] == ' ' || text[ws] == '\n' || text[ws] == '\t' || text[ws] == '\r'))
		ws++;
	if (ws == len) {
		err_set(err, CNI_ERR_DECODE, "empty JSON input");
		return NULL;
	}
	struct pstate st = {0};
	yajl_handle h = yajl_alloc(&parse_cbs, NULL, &st);
	if (!h)
		abort();
	yajl_status s = yajl_parse(h, (const unsigned char *)text, len);
	size_t at = yajl_get_bytes_consumed(h);
	if (s == yajl_status_ok) {
		s = yajl_complete_parse(h);
		at = len;
	}
	if (s != yajl_status_ok || !st.root) {
		if (st.too_deep) {
			err_set(err, CNI_ERR_DECODE, "JSON nested deeper than %d levels",
				JSON_MAX_DEPTH);
		} else if (s == yajl_status_ok) {
			err_set(err, CNI_ERR_DECODE, "empty JSON input");
		} else {
			unsigned char *m = yajl_get_error(h, 0, NULL, 0);
			char *msg = (char *)m;
			size_t n = strlen(msg);
			while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
				msg[--n] = 0;
			err_set(err, CNI_ERR_DECODE, "invalid JSON at byte %zu: %s", at, msg);
			yajl_free_error(h, m);
		}
		yajl_free(h);
		free(st.pending_key);
		json_free(st.root);
		return NULL;
	}
	yajl_free(h);
	free(st.pending_key);
	return st.root;
}

static void gen(yajl_gen g, const struct cni_json *j)
{
	switch (j->type) {
	case JSON_NULL:
		yajl_gen_null(g);
		break;
	case JSON_BOOL:
		yajl_gen_bool(g, j->b);
		break;
	case JSON_NUMBER:
		yajl_gen_number(g, j->num, strlen(j->num));
		break;
	case JSON_STRING:
		yajl_gen_string(g, (const unsigned char *)j->str, strlen(j->str));
		break;
	case JSON_ARRAY:
		yajl_gen_array_open(g);
		for (size_t i = 0; i < j->arr.n; i++)
			gen(g, j->arr.v[i]);
		yajl_gen_array_close(g);
		break;
	case JSON_OBJECT:
		yajl_gen_map_open(g);
		for (size_t i = 0; i < j->obj.n; i++) {
			yajl_gen_string(g, (const unsigned char *)j->obj.k[i], strlen(j->obj.k[i]));
			gen(g, j->obj.v[i]);
		}
		yajl_gen_map_close(g);
		break;
	}
}

char *json_dump(const struct cni_json *j, bool pretty)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		abort();
	if (pretty) {
		yajl_gen_config(g, yajl_gen_beautify, 1);
		yajl_gen_config(g, yajl_gen_indent_string, "    ");
	}
	gen(g, j);
	const unsigned char *buf;
	size_t len;
	yajl_gen_get_buf(g, &buf, &len);
	/* yajl's beautifier ends with a newline; callers add their own. */
	while (len && buf[len - 1] == '\n')
		len--;
	char *s = xstrndup((const char *)buf, len);
	yajl_gen_free(g);
	if (pretty) {
		/* yajl prints an empty container as "{", blank lines, "}";
		 * make it "{}". A raw newline only ever appears outside
		 * strings (yajl escapes it inside), so the scan is safe. */
		char *w = s;
		for (const char *r = s; *r;) {
			*w++ = *r;
			if (*r == '{' || *r == '[') {
				const char *q = r + 1;
				while (*q == ' ' || *q == '\n')
					q++;
				if (q > r + 1 && memchr(r + 1, '\n', (size_t)(q - r - 1)) &&
				    *q == (*r == '{' ? '}' : ']')) {
					r = q;
					continue;
				}
			}
			r++;
		}
		*w = 0;
	}
	return s;
}

/* Paths. */
static size_t path_append(const struct cni_json *j, char *buf, size_t size, size_t n)
{
	if (!j || !j->parent)
		return n;
	n = path_append(j->parent, buf, size, n);
	if (n >= size)
		return n;
	int w;
	if (j->parent->type == JSON_ARRAY)
		w = snprintf(buf + n, size - n, "[%zu]", j->index);
	else
		w = snprintf(buf + n, size - n, "%s%s", n ? "." : "", j->key ? j->key : "");
	return w < 0 ? n : n + (size_t)w;
}

const char *json_path(const struct cni_json *j, char *buf, size_t size)
{
	if (!size)
		return buf;
	buf[0] = 0;
	path_append(j, buf, size, 0);
	return buf;
}

const char *json_path_key(const struct cni_json *obj, const char *key, char *buf, size_t size)
{
	json_path(obj, buf, size);
	size_t n = strlen(buf);
	if (n + 1 < size)
		snprintf(buf + n, size - n, "%s%s", n ? "." : "", key);
	return buf;
}

__attribute__((format(printf, 3, 0))) static int verr(struct cni_err *err, const char *path,
							const char *fmt, va_list ap)
{
	char m[256];
	vsnprintf(m, sizeof(m), fmt, ap);
	return err_set(err, CNI_ERR_INVALID_CONFIG, "%s: %s", *path ? path : "config", m);
}

int json_err(struct cni_err *err, const struct cni_json *node, const char *fmt, ...)
{
	char p[160];
	json_path(node, p, sizeof(p));
	va_list ap;
	va_start(ap, fmt);
	verr(err, p, fmt, ap);
	va_end(ap);
	return -1;
}

int json_err_key(struct cni_err *err, const struct cni_json *obj, const char *key,
		 const char *fmt, ...)
{
	char p[160];
	json_path_key(obj, key, p, sizeof(p));
	va_list ap;
	va_start(ap, fmt);
	verr(err, p, fmt, ap);
	va_end(ap);
	return -1;
}

struct cni_json *json_get(const struct cni_json *obj, const char *key)
{
	ssize_t i = obj_find(obj, key);
	if (i < 0 || obj->obj.v[i]->type == JSON_NULL)
		return NULL;
	return obj->obj.v[i];
}

const char *json_str(const struct cni_json *j)
{
	return j && j->type == JSON_STRING ? j->str : NULL;
}

bool json_is(const struct cni_json *j, enum json_type t)
{
	return j && j->type == t;
}

static const char *type_name(enum json_type t)
{
	static const char *const names[] = {"null", "boolean", "number", "string", "array",
					    "object"};
	return names[t];
}

/* Common front of every getter: the node for key, 0 if absent (error if
 * required), -1 if present with another type. */
static int lookup(const struct cni_json *obj, const char *key, int flags, enum json_type want,
		  const char *what, const struct cni_json **out, struct cni_err *err)
{
	const struct cni_json *v = json_get(obj, key);
	if (!v) {
		if (flags & JSON_REQ)
			return json_err_key(err, obj, key, "missing (required %s)", what);
		return 0;
	}
	if (v->type != want)
		return json_err(err, v, "expected %s, got %s", what, type_name(v->type));
	*out = v;
	return 1;
}

int json_get_str(const struct cni_json *obj, const char *key, int flags, const char **out,
		 struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_STRING, "string", &v, err);
	if (r <= 0)
		return r;
	if ((flags & JSON_NONEMPTY) && !*v->str)
		return json_err(err, v, "must not be empty");
	*out = v->str;
	return 1;
}

int json_get_bool(const struct cni_json *obj, const char *key, int flags, bool *out,
		  struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_BOOL, "boolean", &v, err);
	if (r > 0)
		*out = v->b;
	return r;
}

int json_as_int(const struct cni_json *j, int64_t min, int64_t max, int64_t *out,
		struct cni_err *err)
{
	if (!j || j->type != JSON_NUMBER)
		return json_err(err, j, "expected integer");
	char *end;
	errno = 0;
	long long v = strtoll(j->num, &end, 10);
	if (*end) {
		/* "1e3" or "8.0": accept an exact integer value, as Go does
		 * not — but a rate written as 1e6 is common in hand-written
		 * configs and unambiguous. */
		double d = strtod(j->num, &end);
		if (*end || d != floor(d) || d < -9.2e18 || d > 9.2e18)
			return json_err(err, j, "expected integer, got %s", j->num);
		v = (long long)d;
	} else if (errno == ERANGE) {
		return json_err(err, j, "%s out of range", j->num);
	}
	if (v < min || v > max)
		return json_err(err, j, "%lld out of range [%" PRId64 ", %" PRId64 "]", v, min,
				max);
	*out = v;
	return 0;
}

int json_get_int(const struct cni_json *obj, const char *key, int flags, int64_t min, int64_t max,
		 int64_t *out, struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_NUMBER, "integer", &v, err);
	if (r <= 0)
		return r;
	return json_as_int(v, min, max, out, err) < 0 ? -1 : 1;
}

int json_get_uint(const struct cni_json *obj, const char *key, int flags, uint64_t max,
		  uint64_t *out, struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_NUMBER, "unsigned integer", &v, err);
	if (r <= 0)
		return r;
	char *end;
	if (v->num[0] == '-')
		return json_err(err, v, "must not be negative, got %s", v->num);
	errno = 0;
	unsigned long long u = strtoull(v->num, &end, 10);
	if (*end) {
		double d = strtod(v->num, &end);
		if (*end || d != floor(d) || d < 0 || d > 1.8e19)
			return json_err(err, v, "expected unsigned integer, got %s", v->num);
		u = (unsigned long long)d;
	} else if (errno == ERANGE) {
		return json_err(err, v, "%s out of range", v->num);
	}
	if (u > max)
		return json_err(err, v, "%llu out of range [0, %" PRIu64 "]", u, max);
	*out = u;
	return 1;
}

int json_get_double(const struct cni_json *obj, const char *key, int flags, double *out,
		    struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_NUMBER, "number", &v, err);
	if (r <= 0)
		return r;
	char *end;
	double d = strtod(v->num, &end);
	if (*end || !isfinite(d))
		return json_err(err, v, "not a number: %s", v->num);
	*out = d;
	return 1;
}

int json_get_obj(const struct cni_json *obj, const char *key, int flags,
		 const struct cni_json **out, struct cni_err *err)
{
	return lookup(obj, key, flags, JSON_OBJECT, "object", out, err);
}

int json_get_arr(const struct cni_json *obj, const char *key, int flags,
		 const struct cni_json **out, struct cni_err *err)
{
	return lookup(obj, key, flags, JSON_ARRAY, "array", out, err);
}

int json_as_ip(const struct cni_json *j, struct cni_ip *out, struct cni_err *err)
{
	if (!j || j->type != JSON_STRING)
		return json_err(err, j, "expected an IP address string");
	if (ip_parse(j->str, out) < 0)
		return json_err(err, j, "not an IP address: \"%s\"", j->str);
	return 0;
}

int json_as_cidr(const struct cni_json *j, struct cni_cidr *out, struct cni_err *err)
{
	if (!j || j->type != JSON_STRING)
		return json_err(err, j, "expected a CIDR string");
	if (ip_cidr_parse(j->str, out) < 0)
		return json_err(err, j, "not a CIDR: \"%s\"", j->str);
	return 0;
}

int json_get_ip(const struct cni_json *obj, const char *key, int flags, struct cni_ip *out,
		struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_STRING, "IP address string", &v, err);
	if (r <= 0)
		return r;
	return json_as_ip(v, out, err) < 0 ? -1 : 1;
}

int json_get_cidr(const struct cni_json *obj, const char *key, int flags, struct cni_cidr *out,
		  struct cni_err *err)
{
	const struct cni_json *v = NULL;
	int r = lookup(obj, key, flags, JSON_STRING, "CIDR string", &v, err);
	if (r <= 0)
		return r;
	return json_as_cidr(v, out, err) < 0 ? -1 : 1;
}

int json_get_strv(const struct cni_json *obj, const char *key, int flags, const char ***out,
		  size_t *n, struct cni_err *err)
{
	const struct cni_json *a;
	int r = json_get_arr(obj, key, flags, &a, err);
	if (r <= 0)
		return r;
	const char **v = xcalloc(a->arr.n + 1, sizeof(*v));
	for (size_t i = 0; i < a->arr.n; i++) {
		if (a->arr.v[i]->type != JSON_STRING) {
			free(v);
			return json_err(err, a->arr.v[i], "expected string");
		}
		v[i] = a->arr.v[i]->str;
	}
	*out = v;
	if (n)
		*n = a->arr.n;
	return 1;
}
