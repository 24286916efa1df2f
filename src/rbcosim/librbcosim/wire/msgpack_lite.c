/* msgpack pieces (see msgpack_lite.h); multi-byte lengths and numbers are big-endian. */
#include "msgpack_lite.h"

#include <string.h>

static size_t put_be(unsigned char *p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
    return (size_t)bytes;
}

size_t rbc_mp_put_str(unsigned char *p, const char *s, size_t n) {
    size_t h;
    if (n < 32) {
        p[0] = (unsigned char)(0xa0 | n);
        h = 1;
    } else if (n < 0x100) {
        p[0] = 0xd9;
        h = 1 + put_be(p + 1, n, 1);
    } else if (n < 0x10000) {
        p[0] = 0xda;
        h = 1 + put_be(p + 1, n, 2);
    } else {
        p[0] = 0xdb;
        h = 1 + put_be(p + 1, n, 4);
    }
    memcpy(p + h, s, n);
    return h + n;
}

size_t rbc_mp_put_uint(unsigned char *p, uint64_t v) {
    if (v < 0x80) {
        p[0] = (unsigned char)v;
        return 1;
    }
    int bytes = v < 0x100 ? 1 : v < 0x10000 ? 2 : v <= 0xffffffffu ? 4 : 8;
    p[0] = (unsigned char)(bytes == 1 ? 0xcc : bytes == 2 ? 0xcd : bytes == 4 ? 0xce : 0xcf);
    return 1 + put_be(p + 1, v, bytes);
}

size_t rbc_mp_put_f64(unsigned char *p, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    p[0] = 0xcb;
    return 1 + put_be(p + 1, u, 8);
}

/* The big-endian number of `bytes` bytes after the type byte, if they are there. */
static int get_be(const rbc_mp_reader *r, int bytes, uint64_t *v) {
    if (r->end - r->p < 1 + bytes) return 0;
    uint64_t x = 0;
    for (int i = 1; i <= bytes; i++) x = (x << 8) | r->p[i];
    *v = x;
    return 1;
}

/* A container or blob header: the fix form (type & ~fix_mask == fix, length in the mask) or
 * one of the three explicit forms at codes c8 (1-byte length; 0 for none), c16, c32. */
static int header(rbc_mp_reader *r, unsigned fix, unsigned fix_mask, unsigned c8, unsigned c16,
                  unsigned c32, uint32_t *n) {
    if (r->p >= r->end) return 0;
    unsigned c = r->p[0];
    uint64_t v;
    int bytes;
    if ((c & ~fix_mask) == fix) {
        v = c & fix_mask;
        bytes = 0;
    } else if (c8 && c == c8) {
        bytes = 1;
    } else if (c == c16) {
        bytes = 2;
    } else if (c == c32) {
        bytes = 4;
    } else {
        return 0;
    }
    if (bytes && !get_be(r, bytes, &v)) return 0;
    *n = (uint32_t)v;
    r->p += 1 + bytes;
    return 1;
}

int rbc_mp_map(rbc_mp_reader *r, uint32_t *n) { return header(r, 0x80, 0x0f, 0, 0xde, 0xdf, n); }

int rbc_mp_array(rbc_mp_reader *r, uint32_t *n) {
    return header(r, 0x90, 0x0f, 0, 0xdc, 0xdd, n);
}

/* A str or bin header then its n bytes, all inside the buffer. */
static int blob(rbc_mp_reader *r, int is_str, const unsigned char **b, uint32_t *n) {
    rbc_mp_reader s = *r;
    int ok = is_str ? header(&s, 0xa0, 0x1f, 0xd9, 0xda, 0xdb, n)
                    : header(&s, 0x100, 0, 0xc4, 0xc5, 0xc6, n);
    if (!ok || (size_t)(s.end - s.p) < *n) return 0;
    *b = s.p;
    r->p = s.p + *n;
    return 1;
}

int rbc_mp_str(rbc_mp_reader *r, const char **s, uint32_t *n) {
    return blob(r, 1, (const unsigned char **)s, n);
}

int rbc_mp_bin(rbc_mp_reader *r, const unsigned char **b, uint32_t *n) {
    return blob(r, 0, b, n);
}

int rbc_mp_uint(rbc_mp_reader *r, uint64_t *v) {
    if (r->p >= r->end) return 0;
    unsigned c = r->p[0];
    if (c < 0x80) {
        *v = c;
        r->p++;
        return 1;
    }
    if (c < 0xcc || c > 0xcf) return 0;
    int bytes = 1 << (c - 0xcc);
    if (!get_be(r, bytes, v)) return 0;
    r->p += 1 + bytes;
    return 1;
}

int rbc_mp_f64(rbc_mp_reader *r, double *v) {
    uint64_t bits;
    if (r->p >= r->end || r->p[0] != 0xcb || !get_be(r, 8, &bits)) return 0;
    memcpy(v, &bits, sizeof *v);
    r->p += 9;
    return 1;
}

int rbc_mp_nil(rbc_mp_reader *r) {
    if (r->p >= r->end || r->p[0] != 0xc0) return 0;
    r->p++;
    return 1;
}

int rbc_mp_str_is(rbc_mp_reader *r, const char *s, size_t n) {
    rbc_mp_reader t = *r;
    const char *got;
    uint32_t len;
    if (!rbc_mp_str(&t, &got, &len) || len != n || memcmp(got, s, n) != 0) return 0;
    *r = t;
    return 1;
}
