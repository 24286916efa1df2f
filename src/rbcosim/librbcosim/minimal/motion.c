/* Tree kinematics (see motion.h). */
#include "motion.h"
#include "spatial.h"

int64_t rbc_tree_kinematics(const rbc_tree_tables *tab, const double *q, const double *v,
                            rbc_body_kin *kin) {
    const int64_t *joint_body = tab->joint_body.i, *joint_parent = tab->joint_parent.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    const int64_t *joint_quat = tab->joint_quat.i, *rate_q = tab->rate_q.i;
    const int64_t *rate_kind = tab->rate_kind.i, *rate_side = tab->rate_side.i;
    const double *rate_axis = tab->rate_axis.d, *rate_u = tab->rate_u.d;
    double *Q = kin->q.d, *R = kin->R.d, *r = kin->r.d, *V = kin->V.d, *c = kin->c.d;
    double *S = kin->S.d;
    int64_t ops = 0, nj = tab->joint_body.size;
    for (int64_t j = 0; j < nj; j++) {
        int64_t b = joint_body[j], p = joint_parent[j];
        int64_t k0 = joint_v0[j], k1 = joint_v0[j] + joint_nv[j];
        rbc_v3 sp = m3_mul(R + 9 * p, v3_at(tab->marker_parent.d + 3 * j));
        rbc_v3 o = {{r[3 * p] + sp.x[0], r[3 * p + 1] + sp.x[1], r[3 * p + 2] + sp.x[2]}};
        /* relative attitude A (x) e(q) (x) B and marker shift t_fix + sum d_k a_k (parent) */
        int64_t iq = joint_quat[j];
        mn_q4 e = {{1.0, 0.0, 0.0, 0.0}};
        if (iq >= 0) e = mn_q4_at(q + iq);
        rbc_v3 d = v3_at(tab->fixed_shift.d + 3 * j);
        for (int64_t k = k0; k < k1; k++) {
            int64_t i = rate_q[k];
            if (i < 0) continue;
            if (rate_kind[k] == RBC_TRANSLATION) {
                double x = q[i];
                d.x[0] = d.x[0] + rate_axis[3 * k] * x;
                d.x[1] = d.x[1] + rate_axis[3 * k + 1] * x;
                d.x[2] = d.x[2] + rate_axis[3 * k + 2] * x;
            } else {
                e = mn_qmul(e, mn_half_turn(v3_at(rate_u + 3 * k), q[i]));
            }
        }
        mn_q4 L = mn_qmul(mn_qmul(mn_q4_at(tab->marker_a.d + 4 * j), e),
                          mn_q4_at(tab->marker_b.d + 4 * j));
        mn_q4 qb = mn_qmul(mn_q4_at(Q + 4 * p), L);
        q_matrix(qb.x, R + 9 * b);
        rbc_v3 t = m3_mul(R + 9 * p, d);
        rbc_v3 o2 = {{o.x[0] + t.x[0], o.x[1] + t.x[1], o.x[2] + t.x[2]}};
        rbc_v3 sc = m3_mul(R + 9 * b, v3_at(tab->marker_child.d + 3 * j));
        for (int m = 0; m < 4; m++) Q[4 * b + m] = qb.x[m];
        for (int m = 0; m < 3; m++) r[3 * b + m] = o2.x[m] - sc.x[m];
        /* motion subspace, joint velocity S v split by side, velocity product */
        mn_s6 svp = {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}, svc = svp;
        for (int64_t k = k0; k < k1; k++) {
            int parent_side = rate_side[k] == RBC_SIDE_PARENT;
            rbc_v3 a = m3_mul(R + 9 * (parent_side ? p : b), v3_at(rate_axis + 3 * k));
            mn_s6 s;
            if (rate_kind[k] == RBC_TRANSLATION) {
                mn_s6 st = {{0.0, 0.0, 0.0, a.x[0], a.x[1], a.x[2]}};
                s = st;
            } else {
                rbc_v3 n = v3_cross(parent_side ? o : o2, a);
                mn_s6 sr = {{a.x[0], a.x[1], a.x[2], n.x[0], n.x[1], n.x[2]}};
                s = sr;
            }
            double x = v[k];
            for (int m = 0; m < 6; m++) S[6 * k + m] = s.x[m];
            if (parent_side)
                for (int m = 0; m < 6; m++) svp.x[m] = svp.x[m] + s.x[m] * x;
            else
                for (int m = 0; m < 6; m++) svc.x[m] = svc.x[m] + s.x[m] * x;
        }
        mn_s6 Vp = mn_s6_at(V + 6 * p), sv;
        for (int m = 0; m < 6; m++) sv.x[m] = svp.x[m] + svc.x[m];
        mn_s6 c1 = mn_crm(Vp, sv), c2 = mn_crm(svp, svc);
        for (int m = 0; m < 6; m++) {
            V[6 * b + m] = Vp.x[m] + sv.x[m];
            c[6 * b + m] = c1.x[m] + c2.x[m];
        }
        int64_t nv = k1 - k0;
        ops += 9 + 16 + 19 + 9 + 18 + (nv == 1 ? 30 : 6 * nv + 48);
    }
    return ops;
}

void rbc_tree_body_accelerations(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                                 const double *vdot, const double *base, double *acc) {
    const int64_t *joint_body = tab->joint_body.i, *joint_parent = tab->joint_parent.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    const double *c = kin->c.d, *S = kin->S.d;
    for (int m = 0; m < 6; m++) acc[m] = base[m];
    for (int64_t j = 0; j < tab->joint_body.size; j++) {
        int64_t b = joint_body[j], p = joint_parent[j];
        for (int m = 0; m < 6; m++) acc[6 * b + m] = acc[6 * p + m] + c[6 * b + m];
        for (int64_t k = joint_v0[j]; k < joint_v0[j] + joint_nv[j]; k++)
            for (int m = 0; m < 6; m++) acc[6 * b + m] += S[6 * k + m] * vdot[k];
    }
}

void rbc_tree_coordinate_rates(const rbc_tree_tables *tab, const double *q, const double *v,
                               double *qdot) {
    const int64_t *rate_q = tab->rate_q.i, *joint_quat = tab->joint_quat.i;
    const int64_t *joint_v0 = tab->joint_v0.i, *joint_nv = tab->joint_nv.i;
    for (int64_t k = 0; k < tab->rate_q.size; k++)
        if (rate_q[k] >= 0) qdot[rate_q[k]] = v[k];
    for (int64_t j = 0; j < tab->joint_quat.size; j++) {
        int64_t i = joint_quat[j];
        if (i < 0) continue;
        int64_t k = joint_v0[j] + joint_nv[j] - 3; /* the angular velocity: last three rates */
        double q0 = q[i], q1 = q[i + 1], q2 = q[i + 2], q3 = q[i + 3];
        double wx = v[k], wy = v[k + 1], wz = v[k + 2];
        qdot[i] = 0.5 * (-q1 * wx - q2 * wy - q3 * wz);
        qdot[i + 1] = 0.5 * (q0 * wx - q3 * wy + q2 * wz);
        qdot[i + 2] = 0.5 * (q3 * wx + q0 * wy - q1 * wz);
        qdot[i + 3] = 0.5 * (-q2 * wx + q1 * wy + q0 * wz);
    }
}
