/* Base64 (RFC 4648, standard alphabet, padded): the encoding Go's
 * encoding/json gives []byte fields, which is how the result cache stores
 * the network configuration. */
#ifndef CNI_BASE64_H
#define CNI_BASE64_H

#include "util.h"

/* Encode len bytes; returns an owned NUL-terminated string. */
char *base64_encode(const void *data, size_t len);
/* Decode text (padding required when the length is not a multiple of 4,
 * whitespace refused, as Go's StdEncoding). Returns 0 with an owned,
 * NUL-terminated buffer and its length, or -1 for malformed input. */
int base64_decode(const char *text, char **out, size_t *len);

#endif
