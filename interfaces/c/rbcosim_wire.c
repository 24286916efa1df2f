/* rbcosim_wire.c: msgpack pieces of the rbcosim wire format (see rbcosim_wire.h). */
#include "rbcosim_wire.h"

#include <stdlib.h>
#include <string.h>

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* One double as little-endian bytes, whatever the host's byte order. */
static void double_to_le(double value, unsigned char bytes[8])
{
    uint64_t bits;
    int i;
    memcpy(&bits, &value, 8);
    for (i = 0; i < 8; ++i)
        bytes[i] = (unsigned char)(bits >> (8 * i));
}

static double double_from_le(const unsigned char bytes[8])
{
    uint64_t bits = 0;
    double value;
    int i;
    for (i = 7; i >= 0; --i)
        bits = (bits << 8) | bytes[i];
    memcpy(&value, &bits, 8);
    return value;
}

/* --- encoding ------------------------------------------------------------------------------ */

int wire_str(msgpack_packer *pk, const char *text)
{
    size_t n;
    if (text == NULL)
        return msgpack_pack_nil(pk);
    n = strlen(text);
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, text, n);
}

int wire_key(msgpack_packer *pk, const char *key)
{
    return wire_str(pk, key);
}

int wire_bool(msgpack_packer *pk, int value)
{
    return value ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

int wire_names(msgpack_packer *pk, const char *const *names, int n)
{
    int i;
    if (msgpack_pack_array(pk, (size_t)n))
        return -1;
    for (i = 0; i < n; ++i)
        if (wire_str(pk, names[i] != NULL ? names[i] : ""))
            return -1;
    return 0;
}

static int pack_doubles(msgpack_packer *pk, const double *values, size_t count)
{
    unsigned char bytes[8];
    size_t i;
    if (msgpack_pack_bin(pk, 8 * count))
        return -1;
    if (count == 0)
        return 0;
    if (host_is_little_endian())
        return msgpack_pack_bin_body(pk, values, 8 * count);
    for (i = 0; i < count; ++i) {
        double_to_le(values[i], bytes);
        if (msgpack_pack_bin_body(pk, bytes, 8))
            return -1;
    }
    return 0;
}

int wire_array(msgpack_packer *pk, const double *values, const size_t *shape, int ndims)
{
    size_t count = 1;
    int i;
    if (msgpack_pack_map(pk, 3) || wire_key(pk, "dtype") || wire_str(pk, "<f8") ||
        wire_key(pk, "shape") || msgpack_pack_array(pk, (size_t)ndims))
        return -1;
    for (i = 0; i < ndims; ++i) {
        if (msgpack_pack_uint64(pk, (uint64_t)shape[i]))
            return -1;
        count *= shape[i];
    }
    return wire_key(pk, "data") || pack_doubles(pk, values, count);
}

int wire_envelope(msgpack_packer *pk, const char *version, uint64_t msg_id,
                  const char *msg_type, const char *session, size_t n_content)
{
    return msgpack_pack_map(pk, 5) || wire_key(pk, "version") || wire_str(pk, version) ||
           wire_key(pk, "msg_id") || msgpack_pack_uint64(pk, msg_id) ||
           wire_key(pk, "msg_type") || wire_str(pk, msg_type) || wire_key(pk, "session") ||
           wire_str(pk, session) || wire_key(pk, "content") || msgpack_pack_map(pk, n_content);
}

/* --- decoding ------------------------------------------------------------------------------ */

const msgpack_object *wire_get(const msgpack_object *map, const char *key)
{
    size_t n = strlen(key);
    uint32_t i;
    if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (i = 0; i < map->via.map.size; ++i) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
            memcmp(k->via.str.ptr, key, n) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

int wire_is_str(const msgpack_object *o, const char *text)
{
    size_t n = strlen(text);
    return o != NULL && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
           memcmp(o->via.str.ptr, text, n) == 0;
}

char *wire_strdup(const msgpack_object *o, int *oom)
{
    char *copy;
    if (o == NULL || o->type != MSGPACK_OBJECT_STR)
        return NULL;
    copy = malloc((size_t)o->via.str.size + 1);
    if (copy == NULL) {
        if (oom != NULL)
            *oom = 1;
        return NULL;
    }
    memcpy(copy, o->via.str.ptr, o->via.str.size);
    copy[o->via.str.size] = '\0';
    return copy;
}

int wire_int(const msgpack_object *o, long long *out)
{
    if (o == NULL)
        return -1;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (uint64_t)INT64_MAX) {
        *out = (long long)o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = (long long)o->via.i64;
        return 0;
    }
    return -1;
}

int wire_double(const msgpack_object *o, double *out)
{
    long long i;
    if (o != NULL && (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)) {
        *out = o->via.f64;
        return 0;
    }
    if (wire_int(o, &i) == 0) {
        *out = (double)i;
        return 0;
    }
    return -1;
}

int wire_truth(const msgpack_object *o, int *out)
{
    if (o == NULL || o->type != MSGPACK_OBJECT_BOOLEAN)
        return -1;
    *out = o->via.boolean ? 1 : 0;
    return 0;
}

const char *wire_read_array(const msgpack_object *o, const size_t *shape, int ndims,
                            double *out)
{
    const msgpack_object *dims, *data;
    size_t count = 1, i;
    long long d;
    int k;
    if (o == NULL)
        return "is missing";
    if (o->type != MSGPACK_OBJECT_MAP)
        return "is not an array descriptor map";
    if (!wire_is_str(wire_get(o, "dtype"), "<f8"))
        return "has a dtype other than \"<f8\"";
    dims = wire_get(o, "shape");
    if (dims == NULL || dims->type != MSGPACK_OBJECT_ARRAY || dims->via.array.size != (uint32_t)ndims)
        return "has a shape of another rank than expected";
    for (k = 0; k < ndims; ++k) {
        if (wire_int(&dims->via.array.ptr[k], &d) != 0 || d < 0 || (size_t)d != shape[k])
            return "has another shape than expected";
        count *= shape[k];
    }
    data = wire_get(o, "data");
    if (data == NULL)
        return "has no inline \"data\" (buffer frames are not used by this client)";
    if (data->type != MSGPACK_OBJECT_BIN || data->via.bin.size != 8 * count)
        return "has data of the wrong byte length";
    if (out == NULL || count == 0)
        return NULL;
    if (host_is_little_endian()) {
        memcpy(out, data->via.bin.ptr, 8 * count);
        return NULL;
    }
    for (i = 0; i < count; ++i)
        out[i] = double_from_le((const unsigned char *)data->via.bin.ptr + 8 * i);
    return NULL;
}
