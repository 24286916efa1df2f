/* One co-simulation macro step of the rigid side in one call (rbcosim.cosim.rigid_side,
 * RigidSide.step): the interface points' state at the start (their outputs become the
 * reference of interface-Jacobian feedback), n micro steps of the fixed-step integrator, the
 * points' state at the end, the trapezoidal work of the interface wrenches, and the one-step
 * inputs (feedback switch, gains) reset.  Units and frames as maximal.h: SI, inertial. */
#ifndef RBC_RIGID_MACRO_H
#define RBC_RIGID_MACRO_H

#include "maximal.h"

enum { RBC_METHOD_RK4 = 0, RBC_METHOD_SDIRK2 = 1 };
/* Where a macro step stopped (rbc_macro_result.phase). */
enum { RBC_PHASE_START = 0, RBC_PHASE_STEPS = 1, RBC_PHASE_END = 2, RBC_PHASE_DONE = 3 };

/* The integrator of the micro steps and its settings (integrators.py). */
typedef struct rbc_stepper {
    int method;             /* RBC_METHOD_RK4 or RBC_METHOD_SDIRK2 */
    int do_project;         /* project onto the constraint manifold after each step */
    double tol;             /* SDIRK2 Newton tolerance */
    int64_t max_newton;     /* SDIRK2 Newton iterations */
    double *newton_matrix;  /* SDIRK2 (13n, 13n) I - gamma h df/dy, kept between calls */
    int64_t *valid;         /* SDIRK2 (1,) the matrix is current */
} rbc_stepper;

/* Scratch and results of one macro step, all caller-owned (k interface points, n micro steps,
 * 13 nb state entries). */
typedef struct rbc_macro_io {
    double *times;   /* (n+1,) receives t + H i / n, s */
    double *start;   /* (k, 19) [outputs (13), total wrench (6)] at t */
    double *end;     /* (k, 19) the same at t + H */
    double *acc;     /* (k, 6) point accelerations at t + H, m/s^2, rad/s^2 */
    double *energy;  /* (k,) receives H/2 (W.V at t + W.V at t+H) per point, J */
    double *stats;   /* (2,) [largest | |q| - 1 |, work W J], updated as rbc_rk4_steps */
    double *failed;  /* (13 nb,) the failed candidate when a micro step fails */
} rbc_macro_io;

/* Advance y (13 nb, in place) from time t by H s in n equal micro steps.  Returns the status
 * (RBC_OK, ..., -1 out of memory); *phase says where it stopped, *done the micro steps done
 * (the state is at times[*done] after a failure in the steps).  On success the feedback switch
 * (points.switches[0]) and the gains are zero, ready for the next step's inputs. */
int rbc_macro_step(rbc_maximal *h, const rbc_stepper *st, double *y, double t, double H,
                   int64_t n, rbc_macro_io *io, int *phase, int64_t *done);

#endif
