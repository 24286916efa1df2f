/* flex_body.h: what an exchange endpoint (flex_endpoint.h) needs of a flexible body.
 *
 * Frames and motions are rows of 19 (interface_frame.h); wrenches [6] are the force (N) and
 * moment (N m) the body exerts ON the rigid body at the interface point, inertial.
 */
#ifndef RBC_EXAMPLES_FLEX_BODY_H
#define RBC_EXAMPLES_FLEX_BODY_H

typedef struct fe_body_ops {
    /* One macro step t -> t + H from the rigid motion at t and n_past (<= 2) further motions
     * at past_taus (s, relative to t); 0 or < 0 on failure. */
    int (*step)(void *body, double t, double H, const double *motion, int n_past,
                const double *past_taus, const double *past);
    void (*wrench)(const void *body, double *wrench);
    void (*node_kinematics)(const void *body, double *kinematics); /* [13] */
    void (*frame_accelerations)(const void *body, double *acc);    /* [6] a, alpha assumed */
    /* The instantaneous added mass [6][6] to hand over; *point_frame: 1 if it is constant in
     * the interface point's axes (then rotated with the node), 0 if inertial. */
    void (*added_mass)(const void *body, double *mass, int *point_frame);
    double (*time)(const void *body); /* s */
} fe_body_ops;

typedef struct fe_body {
    void *self;
    const fe_body_ops *ops;
} fe_body;

#endif
