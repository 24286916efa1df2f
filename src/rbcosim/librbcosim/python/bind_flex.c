/* Python entry points of the flexible-body part of the core (librbcosim/flex).
 *
 * Arrays are float64 (D) or int64 (L) C-contiguous numpy arrays, viewed in place; outputs are
 * written into the arrays passed.  Every size is checked here so that the kernels can trust
 * them (their scratch lives on the stack, see flex/frame.h for the limits).
 */
#include "rbc_py.h"

#include "../flex/chord.h"
#include "../flex/continuity.h"
#include "../flex/endpoint.h"
#include "../flex/floating.h"
#include "../flex/frame.h"
#include "../flex/fx_vec.h"
#include "../flex/grounded.h"
#include "../flex/polynomial.h"

#define FAIL(...) return PyErr_Format(PyExc_ValueError, __VA_ARGS__)

/* Checks shared by the state-based kernels: state s (ETA + 2k), returns k or -1. */
static int64_t modes_of(const rbc_arr *s, const char *name) {
    int64_t k = (s->size - FX_ETA) / 2;
    if (s->ndim != 1 || s->size < FX_ETA || (s->size - FX_ETA) % 2 || k > FX_MAX_MODES) {
        PyErr_Format(PyExc_ValueError, "%s: state of %d + 2k values, k <= %d, got %lld values",
                     name, FX_ETA, FX_MAX_MODES, (long long)s->size);
        return -1;
    }
    return k;
}

/* past_taus (m,), past (m, 19), m <= FX_MAX_PAST, motion (19,). */
static int check_motions(const rbc_arr *motion, const rbc_arr *taus, const rbc_arr *past,
                         const char *name) {
    if (motion->size != 19 || taus->size > FX_MAX_PAST || past->size != 19 * taus->size) {
        PyErr_Format(PyExc_ValueError, "%s: motion (19,), past_taus (m,) and past (m, 19) with "
                     "m <= %d", name, FX_MAX_PAST);
        return 0;
    }
    return 1;
}

static int check_coeff(const rbc_arr *coeff, const char *name) {
    if (coeff->ndim != 2 || coeff->shape[1] != 6 || coeff->shape[0] < 1
        || coeff->shape[0] > FX_MAX_PAST + 1) {
        PyErr_Format(PyExc_ValueError, "%s: coeff (m, 6) with 1 <= m <= %d", name,
                     FX_MAX_PAST + 1);
        return 0;
    }
    return 1;
}

static int check_comps(const rbc_arr *comps, const char *name) {
    if (comps->size > FX_MAX_BOUNDARY) goto bad;
    for (int64_t i = 0; i < comps->size; i++)
        if (comps->i[i] < 0 || comps->i[i] > 5) goto bad;
    return 1;
bad:
    PyErr_Format(PyExc_ValueError, "%s: comps: at most %d boundary components in 0..5", name,
                 FX_MAX_BOUNDARY);
    return 0;
}

static int check_size(const rbc_arr *a, int64_t size, const char *name, const char *what) {
    if (a->size != size) {
        PyErr_Format(PyExc_ValueError, "%s: %s: expected %lld values, got %lld", name, what,
                     (long long)size, (long long)a->size);
        return 0;
    }
    return 1;
}

/* polynomial_through(taus (m,), values (m, n), coef (m, n)): coefficients into coef. */
static PyObject *py_polynomial_through(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr taus, values, coef;
    if (!rbc_parse(args, nargs, "polynomial_through", "DDD", &taus, &values, &coef)) return NULL;
    int64_t m = taus.size, n = values.ndim == 2 ? values.shape[1] : 0;
    if (values.ndim != 2 || values.shape[0] != m || coef.size != values.size
        || m < 1 || m > RBC_MAX_POLY_POINTS || n > 64)
        return PyErr_Format(PyExc_ValueError, "polynomial_through: taus (m,), values and coef "
                            "(m, n) with 1 <= m <= %d and n <= 64", RBC_MAX_POLY_POINTS);
    rbc_polynomial_through(m, n, taus.d, values.d, coef.d);
    Py_RETURN_NONE;
}

