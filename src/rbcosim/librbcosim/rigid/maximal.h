/* The rigid maximal-coordinate core: Newton-Euler per body, joints by Lagrange multipliers
 * (banded LDL^T of J M^-1 J^T in reverse Cuthill-McKee order), Baumgarte stabilisation,
 * projection, interface points of a co-simulation, power of the non-conservative forces, and
 * the RK4 / SDIRK2 many-step loops.
 *
 * Model/data split: rbc_maximal_tables (the model, built once from the Python description,
 * rbcosim.maximal.kernels.equations.MaximalTables; only the interface-point inputs `points` are written
 * between steps) and rbc_workspace (the data block of scratch arrays, Workspace).  Each struct
 * mirrors its Python NamedTuple field by field, depth-first (rbcosim.core.make_handle).
 *
 * State vector y = [r (n,3) m, q (n,4), v (n,3) m/s, w^b (n,3) rad/s] flat (State.to_vector):
 * centres of mass and their velocities inertial, unit quaternions body -> inertial (scalar
 * first), angular velocities in the body frame.  Generalized velocities per body nu = [v, w^b].
 * Arrays over bodies carry the ground at row 0 (n+1 rows) unless stated.
 */
#ifndef RBC_RIGID_MAXIMAL_H
#define RBC_RIGID_MAXIMAL_H

#include "../rbc_array.h"
#include "forces.h"

/* Frames: kinematics of ground + n bodies, filled from a state vector. */
typedef struct rbc_frames {
    rbc_arr q;   /* (n+1, 4) unit quaternions */
    rbc_arr R;   /* (n+1, 3, 3) body -> inertial */
    rbc_arr r;   /* (n+1, 3) centres, m */
    rbc_arr v;   /* (n+1, 3) centre velocities, m/s */
    rbc_arr wi;  /* (n+1, 3) angular velocities, inertial, rad/s */
    rbc_arr wb;  /* (n+1, 3) angular velocities, body frame, rad/s */
} rbc_frames;

/* Row kinds (RowTable.index[:, 0]) and driver motion kinds. */
enum { RBC_PLANE = 0, RBC_DOT1 = 1, RBC_DIST = 2, RBC_CONTACT_HEIGHT = 3, RBC_CONTACT_SLIP = 4,
       RBC_KNIFE = 5 };
enum { RBC_POLYNOMIAL = 0, RBC_HARMONIC = 1, RBC_SPLINE = 2, RBC_EXPRESSION = 3 };
/* Rows of the values array (4, rows). */
enum { RBC_PHI = 0, RBC_PHI_T = 1, RBC_GAMMA = 2, RBC_PHIDOT = 3 };

/* RowTable: primitive constraint rows (main rows, then the drivers' auxiliary rows). */
typedef struct rbc_rows {
    rbc_arr index;        /* int (p, 4) kind, body a, body b, body f carrying u1 */
    rbc_arr vectors;      /* (p, 5, 3) u1 on f, u2 on b, point on a, point on b (body frames, m),
                             plane normal (contact rows, inertial) */
    rbc_arr length;       /* (p,) distance rows' L, contact rows' disk radius, m */
    rbc_arr n_main;       /* int 0-d: rows before the auxiliary ones */
    rbc_arr drivers;      /* int (d, 4) 1 if angle (0 slide), aux row 1, aux row 2, motion kind */
    rbc_arr motion_start; /* int (d+1,) slices of motion_data */
    rbc_arr motion_data;  /* coefficients (see rbcosim.maximal.kernels.rows) */
    rbc_arr row_bodies;   /* int (m, 2) bodies a, b of every constraint row */
    rbc_arr motion_stack; /* (s, 3) scratch: the expression programs' stack of jets */
} rbc_rows;

/* SchurPattern: kept rows in band order and the row pairs sharing a moving body. */
typedef struct rbc_pattern {
    rbc_arr rows;   /* int (m, 3) per band row: constraint row, body a, body b */
    rbc_arr pairs;  /* int (p, 4) band rows i >= j sharing a body: i, side i, j, side j */
    rbc_arr width;  /* int 0-d: bandwidth w */
} rbc_pattern;

/* PointInputs: interface points of a co-simulation and their inputs. */
typedef struct rbc_points {
    rbc_arr body;      /* int (k,) body of each point */
    rbc_arr geometry;  /* (k, 7) point in the body frame (m), axes relative to the body (q) */
    rbc_arr poly;      /* (k, order+1, 6) wrench coefficients in (t - t0), N and N m */
    rbc_arr t0;        /* (1,) s */
    rbc_arr switches;  /* int (2,) 1 while K_x, K_v apply; 1 when any added mass is set */
    rbc_arr gains;     /* (k, 2, 6, 6) dW/dx, dW/dv */
    rbc_arr reference; /* (k, 13) point outputs at t0 */
    rbc_arr flags;     /* int (k, 2) W in the body frame; M_a in the point frame */
    rbc_arr added;     /* (k, 6, 6) added mass, kg, kg m, kg m^2 */
} rbc_points;

