/* rbcosim_state.c: state, snapshot and life-cycle messages (save, restore, get_state,
 * set_state, heartbeat, detach, close; PROTOCOL.md section 5). */
#include <stdlib.h>
#include <string.h>

#include "rbcosim_internal.h"
#include "rbcosim_wire.h"

#define PK (&c->packer)

/* --- state --------------------------------------------------------------------------------- */

rbc_status rbc_save(rbc_client *c, const char *name, const char *path)
{
    const msgpack_object *content;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_save", 1, 0)) != RBC_OK)
        return status;
    status = rbc__begin(c, "save", 1, path != NULL ? 2 : 1);
    if (status == RBC_OK)
        status = rbc__packed(c, wire_key(PK, "name") ||
                                    wire_str(PK, name != NULL ? name : "default") ||
                                    (path != NULL && (wire_key(PK, "path") || wire_str(PK, path))));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    rbc__take_position(c, content);
    return rbc__ok(c);
}

rbc_status rbc_restore(rbc_client *c, const char *name, const char *path)
{
    const msgpack_object *content;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_restore", 1, 0)) != RBC_OK)
        return status;
    status = rbc__begin(c, "restore", 1, 1);
    if (status == RBC_OK)
        status = rbc__packed(c, path != NULL
                                    ? wire_key(PK, "path") || wire_str(PK, path)
                                    : wire_key(PK, "name") ||
                                          wire_str(PK, name != NULL ? name : "default"));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    rbc__take_position(c, content);
    return rbc__ok(c);
}

rbc_status rbc_get_state(rbc_client *c, unsigned char **blob, size_t *size, long *step,
                         double *time)
{
    const msgpack_object *content, *state;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_get_state", 1, 0)) != RBC_OK)
        return status;
    if (blob == NULL || size == NULL)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_get_state: blob and size must not be NULL");
    if ((status = rbc__begin(c, "get_state", 1, 0)) != RBC_OK ||
        (status = rbc__transact(c, &content)) != RBC_OK)
        return status;
    state = wire_get(content, "state");
    if (state == NULL || state->type != MSGPACK_OBJECT_BIN)
        return rbc__missing(c, "get_state", "state", "is missing or not bin");
    *blob = malloc(state->via.bin.size > 0 ? state->via.bin.size : 1);
    if (*blob == NULL)
        return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory for the state");
    memcpy(*blob, state->via.bin.ptr, state->via.bin.size);
    *size = state->via.bin.size;
    rbc__take_position(c, content);
    if (step != NULL)
        *step = c->step;
    if (time != NULL)
        *time = c->time;
    return rbc__ok(c);
}

rbc_status rbc_set_state(rbc_client *c, const unsigned char *blob, size_t size, long step)
{
    const msgpack_object *content;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_set_state", 1, 0)) != RBC_OK)
        return status;
    if (blob == NULL && size > 0)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument", "rbc_set_state: blob is NULL");
    status = rbc__begin(c, "set_state", 1, step >= 0 ? 2 : 1);
    if (status == RBC_OK)
        status = rbc__packed(c, wire_key(PK, "state") || msgpack_pack_bin(PK, size) ||
                                    (size > 0 && msgpack_pack_bin_body(PK, blob, size)) ||
                                    (step >= 0 && (wire_key(PK, "step") ||
                                                   msgpack_pack_long(PK, step))));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    rbc__take_position(c, content);
    return rbc__ok(c);
}

/* --- heartbeat, detach, close -------------------------------------------------------------- */

rbc_status rbc_heartbeat(rbc_client *c)
{
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_heartbeat", 0, 0)) != RBC_OK)
        return status;
    return rbc__simple_request(c, "heartbeat", c->client_id != NULL && c->session != NULL);
}

rbc_status rbc_detach(rbc_client *c)
{
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_detach", 1, 1)) != RBC_OK ||
        (status = rbc__simple_request(c, "detach", 1)) != RBC_OK)
        return status;
    free(c->client_id);
    c->client_id = NULL;
    c->n_points = c->n_joints = 0;
    return RBC_OK;
}

rbc_status rbc_close_session(rbc_client *c)
{
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_close_session", 1, 0)) != RBC_OK ||
        (status = rbc__simple_request(c, "close", 0)) != RBC_OK)
        return status;
    rbc__drop_direct(c);
    free(c->session);
    free(c->client_id);
    c->session = c->client_id = NULL;
    c->n_points = c->n_joints = 0;
    return RBC_OK;
}
