/* One co-simulation macro step of the rigid side (see macro.h). */
#include "macro.h"
#include <math.h>

/* a . b over 6 entries as numpy's `@` of two float64 6-vectors sums it (OpenBLAS ddot: one
 * fused multiply-add per entry, in order), so that the interface work matches the Python
 * macro step it replaces to the last bit. */
static double dot6(const double *a, const double *b) {
    double s = 0.0;
    for (int i = 0; i < 6; i++) s = fma(a[i], b[i], s);
    return s;
}

int rbc_macro_step(rbc_maximal *h, const rbc_stepper *st, double *y, double t, double H,
                   int64_t n, rbc_macro_io *io, int *phase, int64_t *done) {
    rbc_points *pts = &h->sys.points;
    int64_t k = pts->body.size;
    *done = 0;
    *phase = RBC_PHASE_START;
    rbc_fill_frames(y, &h->w.frames);
    rbc_point_outputs(pts, &h->w.frames, pts->reference.d, 13);
    int status = rbc_point_state(h, t, y, io->start);
    if (status != RBC_OK) return status;

    *phase = RBC_PHASE_STEPS;
    double step = H / (double)n;
    for (int64_t i = 0; i <= n; i++) io->times[i] = t + H * (double)i / (double)n;
    if (st->method == RBC_METHOD_SDIRK2)
        status = rbc_sdirk2_steps(h, y, io->times, n + 1, step, st->do_project, io->stats,
                                  io->failed, st->newton_matrix, st->valid, st->tol,
                                  st->max_newton, done);
    else
        status = rbc_rk4_steps(h, y, io->times, n + 1, step, st->do_project, io->stats,
                               io->failed, done);
    if (status != RBC_OK) return status;

    *phase = RBC_PHASE_END;
    double t_end = io->times[n];
    status = rbc_point_state(h, t_end, y, io->end);
    for (int64_t i = 0; i < 6 * k; i++) io->acc[i] = h->w.point_acc.d[i];
    if (status != RBC_OK) return status;

    for (int64_t i = 0; i < k; i++) {
        const double *s = io->start + 19 * i, *e = io->end + 19 * i;
        io->energy[i] = 0.5 * H * (dot6(s + 13, s + 7) + dot6(e + 13, e + 7));
    }
    pts->switches.i[0] = 0;
    for (int64_t i = 0; i < pts->gains.size; i++) pts->gains.d[i] = 0.0;
    *phase = RBC_PHASE_DONE;
    return RBC_OK;
}
