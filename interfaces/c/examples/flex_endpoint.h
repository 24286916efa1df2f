/* flex_endpoint.h: the flexible side of one joint - a body (flex_body.h) and what it has
 * exchanged (the C counterpart of rbcosim.cosim.flex_endpoint.FlexEndpoint).
 *
 * Per macro step [t, t + H], in the order of interfaces/PROTOCOL.md section 7a:
 *   fe_report          the node's kinematics [13] and the energy (J) delivered so far;
 *   fe_inputs          the wrench polynomial the rigid side applies over the step (Gauss-
 *                      Seidel flexible side first: the structure steps here first);
 *   fe_finish          step the structure (unless it did) and commit: energy (trapezoid of
 *                      the wrench's power), wrench and motion histories.
 * Motions are rows of 19 (interface_frame.h) plus their time (s).
 */
#ifndef RBC_EXAMPLES_FLEX_ENDPOINT_H
#define RBC_EXAMPLES_FLEX_ENDPOINT_H

#include "flex_body.h"

#define FE_HISTORY 4 /* exchanged wrenches kept */

typedef enum fe_scheme {
    FE_JACOBI = 0,
    FE_GS_RIGID_FIRST = 1,
    FE_GS_FLEX_FIRST = 2
} fe_scheme;

typedef struct fe_motion {
    double v[19];
    double time; /* s */
} fe_motion;

typedef struct fe_endpoint {
    fe_body body;       /* not owned */
    fe_scheme scheme;
    int order;          /* wrench and acceleration extrapolation order, 0..2 */
    double H;           /* macro step, s */
    double times[FE_HISTORY], wrenches[FE_HISTORY][6]; /* exchanged, newest first */
    int count;
    fe_motion motions[2]; /* rigid motions stepped from, newest first */
    int n_motions;
    double energy;        /* J delivered to the rigid side since t0 */
    double pending_power; /* W, at the start of the step being taken */
    int implicit_mass;    /* 1 once the added mass is handed over */
    int point_frame;      /* 1: handed_mass is in the point's axes, 0: inertial */
    double handed_mass[36];
} fe_endpoint;

/* m = the motion row values [19] at time (s). */
void fe_motion_from(fe_motion *m, const double *values, double time);

/* The scheme of a name, or -1 for one this example does not run. */
int fe_scheme_of(const char *name);

/* Set up (no stepping); order: the coupling's extrapolation (0, 1, 2). */
void fe_setup(fe_endpoint *ep, fe_body body, fe_scheme scheme, int order, double H);

/* Start at t, the body already placed at the rigid point's motion. With want_added_mass,
 * fills added_mass [6][6] and *frame ("point" or "inertial") and returns 1 when the body
 * has an added mass to hand over (rbc_set_added_mass), else 0. */
int fe_initialize(fe_endpoint *ep, double t, int want_added_mass, double *added_mass,
                  const char **frame);

/* The wrench [6] the rigid side takes now: W, or W + M_a [a; alpha] once M_a is handed over. */
void fe_rigid_input(const fe_endpoint *ep, double *wrench);

void fe_report(const fe_endpoint *ep, double *kinematics, double *energy);

/* Coefficients [terms][6] in tau = time - t: through the past values (end NULL) or through
 * end (at tau = H) and past values. Returns terms (1..3). */
int fe_polynomial(const fe_endpoint *ep, double t, const double *end, double *coeff);

/* The wrench polynomial for step [t, t + H] (coeff [3][6]); returns terms, or < 0 if the
 * structure's step failed (flexible side first). */
int fe_inputs(fe_endpoint *ep, double t, const fe_motion *motion, double *coeff);

/* Complete the step (end: the rigid motion at t + H, needed with the rigid side first).
 * Returns 0, or < 0 if the structure's step failed. */
int fe_finish(fe_endpoint *ep, double t, const fe_motion *motion, const fe_motion *end);

#endif