typedef struct rbc_maximal_tables {
    rbc_arr mass_blocks;  /* (n+1, 6, 6) diag(m I, I_b), kg and kg m^2; ground zero */
    rbc_arr minv;         /* (n+1, 6, 6) their inverses */
    rbc_forces forces;
    rbc_rows rows;
    rbc_pattern pattern;
    rbc_arr alpha;        /* 0-d Baumgarte, 1/s */
    rbc_arr beta;         /* 0-d Baumgarte, 1/s */
    rbc_points points;
} rbc_maximal_tables;

/* Rows of rbc_workspace.body. */
enum { RBC_LOADS = 0, RBC_ACC = 1, RBC_BIAS = 2, RBC_STEP = 3 };

typedef struct rbc_workspace {
    rbc_frames frames;
    rbc_arr body;      /* (4, n, 6) LOADS [F, tau inertial], ACC [v', w'^b], BIAS, STEP */
    rbc_arr blocks;    /* (2, n+1, 6, 6) mass blocks with added mass, their inverses */
    rbc_arr rows;      /* (4, rows) PHI, PHI_T, GAMMA, PHIDOT */
    rbc_arr jac;       /* (2, rows, 6) Jacobian blocks ja, jb of every row */
    rbc_arr kept;      /* (2, m, 6) ja, jb of the kept rows in band order */
    rbc_arr solve;     /* (3, m) right-hand side, multipliers mu (band order), row scaling */
    rbc_arr mj;        /* (m, 2, 6) M^-1 ja^T, M^-1 jb^T */
    rbc_arr band;      /* (m, w+1) LDL^T factor */
    rbc_arr wrench;    /* (k, 6) input wrenches at the points */
    rbc_arr scratch;   /* (4, 6, 6) added-mass products and inverse */
    rbc_arr aux;       /* (2, 2, 6) drivers' auxiliary rows */
    rbc_arr point_acc; /* (k, 6) point accelerations */
    rbc_arr factored;  /* (2 + 7n,) [1 while kept, mj, band and the scaling are rbc_project's
                          factor, its time s, its positions r, q of y]: a later evaluation at
                          the same positions and time reuses them (same numbers) */
} rbc_workspace;

/* One system: its model and data block (the 'maximal' handle). */
typedef struct rbc_maximal {
    rbc_maximal_tables sys;
    rbc_workspace w;
} rbc_maximal;

#define RBC_FRAMES_SLOTS 6
#define RBC_ROWS_SLOTS 9
#define RBC_MAXIMAL_SLOTS (2 + RBC_FORCES_SLOTS + RBC_ROWS_SLOTS + 3 + 2 + 9 + RBC_FRAMES_SLOTS + 13)
#define RBC_ROWS_TYPES "lddllldld"
#define RBC_MAXIMAL_TYPES "dd" RBC_FORCES_TYPES RBC_ROWS_TYPES "lll" "dd" "ldddlddld" \
    "dddddd" "ddddddddddddd"

/* ---- frames, rows (frames.c, rows.c) -------------------------------------------------------- */

/* Frames of y (13n,); quaternions normalised. */
void rbc_fill_frames(const double *y, rbc_frames *fr);

/* (f, f', f'') of driver j's motion at time t s into out[0..2]. */
void rbc_motion_at(const rbc_rows *table, int64_t j, double t, double *out);

/* Phi, Phi_t, gamma of every constraint row (main rows, then one per driver) at time t into
 * values (4, rows) rows PHI, PHI_T, GAMMA; Jacobian blocks into jac (2, rows, 6) acting on
 * [v, w^b] of bodies a and b; aux (2, 2, 6) scratch. */
void rbc_evaluate_rows(const rbc_rows *table, double t, const rbc_frames *fr, rbc_arr *values,
                       rbc_arr *jac, rbc_arr *aux);

/* Phi' = ja nu_a + jb nu_b + Phi_t of every row into values[PHIDOT]. */
void rbc_velocity_errors(const rbc_rows *table, const rbc_frames *fr, rbc_arr *values,
                         const rbc_arr *jac);

/* ---- multipliers (multipliers.c) ------------------------------------------------------------ */

/* LDL^T factor of the Jacobi-scaled J M^-1 J^T into band (m, w+1) (band[i,0] = D_i,
 * band[i,k] = L[i,i-k]) from the kept rows' blocks kept (2, m, 6); scale (m,) gets
 * 1/sqrt(diag), mj (m, 2, 6) M^-1 ja^T, M^-1 jb^T.  Returns 0 when a pivot vanishes. */
