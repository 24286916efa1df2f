/* A flexible body read from its body file, and its side of the exchange, for C programs that
 * run without Python (the C examples, the FMU hosts): the same kernels rbcosim's FlexBody and
 * FlexEndpoint call (endpoint.h), on arrays written by rbcosim.flex.io.body_file
 * (`rbcosim export-body`).
 *
 * Body file (model_file.h): tag "RBCFLEX2", u32 n_arrays, i32 attachment (0 floating,
 * 1 grounded), i64 micro_steps, f64 H (s: the macro step of the grounded propagator, 0 for a
 * floating body), then the records: the body's handle (endpoint.h: rbc_fx_floating_body, 10
 * members, or rbc_fx_grounded_body, 9 members; state, work and wrench are this program's
 * storage), then p (grounded: the propagator for H, (2k, 3k + 5 n_b); floating: empty),
 * output_positions (n_out, 3) m, output_rows (n_out, 3, n_b + k) (structure frame:
 * displacement = rows [u_b; eta]), reference (3,) m the grounded reference position or empty,
 * unstressed (k, n_b): the interior eta = unstressed u_b at which the output nodes start at
 * their reference positions (grounded, with a reference and output nodes) or empty.
 * Everything inertial and SI unless named structure-frame.
 */
#ifndef RBC_FX_BODY_FILE_H
#define RBC_FX_BODY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"
#include "model_file.h"

typedef struct rbc_fx_body_file {
    rbc_model_file file;            /* the arrays' storage */
    int grounded;                   /* 0 floating, 1 grounded */
    int64_t micro_steps;            /* RK4 steps of the orientation / modes per macro step */
    int64_t k, nb, n_out;           /* modes, boundary DOFs (grounded; floating 0), output nodes */
    double H;                       /* s: the step p was computed for (grounded) */
    rbc_fx_floating_body floating;  /* valid when !grounded */
    rbc_fx_grounded_body ground;    /* valid when grounded */
    rbc_arr p, out_positions, out_rows, reference, unstressed;
} rbc_fx_body_file;

/* One endpoint's exchange with its storage (histories, energy, added mass). */
typedef struct rbc_fx_exchange_store {
    double times[FX_HISTORY], wrenches[6 * FX_HISTORY], energy, pending, handed[36], input[6];
    int64_t count, implicit;
    rbc_fx_exchange x; /* views of the above (rbc_fx_exchange_init) */
} rbc_fx_exchange_store;

/* Read a body file: 0, or -1 with the reason in reason[size]. */
int rbc_fx_body_file_load(rbc_fx_body_file *b, const char *path, char *reason, size_t size);
void rbc_fx_body_file_free(rbc_fx_body_file *b);

/* Zero the store and point its views at its arrays. */
void rbc_fx_exchange_init(rbc_fx_exchange_store *s);

/* The body's state (28 + 2k) and its wrench (6) at it (body->wrench). */
double *rbc_fx_body_state(rbc_fx_body_file *b);
double *rbc_fx_body_wrench_at_state(rbc_fx_body_file *b);
/* Recompute the wrench at the state. */
void rbc_fx_body_wrench(rbc_fx_body_file *b);

/* The added mass M_a (36, row-major), inertial: minus the wrench's derivative by the frame's
 * [a; alpha] (exact: the wrench is linear in them), symmetrised (FlexBody.added_mass).
 * scratch: >= 28 + 2k doubles. */
void rbc_fx_body_added_mass(rbc_fx_body_file *b, double *scratch, double *out);

/* out (n_out, 3): the output nodes' inertial positions, m (FlexBody.output_nodes). */
void rbc_fx_body_output_nodes(const rbc_fx_body_file *b, double *out);

/* FlexEndpoint.initialize at t (s) from the rigid point's motion (19,): the body placed there
 * (grounded with a reference: at the reference, regrounded to the motion, the interior
 * unstressed), its wrench computed; with added_mass, the body's added mass is handed over when
 * it is not zero: returns 1 and writes it to handed (36) in the axes of the FMI/protocol frame
 * (floating: "point", T^T M_a T at the motion's q; grounded: "inertial"); 0 otherwise.  The
 * history gets (t, rigid input).  scratch: >= 28 + 2k doubles. */
int rbc_fx_endpoint_start(rbc_fx_body_file *b, rbc_fx_exchange_store *s, double t,
                          const double *motion, int added_mass, double *scratch, double *handed);

/* The endpoint's macro step from t by H (endpoint.h's exchange step of the body's kind; a
 * grounded body needs H == b->H).  Returns 0 when the step is not finite, -1 when H is not the
 * file's (grounded), 1 otherwise. */
int rbc_fx_endpoint_step(rbc_fx_body_file *b, rbc_fx_exchange_store *s, const double *motion,
                         int64_t m, const double *past_taus, const double *past, double t,
                         double H, int64_t order, double *coef, int64_t *rows);

#endif
