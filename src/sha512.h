/* SHA-512 (FIPS 180-4), needed for one thing: the container id the
 * reference cnitool derives from a netns path ("cnitool-" and the hex of the
 * first 10 bytes of its SHA-512), which `cni exec` and our cnitool must
 * reproduce so that either tool can delete what the other added. */
#ifndef CNI_SHA512_H
#define CNI_SHA512_H

#include "util.h"

#define SHA512_DIGEST_SIZE 64

void sha512_digest(const void *data, size_t len, uint8_t out[SHA512_DIGEST_SIZE]);

#endif
