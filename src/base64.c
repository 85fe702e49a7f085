#include "base64.h"

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len)
{
	const uint8_t *in = data;
	char *out = xmalloc((len + 2) / 3 * 4 + 1);
	char *o = out;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		*o++ = b64_alphabet[(v >> 18) & 63];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? b64_alphabet[v & 63] : '=';
	}
	*o = 0;
	return out;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64_alphabet, c) : NULL;
	return p ? (int)(p - b64_alphabet) : -1;
}

int base64_decode(const char *text, char **out, size_t *len)
{
	size_t n = strlen(text);
	if (n % 4)
		return -1;
	_cleanup_free_ char *buf = xmalloc(n / 4 * 3 + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int pad = 0;
		for (int j = 0; j < 4; j++) {
			char c = text[i + j];
			/* '=' only as the last one or two characters. */
			if (c == '=' && i + 4 == n && j >= 2) {
				pad++;
				v[j] = 0;
				continue;
			}
			if (pad || (v[j] = b64_value(c)) < 0)
				return -1;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		buf[k++] = (char)(w >> 16);
		if (pad < 2)
			buf[k++] = (char)(w >> 8);
		if (pad < 1)
			buf[k++] = (char)w;
	}
	buf[k] = 0;
	*len = k;
	*out = TAKE_PTR(buf);
	return 0;
}
