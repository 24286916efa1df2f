/* Tree dynamics: ABA, CRBA, RNEA (see recursions.h). */
#include "recursions.h"
#include "spatial.h"

/* Inverse of the symmetric positive definite n x n matrix in block[:n, :n] (row stride 12;
 * Gauss-Jordan without pivoting; block[:, 6:] is scratch) into out[row0 : row0 + n, :n]
 * (row stride 6). */
static void invert_spd(double *block, int64_t n, double *out, int64_t row0) {
    if (n == 1) {
        out[6 * row0] = 1.0 / block[0];
        return;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) block[12 * i + 6 + j] = i == j ? 1.0 : 0.0;
    for (int64_t i = 0; i < n; i++) {
        double inv = 1.0 / block[12 * i + i];
        for (int64_t j = 0; j < n; j++) {
            block[12 * i + j] *= inv;
            block[12 * i + 6 + j] *= inv;
        }
        for (int64_t r = 0; r < n; r++) {
            double f = block[12 * r + i];
            if (r != i && f != 0.0)
                for (int64_t j = 0; j < n; j++) {
                    block[12 * r + j] -= f * block[12 * i + j];
                    block[12 * r + 6 + j] -= f * block[12 * i + 6 + j];
                }
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) out[6 * (row0 + i) + j] = block[12 * i + 6 + j];
}

/* Spatial inertias I_b (n+1, 6, 6) of the moving bodies at O, inertial axes. */
static int64_t body_inertias(const rbc_tree_tables *tab, const rbc_body_kin *kin, double *I) {
    int64_t ops = 0;
    for (int64_t j = 0; j < tab->joint_body.size; j++) {
        int64_t b = tab->joint_body.i[j];
        ops += mn_spatial_inertia(tab->mass.d[b], tab->inertia.d + 9 * b, kin->R.d + 9 * b,
                                  kin->r.d + 3 * b, I + 36 * b);
    }
    return ops;
}

/* Velocity-product forces V x* (I V) - f_ext into work->p, from the inertias in work->I. */
static int64_t body_forces(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                           const double *f_ext, rbc_dyn_work *work) {
    const double *V = kin->V.d, *I = work->I.d;
    double *P = work->p.d;
    int64_t nj = tab->joint_body.size;
    for (int64_t j = 0; j < nj; j++) {
        int64_t b = tab->joint_body.i[j];
        mn_s6 Vb = mn_s6_at(V + 6 * b);
        mn_s6 p = mn_crf(Vb, mn_times(I + 36 * b, Vb));
        for (int m = 0; m < 6; m++) P[6 * b + m] = p.x[m] - f_ext[6 * b + m];
    }
    return 60 * nj;
}

int64_t rbc_tree_aba(const rbc_tree_tables *tab, const rbc_body_kin *kin, const double *tau,
                     const double *f_ext, const double *base, rbc_dyn_work *work, double *vdot) {
    int64_t ops = body_inertias(tab, kin, work->I.d);
    ops += body_forces(tab, kin, f_ext, work);
    const int64_t *joint_body = tab->joint_body.i, *joint_parent = tab->joint_parent.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    const double *S = kin->S.d, *c = kin->c.d;
    double *I = work->I.d, *P = work->p.d, *U = work->U.d, *u = work->u.d;
    double *Dinv = work->Dinv.d, *block = work->block.d, *acc = work->acc.d;
    int64_t nj = tab->joint_body.size;
    for (int64_t j = nj - 1; j >= 0; j--) {
        int64_t b = joint_body[j], par = joint_parent[j], k0 = joint_v0[j], nv = joint_nv[j];
        mn_s6 pb = mn_s6_at(P + 6 * b);
        for (int64_t k = k0; k < k0 + nv; k++) {
            mn_s6 Sk = mn_s6_at(S + 6 * k);
            mn_s6 Uk = mn_times(I + 36 * b, Sk);
            for (int m = 0; m < 6; m++) U[6 * k + m] = Uk.x[m];
            u[k] = tau[k] - mn_dot6(Sk, pb);
        }
        for (int64_t a = 0; a < nv; a++)
            for (int64_t k = 0; k < nv; k++)
                block[12 * a + k] = mn_dot6(mn_s6_at(S + 6 * (k0 + a)), mn_s6_at(U + 6 * (k0 + k)));
        invert_spd(block, nv, Dinv, k0);
        ops += 36 * nv + 6 * nv * nv + nv * nv * nv + 6 * nv;
        if (par == 0) continue;
        /* I^a = I^A - W U^T and p^a = p^A + W u + I^a c, W = U D^-1, in place (I_b and p_b are
         * not needed again), then added to the parent's */
        double *Ib = I + 36 * b;
        for (int64_t col = 0; col < nv; col++) {
            double W[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
            for (int64_t a = 0; a < nv; a++) {
                double x = Dinv[6 * (k0 + a) + col];
                for (int m = 0; m < 6; m++) W[m] = W[m] + U[6 * (k0 + a) + m] * x;
            }
            double uc = u[k0 + col];
            for (int r = 0; r < 6; r++) {
                for (int m = 0; m < 6; m++) Ib[6 * r + m] -= W[r] * U[6 * (k0 + col) + m];
                P[6 * b + r] += W[r] * uc;
            }
        }
        mn_s6 Ic = mn_times(Ib, mn_s6_at(c + 6 * b));
        for (int r = 0; r < 6; r++) {
            P[6 * par + r] += P[6 * b + r] + Ic.x[r];
            for (int m = 0; m < 6; m++) I[36 * par + 6 * r + m] += Ib[6 * r + m];
        }
        ops += 6 * nv * nv + 42 * nv + 36;
    }
    for (int m = 0; m < 6; m++) acc[m] = base[m];
    for (int64_t j = 0; j < nj; j++) {
        int64_t b = joint_body[j], par = joint_parent[j], k0 = joint_v0[j], nv = joint_nv[j];
        for (int m = 0; m < 6; m++) acc[6 * b + m] = acc[6 * par + m] + c[6 * b + m];
        mn_s6 ab = mn_s6_at(acc + 6 * b);
        for (int64_t k = k0; k < k0 + nv; k++)
            block[k - k0] = u[k] - mn_dot6(mn_s6_at(U + 6 * k), ab);
        for (int64_t k = k0; k < k0 + nv; k++) {
            double x = 0.0;
            for (int64_t a = 0; a < nv; a++) x += Dinv[6 * k + a] * block[a];
            vdot[k] = x;
            for (int m = 0; m < 6; m++) acc[6 * b + m] += S[6 * k + m] * x;
        }
        ops += 6 * nv + nv * nv + 6 * nv;
    }
    return ops;
}

/* M(q) into M from the body inertias in work->I (turned into composite inertias). */
static int64_t composite(const rbc_tree_tables *tab, const rbc_body_kin *kin, rbc_dyn_work *work,
                         double *M) {
    const int64_t *joint_body = tab->joint_body.i, *joint_parent = tab->joint_parent.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    const int64_t *body_joint = tab->body_joint.i;
    double *Ic = work->I.d, *F = work->F.d;
    const double *S = kin->S.d;
    int64_t ops = 0, nj = tab->joint_body.size, nvt = tab->rate_kind.size;
    for (int64_t j = nj - 1; j >= 0; j--) {
        int64_t b = joint_body[j], par = joint_parent[j];
        if (par)
            for (int m = 0; m < 36; m++) Ic[36 * par + m] += Ic[36 * b + m];
    }
    for (int64_t m = 0; m < nvt * nvt; m++) M[m] = 0.0;
    for (int64_t j = 0; j < nj; j++) {
        int64_t b = joint_body[j], k0 = joint_v0[j], nv = joint_nv[j];
        for (int64_t k = 0; k < nv; k++) {
            mn_s6 Fk = mn_times(Ic + 36 * b, mn_s6_at(S + 6 * (k0 + k)));
            for (int m = 0; m < 6; m++) F[6 * k + m] = Fk.x[m];
            for (int64_t a = 0; a < nv; a++)
                M[nvt * (k0 + a) + k0 + k] = mn_dot6(mn_s6_at(S + 6 * (k0 + a)), Fk);
        }
        ops += 36 * nv + 6 * nv * nv;
        int64_t anc = joint_parent[j];
        while (anc && nv) {
            int64_t ja = body_joint[anc], a0 = joint_v0[ja], na = joint_nv[ja];
            for (int64_t a = a0; a < a0 + na; a++) {
                mn_s6 Sa = mn_s6_at(S + 6 * a);
                for (int64_t k = 0; k < nv; k++) {
                    double x = mn_dot6(Sa, mn_s6_at(F + 6 * k));
                    M[nvt * a + k0 + k] = x;
                    M[nvt * (k0 + k) + a] = x;
                }
            }
            ops += 6 * na * nv;
            anc = joint_parent[ja];
        }
    }
    return ops;
}

/* C(q, v) into C from the body inertias in work->I (recursive Newton-Euler). */
static int64_t newton_euler(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                            const double *f_ext, const double *base, rbc_dyn_work *work,
                            double *C) {
    int64_t ops = body_forces(tab, kin, f_ext, work);
    const int64_t *joint_body = tab->joint_body.i, *joint_parent = tab->joint_parent.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    const double *S = kin->S.d, *c = kin->c.d, *I = work->I.d;
    double *acc = work->acc.d, *P = work->p.d;
    int64_t nj = tab->joint_body.size;
    for (int m = 0; m < 6; m++) acc[m] = base[m];
    for (int64_t j = 0; j < nj; j++) {
        int64_t b = joint_body[j], par = joint_parent[j];
        for (int m = 0; m < 6; m++) acc[6 * b + m] = acc[6 * par + m] + c[6 * b + m];
        mn_s6 Ia = mn_times(I + 36 * b, mn_s6_at(acc + 6 * b));
        for (int m = 0; m < 6; m++) P[6 * b + m] += Ia.x[m];
    }
    for (int64_t j = nj - 1; j >= 0; j--) {
        int64_t b = joint_body[j], par = joint_parent[j];
        mn_s6 pb = mn_s6_at(P + 6 * b);
        for (int64_t k = joint_v0[j]; k < joint_v0[j] + joint_nv[j]; k++)
            C[k] = mn_dot6(mn_s6_at(S + 6 * k), pb);
        if (par)
            for (int m = 0; m < 6; m++) P[6 * par + m] += pb.x[m];
    }
    return ops + 42 * nj;
}

int64_t rbc_tree_mass_matrix(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                             rbc_dyn_work *work, double *M) {
    int64_t ops = body_inertias(tab, kin, work->I.d);
    return ops + composite(tab, kin, work, M);
}

int64_t rbc_tree_bias(const rbc_tree_tables *tab, const rbc_body_kin *kin, const double *f_ext,
                      const double *base, rbc_dyn_work *work, double *C) {
    int64_t ops = body_inertias(tab, kin, work->I.d);
    return ops + newton_euler(tab, kin, f_ext, base, work, C);
}

int64_t rbc_tree_mass_matrix_and_bias(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                                      const double *f_ext, const double *base,
                                      rbc_dyn_work *work, double *M, double *C) {
    int64_t ops = body_inertias(tab, kin, work->I.d);
    ops += newton_euler(tab, kin, f_ext, base, work, C);
    return ops + composite(tab, kin, work, M);
}
