/* The few msgpack pieces the C loops write and read (cosim/flex_loop.c, cosim/served_loop.c):
 * writers of strings, unsigned integers and float64 as msgpack-python packs them, float64
 * arrays as raw little-endian bytes, and a bounds-checked
 * reader of maps, arrays, strings, unsigned integers, float64, bin and nil.  A reader function
 * returns 0 (and moves nothing) when the next object is not of its kind or runs past the end. */
#ifndef RBC_MSGPACK_LITE_H
#define RBC_MSGPACK_LITE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Write a str of n bytes (fixstr, str 8/16/32) or an unsigned integer (positive fixint, uint
 * 8/16/32/64, the smallest that holds it) at p; returns the bytes written (at most n + 5 and 9). */
size_t rbc_mp_put_str(unsigned char *p, const char *s, size_t n);
size_t rbc_mp_put_uint(unsigned char *p, uint64_t v);
/* Write a msgpack float 64 at p; returns 9. */
size_t rbc_mp_put_f64(unsigned char *p, double v);

/* float64 from / to 8 little-endian bytes, whatever the host's order. */
static inline double rbc_le_get_f64(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = (u << 8) | p[i];
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static inline void rbc_le_put_f64(unsigned char *p, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(u >> (8 * i));
}

/* n float64 as little-endian bytes at o; returns 8 n. */
static inline size_t rbc_le_put_f64s(unsigned char *o, const double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) rbc_le_put_f64(o + 8 * i, v[i]);
    return 8 * (size_t)n;
}

/* The n bytes of piece at o; returns n. */
static inline size_t rbc_put_bytes(unsigned char *o, const unsigned char *piece, size_t n) {
    memcpy(o, piece, n);
    return n;
}

typedef struct rbc_mp_reader {
    const unsigned char *p, *end;
} rbc_mp_reader;

int rbc_mp_map(rbc_mp_reader *r, uint32_t *n);
int rbc_mp_array(rbc_mp_reader *r, uint32_t *n);
int rbc_mp_str(rbc_mp_reader *r, const char **s, uint32_t *n);
int rbc_mp_bin(rbc_mp_reader *r, const unsigned char **b, uint32_t *n);
int rbc_mp_uint(rbc_mp_reader *r, uint64_t *v);
int rbc_mp_f64(rbc_mp_reader *r, double *v);
int rbc_mp_nil(rbc_mp_reader *r);
/* The next str equals the n bytes s (read past it), or not (0, nothing read). */
int rbc_mp_str_is(rbc_mp_reader *r, const char *s, size_t n);

#endif
