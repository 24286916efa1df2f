/* rbcosim_client.c: the messages of the rbcosim protocol (PROTOCOL.md section 5) on top of
 * rbcosim_transport.c. Content keys are packed in the order rbcosim_client.h documents. */
#include <stdlib.h>
#include <string.h>

#include "rbcosim_internal.h"
#include "rbcosim_wire.h"

#define PK (&c->packer)

/* --- checks and reply fields --------------------------------------------------------------- */

rbc_status rbc__need_client(const rbc_client *c)
{
    return c == NULL ? RBC_ERR_ARGUMENT : RBC_OK;
}

/* Refuses a request while a step is in flight, and one that needs a session or attachment
 * the client does not have. */
rbc_status rbc__ready_for(rbc_client *c, const char *what, int session, int attached)
{
    if (c->step_in_flight)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "%s: a step is in flight; call rbc_step_wait first", what);
    if (session && c->session == NULL)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "%s: no session; call rbc_create_session or rbc_join_session first", what);
    if (attached && c->client_id == NULL)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "%s: not attached; call rbc_attach first", what);
    return RBC_OK;
}

/* Takes the step index and time a reply reports, where it has them. */
void rbc__take_position(rbc_client *c, const msgpack_object *content)
{
    long long step;
    double time;
    if (wire_int(wire_get(content, "step"), &step) == 0)
        c->step = (long)step;
    if (wire_double(wire_get(content, "time"), &time) == 0)
        c->time = time;
}

rbc_status rbc__missing(rbc_client *c, const char *reply, const char *field, const char *why)
{
    return rbc__fail(c, RBC_ERR_BAD_REPLY, "bad_reply", "the %s reply's field %s %s", reply,
                     field, why);
}

/* The coupling settings of a reply (protocol 1.2), or zeros when it has none. */
static void read_coupling(const msgpack_object *content, rbc_coupling *out)
{
    const msgpack_object *map = wire_get(content, "coupling");
    const msgpack_object *scheme = wire_get(map, "scheme");
    long long i;
    double d;
    int b;
    memset(out, 0, sizeof *out);
    if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
        return;
    if (scheme != NULL && scheme->type == MSGPACK_OBJECT_STR) {
        size_t n = scheme->via.str.size;
        if (n >= sizeof out->scheme)
            n = sizeof out->scheme - 1; /* no scheme name is that long; truncated, not overrun */
        memcpy(out->scheme, scheme->via.str.ptr, n);
        out->scheme[n] = '\0';
    }
    if (wire_int(wire_get(map, "extrapolation"), &i) == 0)
        out->extrapolation = (int)i;
    if (wire_int(wire_get(map, "micro_steps"), &i) == 0)
        out->micro_steps = (int)i;
    if (wire_double(wire_get(map, "macro_step"), &d) == 0)
        out->macro_step = d;
    if (wire_double(wire_get(map, "t_end"), &d) == 0)
        out->t_end = d;
    if (wire_int(wire_get(map, "n_steps"), &i) == 0)
        out->n_steps = (long)i;
    if (wire_int(wire_get(map, "output_every"), &i) == 0)
        out->output_every = (int)i;
    if (wire_truth(wire_get(map, "added_mass"), &b) == 0)
        out->added_mass = b;
}

/* Reads kinematics [n_points][13], motions [n_points][19] (optional) and, with_gaps, gaps
 * [n_joints][4] into the client's arrays: everything is checked before anything is copied. */