/* acceleration_polynomial(motion (19,), past_taus (m,), past (m, 19), coeff (m + 1, 6)). */
static PyObject *py_acceleration_polynomial(PyObject *self, PyObject *const *args,
                                            Py_ssize_t nargs) {
    rbc_arr motion, taus, past, coeff;
    const char *name = "acceleration_polynomial";
    if (!rbc_parse(args, nargs, name, "DDDD", &motion, &taus, &past, &coeff)) return NULL;
    if (!check_motions(&motion, &taus, &past, name)
        || !check_size(&coeff, 6 * (taus.size + 1), name, "coeff")) return NULL;
    rbc_fx_acceleration_polynomial(motion.d, taus.size, taus.d, past.d, coeff.d);
    Py_RETURN_NONE;
}

/* frame_at(s, coeff (m, 6), tau, out (18,)). */
static PyObject *py_frame_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, coeff, out;
    double tau;
    const char *name = "frame_at";
    if (!rbc_parse(args, nargs, name, "DDdD", &s, &coeff, &tau, &out)) return NULL;
    if (!check_coeff(&coeff, name) || !check_size(&out, 18, name, "out")) return NULL;
    if (s.size < FX_ETA) FAIL("%s: a state of at least %d values", name, FX_ETA);
    rbc_fx_frame_at(s.d, coeff.d, coeff.shape[0], tau, out.d);
    Py_RETURN_NONE;
}

/* end_of_step(s, coeff (m, 6), H, n, q (4,)): orientation at tau = H, normalised. */
static PyObject *py_end_of_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, coeff, q;
    double H;
    int64_t n;
    const char *name = "end_of_step";
    if (!rbc_parse(args, nargs, name, "DDdnD", &s, &coeff, &H, &n, &q)) return NULL;
    if (!check_coeff(&coeff, name) || !check_size(&q, 4, name, "q")) return NULL;
    if (s.size < FX_ETA || n < 1) FAIL("%s: a state of at least %d values and n >= 1", name,
                                       FX_ETA);
    rbc_fx_end_of_step(s.d, coeff.d, coeff.shape[0], H, n, q.d);
    Py_RETURN_NONE;
}

/* write_end_frame(s, coeff (m, 6), H, q (4,)). */
static PyObject *py_write_end_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, coeff, q;
    double H;
    const char *name = "write_end_frame";
    if (!rbc_parse(args, nargs, name, "DDdD", &s, &coeff, &H, &q)) return NULL;
    if (!check_coeff(&coeff, name) || !check_size(&q, 4, name, "q")) return NULL;
    if (s.size < FX_ETA) FAIL("%s: a state of at least %d values", name, FX_ETA);
    rbc_fx_write_end_frame(s.d, coeff.d, coeff.shape[0], H, q.d);
    Py_RETURN_NONE;
}

/* set_frame(s, motion (19,)). */
static PyObject *py_set_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, motion;
    const char *name = "set_frame";
    if (!rbc_parse(args, nargs, name, "DD", &s, &motion)) return NULL;
    if (s.size < FX_ETA || motion.size != 19) FAIL("%s: state and motion (19,)", name);
    rbc_fx_set_frame(s.d, motion.d);
    Py_RETURN_NONE;
}

/* to_structure(r0 (3, 3), x (3,), rx (3,), comps (n_b,), out (n_b,)). */
static PyObject *py_to_structure(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr r0, x, rx, comps, out;
    const char *name = "to_structure";
    if (!rbc_parse(args, nargs, name, "DDDLD", &r0, &x, &rx, &comps, &out)) return NULL;
    if (!check_size(&r0, 9, name, "r0") || !check_size(&x, 3, name, "x")
        || !check_size(&rx, 3, name, "rx") || !check_comps(&comps, name)
        || !check_size(&out, comps.size, name, "out")) return NULL;
    rbc_fx_to_structure(r0.d, x.d, rx.d, comps.i, comps.size, out.d);
    Py_RETURN_NONE;
}

/* boundary(s, r0 (3, 3), comps (n_b,), out (3, n_b)). */
static PyObject *py_boundary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, r0, comps, out;
    const char *name = "boundary";
    if (!rbc_parse(args, nargs, name, "DDLD", &s, &r0, &comps, &out)) return NULL;
    if (!check_size(&r0, 9, name, "r0") || !check_comps(&comps, name)
        || !check_size(&out, 3 * comps.size, name, "out")) return NULL;
    if (s.size < FX_ETA) FAIL("%s: a state of at least %d values", name, FX_ETA);
    rbc_fx_boundary(s.d, r0.d, comps.i, comps.size, out.d);
    Py_RETURN_NONE;
}

