/* rbcosim_fmu.h: the FMI-independent core of the native rbcosim FMU (fmu/README.md, "The
 * native FMU"). One rbf_instance is one FMU instance. fmi2_native.c / fmi3_native.c only
 * translate FMI calls into these functions (fmu_core.c, fmu_state.c), which reach the model
 * through one of two backends, chosen when the binary is linked (the rbf_backend_* functions
 * below):
 *   fmu_session.c  server-client (`export-fmu --native --address ...`): a thin client of
 *                  `rbcosim serve` (interfaces/c, one rbc_client attached to every interface
 *                  point and joint of a session);
 *   fmu_local.c    self-contained (`export-fmu --native`): the rigid core of librbcosim
 *                  compiled in, the model read from resources/model.bin.
 *
 * Units and frames are the session's (interfaces/c/rbcosim_client.h): SI, inertial frame,
 * unit quaternion scalar first. Value references index rbf_model.vars directly (0 is time).
 */
#ifndef RBCOSIM_FMU_H
#define RBCOSIM_FMU_H

#include <stddef.h>
#include <sys/types.h>

struct rbc_client;  /* interfaces/c (server-client backend only) */

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
    RBF_SERVER,        /* String/Real parameter: key is address, session or timeout */
    RBF_BODY,          /* output (self-contained): body owner, component 0..12 of
                          [x y z q0 q1 q2 q3 vx vy vz wx wy wz], wx..wz in the body frame */
    RBF_ACTUATOR,      /* input (self-contained): a joint's actuator torque (N m) or force
                          (N), applied through rbf_model.actuations */
    RBF_JOINT          /* output: rbf_model.coordinate_joints owner, field index of its
                          kind's coordinates (fmu_joints.c) */
} rbf_kind;

/* A variable's FMI type. Integer and Boolean values are held as doubles (exact: an Integer
 * is an fmi2Integer / fmi3Int32, a Boolean 0 or 1). */
typedef enum rbf_type { RBF_REAL, RBF_INTEGER, RBF_BOOLEAN, RBF_STRING } rbf_type;

/* The most macro steps one doStep may ask for: a larger step is refused before anything
 * runs (so h = 1e300 or a crafted state's tiny macro step cannot make one call run for
 * hours). Keep in step with rbcosim/fmu_export/runtime/lifecycle.py MAX_MACRO_STEPS. */
#define RBF_MAX_MACRO_STEPS 1000000

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

/* One body's share of an actuator input (export-fmu --inputs, self-contained): the model's
 * interface point `point` (one of the actuator's own, after the FMU's n_points) carries
 * value * unit_wrench, held in its body's frame (rbcosim.fmu_export.runtime.actuators). */
typedef struct rbf_actuation {
    int vr, point;
    double unit_wrench[6];
} rbf_actuation;

/* A joint with relative coordinates (RBF_JOINT outputs, fmu_joints.c): its kind, its bodies
 * (0 ground, b + 1 the body of row b of rbf_instance.bodies) and markers (position from the
 * body's origin, m, and axes as the columns of a row-major 3x3, body frame). */
typedef enum rbf_joint_kind {
    RBF_REVOLUTE, RBF_PRISMATIC, RBF_CYLINDRICAL, RBF_UNIVERSAL, RBF_SPHERICAL
} rbf_joint_kind;

typedef struct rbf_joint {
    rbf_joint_kind kind;
    int body1, body2;
    double position1[3], axes1[9], position2[3], axes2[9];
    int vr[6];  /* value reference of each field's output, in its kind's field order */
} rbf_joint;

/* What the export writes into the generated table (model_table.c). */
typedef struct rbf_model {
    const char *identifier, *guid, *scenario_file;
    double start_time, macro_step; /* s */
    int n_points, n_joints, n_vars, n_bodies;
    const char *const *points, *const *joints;
    const int *joint_point; /* per joint: index of its interface point */
    const rbf_var *vars;
    int n_actuations;
    const rbf_actuation *actuations;
    /* server-client: index in points of the first of the FMU's own points at the bodies'
     * centres of mass (one per body, in body order; RBF_BODY outputs), or -1 */
    int first_body_point;
    int n_coordinate_joints;
    const rbf_joint *coordinate_joints; /* the owners of RBF_JOINT outputs */
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
    struct rbc_client *client; /* server-client backend */
    void *local;           /* self-contained backend (fmu_local.c) */
    double *bodies;        /* [n_bodies][13] body outputs */
    int angles_fresh;      /* the next joint outputs are the first after initialization */
    int owns_session, attached;
    long step;             /* session step index */
    double macro_step;     /* s, the session's (a cosim.macro_step parameter changes it) */
    pid_t server_pid;      /* a server this instance started, or 0 */
    int server_log;        /* read end of that server's output (fmu_session.c), or -1 */
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

/* Store a Real value, and an input also where the session takes it (wrench, node). */
void rbf_store_real(rbf_instance *inst, unsigned vr, double value);
/* The backend's new values into the variables: session step index, time (s), the points'
 * kinematics (rows of `stride` numbers, the first 13 used), their motions ([n_points][19]:
 * kinematics, accelerations; NULL: unchanged), the bodies ([n_bodies][13], may be
 * inst->bodies itself; NULL: unchanged). */
void rbf_publish_values(rbf_instance *inst, long step, double time, const double *kinematics,
                        int stride, const double *motions, const double *bodies);

/* The RBF_JOINT outputs from inst->bodies at the time in reals[0]; the angles continued from
 * their values at `previous_time` (s) unless `first` (fmu_joints.c). */
void rbf_joint_outputs(rbf_instance *inst, double previous_time, int first);

/* The added-mass parameters as set: mass[36 i + 6 r + c] (n_points x 36, zeroed by the
 * caller; kg, kg m, kg m^2) and frames[i] ("point" or "inertial"; left as it is where the
 * point has no frame parameter). Returns 1 when an entry is nonzero, 0 when all are zero,
 * -1 with the reason in reason[size] for a frame that is neither. */
int rbf_added_mass_parameters(const rbf_instance *inst, double *mass, const char **frames,
                              char *reason, size_t size);

/* -- the backend (fmu_session.c or fmu_local.c) --------------------------------------------
 * Each returns RBF_OK, or refuses (rbf_refuse) naming the reason. */
/* Start the model at exit of initialization mode (parameters and added mass as set), and
 * publish its outputs at the start time. */
rbf_result rbf_open_session(rbf_instance *inst, const char *call);
/* Release it (terminate, reset, free); nothing when there is none. */
void rbf_close_session(rbf_instance *inst);
/* 1 when a model is running (between exit of initialization and terminate/reset). */
int rbf_backend_active(const rbf_instance *inst);
/* The wrench inputs set in initialization mode (inst->wrench) to the model at the start
 * time, then publish the motions under them (exit of initialization mode only: in step mode
 * wrench inputs take effect at the next doStep and change no output before it). */
rbf_result rbf_backend_report(rbf_instance *inst, const char *call);
/* One macro step (inst->macro_step) with inst->wrench as the polynomial over it, then publish.
 * RBF_DISCARD with the instance failed when the step fails. */
rbf_result rbf_backend_step(rbf_instance *inst, const char *call);
/* The running model's state as bytes (malloc'ed) and its step index. */
rbf_result rbf_backend_get_state(rbf_instance *inst, const char *call, unsigned char **blob,
                                 size_t *size);
/* Restore one from rbf_backend_get_state at step index `step` (checked whole first). */
rbf_result rbf_backend_set_state(rbf_instance *inst, const char *call,
                                 const unsigned char *blob, size_t size, long step);

#endif /* RBCOSIM_FMU_H */
