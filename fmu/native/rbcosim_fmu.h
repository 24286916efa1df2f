/* rbcosim_fmu.h: the FMI-independent core of the native rbcosim FMU (fmu/README.md, "The
 * native FMU"). One rbf_instance is one FMU instance: a thin client of `rbcosim serve`
 * (interfaces/c, one rbc_client attached to every interface point and joint of a session).
 * fmi2_native.c only translates FMI 2 calls into these functions.
 *
 * Units and frames are the session's (interfaces/c/rbcosim_client.h): SI, inertial frame,
 * unit quaternion scalar first. Value references index rbf_model.vars directly (0 is time).
 */
#ifndef RBCOSIM_FMU_H
#define RBCOSIM_FMU_H

#include <stddef.h>
#include <sys/types.h>

#include "rbcosim_client.h"

typedef enum rbf_kind {
    RBF_TIME,          /* vr 0, the independent variable (s) */
    RBF_WRENCH,        /* input: point owner, component index 0..5 (N, N m) */
    RBF_WRENCH_RATE,   /* input: its first time derivative (N/s, N m/s) */
    RBF_WRENCH_RATE2,  /* input: its second time derivative (N/s2, N m/s2) */
    RBF_POINT,         /* output: point owner, kinematics component 0..12 */
    RBF_ACCELERATION,  /* output: point owner, acceleration component 0..5 (m/s2, rad/s2) */
    RBF_FLEX,          /* input: joint owner, node kinematics component 0..12 */
    RBF_GAP,           /* output: joint owner, gap component 0..3 */
    RBF_PARAMETER,     /* parameter of any type: key is the scenario key */
    RBF_VECTOR_PARAMETER, /* parameter: component index 0..2 of the 3-vector at scenario key */
    RBF_ADDED_MASS,    /* parameter: point owner, element 6 i + j of its 6x6 added mass */
    RBF_ADDED_MASS_FRAME, /* String parameter: point owner, "point" or "inertial" */
    RBF_SERVER         /* String/Real parameter: key is address, session or timeout */
} rbf_kind;

/* A variable's FMI type. Integer and Boolean values are held as doubles (exact: an Integer
 * is an fmi2Integer / fmi3Int32, a Boolean 0 or 1). */
typedef enum rbf_type { RBF_REAL, RBF_INTEGER, RBF_BOOLEAN, RBF_STRING } rbf_type;

typedef struct rbf_var {
    const char *name;
    rbf_kind kind;
    int owner;         /* index into points or joints */
    int index;         /* component */
    rbf_type type;
    double start;      /* Real, Integer or Boolean start value */
    const char *start_string;
    const char *key;   /* scenario key (parameters) or server setting */
} rbf_var;

/* What the export writes into the generated table (model_table.c). */
typedef struct rbf_model {
    const char *identifier, *guid, *scenario_file;
    double start_time, macro_step; /* s */
    int n_points, n_joints, n_vars;
    const char *const *points, *const *joints;
    const int *joint_point; /* per joint: index of its interface point */
    const rbf_var *vars;
} rbf_model;

extern const rbf_model RBF_MODEL;

typedef enum rbf_state {
    RBF_INSTANTIATED, RBF_INITIALIZATION, RBF_STEPPING, RBF_TERMINATED, RBF_FAILED
} rbf_state;

/* Outcomes: OK; REFUSED (the call was not allowed or its arguments are bad, nothing changed,
 * the instance is now RBF_FAILED); DISCARD (a doStep that could not be done). */
typedef enum rbf_result { RBF_OK, RBF_REFUSED, RBF_DISCARD } rbf_result;

/* severity: 0 info, 1 warning, 2 error. */
typedef void (*rbf_log_fn)(void *host, int severity, const char *message);

typedef struct rbf_instance {
    const rbf_model *m;
    char *resources;       /* file system path of the FMU's resources folder */
    rbf_log_fn log;
    void *host;
    rbf_state state;
    int time_variable;     /* vr 0 (time) is a readable variable (FMI 3) */
    double *reals;         /* per vr (Real, Integer and Boolean variables) */
    char **strings;        /* per vr (NULL but for String variables) */
    double *wrench;        /* [n_points][3][6]: W, dW/dt, (d2W/dt2)/2, W(t_n + tau) =
                              sum_j c_j tau^j over a step from t_n */
    double *flex;          /* [n_joints][13] */
    int *flex_reported;    /* per joint: the host has set one of its flexible inputs */
    double *motions;       /* [n_points][19] at the current time */
    int wrench_pending;    /* wrench inputs changed since the last exchange */
    rbc_client *client;
    int owns_session, attached;
    long step;             /* session step index */
    double macro_step;     /* s, the session's (a cosim.macro_step parameter changes it) */
    pid_t server_pid;      /* a server this instance started, or 0 */
} rbf_instance;

rbf_instance *rbf_new(const char *resources, rbf_log_fn log, void *host);
void rbf_free(rbf_instance *inst);
void rbf_logf(rbf_instance *inst, int severity, const char *format, ...);

rbf_result rbf_get_reals(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                         double *value);
rbf_result rbf_set_reals(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                         const double *value);
/* Integer (type RBF_INTEGER) or Boolean (RBF_BOOLEAN: 0 false, else true) variables. */
rbf_result rbf_get_ints(rbf_instance *inst, const char *call, rbf_type type, const unsigned *vr,
                        size_t n, int *value);
rbf_result rbf_set_ints(rbf_instance *inst, const char *call, rbf_type type, const unsigned *vr,
                        size_t n, const int *value);
rbf_result rbf_get_strings(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                           const char **value);
rbf_result rbf_set_strings(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                           const char *const *value);

rbf_result rbf_enter_initialization(rbf_instance *inst, const char *call);
rbf_result rbf_exit_initialization(rbf_instance *inst, const char *call);
rbf_result rbf_do_step(rbf_instance *inst, const char *call, double t, double h);
rbf_result rbf_terminate(rbf_instance *inst, const char *call);
rbf_result rbf_reset(rbf_instance *inst, const char *call);
rbf_result rbf_refuse(rbf_instance *inst, const char *call, const char *reason);

/* FMU states are byte blobs (fmu_state.c): the same bytes in memory and serialized. */
rbf_result rbf_get_state(rbf_instance *inst, const char *call, unsigned char **blob,
                         size_t *size);
rbf_result rbf_set_state(rbf_instance *inst, const char *call, const unsigned char *blob,
                         size_t size);

/* fmu_session.c: the session on the server. */
rbf_result rbf_open_session(rbf_instance *inst, const char *call);
void rbf_close_session(rbf_instance *inst);
void rbf_publish(rbf_instance *inst, const rbc_exchange *x);
/* Store a Real value, and an input also where the session takes it (wrench, node). */
void rbf_store_real(rbf_instance *inst, unsigned vr, double value);

#endif /* RBCOSIM_FMU_H */