/* regrounded_frame(s, motion (19,), r0, comps, shift (k, n_b)). */
static PyObject *py_regrounded_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, motion, r0, comps, shift;
    const char *name = "regrounded_frame";
    if (!rbc_parse(args, nargs, name, "DDDLD", &s, &motion, &r0, &comps, &shift)) return NULL;
    int64_t k = modes_of(&s, name);
    if (k < 0 || !check_size(&motion, 19, name, "motion") || !check_size(&r0, 9, name, "r0")
        || !check_comps(&comps, name) || !check_size(&shift, k * comps.size, name, "shift"))
        return NULL;
    rbc_fx_regrounded_frame(s.d, k, motion.d, r0.d, comps.i, comps.size, shift.d);
    Py_RETURN_NONE;
}

/* grounded_wrench(s, r0, comps, wmat (k, 2k + 3 n_b), fb (n_b, 3 n_b + 3k), gacc, gb, out (6,)). */
static PyObject *py_grounded_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, r0, comps, wmat, fb, gacc, gb, out;
    const char *name = "grounded_wrench";
    if (!rbc_parse(args, nargs, name, "DDLDDDDD", &s, &r0, &comps, &wmat, &fb, &gacc, &gb, &out))
        return NULL;
    int64_t k = modes_of(&s, name), nb = comps.size;
    if (k < 0 || !check_size(&r0, 9, name, "r0") || !check_comps(&comps, name)
        || !check_size(&wmat, k * (2 * k + 3 * nb), name, "wmat")
        || !check_size(&fb, nb * (3 * nb + 3 * k), name, "fb")
        || !check_size(&gacc, k, name, "gacc") || !check_size(&gb, nb, name, "gb")
        || !check_size(&out, 6, name, "out")) return NULL;
    rbc_fx_grounded_wrench(s.d, k, r0.d, comps.i, nb, wmat.d, fb.d, gacc.d, gb.d, out.d);
    Py_RETURN_NONE;
}

/* floating_wrench(s, gravity, axis_rotation, wmat, total_mass, first_moment (3,), s_e (3, k),
 * spin_inertia (3, 3), moment (3 (k + 1), 12 + 13k), out (6,)). */
static PyObject *py_floating_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr s, gravity, axis, wmat, first, s_e, spin, moment, out;
    double total_mass;
    const char *name = "floating_wrench";
    if (!rbc_parse(args, nargs, name, "DDDDdDDDDD", &s, &gravity, &axis, &wmat, &total_mass,
                   &first, &s_e, &spin, &moment, &out)) return NULL;
    int64_t k = modes_of(&s, name);
    if (k < 0 || !check_size(&gravity, 3, name, "gravity") || !check_size(&axis, 9, name, "axis")
        || !check_size(&wmat, k * (20 * k + 15), name, "wmat")
        || !check_size(&first, 3, name, "first_moment") || !check_size(&s_e, 3 * k, name, "s_e")
        || !check_size(&spin, 9, name, "spin_inertia")
        || !check_size(&moment, 3 * (k + 1) * (12 + 13 * k), name, "moment")
        || !check_size(&out, 6, name, "out"))
        return NULL;
    rbc_fx_floating_wrench(s.d, k, gravity.d, axis.d, wmat.d, total_mass, first.d, s_e.d, spin.d,
                           moment.d, out.d);
    Py_RETURN_NONE;
}

/* The 7 arrays of a chord row set, checked against k (modes) and filled into rows. */
static int chord_rows(rbc_arr *a, int64_t k, rbc_fx_chord_rows *rows, const char *name) {
    int64_t nr = a[0].ndim == 2 ? a[0].shape[0] : -1;
    if (nr < 0 || a[0].size != nr * (k + 1) || a[1].size != nr * (k + 1)
        || a[2].size != nr * (k + 1) || a[3].size != 2 * nr || a[4].size != nr
        || a[5].size != nr || a[6].size != 3 * nr * k || nr > FX_MAX_MODES + 1) {
        PyErr_Format(PyExc_ValueError, "%s: rows: mass, gyro, stiffness (r, k + 1), load_b "
                     "(r, 2), load_alpha, load_w2 (r,), geometric (3, r, k)", name);
        return 0;
    }
    *rows = (rbc_fx_chord_rows){nr, a[0].d, a[1].d, a[2].d, a[3].d, a[4].d, a[5].d, a[6].d};
    return 1;
}

