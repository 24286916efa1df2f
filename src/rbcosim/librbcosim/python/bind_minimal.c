/* Python entry points of the minimal-coordinate part of the core (rbcosim.minimal).
 *
 * Handles (rbcosim.core.make_handle):
 *   "minimal_tree"    TreeTables + DynamicsWork       (rbcosim.minimal.algorithms.TreeDynamics)
 *   "minimal_kin"     BodyKinematics                  (one kinematic state)
 *   "minimal_system"  TreeTables + ForceTable (built without gravity) + TreeWork + has_forces
 *                     (rbcosim.minimal.system.TreeSystem)
 * Functions return the multiplications done where the kernels count them (int).
 */
#include "rbc_py.h"
#include "../minimal/stepper.h"

typedef struct {
    rbc_tree_tables tab;
    rbc_dyn_work dyn;
} tree_handle;

#define SYSTEM_TYPES RBC_TREE_TABLES_TYPES RBC_FORCES_TYPES RBC_BODY_KIN_TYPES \
    RBC_DYN_WORK_TYPES "ddddddddd" "l"

static int64_t n_bodies(const rbc_tree_tables *tab) { return tab->mass.size; } /* n + 1 */
static int64_t n_rates(const rbc_tree_tables *tab) { return tab->rate_kind.size; }

static int bad(const char *name, const char *what) {
    PyErr_Format(PyExc_ValueError, "%s: %s", name, what);
    return 0;
}

/* kin matches the tree: (n+1) bodies and nv rates. */
static int check_kin(const char *name, const rbc_tree_tables *tab, const rbc_body_kin *kin) {
    if (kin->q.shape[0] != n_bodies(tab) || kin->S.shape[0] != n_rates(tab)
        || kin->R.shape[0] != n_bodies(tab) || kin->V.shape[0] != n_bodies(tab))
        return bad(name, "kinematics of another tree (body or rate count differs)");
    return 1;
}

static int check_size(const char *name, const rbc_arr *a, int64_t size, const char *what) {
    if (a->size != size) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %lld entries, expected %lld", name, what,
                     (long long)a->size, (long long)size);
        return 0;
    }
    return 1;
}

static int check_forces(const char *name, const rbc_tree_tables *tab, const rbc_arr *f_ext,
                        const rbc_arr *base) {
    return check_size(name, f_ext, 6 * n_bodies(tab), "f_ext (n+1, 6)")
        && check_size(name, base, 6, "base (6,)");
}

/* minimal_kinematics(tree, kin, q (nq,), v (nv,)) -> ops: kin filled. */
static PyObject *py_minimal_kinematics(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr q, v;
    const char *name = "minimal_kinematics";
    if (!rbc_parse(args, nargs, name, "HHDD", "minimal_tree", &h, "minimal_kin", &kin, &q, &v)
        || !check_kin(name, &h->tab, kin) || !check_size(name, &v, n_rates(&h->tab), "v"))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_kinematics(&h->tab, q.d, v.d, kin));
}

/* minimal_body_accelerations(tree, kin, vdot (nv,), base (6,), acc (n+1, 6)). */
static PyObject *py_minimal_body_accelerations(PyObject *self, PyObject *const *args,
                                               Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr vdot, base, acc;
    const char *name = "minimal_body_accelerations";
    if (!rbc_parse(args, nargs, name, "HHDDD", "minimal_tree", &h, "minimal_kin", &kin, &vdot,
                   &base, &acc)
        || !check_kin(name, &h->tab, kin) || !check_size(name, &vdot, n_rates(&h->tab), "vdot")
        || !check_forces(name, &h->tab, &acc, &base))
        return NULL;
    rbc_tree_body_accelerations(&h->tab, kin, vdot.d, base.d, acc.d);
    Py_RETURN_NONE;
}

/* minimal_coordinate_rates(tree, q (nq,), v (nv,), qdot (nq,)). */
static PyObject *py_minimal_coordinate_rates(PyObject *self, PyObject *const *args,
                                             Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_arr q, v, qdot;
    const char *name = "minimal_coordinate_rates";
    if (!rbc_parse(args, nargs, name, "HDDD", "minimal_tree", &h, &q, &v, &qdot)
        || !check_size(name, &v, n_rates(&h->tab), "v")
        || !check_size(name, &qdot, q.size, "qdot"))
        return NULL;
    rbc_tree_coordinate_rates(&h->tab, q.d, v.d, qdot.d);
    Py_RETURN_NONE;
}

