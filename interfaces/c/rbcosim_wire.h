/* rbcosim_wire.h: internal to the rbcosim C client. msgpack encoding of request pieces and
 * lookups in decoded reply maps (PROTOCOL.md sections 2 to 4). Not installed. */
#ifndef RBCOSIM_WIRE_H
#define RBCOSIM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/* --- encoding (all return 0 on success, non-zero when the buffer could not grow) ---------- */

int wire_str(msgpack_packer *pk, const char *text);             /* str; NULL packs nil */
int wire_key(msgpack_packer *pk, const char *key);              /* the same, for map keys */
int wire_bool(msgpack_packer *pk, int value);
int wire_names(msgpack_packer *pk, const char *const *names, int n); /* array of str */
/* An inline array descriptor {"dtype": "<f8", "shape": [...], "data": bin}, C order. */
int wire_array(msgpack_packer *pk, const double *values, const size_t *shape, int ndims);
/* The envelope up to the content map's header: version, msg_id, msg_type, session, content. */
int wire_envelope(msgpack_packer *pk, const char *version, uint64_t msg_id,
                  const char *msg_type, const char *session, size_t n_content);

/* --- decoding ------------------------------------------------------------------------------ */

/* The value under `key` in a map, or NULL (also when `map` is NULL or not a map). */
const msgpack_object *wire_get(const msgpack_object *map, const char *key);
int wire_is_str(const msgpack_object *o, const char *text);  /* str equal to text */
/* Copies (malloc) a str value; NULL when not a str or out of memory (*oom then set to 1). */
char *wire_strdup(const msgpack_object *o, int *oom);
int wire_int(const msgpack_object *o, long long *out);    /* 0: it is an integer */
int wire_double(const msgpack_object *o, double *out);    /* 0: a float or an integer */
int wire_truth(const msgpack_object *o, int *out);        /* 0: a bool */

/* Checks that `o` is a "<f8" inline descriptor of exactly `shape` and copies the values to
 * `out` (which holds product(shape) doubles). Returns 0, or a static sentence saying what is
 * wrong. A NULL `out` only checks. */
const char *wire_read_array(const msgpack_object *o, const size_t *shape, int ndims,
                            double *out);

#endif /* RBCOSIM_WIRE_H */