/* chord_frame_inputs(pa (3, 3), pb (3, 3), gravity (3,), out (9,)). */
static PyObject *py_chord_frame_inputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr pa, pb, gravity, out;
    const char *name = "chord_frame_inputs";
    if (!rbc_parse(args, nargs, name, "DDDD", &pa, &pb, &gravity, &out)) return NULL;
    if (!check_size(&pa, 9, name, "pa") || !check_size(&pb, 9, name, "pb")
        || !check_size(&gravity, 3, name, "gravity") || !check_size(&out, 9, name, "out"))
        return NULL;
    rbc_fx_chord_frame_inputs(pa.d, pb.d, gravity.d, out.d);
    Py_RETURN_NONE;
}

/* chord_residual(7 row arrays, params (3,), inputs (9,), eta, etad, etadd (k,), out (r,)). */
static PyObject *py_chord_residual(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr a[7], params, inputs, eta, etad, etadd, out;
    rbc_fx_chord_rows rows;
    const char *name = "chord_residual";
    if (!rbc_parse(args, nargs, name, "DDDDDDDDDDDDD", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
                   &a[6], &params, &inputs, &eta, &etad, &etadd, &out)) return NULL;
    int64_t k = eta.size;
    if (k > FX_MAX_MODES) FAIL("%s: at most %d modes", name, FX_MAX_MODES);
    if (!chord_rows(a, k, &rows, name) || !check_size(&params, 3, name, "params")
        || !check_size(&inputs, 9, name, "inputs") || !check_size(&etad, k, name, "etad")
        || !check_size(&etadd, k, name, "etadd") || !check_size(&out, rows.n_rows, name, "out"))
        return NULL;
    rbc_fx_chord_residual(&rows, k, params.d, inputs.d, eta.d, etad.d, etadd.d, out.d);
    Py_RETURN_NONE;
}

/* chord_modal_acceleration(7 row arrays, minv (k, k), params, inputs, eta, etad, out (k,)). */
static PyObject *py_chord_modal_acceleration(PyObject *self, PyObject *const *args,
                                             Py_ssize_t nargs) {
    rbc_arr a[7], minv, params, inputs, eta, etad, out;
    rbc_fx_chord_rows rows;
    const char *name = "chord_modal_acceleration";
    if (!rbc_parse(args, nargs, name, "DDDDDDDDDDDDD", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
                   &a[6], &minv, &params, &inputs, &eta, &etad, &out)) return NULL;
    int64_t k = eta.size;
    if (k > FX_MAX_MODES) FAIL("%s: at most %d modes", name, FX_MAX_MODES);
    if (!chord_rows(a, k, &rows, name) || rows.n_rows != k
        || !check_size(&minv, k * k, name, "minv") || !check_size(&params, 3, name, "params")
        || !check_size(&inputs, 9, name, "inputs") || !check_size(&etad, k, name, "etad")
        || !check_size(&out, k, name, "out")) {
        if (!PyErr_Occurred()) FAIL("%s: modal rows: k rows", name);
        return NULL;
    }
    rbc_fx_chord_modal_acceleration(&rows, k, minv.d, params.d, inputs.d, eta.d, etad.d, out.d);
    Py_RETURN_NONE;
}

/* chord_step(pins (2, P), coeffs (2, m, 6), H, n, modes (2k,), 7 modal row arrays, minv,
 * params, gravity) -> bool. */