/* minimal_aba(tree, kin, tau (nv,), f_ext (n+1, 6), base (6,), vdot (nv,)) -> ops. */
static PyObject *py_minimal_aba(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr tau, f_ext, base, vdot;
    const char *name = "minimal_aba";
    if (!rbc_parse(args, nargs, name, "HHDDDD", "minimal_tree", &h, "minimal_kin", &kin, &tau,
                   &f_ext, &base, &vdot)
        || !check_kin(name, &h->tab, kin) || !check_forces(name, &h->tab, &f_ext, &base)
        || !check_size(name, &tau, n_rates(&h->tab), "tau")
        || !check_size(name, &vdot, n_rates(&h->tab), "vdot"))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_aba(&h->tab, kin, tau.d, f_ext.d, base.d, &h->dyn,
                                            vdot.d));
}

/* minimal_mass_matrix(tree, kin, M (nv, nv)) -> ops. */
static PyObject *py_minimal_mass_matrix(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr M;
    const char *name = "minimal_mass_matrix";
    if (!rbc_parse(args, nargs, name, "HHD", "minimal_tree", &h, "minimal_kin", &kin, &M)
        || !check_kin(name, &h->tab, kin)
        || !check_size(name, &M, n_rates(&h->tab) * n_rates(&h->tab), "M (nv, nv)"))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_mass_matrix(&h->tab, kin, &h->dyn, M.d));
}

/* minimal_bias(tree, kin, f_ext (n+1, 6), base (6,), C (nv,)) -> ops. */
static PyObject *py_minimal_bias(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr f_ext, base, C;
    const char *name = "minimal_bias";
    if (!rbc_parse(args, nargs, name, "HHDDD", "minimal_tree", &h, "minimal_kin", &kin, &f_ext,
                   &base, &C)
        || !check_kin(name, &h->tab, kin) || !check_forces(name, &h->tab, &f_ext, &base)
        || !check_size(name, &C, n_rates(&h->tab), "C"))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_bias(&h->tab, kin, f_ext.d, base.d, &h->dyn, C.d));
}

/* minimal_mass_matrix_and_bias(tree, kin, f_ext, base, M (nv, nv), C (nv,)) -> ops. */
static PyObject *py_minimal_mass_matrix_and_bias(PyObject *self, PyObject *const *args,
                                                 Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_body_kin *kin;
    rbc_arr f_ext, base, M, C;
    const char *name = "minimal_mass_matrix_and_bias";
    if (!rbc_parse(args, nargs, name, "HHDDDD", "minimal_tree", &h, "minimal_kin", &kin,
                   &f_ext, &base, &M, &C)
        || !check_kin(name, &h->tab, kin) || !check_forces(name, &h->tab, &f_ext, &base)
        || !check_size(name, &M, n_rates(&h->tab) * n_rates(&h->tab), "M (nv, nv)")
        || !check_size(name, &C, n_rates(&h->tab), "C"))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_mass_matrix_and_bias(&h->tab, kin, f_ext.d, base.d,
                                                             &h->dyn, M.d, C.d));
}

/* minimal_normalize(tree, y) -> largest |(|e| - 1)| before renormalising (NaN: not finite). */
static PyObject *py_minimal_normalize(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    tree_handle *h;
    rbc_arr y;
    if (!rbc_parse(args, nargs, "minimal_normalize", "HD", "minimal_tree", &h, &y)) return NULL;
    for (int64_t j = 0; j < h->tab.joint_quat.size; j++)
        if (h->tab.joint_quat.i[j] >= 0 && h->tab.joint_quat.i[j] + 4 > y.size) {
            bad("minimal_normalize", "y shorter than the tree's coordinates");
            return NULL;
        }
    return PyFloat_FromDouble(rbc_tree_normalize(&h->tab, y.d, y.size));
}

static int system_state(const char *name, rbc_tree_system *sys, const rbc_arr *y) {
    return check_size(name, y, sys->work.stages.shape[1], "y (nq + nv,)");
}

/* minimal_evaluate(system, t, y (ny,), ydot (ny,)) -> ops: y' = [q', v'] into ydot. */
static PyObject *py_minimal_evaluate(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_tree_system *sys;
    double t;
    rbc_arr y, ydot;
    const char *name = "minimal_evaluate";
    if (!rbc_parse(args, nargs, name, "HdDD", "minimal_system", &sys, &t, &y, &ydot)
        || !system_state(name, sys, &y) || !system_state(name, sys, &ydot))
        return NULL;
    return PyLong_FromLongLong(rbc_tree_derivative(sys, t, y.d, ydot.d));
}