static rbc_status read_exchange(rbc_client *c, const char *reply, const msgpack_object *content,
                                int with_gaps, rbc_exchange *out)
{
    size_t kin_shape[2], mot_shape[2], gap_shape[2];
    const msgpack_object *kin = wire_get(content, "kinematics");
    const msgpack_object *mot = wire_get(content, "motions");
    const msgpack_object *gaps = wire_get(content, "gaps");
    const char *why;
    long long step;
    double time;
    kin_shape[0] = mot_shape[0] = (size_t)c->n_points;
    gap_shape[0] = (size_t)c->n_joints;
    kin_shape[1] = 13;
    mot_shape[1] = 19;
    gap_shape[1] = 4;
    if (wire_int(wire_get(content, "step"), &step) != 0)
        return rbc__missing(c, reply, "step", "is missing or not an integer");
    if (wire_double(wire_get(content, "time"), &time) != 0)
        return rbc__missing(c, reply, "time", "is missing or not a number");
    if ((why = wire_read_array(kin, kin_shape, 2, NULL)) != NULL)
        return rbc__missing(c, reply, "kinematics", why);
    if (mot != NULL && (why = wire_read_array(mot, mot_shape, 2, NULL)) != NULL)
        return rbc__missing(c, reply, "motions", why);
    if (with_gaps && (why = wire_read_array(gaps, gap_shape, 2, NULL)) != NULL)
        return rbc__missing(c, reply, "gaps", why);
    if (rbc__reserve(&c->kinematics, 13 * kin_shape[0]) != 0 ||
        rbc__reserve(&c->motions, 19 * mot_shape[0]) != 0 ||
        rbc__reserve(&c->gaps, 4 * gap_shape[0]) != 0)
        return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory for the %s reply",
                         reply);
    wire_read_array(kin, kin_shape, 2, c->kinematics.values);
    if (mot != NULL)
        wire_read_array(mot, mot_shape, 2, c->motions.values);
    if (with_gaps)
        wire_read_array(gaps, gap_shape, 2, c->gaps.values);
    c->step = (long)step;
    c->time = time;
    if (out != NULL) {
        out->step = c->step;
        out->time = c->time;
        out->n_points = c->n_points;
        out->n_joints = c->n_joints;
        out->kinematics = c->kinematics.values;
        out->motions = mot != NULL ? c->motions.values : NULL;
        out->gaps = with_gaps ? c->gaps.values : NULL;
    }
    return rbc__ok(c);
}

/* A request with no content fields other than the client id (if attached) and none else. */
rbc_status rbc__simple_request(rbc_client *c, const char *msg_type, int with_client)
{
    const msgpack_object *content;
    rbc_status status = rbc__begin(c, msg_type, 1, with_client ? 1 : 0);
    if (status == RBC_OK && with_client)
        status = rbc__packed(c, wire_key(PK, "client") || wire_str(PK, c->client_id));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    rbc__take_position(c, content);
    return rbc__ok(c);
}

/* --- hello and sessions -------------------------------------------------------------------- */

rbc_status rbc_hello(rbc_client *c, const char *client_name)
{
    const msgpack_object *content, *version;
    rbc_status status;
    char *copy;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_hello", 0, 0)) != RBC_OK)
        return status;
    status = rbc__begin(c, "hello", 0, client_name != NULL ? 2 : 1);
    if (status == RBC_OK)
        status = rbc__packed(c, wire_key(PK, "protocol_version") ||
                                    wire_str(PK, RBC_PROTOCOL_VERSION) ||
                                    (client_name != NULL &&
                                     (wire_key(PK, "client_name") || wire_str(PK, client_name))));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    version = wire_get(content, "protocol_version");
    if (version == NULL || version->type != MSGPACK_OBJECT_STR)
        return rbc__missing(c, "hello", "protocol_version", "is missing or not a string");
    if ((copy = wire_strdup(version, NULL)) == NULL)
        return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory");
    if (atoi(copy) != RBC_PROTOCOL_MAJOR || strchr(copy, '.') == NULL) {
        status = rbc__fail(c, RBC_ERR_VERSION, "incompatible_version",
                           "the server speaks protocol %s; this client speaks %s (major %d)", copy,
                           RBC_PROTOCOL_VERSION, RBC_PROTOCOL_MAJOR);
        free(copy);
        return status;
    }
    free(c->server_version);
    c->server_version = copy;
    return rbc__ok(c);
}

const char *rbc_server_version(const rbc_client *c)
{
    return c != NULL && c->server_version != NULL ? c->server_version : "";
}

static size_t session_fields(const rbc_session_options *o)
{
    if (o == NULL)
        return 1;
    return 1 + (o->n_overrides > 0) + (o->base_dir != NULL) + (o->barrier_timeout > 0) +
           (o->output_every > 0) + (o->snapshot_every > 0) + (o->wait_for_joints != 0);
}

static int pack_overrides(rbc_client *c, const rbc_session_options *o)
{
    int i;
    if (wire_key(PK, "overrides") || msgpack_pack_map(PK, (size_t)o->n_overrides))
        return -1;
    for (i = 0; i < o->n_overrides; ++i)
        if (wire_str(PK, o->override_keys[i]) || wire_str(PK, o->override_values[i]))
            return -1;
    return 0;
}