static PyObject *py_chord_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr pins, coeffs, modes, a[7], minv, params, gravity;
    double H;
    int64_t n;
    rbc_fx_chord_rows rows;
    const char *name = "chord_step";
    if (!rbc_parse(args, nargs, name, "DDdnDDDDDDDDDDD", &pins, &coeffs, &H, &n, &modes, &a[0],
                   &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &minv, &params, &gravity))
        return NULL;
    int64_t k = modes.size / 2;
    if (k > FX_MAX_MODES || modes.size % 2) FAIL("%s: modes (2k,), k <= %d", name, FX_MAX_MODES);
    if (pins.ndim != 2 || pins.shape[0] != 2 || pins.shape[1] < FX_ETA)
        FAIL("%s: pins (2, >= %d)", name, FX_ETA);
    if (coeffs.ndim != 3 || coeffs.shape[0] != 2 || coeffs.shape[2] != 6 || coeffs.shape[1] < 1
        || coeffs.shape[1] > FX_MAX_PAST + 1) FAIL("%s: coeffs (2, m, 6), m <= 3", name);
    if (!chord_rows(a, k, &rows, name) || !check_size(&minv, k * k, name, "minv")
        || !check_size(&params, 3, name, "params") || !check_size(&gravity, 3, name, "gravity"))
        return NULL;
    if (rows.n_rows != k || n < 1) FAIL("%s: modal rows: k rows, n >= 1", name);
    int ok = rbc_fx_chord_step(pins.d, pins.shape[1], coeffs.d, coeffs.shape[1], H, n, modes.d,
                               k, &rows, minv.d, params.d, gravity.d);
    return PyBool_FromLong(ok);
}

/* chord_body_step(now (2, 19), past (m, 2, 19), taus (m,), H, n, modes (2k,), 7 modal row
 * arrays, minv (k, k), params (3,), gravity (3,), end (2, 19)) -> False if not finite. */
static PyObject *py_chord_body_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr now, past, taus, modes, a[7], minv, params, gravity, end;
    double H;
    int64_t n;
    rbc_fx_chord_rows rows;
    const char *name = "chord_body_step";
    if (!rbc_parse(args, nargs, name, "DDDdnDDDDDDDDDDDD", &now, &past, &taus, &H, &n, &modes,
                   &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &minv, &params, &gravity,
                   &end))
        return NULL;
    int64_t k = modes.size / 2;
    if (k > FX_MAX_MODES || modes.size % 2) FAIL("%s: modes (2k,), k <= %d", name, FX_MAX_MODES);
    if (taus.size > FX_MAX_PAST || past.size != 38 * taus.size)
        FAIL("%s: past (m, 2, 19) at taus (m,), m <= %d", name, FX_MAX_PAST);
    if (!check_size(&now, 38, name, "now") || !check_size(&end, 38, name, "end")
        || !chord_rows(a, k, &rows, name) || !check_size(&minv, k * k, name, "minv")
        || !check_size(&params, 3, name, "params") || !check_size(&gravity, 3, name, "gravity"))
        return NULL;
    if (rows.n_rows != k || n < 1) FAIL("%s: modal rows: k rows, n >= 1", name);
    return PyBool_FromLong(rbc_fx_chord_body_step(now.d, taus.size, past.d, taus.d, H, n,
                                                  modes.d, k, &rows, minv.d, params.d,
                                                  gravity.d, end.d));
}

/* chord_pin_forces(motions (2, 19), modes (2k,), 7 modal row arrays, 7 pin row arrays,
 * minv (k, k), params (3,), gravity (3,), forces (2, 3)). */
static PyObject *py_chord_pin_forces(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr motions, modes, a[7], b[7], minv, params, gravity, forces;
    rbc_fx_chord_rows modal, pins;
    const char *name = "chord_pin_forces";
    if (!rbc_parse(args, nargs, name, "DDDDDDDDDDDDDDDDDDDD", &motions, &modes, &a[0], &a[1],
                   &a[2], &a[3], &a[4], &a[5], &a[6], &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                   &b[6], &minv, &params, &gravity, &forces))
        return NULL;
    int64_t k = modes.size / 2;
    if (k > FX_MAX_MODES || modes.size % 2) FAIL("%s: modes (2k,), k <= %d", name, FX_MAX_MODES);
    if (!check_size(&motions, 38, name, "motions") || !check_size(&forces, 6, name, "forces")
        || !chord_rows(a, k, &modal, name) || !chord_rows(b, k, &pins, name)
        || !check_size(&minv, k * k, name, "minv") || !check_size(&params, 3, name, "params")
        || !check_size(&gravity, 3, name, "gravity"))
        return NULL;
    if (modal.n_rows != k || pins.n_rows != 4) FAIL("%s: k modal rows, 4 pin rows", name);
    rbc_fx_chord_pin_forces(motions.d, modes.d, k, &modal, &pins, minv.d, params.d, gravity.d,
                            forces.d);
    Py_RETURN_NONE;
}

