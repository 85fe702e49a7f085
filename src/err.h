/* The one error value. The innermost failure fills it; callers may append
 * context to details but never overwrite it. src/plugin.c prints it once,
 * as CNI error JSON on stdout. Fixed buffers: reporting never allocates. */
#ifndef CNI_ERR_H
#define CNI_ERR_H

#include <stdio.h>

#include "util.h"

/* Codes from SPEC.md section 5 ("Error"); 100+ are ours. */
enum {
	CNI_ERR_INCOMPATIBLE_VERSION = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_CONFIG = 7,
	CNI_ERR_TRY_AGAIN = 11,
	CNI_ERR_NOT_AVAILABLE = 50,
	CNI_ERR_LIMITED = 51,
	/* Plugin-specific failures (kernel refused, resource exhausted...):
	 * the reference reports these as code 999 with the Go error text. */
	CNI_ERR_INTERNAL = 999,
};

struct cni_err {
	int code;
	char msg[128];
	char details[512];
};

/* Set code and msg unless an error is already recorded (innermost wins).
 * Always returns -1 so callers can `return err_set(...)`. */
int err_set(struct cni_err *err, int code, const char *fmt, ...) _printf_(3, 4);
/* Like err_set, with strerror(errnum) (errnum may be negative) in details. */
int err_errno(struct cni_err *err, int code, int errnum, const char *fmt, ...) _printf_(4, 5);
/* Append "; text" to details (context from an outer caller). Returns -1. */
int err_append(struct cni_err *err, const char *fmt, ...) _printf_(2, 3);
static inline bool err_isset(const struct cni_err *err)
{
	return err->code != 0;
}
static inline void err_clear(struct cni_err *err)
{
	err->code = 0;
	err->msg[0] = err->details[0] = 0;
}
/* Print as CNI error JSON ({"cniVersion","code","msg","details"}). */
void err_print(const struct cni_err *err, const char *cni_version, FILE *f);
/* Log one line on stderr: the formatted prefix, ": ", msg and, when
 * there are details, ": " and details. For the tools' messages and for
 * failures that do not decide the outcome; the CNI error itself is
 * err_print's. */
void err_log(const struct cni_err *err, const char *fmt, ...) _printf_(2, 3);

#endif