/* Options in the Python client's order: overrides, base_dir, barrier_timeout, output_every,
 * snapshot_every, wait_for_joints; each only when set. */
static int pack_session_options(rbc_client *c, const rbc_session_options *o)
{
    if (o == NULL)
        return 0;
    return (o->n_overrides > 0 && pack_overrides(c, o)) ||
           (o->base_dir != NULL && (wire_key(PK, "base_dir") || wire_str(PK, o->base_dir))) ||
           (o->barrier_timeout > 0 && (wire_key(PK, "barrier_timeout") ||
                                       msgpack_pack_double(PK, o->barrier_timeout))) ||
           (o->output_every > 0 &&
            (wire_key(PK, "output_every") || msgpack_pack_int(PK, o->output_every))) ||
           (o->snapshot_every > 0 &&
            (wire_key(PK, "snapshot_every") || msgpack_pack_int(PK, o->snapshot_every))) ||
           (o->wait_for_joints != 0 &&
            (wire_key(PK, "wait_for_joints") || wire_bool(PK, 1)));
}

static rbc_status check_options(rbc_client *c, const rbc_session_options *o)
{
    int i;
    if (o == NULL || o->n_overrides <= 0)
        return RBC_OK;
    if (o->override_keys == NULL || o->override_values == NULL)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_create_session: %d overrides but no keys or values", o->n_overrides);
    for (i = 0; i < o->n_overrides; ++i)
        if (o->override_keys[i] == NULL || o->override_values[i] == NULL)
            return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                             "rbc_create_session: override %d has a NULL key or value", i);
    return RBC_OK;
}

rbc_status rbc_create_session(rbc_client *c, const char *scenario_path,
                              const char *scenario_text, const rbc_session_options *options)
{
    const msgpack_object *content;
    rbc_status status;
    char *session;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_create_session", 0, 0)) != RBC_OK)
        return status;
    if ((scenario_path == NULL) == (scenario_text == NULL))
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_create_session: give exactly one of a scenario path or its text");
    if ((status = check_options(c, options)) != RBC_OK)
        return status;
    status = rbc__begin(c, "create_session", 0, session_fields(options));
    if (status == RBC_OK)
        status = rbc__packed(c, (scenario_path != NULL
                                     ? wire_key(PK, "scenario") || wire_str(PK, scenario_path)
                                     : wire_key(PK, "text") || wire_str(PK, scenario_text)) ||
                                    pack_session_options(c, options));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    session = wire_strdup(wire_get(content, "session"), NULL);
    if (session == NULL)
        return rbc__missing(c, "create_session", "session", "is missing or not a string");
    free(c->session);
    c->session = session;
    free(c->client_id);
    c->client_id = NULL;
    c->n_points = c->n_joints = 0;
    rbc__take_position(c, content);
    read_coupling(content, &c->coupling);
    rbc__use_direct(c, content);
    return rbc__ok(c);
}

rbc_status rbc_join_session(rbc_client *c, const char *session_id)
{
    rbc_status status;
    char *previous;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_join_session", 0, 0)) != RBC_OK)
        return status;
    if (session_id == NULL || session_id[0] == '\0')
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_join_session: the session id is empty");
    previous = c->session;
    c->session = NULL;
    if (rbc__set_string(&c->session, session_id) != 0) {
        c->session = previous;
        return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory");
    }
    status = rbc__simple_request(c, "heartbeat", 0); /* checks the id; unknown_session otherwise */
    if (status != RBC_OK) {
        free(c->session);
        c->session = previous;
        return status;
    }
    free(previous);
    free(c->client_id);
    c->client_id = NULL;
    c->n_points = c->n_joints = 0;
    return RBC_OK;
}

const char *rbc_session_id(const rbc_client *c)
{
    return c != NULL && c->session != NULL ? c->session : "";
}

/* --- attach, added mass -------------------------------------------------------------------- */

static rbc_status check_names(rbc_client *c, const char *const *names, int n, const char *what)
{
    int i;
    if (n < 0 || (n > 0 && names == NULL))
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_attach: %d %s but no names", n, what);
    for (i = 0; i < n; ++i)
        if (names[i] == NULL)
            return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                             "rbc_attach: %s name %d is NULL", what, i);
    return RBC_OK;
}

