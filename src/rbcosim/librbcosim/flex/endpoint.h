/* One macro step of a flexible body and its side of the exchange, in one call (issue 25).
 *
 * A body is a handle over its state, model arrays and scratch (kinds "flex_floating",
 * "flex_grounded", members in the order below, each an rbc_arr); the exchange is a handle over
 * what its endpoint (rbcosim.cosim.flex_endpoint.FlexEndpoint) has exchanged ("flex_exchange").
 * Everything is inertial and SI; wrenches are [force (3) N, moment (3) N·m] on the rigid body.
 */
#ifndef RBC_FX_ENDPOINT_H
#define RBC_FX_ENDPOINT_H

#include "rbc_array.h"

/* Number of exchanged wrenches kept (a cubic iteration polynomial). */
#define FX_HISTORY 4

typedef struct rbc_fx_floating_body {
    rbc_arr state;        /* (28 + 2k,) frame.h layout */
    rbc_arr gravity;      /* (3,) m/s² */
    rbc_arr axis;         /* (3, 3) axis rotation: structure -> point frame */
    rbc_arr wmat;         /* (k, 20k + 15) modal ODE matrix */
    rbc_arr total_mass;   /* 0-d, kg */
    rbc_arr first_moment; /* (3,) kg·m */
    rbc_arr s_e;          /* (3, k) modal first moment */
    rbc_arr spin_inertia; /* (3, 3) kg·m² */
    rbc_arr moment;       /* (3 (k + 1), 12 + 13k) the moment's inertia invariants */
    rbc_arr wrench;       /* (6,) the wrench at the state (written by the kernels) */
} rbc_fx_floating_body;

typedef struct rbc_fx_grounded_body {
    rbc_arr state;  /* (28 + 2k,) */
    rbc_arr r0;     /* (3, 3) structure -> inertial */
    rbc_arr comps;  /* (n_b,) int64 boundary components */
    rbc_arr shift;  /* (k, n_b) M_ee^-1 M_eb */
    rbc_arr wmat;   /* (k, 2k + 3 n_b) */
    rbc_arr fb;     /* (n_b, 3 n_b + 3k) */
    rbc_arr gacc;   /* (k,) modal acceleration of gravity */
    rbc_arr gb;     /* (n_b,) boundary gravity load */
    rbc_arr wrench; /* (6,) the wrench at the state */
} rbc_fx_grounded_body;

typedef struct rbc_fx_exchange {
    rbc_arr times;       /* (FX_HISTORY,) s, newest first */
    rbc_arr wrenches;    /* (FX_HISTORY, 6) the rigid side's inputs at those times */
    rbc_arr count;       /* (1,) int64: how many are valid */
    rbc_arr energy;      /* (1,) J delivered to the rigid side so far */
    rbc_arr pending;     /* (1,) W: power at the start of the last step */
    rbc_arr handed_mass; /* (6, 6) added mass the rigid side applies (floating: point frame) */
    rbc_arr implicit;    /* (1,) int64: 1 when handed_mass is applied by the rigid side */
    rbc_arr rigid_input; /* (6,) what the rigid side takes at the body's state */
} rbc_fx_exchange;

/* The body's wrench at its state into body->wrench. */
void rbc_fx_floating_body_wrench(rbc_fx_floating_body *b);
void rbc_fx_grounded_body_wrench(rbc_fx_grounded_body *b);

/* The rigid side's input (6) at the body's state: the wrench, plus, when the added mass was
 * handed over, M_a [a; alpha] (floating: M_a rotated from the point frame at the state's q). */
void rbc_fx_rigid_input(const rbc_fx_exchange *x, const double *state, const double *wrench,
                        int floating, double *out);

/* Wrench coefficients (m + count, 6) in tau = time - t through `known` (m, 6) at known_taus and
 * the newest `count` exchanged wrenches (m + count <= 4). */
void rbc_fx_exchange_polynomial(const rbc_fx_exchange *x, double t, int64_t count, int64_t m,
                                const double *known_taus, const double *known, double *coef);

/* One macro step [t, t + H] from the rigid point's motion (19,) and the m past motions (m, 19)
 * at past_taus (s, relative to t), then the commit: body->wrench must hold the wrench at the
 * state on entry (the power at the step's start).  The body steps (n micro steps; grounded: P
 * its propagator for H), its time becomes t + H, its wrench and the rigid input are updated;
 * when coef is not NULL, the polynomial through the rigid input at tau = H and the newest
 * min(max(order, 1), count) exchanged wrenches is written there (Gauss–Seidel, flexible side
 * first: what the rigid side applies over the step) and its row count returned through rows;
 * then the energy gets the trapezoid of the power over the step and the history takes
 * (t + H, rigid input).  Returns 0 (nothing committed) if the step is not finite. */
int rbc_fx_floating_exchange_step(rbc_fx_floating_body *b, rbc_fx_exchange *x,
                                  const double *motion, int64_t m, const double *past_taus,
                                  const double *past, double t, double H, int64_t n,
                                  int64_t order, double *coef, int64_t *rows);
int rbc_fx_grounded_exchange_step(rbc_fx_grounded_body *b, rbc_fx_exchange *x,
                                  const double *motion, int64_t m, const double *past_taus,
                                  const double *past, double t, double H, int64_t n,
                                  const double *p, int64_t order, double *coef, int64_t *rows);

#endif