/* joint_gaps(rigid (13,), flex (13,), out (4,)). */
static PyObject *py_joint_gaps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr rigid, flex, out;
    const char *name = "joint_gaps";
    if (!rbc_parse(args, nargs, name, "DDD", &rigid, &flex, &out)) return NULL;
    if (!check_size(&rigid, 13, name, "rigid") || !check_size(&flex, 13, name, "flex")
        || !check_size(&out, 4, name, "out")) return NULL;
    rbc_fx_joint_gaps(rigid.d, flex.d, out.d);
    Py_RETURN_NONE;
}

/* point_frame_mass(mass (6, 6), q (4,), inverse, out (6, 6)). */
static PyObject *py_point_frame_mass(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_arr mass, q, out;
    int inverse;
    const char *name = "point_frame_mass";
    if (!rbc_parse(args, nargs, name, "DDbD", &mass, &q, &inverse, &out)) return NULL;
    if (!check_size(&mass, 36, name, "mass") || !check_size(&q, 4, name, "q")
        || !check_size(&out, 36, name, "out")) return NULL;
    rbc_fx_point_frame_mass(mass.d, q.d, inverse, out.d);
    Py_RETURN_NONE;
}

/* --- bodies and exchanges as handles: one macro step, one call --------------------------- */

static int check_floating_body(const rbc_fx_floating_body *b, const char *name) {
    int64_t k = modes_of(&b->state, name);
    if (k < 0) return 0;
    return check_size(&b->gravity, 3, name, "gravity") && check_size(&b->axis, 9, name, "axis")
        && check_size(&b->wmat, k * (20 * k + 15), name, "wmat")
        && check_size(&b->total_mass, 1, name, "total_mass")
        && check_size(&b->first_moment, 3, name, "first_moment")
        && check_size(&b->s_e, 3 * k, name, "s_e")
        && check_size(&b->spin_inertia, 9, name, "spin_inertia")
        && check_size(&b->moment, 3 * (k + 1) * (12 + 13 * k), name, "moment")
        && check_size(&b->wrench, 6, name, "wrench");
}

static int check_grounded_body(const rbc_fx_grounded_body *b, const char *name) {
    int64_t k = modes_of(&b->state, name), nb = b->comps.size;
    if (k < 0) return 0;
    return check_size(&b->r0, 9, name, "r0") && check_comps(&b->comps, name)
        && check_size(&b->shift, k * nb, name, "shift")
        && check_size(&b->wmat, k * (2 * k + 3 * nb), name, "wmat")
        && check_size(&b->fb, nb * (3 * nb + 3 * k), name, "fb")
        && check_size(&b->gacc, k, name, "gacc") && check_size(&b->gb, nb, name, "gb")
        && check_size(&b->wrench, 6, name, "wrench");
}

static int check_exchange(const rbc_fx_exchange *x, const char *name) {
    return check_size(&x->times, FX_HISTORY, name, "times")
        && check_size(&x->wrenches, 6 * FX_HISTORY, name, "wrenches")
        && check_size(&x->count, 1, name, "count") && check_size(&x->energy, 1, name, "energy")
        && check_size(&x->pending, 1, name, "pending")
        && check_size(&x->handed_mass, 36, name, "handed_mass")
        && check_size(&x->implicit, 1, name, "implicit")
        && check_size(&x->rigid_input, 6, name, "rigid_input");
}

/* floating_body_wrench(body): the wrench at the body's state into its `wrench` array. */
static PyObject *py_floating_body_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_fx_floating_body *b;
    const char *name = "floating_body_wrench";
    if (!rbc_parse(args, nargs, name, "H", "flex_floating", (void **)&b)) return NULL;
    if (!check_floating_body(b, name)) return NULL;
    rbc_fx_floating_body_wrench(b);
    Py_RETURN_NONE;
}

/* grounded_body_wrench(body). */
static PyObject *py_grounded_body_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_fx_grounded_body *b;
    const char *name = "grounded_body_wrench";
    if (!rbc_parse(args, nargs, name, "H", "flex_grounded", (void **)&b)) return NULL;
    if (!check_grounded_body(b, name)) return NULL;
    rbc_fx_grounded_body_wrench(b);
    Py_RETURN_NONE;
}

