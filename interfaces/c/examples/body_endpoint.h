/* body_endpoint.h: the flexible side of one joint on rbcosim's own flexible body - a body
 * file (`rbcosim export-body`) loaded and stepped by the library `rbcosim_flex`
 * (src/rbcosim/librbcosim/flex/body_file.h: the kernels rbcosim's FlexBody and FlexEndpoint
 * call), with the exchange in the order of each coupling scheme, as
 * rbcosim.cosim.flex_endpoint.FlexEndpoint does it.
 *
 * Per macro step [t, t + H], in the order of interfaces/PROTOCOL.md section 7a:
 *   be_report    the node's kinematics [13] and the energy (J) delivered so far;
 *   be_inputs    the wrench polynomial (rows x 6, N and N m per s^j) the rigid side applies
 *                over the step (Gauss-Seidel, flexible side first: the body steps here);
 *   be_finish    step the body (unless it did) and commit: energy, wrench and motion
 *                histories.
 * Motions are rows of 19 (position m, quaternion, velocity m/s, angular velocity rad/s,
 * acceleration m/s^2, angular acceleration rad/s^2; inertial) at a time (s).
 */
#ifndef RBC_EXAMPLES_BODY_ENDPOINT_H
#define RBC_EXAMPLES_BODY_ENDPOINT_H

#include <stddef.h>


typedef enum be_scheme { BE_JACOBI = 0, BE_GS_RIGID_FIRST = 1, BE_GS_FLEX_FIRST = 2 } be_scheme;

/* Opaque: the library's body file and exchange store (body_endpoint.c), kept out of this
 * header so that programs can include it next to rbcosim_client.h (both name RBC_OK). */
typedef struct be_endpoint be_endpoint;

/* The scheme of a name, or -1 for one the examples do not run. */
int be_scheme_of(const char *name);

/* Load the body file and set up (no stepping): the endpoint, or NULL with the reason in
 * reason[size] (unreadable file, a body that is not grounded, H (s) or micro_steps (> 0: checked)
 * not the file's). */
be_endpoint *be_open(const char *path, be_scheme scheme, int order, double H, long micro_steps,
                     char *reason, size_t size);
void be_close(be_endpoint *ep);

be_scheme be_scheme_in(const be_endpoint *ep);

/* 1 when the body file carries a grounded reference position. */
int be_has_reference(const be_endpoint *ep);

/* Place the body at the rigid point's motion at t (FlexEndpoint.initialize); with
 * want_added_mass, returns 1 and writes the added mass (6 x 6, inertial axes, kg, kg m,
 * kg m^2) to hand over when the body has one, else 0. */
int be_start(be_endpoint *ep, double t, const double *motion, int want_added_mass,
             double *added_mass);

/* kinematics [13]: the interface node's position, quaternion, velocity, angular velocity;
 * *energy: J delivered to the rigid side so far. */
void be_report(const be_endpoint *ep, double *kinematics, double *energy);

/* The polynomial through the past exchanged values only (extrapolation: the wrench to hold
 * at the first report), coefficients (rows, 6) in tau = time - t; returns rows. */
int be_polynomial(const be_endpoint *ep, double t, double *coeff);

/* The wrench polynomial for [t, t + H] from the rigid motion at t: coefficients (rows, 6) in
 * tau = time - t into coeff (>= 4 x 6); returns rows, or -1 when the body's step (flexible
 * side first) was not finite. */
int be_inputs(be_endpoint *ep, double t, const double *motion, double *coeff);

/* Complete the step from the motion at t (end: the rigid motion at t + H, needed with the
 * rigid side first, else ignored). 0, or -1 when the step was not finite. */
int be_finish(be_endpoint *ep, double t, const double *motion, double t_end, const double *end);

/* The body's wrench on the rigid body [6] (N, N m, inertial) at its state. */
void be_wrench(const be_endpoint *ep, double *wrench);

/* The modal interior state: k coordinates then k velocities (Craig-Bampton, as rbcosim's
 * FlexBody.modal_coordinates / modal_velocities); *k their number. */
const double *be_modal_state(const be_endpoint *ep, int *k);

/* The body's time, s. */
double be_time(const be_endpoint *ep);

#endif