/* minimal_body_forces(system, kin, t): spatial body forces at O of kin into work.f_ext. */
static PyObject *py_minimal_body_forces(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_tree_system *sys;
    rbc_body_kin *kin;
    double t;
    const char *name = "minimal_body_forces";
    if (!rbc_parse(args, nargs, name, "HHd", "minimal_system", &sys, "minimal_kin", &kin, &t)
        || !check_kin(name, &sys->tab, kin))
        return NULL;
    if (sys->has_forces.i[0]) rbc_tree_external_forces(sys, t, kin);
    Py_RETURN_NONE;
}

/* minimal_power(system, t, y) -> P (W) of the loads and dampers. */
static PyObject *py_minimal_power(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_tree_system *sys;
    double t;
    rbc_arr y;
    const char *name = "minimal_power";
    if (!rbc_parse(args, nargs, name, "HdD", "minimal_system", &sys, &t, &y)
        || !system_state(name, sys, &y))
        return NULL;
    return PyFloat_FromDouble(rbc_tree_power(sys, t, y.d));
}

/* minimal_rk4(system, y, t0, h, k0, n) -> (largest quaternion error, steps done). */
static PyObject *py_minimal_rk4(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_tree_system *sys;
    rbc_arr y;
    double t0, h;
    int64_t k0, n, done = 0;
    const char *name = "minimal_rk4";
    if (!rbc_parse(args, nargs, name, "HDddnn", "minimal_system", &sys, &y, &t0, &h, &k0, &n)
        || !system_state(name, sys, &y))
        return NULL;
    double err = rbc_tree_rk4_steps(sys, y.d, t0, h, k0, n, &done);
    return Py_BuildValue("(dL)", err, (long long)done);
}

/* minimal_sdirk2(system, matrix (ny, ny), pivot (ny,), valid (1,), tol, max_newton, y, t0, h,
 * k0, n) -> (largest quaternion error, steps done, stage time where Newton failed or NaN). */
static PyObject *py_minimal_sdirk2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_tree_system *sys;
    rbc_arr matrix, pivot, valid, y;
    rbc_newton newton;
    double t0, h, failed_at = NAN;
    int64_t k0, n, done = 0;
    const char *name = "minimal_sdirk2";
    if (!rbc_parse(args, nargs, name, "HDLLdnDddnn", "minimal_system", &sys, &matrix, &pivot,
                   &valid, &newton.tol, &newton.max_newton, &y, &t0, &h, &k0, &n)
        || !system_state(name, sys, &y)
        || !check_size(name, &matrix, y.size * y.size, "matrix (ny, ny)")
        || !check_size(name, &pivot, y.size, "pivot (ny,)")
        || !check_size(name, &valid, 1, "valid (1,)"))
        return NULL;
    newton.matrix = matrix.d;
    newton.pivot = pivot.i;
    newton.valid = valid.i;
    double err = rbc_tree_sdirk2_steps(sys, &newton, y.d, t0, h, k0, n, &done, &failed_at);
    return Py_BuildValue("(dLd)", err, (long long)done, failed_at);
}

PyMethodDef rbc_minimal_methods[] = {
    RBC_METHOD(minimal_kinematics),
    RBC_METHOD(minimal_body_accelerations),
    RBC_METHOD(minimal_coordinate_rates),
    RBC_METHOD(minimal_aba),
    RBC_METHOD(minimal_mass_matrix),
    RBC_METHOD(minimal_bias),
    RBC_METHOD(minimal_mass_matrix_and_bias),
    RBC_METHOD(minimal_normalize),
    RBC_METHOD(minimal_evaluate),
    RBC_METHOD(minimal_body_forces),
    RBC_METHOD(minimal_power),
    RBC_METHOD(minimal_rk4),
    RBC_METHOD(minimal_sdirk2),
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_minimal_kinds[] = {
    {"minimal_tree", RBC_TREE_TABLES_SLOTS + RBC_DYN_WORK_SLOTS,
     RBC_TREE_TABLES_TYPES RBC_DYN_WORK_TYPES},
    {"minimal_kin", RBC_BODY_KIN_SLOTS, RBC_BODY_KIN_TYPES},
    {"minimal_system", RBC_TREE_SYSTEM_SLOTS, SYSTEM_TYPES},
    {NULL, 0, NULL},
};
