/* A small JSON tree on top of yajl, with typed getters that know where they
 * are: every node keeps its parent and key, so an error can name the full
 * path ("ipam.ranges[0][1].subnet: not a CIDR").
 *
 * Numbers keep their source text so a config passes through the runtime
 * unchanged. JSON null is treated as "absent" by the getters, as Go's
 * encoding/json does for the reference plugins. */
#ifndef CNI_JSON_H
#define CNI_JSON_H

#include "err.h"
#include "ip.h"

enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct cni_json {
	enum json_type type;
	/* Object: the parsed text repeated one of its keys (set by
	 * json_parse only; see json_has_duplicate_keys). */
	bool dup_keys;
	struct cni_json *parent;
	const char *key; /* borrowed from the parent object's key, or NULL */
	size_t index;	 /* position in the parent array or object */
	union {
		bool b;
		char *num; /* source text of a number */
		char *str;
		struct {
			struct cni_json **v;
			size_t n, cap;
		} arr;
		struct {
			char **k;
			struct cni_json **v;
			size_t n, cap;
		} obj;
	};
};

/* Limits for untrusted input: a config larger or deeper than these is a
 * decode error, never a crash. */
#define JSON_MAX_BYTES (4u << 20)
#define JSON_MAX_DEPTH 64

/* Parse text (len bytes, need not be NUL-terminated). Returns an owned tree,
 * or NULL with CNI_ERR_DECODE and the parser's position in err. */
struct cni_json *json_parse(const char *text, size_t len, struct cni_err *err);
void json_free(struct cni_json *j);
static inline void json_freep(struct cni_json **j)
{
	json_free(*j);
}

/* Serialize; pretty adds newlines and indentation. Owned string. */
char *json_dump(const struct cni_json *j, bool pretty);

/* Path of a node from the root, e.g. "ipam.ranges[0][1].subnet"; the root
 * itself is "" . Returns buf. */
const char *json_path(const struct cni_json *j, char *buf, size_t size);
/* Path of key inside obj (for "missing" errors). Returns buf. */
const char *json_path_key(const struct cni_json *obj, const char *key, char *buf, size_t size);
/* err_set with "<path>: " in front of the message. Returns -1. */
int json_err(struct cni_err *err, const struct cni_json *node, const char *fmt, ...) _printf_(3, 4);
/* Same for a key of obj that may be absent. Returns -1. */
int json_err_key(struct cni_err *err, const struct cni_json *obj, const char *key, const char *fmt,
		 ...) _printf_(4, 5);

/* Builders: new nodes are owned by the caller until put into a container. */
struct cni_json *json_new(enum json_type t);
struct cni_json *json_new_str(const char *s);
struct cni_json *json_new_int(int64_t v);
struct cni_json *json_new_uint(uint64_t v);
struct cni_json *json_new_bool(bool v);
struct cni_json *json_clone(const struct cni_json *j);
/* Take ownership of val; replaces an existing key in place. Returns val. */
struct cni_json *json_set(struct cni_json *obj, const char *key, struct cni_json *val);
/* Take ownership of val and append it. Returns val. */
struct cni_json *json_push(struct cni_json *arr, struct cni_json *val);
/* Remove key and return the detached node (owned), or NULL. */
struct cni_json *json_take(struct cni_json *obj, const char *key);
void json_del(struct cni_json *obj, const char *key);

/* Whether obj, as json_parse read it, had a key more than once. The tree
 * keeps the last value, in the place of the first, as Go's encoding/json
 * does; a plugin that must refuse duplicates (tuning's "sysctl", as the
 * reference) asks here. False for anything built, cloned or not an
 * object: a clone serializes without duplicates. */
bool json_has_duplicate_keys(const struct cni_json *obj);

/* Lookups. json_get returns a borrowed node or NULL when obj is not an
 * object, the key is absent, or its value is null. */
struct cni_json *json_get(const struct cni_json *obj, const char *key);
static inline size_t json_len(const struct cni_json *arr)
{
	return arr && arr->type == JSON_ARRAY ? arr->arr.n : 0;
}
static inline struct cni_json *json_at(const struct cni_json *arr, size_t i)
{
	return arr && arr->type == JSON_ARRAY && i < arr->arr.n ? arr->arr.v[i] : NULL;
}
const char *json_str(const struct cni_json *j); /* NULL unless a string */
bool json_is(const struct cni_json *j, enum json_type t);

/* Typed getters. flags: JSON_REQ makes an absent key an error. Each returns
 * 1 when the key was present and stored in *out, 0 when absent (*out left
 * as the caller's default), -1 with a CNI_ERR_INVALID_CONFIG error naming
 * the path when present with the wrong type or value. */
enum { JSON_REQ = 1, JSON_NONEMPTY = 2 };
int json_get_str(const struct cni_json *obj, const char *key, int flags, const char **out,
		 struct cni_err *err);
int json_get_bool(const struct cni_json *obj, const char *key, int flags, bool *out,
		  struct cni_err *err);
int json_get_int(const struct cni_json *obj, const char *key, int flags, int64_t min, int64_t max,
		 int64_t *out, struct cni_err *err);
int json_get_uint(const struct cni_json *obj, const char *key, int flags, uint64_t max,
		  uint64_t *out, struct cni_err *err);
int json_get_double(const struct cni_json *obj, const char *key, int flags, double *out,
		    struct cni_err *err);
int json_get_obj(const struct cni_json *obj, const char *key, int flags,
		 const struct cni_json **out, struct cni_err *err);
int json_get_arr(const struct cni_json *obj, const char *key, int flags,
		 const struct cni_json **out, struct cni_err *err);
int json_get_ip(const struct cni_json *obj, const char *key, int flags, struct cni_ip *out,
		struct cni_err *err);
/* A CIDR; host bits allowed (an interface address). */
int json_get_cidr(const struct cni_json *obj, const char *key, int flags, struct cni_cidr *out,
		  struct cni_err *err);
/* An array of strings; *out is an owned NULL-terminated array of borrowed
 * strings (free only the array). */
int json_get_strv(const struct cni_json *obj, const char *key, int flags, const char ***out,
		  size_t *n, struct cni_err *err);

/* Value conversions of a node itself (for array items); same 0/-1 rules. */
int json_as_int(const struct cni_json *j, int64_t min, int64_t max, int64_t *out,
		struct cni_err *err);
int json_as_ip(const struct cni_json *j, struct cni_ip *out, struct cni_err *err);
int json_as_cidr(const struct cni_json *j, struct cni_cidr *out, struct cni_err *err);

#endif
