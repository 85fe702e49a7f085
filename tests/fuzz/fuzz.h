/* libFuzzer entry point shared by the targets; replay.c drives the same
 * function over a corpus when the build has no libFuzzer. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