rbc_status rbc_attach(rbc_client *c, const char *const *points, int n_points,
                      const char *const *joints, int n_joints, const char *name, int force,
                      rbc_coupling *coupling, rbc_exchange *initial)
{
    const msgpack_object *content;
    rbc_status status;
    char *client_id;
    int old_points, old_joints;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_attach", 1, 0)) != RBC_OK ||
        (status = check_names(c, points, n_points, "points")) != RBC_OK ||
        (status = check_names(c, joints, n_joints, "joints")) != RBC_OK)
        return status;
    status = rbc__begin(c, "attach", 1, 5);
    if (status == RBC_OK)
        status = rbc__packed(
            c, wire_key(PK, "points") || wire_names(PK, points, n_points) ||
                   wire_key(PK, "joints") || wire_names(PK, joints, n_joints) ||
                   wire_key(PK, "name") || wire_str(PK, name != NULL ? name : "") ||
                   wire_key(PK, "force") || wire_bool(PK, force) || wire_key(PK, "motions") ||
                   wire_bool(PK, 1));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    if ((client_id = wire_strdup(wire_get(content, "client"), NULL)) == NULL)
        return rbc__missing(c, "attach", "client", "is missing or not a string");
    old_points = c->n_points;
    old_joints = c->n_joints;
    c->n_points = n_points;
    c->n_joints = n_joints;
    status = read_exchange(c, "attach", content, 0, initial);
    if (status != RBC_OK) {
        c->n_points = old_points;
        c->n_joints = old_joints;
        free(client_id);
        return status;
    }
    free(c->client_id);
    c->client_id = client_id;
    read_coupling(content, &c->coupling);
    if (coupling != NULL)
        *coupling = c->coupling;
    if (c->direct_session == NULL || strcmp(c->direct_session, c->session) != 0)
        rbc__use_direct(c, content);
    return RBC_OK;
}

rbc_status rbc_set_added_mass(rbc_client *c, const double *added_mass,
                              const char *const *frames)
{
    size_t shape[3];
    rbc_status status;
    const msgpack_object *content;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_set_added_mass", 1, 1)) != RBC_OK)
        return status;
    if (added_mass == NULL)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_set_added_mass: the added mass is NULL");
    shape[0] = (size_t)c->n_points;
    shape[1] = shape[2] = 6;
    status = rbc__begin(c, "set_added_mass", 1, frames != NULL ? 3 : 2);
    if (status == RBC_OK)
        status = rbc__packed(c, wire_key(PK, "client") || wire_str(PK, c->client_id) ||
                                    wire_key(PK, "added_mass") ||
                                    wire_array(PK, added_mass, shape, 3) ||
                                    (frames != NULL && (wire_key(PK, "frames") ||
                                                        wire_names(PK, frames, c->n_points))));
    if (status == RBC_OK)
        status = rbc__transact(c, &content);
    if (status != RBC_OK)
        return status;
    rbc__take_position(c, content);
    return rbc__ok(c);
}

/* --- report and step ----------------------------------------------------------------------- */

static rbc_status check_inputs(rbc_client *c, const rbc_inputs *in, int is_step)
{
    const char *what = is_step ? "rbc_step" : "rbc_report";
    if (is_step && c->n_points > 0 && (in == NULL || in->wrench == NULL))
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "%s: a step needs the wrench of each of the client's %d points", what,
                         c->n_points);
    if (in != NULL && in->wrench != NULL && (in->wrench_terms < 1 || in->wrench_terms > 3))
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "%s: wrench_terms must be 1, 2 or 3, got %d", what, in->wrench_terms);
    return RBC_OK;
}

/* The inputs present, in the packing order: flex_kinematics, flex_energy, wrench (or
 * wrench_polynomial), interface_jacobian, flex_kinematics_at. */
static size_t input_fields(const rbc_client *c, const rbc_inputs *in)
{
    if (in == NULL)
        return 0;
    return (c->n_joints > 0 && in->flex_kinematics != NULL) +
           (c->n_joints > 0 && in->flex_energy != NULL) +
           (c->n_points > 0 && in->wrench != NULL) + (in->interface_jacobian != NULL) +
           (in->kinematics_at_end != 0);
}

static int pack_wrench(rbc_client *c, const rbc_inputs *in)
{
    size_t shape[3];
    shape[0] = (size_t)c->n_points;
    if (in->wrench_terms == 1) {
        shape[1] = 6;
        return wire_key(PK, "wrench") || wire_array(PK, in->wrench, shape, 2);
    }
    shape[1] = (size_t)in->wrench_terms;
    shape[2] = 6;
    return wire_key(PK, "wrench_polynomial") || wire_array(PK, in->wrench, shape, 3);
}