/* floating_body_step(body, motion, past_taus, past, H, n) -> bool (time left to the caller). */
static PyObject *py_floating_body_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_fx_floating_body *b;
    rbc_arr motion, taus, past;
    double H;
    int64_t n;
    const char *name = "floating_body_step";
    if (!rbc_parse(args, nargs, name, "HDDDdn", "flex_floating", (void **)&b, &motion, &taus,
                   &past, &H, &n)) return NULL;
    if (!check_floating_body(b, name) || !check_motions(&motion, &taus, &past, name)) return NULL;
    if (n < 1) FAIL("%s: n >= 1", name);
    int64_t k = (b->state.size - FX_ETA) / 2;
    return PyBool_FromLong(rbc_fx_floating_step(b->state.d, k, motion.d, taus.size, taus.d,
                                                past.d, H, n, b->gravity.d, b->axis.d,
                                                b->wmat.d));
}

/* grounded_body_step(body, motion, past_taus, past, H, n, p) -> bool. */
static PyObject *py_grounded_body_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_fx_grounded_body *b;
    rbc_arr motion, taus, past, p;
    double H;
    int64_t n;
    const char *name = "grounded_body_step";
    if (!rbc_parse(args, nargs, name, "HDDDdnD", "flex_grounded", (void **)&b, &motion, &taus,
                   &past, &H, &n, &p)) return NULL;
    if (!check_grounded_body(b, name) || !check_motions(&motion, &taus, &past, name)) return NULL;
    int64_t k = (b->state.size - FX_ETA) / 2, nb = b->comps.size;
    if (!check_size(&p, k ? 2 * k * (3 * k + 5 * nb) : p.size, name, "p")) return NULL;
    if (n < 1) FAIL("%s: n >= 1", name);
    return PyBool_FromLong(rbc_fx_grounded_step(b->state.d, k, motion.d, taus.size, taus.d,
                                                past.d, H, n, b->r0.d, b->comps.i, nb,
                                                b->shift.d, p.d, b->gacc.d));
}

/* rigid_input(exchange, body_state, wrench (6,), floating, out (6,)). */
static PyObject *py_rigid_input(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    rbc_fx_exchange *x;
    rbc_arr s, wrench, out;
    int floating;
    const char *name = "rigid_input";
    if (!rbc_parse(args, nargs, name, "HDDbD", "flex_exchange", (void **)&x, &s, &wrench,
                   &floating, &out)) return NULL;
    if (!check_exchange(x, name) || !check_size(&wrench, 6, name, "wrench")
        || !check_size(&out, 6, name, "out")) return NULL;
    if (s.size < FX_ETA) FAIL("%s: a state of at least %d values", name, FX_ETA);
    rbc_fx_rigid_input(x, s.d, wrench.d, floating, out.d);
    Py_RETURN_NONE;
}

PyMethodDef rbc_flex_methods[] = {
    RBC_METHOD(polynomial_through),
    RBC_METHOD(acceleration_polynomial),
    RBC_METHOD(frame_at),
    RBC_METHOD(end_of_step),
    RBC_METHOD(write_end_frame),
    RBC_METHOD(set_frame),
    RBC_METHOD(to_structure),
    RBC_METHOD(boundary),
    RBC_METHOD(regrounded_frame),
    RBC_METHOD(grounded_wrench),
    RBC_METHOD(floating_wrench),
    RBC_METHOD(chord_frame_inputs),
    RBC_METHOD(chord_residual),
    RBC_METHOD(chord_modal_acceleration),
    RBC_METHOD(chord_step),
    RBC_METHOD(chord_body_step),
    RBC_METHOD(chord_pin_forces),
    RBC_METHOD(joint_gaps),
    RBC_METHOD(point_frame_mass),
    RBC_METHOD(floating_body_wrench),
    RBC_METHOD(grounded_body_wrench),
    RBC_METHOD(floating_body_step),
    RBC_METHOD(grounded_body_step),
    RBC_METHOD(rigid_input),
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_flex_kinds[] = {
    /* rbc_fx_floating_body, rbc_fx_grounded_body, rbc_fx_exchange (flex/endpoint.h) */
    {"flex_floating", 10, "dddddddddd"},
    {"flex_grounded", 9, "ddldddddd"},
    {"flex_exchange", 8, "ddldddld"},
    {NULL, 0, NULL},
};
