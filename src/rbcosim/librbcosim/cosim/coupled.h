/* Coupled macro steps of the in-process co-simulation master in one call (issue 25).
 *
 * The common case of rbcosim.cosim.master.CosimMaster: one rigid side (a maximal handle with
 * interface points, rigid/macro.h) and flexible bodies each coupled at one point (flex/endpoint.h,
 * grounded or floating), with the schemes jacobi, gauss_seidel_rigid_first and
 * gauss_seidel_flex_first.  Each macro step does, in the order of CosimMaster.step:
 *   the rigid points' motions at t (outputs (13) + accelerations (6), inertial);
 *   flexible side first: each body's exchange step from its point's motion at t (and the past
 *     motions it extrapolates through), its polynomial becoming the point's wrench input;
 *     otherwise: each point's wrench polynomial through the exchanged wrenches (extrapolation);
 *   the rigid macro step (n micro steps), its interface work added to each joint's ledger;
 *   jacobi / rigid side first: each body's exchange step (rigid side first: through the
 *     point's motion at t + H);
 *   the reports: each body's joint kinematics (13) and delivered energy J, and the continuity
 *     gaps (4) [position m, rotation rad, velocity m/s, angular velocity rad/s] with their
 *     running maxima.
 * Anything the Python master handles otherwise (a gap over its tolerance, a non-finite value,
 * a failed step, a time mismatch, a range check of a floating body that may warn) makes the
 * batch restore every array it wrote during that macro step and stop before it: the caller runs
 * that step the step-by-step way.  Everything SI, inertial. */
#ifndef RBC_COSIM_COUPLED_H
#define RBC_COSIM_COUPLED_H

#include "../flex/endpoint.h"
#include "../rigid/macro.h"

enum { RBC_CS_JACOBI = 0, RBC_CS_RIGID_FIRST = 1, RBC_CS_FLEX_FIRST = 2 };
/* Why a batch stopped (rbc_cs_steps' return value; negative: out of memory). */
enum { RBC_CS_DONE = 0, RBC_CS_FALLBACK = 1 };
/* Joints one batch takes. */
#define RBC_CS_MAX_JOINTS 32
/* Ledger of a joint: [energy the rigid side received J, energy the flexible side reports J,
 * the flexible side's joint kinematics (13), last gaps (4), largest gaps (4)]. */
enum { RBC_CS_E_RIGID = 0, RBC_CS_E_FLEX = 1, RBC_CS_KIN = 2, RBC_CS_GAPS = 15,
       RBC_CS_GAP_MAX = 19, RBC_CS_LEDGER = 23 };

/* One rigid–flexible joint: a one-node flexible body and its exchange. */
typedef struct rbc_cs_joint {
    int floating;            /* 1: body is an rbc_fx_floating_body, 0: rbc_fx_grounded_body */
    void *body;
    rbc_fx_exchange *x;
    const double *p;         /* grounded: the body's propagator for H */
    int64_t point;           /* its interface point (row of the rigid side's points) */
    int64_t micro_steps;     /* the body's RK4 micro steps */
    double tol[4];           /* gap tolerances (position m, rotation rad, velocity, angular) */
    double spin_floor;       /* squared angular velocity (rad²/s²) below which the spin check
                                is certainly quiet; +inf when the check is off */
    double rotation_gain;    /* bound of the largest elastic rotation per |eta| (0: off) */
    double rotation_limit;   /* rad */
    const double *rotations; /* (3 N, k) the nodes' elastic rotation rows (structure frame) */
    int64_t n_rotations;     /* 3 N (0: only the bound) */
    double *motions;         /* (2, 20) the rigid motions stepped from, newest first:
                                (19) values and the time s */
    int64_t *n_motions;      /* (1,) how many are valid (<= 2) */
    double *ledger;          /* (RBC_CS_LEDGER,) see above */
} rbc_cs_joint;

/* What one body's exchange step outside a batch did (rbc_cs_flex_step). */
enum {
    RBC_CS_STEP_REFUSED = -1,   /* the body is not at t, or past motions at coincident times:
                                   nothing written */
    RBC_CS_STEP_NOT_FINITE = 0, /* the step is not finite (the body's state is not to be used) */
    RBC_CS_STEP_QUIET = 1,      /* committed; the range checks are certainly quiet */
    RBC_CS_STEP_CHECK = 2       /* committed; the range checks are the caller's to run */
};

/* One body's exchange step from `motion` (20: the rigid point's 19 values at t, then their time
 * s, stored in the history; NaN for none) through the newest `order` motions of its history
 * (rigid side first: `future` (20) at t + H, not NULL, and the newest one), then its commit and
 * history, as the batch takes it; poly_order >= 0 writes the Gauss–Seidel polynomial (flexible
 * side first) to coef and its row count to *rows.  Only the joint's body, x, p, micro_steps,
 * spin_floor, rotation_gain, rotation_limit, rotations, n_rotations, motions and n_motions are
 * used.  Returns an RBC_CS_STEP_* code. */
int rbc_cs_flex_step(rbc_cs_joint *j, const double *motion, const double *future, double t,
                     double H, int64_t order, int64_t poly_order, double *coef, int64_t *rows);

/* Up to K coupled macro steps of H from *t (s, the rigid side's time; updated) with `scheme`,
 * wrench extrapolation order `order` (0..2) and n rigid micro steps.  io: the rigid macro step's
 * caller-owned scratch (rigid/macro.h), holding the last step's values on return.
 * *done receives the macro steps completed, *micro the rigid micro steps they count
 * (as RigidSide.step: round((t_end - t) / (H / n)) per step).  Returns RBC_CS_DONE (K steps),
 * RBC_CS_FALLBACK (stopped before step *done, every array as it was before it), or -1 (out
 * of memory, nothing done). */
int rbc_cs_steps(rbc_maximal *h, const rbc_stepper *st, double *y, double *t, double H,
                 int64_t n, int scheme, int64_t order, rbc_cs_joint *joints, int64_t nj,
                 int64_t K, rbc_macro_io *io, int64_t *done, int64_t *micro);

#endif