int rbc_factor(const rbc_pattern *pat, const rbc_arr *kept, const rbc_arr *minv, rbc_arr *mj,
               rbc_arr *band, double *scale);
/* mu with (J M^-1 J^T) mu = rhs from the factor (rhs and out may be the same). */
void rbc_solve(const rbc_pattern *pat, const rbc_arr *band, const double *scale,
               const double *rhs, double *out);
/* acc (n rows of stride 6) -= M^-1 J^T mu over the moving bodies. */
void rbc_apply_correction(const rbc_pattern *pat, const rbc_arr *mj, const double *mu,
                          double *acc);

/* ---- interface points (interface.c) --------------------------------------------------------- */

/* (k, 13) [position m, quaternion, velocity m/s, angular velocity rad/s], inertial, into out
 * rows of stride `stride`. */
void rbc_point_outputs(const rbc_points *pts, const rbc_frames *fr, double *out, int64_t stride);
/* (k, 6) point accelerations [a_p m/s^2, alpha rad/s^2], inertial, from body accelerations
 * acc (n, 6) [v', w'^b]. */
void rbc_point_accelerations(const rbc_points *pts, const rbc_frames *fr, const double *acc,
                             double *out);
/* (k, 6) input wrenches [F N, M N m about the point] at time t s, inertial, into out rows of
 * stride `stride`. */
void rbc_point_wrenches(const rbc_points *pts, double t, const rbc_frames *fr, double *out,
                        int64_t stride);
/* Point wrenches (k, 6) onto the bodies: F at the centre of mass and tau = M + rho x F, into
 * force / torque rows of stride `stride`. */
void rbc_add_point_loads(const rbc_points *pts, const rbc_frames *fr, const double *wrenches,
                         double *force, double *torque, int64_t stride);
/* Added mass (6, 6) of point k in inertial axes into out. */
void rbc_inertial_added_mass(const rbc_points *pts, const rbc_frames *fr, int64_t k, double *out);

/* ---- equations of motion (equations.c) ------------------------------------------------------ */

/* [v', w'^b] (n, 6) of y at time t into w.body[ACC], multipliers in w.solve[1] (band order).
 * Returns RBC_OK or RBC_SINGULAR. */
int rbc_accelerations(rbc_maximal *h, double t, const double *y);
/* y' (13n,) of y at time t into out.  Status. */
int rbc_derivative(rbc_maximal *h, double t, const double *y, double *out);
/* Positions (Newton, mass-weighted minimum norm, to max |Phi| <= tol over the kept rows), then
 * velocities of y (in place) onto Phi' = 0.  Status; the final max |Phi| into *worst. */
int rbc_project(rbc_maximal *h, double t, double *y, double tol, int64_t max_iter, double *worst);
/* (max |Phi|, max |Phi'|) over every constraint row into out[0..1]. */
void rbc_drift(rbc_maximal *h, double t, const double *y, double *out);
/* Kinetic energy J into *kinetic; returns the total (kinetic + gravity + springs), J. */
double rbc_energy(rbc_maximal *h, const double *y, double *kinetic);
/* Interface points at y, t: out (k, 19) = [outputs (13), total wrench (6)], inertial: the
 * input minus M_a [a_p; alpha_p] where an added mass is set.  Status. */
int rbc_point_state(rbc_maximal *h, double t, const double *y, double *out);

/* ---- power (power.c) ------------------------------------------------------------------------ */

/* P (W) of loads, dampers, drivers and interface wrenches at the state of the last
 * rbc_accelerations call at time t. */
double rbc_stage_power(rbc_maximal *h, double t);

/* ---- stepping (stepping.c) ------------------------------------------------------------------ */

/* Classic RK4 from times[0] through each later entry of times (s), step h s, y in place.
 * stats = [largest | |q| - 1 |, work W J].  A failed step leaves y at the last good state and
 * its candidate in failed.  Returns the status; the steps done into *done.  Allocates its
 * stages once per call (returns -1 when it cannot). */
int rbc_rk4_steps(rbc_maximal *h, double *y, const double *times, int64_t n_times, double step,
                  int do_project, double *stats, double *failed, int64_t *done);
/* Alexander's two-stage L-stable SDIRK2 likewise; newton_matrix (13n, 13n) and valid (1,) keep
 * I - gamma h df/dy between calls while Newton converges. */
int rbc_sdirk2_steps(rbc_maximal *h, double *y, const double *times, int64_t n_times,
                     double step, int do_project, double *stats, double *failed,
                     double *newton_matrix, int64_t *valid, double tol, int64_t max_newton,
                     int64_t *done);

#endif
