/* The rigid side of a served co-simulation (rbcosim.cosim.rigid_side.RigidSide): the
 * continuity gaps of all its joints in one call, with the same C functions in the same order
 * as the joint-by-joint evaluation, so the bits are the same.  SI units, inertial frame. */
#ifndef RBC_COSIM_SERVED_H
#define RBC_COSIM_SERVED_H

#include <stdint.h>

/* For each of the nj joints the gaps (4) [position m, rotation rad, velocity m/s, angular
 * velocity rad/s] between the outputs (13) of its point, outputs + 13 point[j], and flex[j]
 * (13; NULL: not reported yet, gaps zero) into gaps (nj, 4).  Returns how many joints have a
 * gap above their tolerances tol (nj, 4). */
int64_t rbc_sv_gaps(const double *outputs, const int64_t *point, const double *const *flex,
                    int64_t nj, const double *tol, double *gaps);

#endif
