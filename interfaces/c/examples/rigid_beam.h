/* rigid_beam.h: a beam clamped at an interface point, modelled as a RIGID uniform prism.
 *
 * The stand-in the two-beams example uses for rbcosim's floating (FFRF) beams: no elastic
 * modes, so it carries the beam's mass and inertia exactly but none of its bending. The beam
 * runs from the point along the point frame's +x axis; length L (m), square section of width
 * w (m), density rho (kg/m^3): m = rho w^2 L, centre of mass r = (L/2) e_x, inertia about the
 * point in point axes I_p = diag(m w^2/6, m L^2/3, m L^2/3): the rigid part of an Euler-
 * Bernoulli beam (the sections' torsional inertia, no rotary inertia in bending), which is
 * what rbcosim's floating beam is with no modes (`modes = 0`: then the two agree bitwise).
 *
 * Inside a macro step the point's accelerations follow the polynomial through the current and
 * past ones (interface_frame.h), as for the flexible bodies; the body's own frame is that
 * extrapolation, re-synchronised to the rigid side's motion at each step's start.
 * Wrench on the rigid body at the point (Newton-Euler of the beam, inertial, N and N m):
 *   F = -m (a + alpha x r + w x (w x r) - g)
 *   M = -(m r x (a - g) + I_p alpha + w x (I_p w)),   r, I_p rotated to inertial axes.
 * Added mass (point axes, constant): [[m 1, -m [r]x], [m [r]x, I_p]].
 */
#ifndef RBC_EXAMPLES_RIGID_BEAM_H
#define RBC_EXAMPLES_RIGID_BEAM_H

#include "flex_body.h"

typedef struct rb_beam {
    double mass;          /* kg */
    double length, width; /* m */
    double r_point[3];    /* centre of mass from the point, point axes, m */
    double i_point[9];    /* inertia about the point, point axes, kg m^2 */
    double gravity[3];    /* m/s^2, inertial */
    int micro_steps;      /* RK4 steps of the orientation per macro step */
    double t;             /* s */
    double frame[19];     /* interface_frame.h */
} rb_beam;

void rb_setup(rb_beam *b, double length, double width, double density, const double *gravity,
              int micro_steps);
void rb_initialize(rb_beam *b, double t, const double *motion);
/* The free end's inertial position (m). */
void rb_tip(const rb_beam *b, double *p);
fe_body rb_body(rb_beam *b);

#endif
