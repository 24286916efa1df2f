/* The few msgpack pieces the flexible solver's loop writes and reads (cosim/flex_loop.c): a
 * writer of strings and unsigned integers as msgpack-python packs them, and a bounds-checked
 * reader of maps, arrays, strings, unsigned integers, float64, bin and nil.  A reader function
 * returns 0 (and moves nothing) when the next object is not of its kind or runs past the end. */
#ifndef RBC_MSGPACK_LITE_H
#define RBC_MSGPACK_LITE_H

#include <stddef.h>
#include <stdint.h>

/* Write a str of n bytes (fixstr, str 8/16/32) or an unsigned integer (positive fixint, uint
 * 8/16/32/64, the smallest that holds it) at p; returns the bytes written (at most n + 5 and 9). */
size_t rbc_mp_put_str(unsigned char *p, const char *s, size_t n);
size_t rbc_mp_put_uint(unsigned char *p, uint64_t v);

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
