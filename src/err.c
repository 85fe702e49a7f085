#include "err.h"

#include <errno.h>
#include <stdarg.h>

#include "json.h"

/* The innermost failure wins: nothing is recorded over an earlier error.
 * details NULL leaves them empty. */
static _printf_(4, 0) void err_vset(struct cni_err *err, int code, const char *details,
				    const char *fmt, va_list ap)
{
	if (!err || err->code)
		return;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	err->code = code;
	snprintf(err->details, sizeof(err->details), "%s", details ? details : "");
}

int err_set(struct cni_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, code, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int err_errno(struct cni_err *err, int code, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, code, strerror(errnum < 0 ? -errnum : errnum), fmt, ap);
	va_end(ap);
	return -1;
}

int err_append(struct cni_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	size_t n = strlen(err->details);
	if (n && n + 2 < sizeof(err->details)) {
		memcpy(err->details + n, "; ", 3);
		n += 2;
	}
	if (n + 1 < sizeof(err->details)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->details + n, sizeof(err->details) - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

void err_print(const struct cni_err *err, const char *cni_version, FILE *f)
{
	struct cni_json *o = json_new(JSON_OBJECT);
	json_set(o, "cniVersion", json_new_str(cni_version ? cni_version : "1.1.0"));
	json_set(o, "code", json_new_uint((unsigned)(err->code ? err->code : CNI_ERR_INTERNAL)));
	json_set(o, "msg", json_new_str(err->msg[0] ? err->msg : "unknown error"));
	if (err->details[0])
		json_set(o, "details", json_new_str(err->details));
	char *s = json_dump(o, true);
	fprintf(f, "%s\n", s);
	fflush(f);
	free(s);
	json_free(o);
}

void err_log(const struct cni_err *err, const char *fmt, ...)
{
	va_list ap;
	flockfile(stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s%s%s\n", err->msg, err->details[0] ? ": " : "", err->details);
	funlockfile(stderr);
}
