/* kbench-probe: a small JSON writer into a growing string buffer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

void jb_init(struct jbuf *b)
{
	b->s = NULL;
	b->len = b->cap = 0;
}

void jb_free(struct jbuf *b)
{
	free(b->s);
	jb_init(b);
}

static void jb_reserve(struct jbuf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (!s) {
		fputs("kbench-probe: error: out of memory\n", stderr);
		exit(KB_EXIT_SETUP);
	}
	b->s = s;
	b->cap = cap;
}

static void jb_putn(struct jbuf *b, const char *s, size_t n)
{
	jb_reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void jb_raw(struct jbuf *b, const char *s)
{
	jb_putn(b, s, strlen(s));
}

void jb_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	jb_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void jb_str(struct jbuf *b, const char *s)
{
	jb_putn(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		switch (*p) {
		case '"': jb_putn(b, "\\\"", 2); break;
		case '\\': jb_putn(b, "\\\\", 2); break;
		case '\n': jb_putn(b, "\\n", 2); break;
		case '\r': jb_putn(b, "\\r", 2); break;
		case '\t': jb_putn(b, "\\t", 2); break;
		case '\b': jb_putn(b, "\\b", 2); break;
		case '\f': jb_putn(b, "\\f", 2); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				snprintf(esc, sizeof esc, "\\u%04x", *p);
				jb_putn(b, esc, 6);
			} else {
				/* bytes >= 0x80 pass through: UTF-8 stays UTF-8.
				 * Invalid UTF-8 (e.g. a raw file name) would make
				 * the header invalid, so escape lone high bytes. */
				if (*p >= 0x80) {
					int len = (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3
						  : (*p & 0xf8) == 0xf0 ? 4 : 0;
					int ok = len > 0;
					for (int i = 1; ok && i < len; i++)
						ok = (p[i] & 0xc0) == 0x80;
					if (ok) {
						jb_putn(b, (const char *)p, (size_t)len);
						p += len - 1;
					} else {
						jb_putn(b, "\\ufffd", 6);
					}
				} else {
					jb_putn(b, (const char *)p, 1);
				}
			}
		}
	}
	jb_putn(b, "\"", 1);
}

void jb_comma(struct jbuf *b)
{
	if (b->len == 0)
		return;
	char last = b->s[b->len - 1];
	if (last != '[' && last != '{' && last != ':' && last != ',')
		jb_putn(b, ",", 1);
}

void jb_key(struct jbuf *b, const char *k)
{
	jb_comma(b);
	jb_str(b, k);
	jb_putn(b, ":", 1);
}

void jb_kstr(struct jbuf *b, const char *k, const char *v)
{
	jb_key(b, k);
	if (v)
		jb_str(b, v);
	else
		jb_raw(b, "null");
}

void jb_kint(struct jbuf *b, const char *k, long long v)
{
	jb_key(b, k);
	jb_printf(b, "%lld", v);
}

void jb_ku64(struct jbuf *b, const char *k, uint64_t v)
{
	jb_key(b, k);
	jb_printf(b, "%llu", (unsigned long long)v);
}

void jb_kdbl(struct jbuf *b, const char *k, double v, int prec)
{
	jb_key(b, k);
	if (!isfinite(v))
		jb_raw(b, "null"); /* JSON has no NaN/Inf */
	else
		jb_printf(b, "%.*f", prec, v);
}

void jb_kbool(struct jbuf *b, const char *k, int v)
{
	jb_key(b, k);
	jb_raw(b, v ? "true" : "false");
}