static int pack_inputs(rbc_client *c, const rbc_inputs *in)
{
    size_t kin[2], energy[1], jac[4];
    kin[0] = energy[0] = (size_t)c->n_joints;
    kin[1] = 13;
    jac[0] = (size_t)c->n_points;
    jac[1] = 2;
    jac[2] = jac[3] = 6;
    if (in == NULL)
        return 0;
    return (c->n_joints > 0 && in->flex_kinematics != NULL &&
            (wire_key(PK, "flex_kinematics") || wire_array(PK, in->flex_kinematics, kin, 2))) ||
           (c->n_joints > 0 && in->flex_energy != NULL &&
            (wire_key(PK, "flex_energy") || wire_array(PK, in->flex_energy, energy, 1))) ||
           (c->n_points > 0 && in->wrench != NULL && pack_wrench(c, in)) ||
           (in->interface_jacobian != NULL &&
            (wire_key(PK, "interface_jacobian") ||
             wire_array(PK, in->interface_jacobian, jac, 4))) ||
           (in->kinematics_at_end != 0 &&
            (wire_key(PK, "flex_kinematics_at") || wire_str(PK, "end")));
}

/* Packs and sends a step or report: client, step, then the inputs. */
static rbc_status send_inputs(rbc_client *c, const char *msg_type, const rbc_inputs *in)
{
    rbc_status status = rbc__begin(c, msg_type, 1, 2 + input_fields(c, in));
    if (status == RBC_OK)
        status = rbc__packed(c, wire_key(PK, "client") || wire_str(PK, c->client_id) ||
                                    wire_key(PK, "step") || msgpack_pack_long(PK, c->step) ||
                                    pack_inputs(c, in));
    if (status == RBC_OK)
        status = rbc__send(c);
    return status;
}

rbc_status rbc_report(rbc_client *c, const rbc_inputs *inputs, rbc_exchange *out)
{
    const msgpack_object *content;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_report", 1, 1)) != RBC_OK ||
        (status = check_inputs(c, inputs, 0)) != RBC_OK ||
        (status = send_inputs(c, "report", inputs)) != RBC_OK ||
        (status = rbc__await(c, c->last_id, &content)) != RBC_OK)
        return status;
    return read_exchange(c, "report", content, 1, out);
}

rbc_status rbc_step_send(rbc_client *c, const rbc_inputs *inputs)
{
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if ((status = rbc__ready_for(c, "rbc_step_send", 1, 1)) != RBC_OK ||
        (status = check_inputs(c, inputs, 1)) != RBC_OK ||
        (status = send_inputs(c, "step", inputs)) != RBC_OK)
        return status;
    c->step_in_flight = 1;
    c->step_id = c->last_id;
    return rbc__ok(c);
}

rbc_status rbc_step_wait(rbc_client *c, rbc_exchange *out)
{
    const msgpack_object *content;
    rbc_status status;
    if (rbc__need_client(c) != RBC_OK)
        return RBC_ERR_ARGUMENT;
    if (!c->step_in_flight)
        return rbc__fail(c, RBC_ERR_ARGUMENT, "invalid_argument",
                         "rbc_step_wait: no step in flight; call rbc_step_send first");
    status = rbc__await(c, c->step_id, &content);
    if (status == RBC_ERR_TIMEOUT)
        return status; /* still in flight: rbc_step_wait may be called again */
    c->step_in_flight = 0;
    if (status != RBC_OK)
        return status;
    return read_exchange(c, "step", content, 1, out);
}

rbc_status rbc_step(rbc_client *c, const rbc_inputs *inputs, rbc_exchange *out)
{
    rbc_status status = rbc_step_send(c, inputs);
    if (status != RBC_OK)
        return status;
    status = rbc_step_wait(c, out);
    if (status == RBC_ERR_TIMEOUT)
        c->step_in_flight = 0; /* rbc_step gives up; a late reply is dropped by its parent_id */
    return status;
}

long rbc_step_index(const rbc_client *c)
{
    return c != NULL ? c->step : 0;
}

double rbc_time(const rbc_client *c)
{
    return c != NULL ? c->time : 0.0;
}

