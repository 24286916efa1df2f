/* Expression programs (see expression.h); arithmetic in a fixed order (no FMA contraction). */
#include "expression.h"
#include <math.h>

/* (g(u), g'(u), g''(u)) of a one-argument function into g[0..2]. */
static void unary(int op, double u, double *g) {
    switch (op) {
    case RBC_OP_NEG: g[0] = -u; g[1] = -1.0; g[2] = 0.0; return;
    case RBC_OP_SIN: { double s = sin(u), c = cos(u); g[0] = s; g[1] = c; g[2] = -s; return; }
    case RBC_OP_COS: { double s = sin(u), c = cos(u); g[0] = c; g[1] = -s; g[2] = -c; return; }
    case RBC_OP_TAN: {
        double v = tan(u), d = 1.0 + v * v;
        g[0] = v; g[1] = d; g[2] = 2.0 * v * d;
        return;
    }
    case RBC_OP_ASIN: case RBC_OP_ACOS: {
        double w = 1.0 - u * u;
        double d = 1.0 / sqrt(w), dd = u / (w * sqrt(w));
        if (op == RBC_OP_ASIN) { g[0] = fabs(u) <= 1.0 ? asin(u) : NAN; g[1] = d; g[2] = dd; }
        else { g[0] = fabs(u) <= 1.0 ? acos(u) : NAN; g[1] = -d; g[2] = -dd; }
        return;
    }
    case RBC_OP_ATAN: {
        double w = 1.0 + u * u;
        g[0] = atan(u); g[1] = 1.0 / w; g[2] = -2.0 * u / (w * w);
        return;
    }
    case RBC_OP_SQRT: {
        double v = u >= 0.0 ? sqrt(u) : NAN;
        g[0] = v; g[1] = 0.5 / v; g[2] = -0.25 / (v * v * v);
        return;
    }
    case RBC_OP_EXP: { double v = exp(u); g[0] = v; g[1] = v; g[2] = v; return; }
    case RBC_OP_LOG: {
        g[0] = u > 0.0 ? log(u) : (u == 0.0 ? -INFINITY : NAN);
        g[1] = 1.0 / u; g[2] = -1.0 / (u * u);
        return;
    }
    default:  /* ABS */
        g[0] = fabs(u); g[1] = u > 0.0 ? 1.0 : (u < 0.0 ? -1.0 : 0.0); g[2] = 0.0;
    }
}

/* (h o u)' = h'(u) u', zero where u' is (h' may be infinite there, as sqrt's at 0). */
static double chain1(double h1, double u1) { return u1 != 0.0 ? h1 * u1 : 0.0; }

/* (h o u)'' = h''(u) u'^2 + h'(u) u'', each term zero where its factor of u is. */
static double chain2(double h1, double h2, double u1, double u2) {
    return (u1 != 0.0 ? h2 * u1 * u1 : 0.0) + (u2 != 0.0 ? h1 * u2 : 0.0);
}

/* Jet of a^b; a constant exponent keeps negative bases with integral exponents. */
static void power(double a, double a1, double a2, double b, double b1, double b2, double *g) {
    if (b1 == 0.0 && b2 == 0.0) {
        double v = pow(a, b);
        double v1 = b != 0.0 ? b * pow(a, b - 1.0) : 0.0;
        double v2 = (b != 0.0 && b != 1.0) ? b * (b - 1.0) * pow(a, b - 2.0) : 0.0;
        g[0] = v; g[1] = chain1(v1, a1); g[2] = chain2(v1, v2, a1, a2);
        return;
    }
    double v = pow(a, b);
    double la = a > 0.0 ? log(a) : NAN;
    double w1 = b1 * la + b * a1 / a;
    double w2 = b2 * la + 2.0 * b1 * a1 / a + b * (a2 / a - a1 * a1 / (a * a));
    g[0] = v; g[1] = v * w1; g[2] = v * (w2 + w1 * w1);
}

static void binary(int op, const double *x, const double *y, double *g) {
    double a = x[0], a1 = x[1], a2 = x[2], b = y[0], b1 = y[1], b2 = y[2];
    int truth;
    switch (op) {
    case RBC_OP_ADD: g[0] = a + b; g[1] = a1 + b1; g[2] = a2 + b2; return;
    case RBC_OP_SUB: g[0] = a - b; g[1] = a1 - b1; g[2] = a2 - b2; return;
    case RBC_OP_MUL:
        g[0] = a * b; g[1] = a1 * b + a * b1; g[2] = a2 * b + 2.0 * a1 * b1 + a * b2;
        return;
    case RBC_OP_DIV: {
        double q = a / b, q1 = (a1 - q * b1) / b;
        g[0] = q; g[1] = q1; g[2] = (a2 - 2.0 * q1 * b1 - q * b2) / b;
        return;
    }
    case RBC_OP_POW: power(a, a1, a2, b, b1, b2, g); return;
    case RBC_OP_MIN:
        if (a <= b) { g[0] = a; g[1] = a1; g[2] = a2; } else { g[0] = b; g[1] = b1; g[2] = b2; }
        return;
    case RBC_OP_MAX:
        if (a >= b) { g[0] = a; g[1] = a1; g[2] = a2; } else { g[0] = b; g[1] = b1; g[2] = b2; }
        return;
    case RBC_OP_ATAN2: {  /* atan2(y = a, x = b) */
        double d = a * a + b * b;
        double v1 = (b * a1 - a * b1) / d;
        double d1 = 2.0 * (a * a1 + b * b1);
        g[0] = atan2(a, b); g[1] = v1; g[2] = ((b * a2 - a * b2) - v1 * d1) / d;
        return;
    }
    case RBC_OP_LT: truth = a < b; break;
    case RBC_OP_LE: truth = a <= b; break;
    case RBC_OP_GT: truth = a > b; break;
    case RBC_OP_GE: truth = a >= b; break;
    case RBC_OP_EQ: truth = a == b; break;
    case RBC_OP_NE: truth = a != b; break;
    default: truth = a != 0.0 && b != 0.0;  /* AND */
    }
    g[0] = truth ? 1.0 : 0.0; g[1] = 0.0; g[2] = 0.0;
}

int64_t rbc_program_jet(const double *program, double t, double *stack, double *jet) {
    int64_t n = (int64_t)program[0];
    int64_t sp = 0, bad = -1;
    for (int64_t i = 0; i < n; i++) {
        int op = (int)program[2 + 2 * i];
        double arg = program[2 + 2 * i + 1];
        double g[3];
        if (op == RBC_OP_CONST) { g[0] = arg; g[1] = 0.0; g[2] = 0.0; }
        else if (op == RBC_OP_TIME) { g[0] = t; g[1] = 1.0; g[2] = 0.0; }
        else if (op < RBC_OP_NEG) {
            sp -= 2;
            binary(op, stack + 3 * sp, stack + 3 * (sp + 1), g);
        } else if (op < RBC_OP_WHERE) {
            sp -= 1;
            double u = stack[3 * sp], u1 = stack[3 * sp + 1], u2 = stack[3 * sp + 2], h[3];
            unary(op, u, h);
            g[0] = h[0]; g[1] = chain1(h[1], u1); g[2] = chain2(h[1], h[2], u1, u2);
        } else {
            sp -= 3;
            int64_t k = stack[3 * sp] != 0.0 ? sp + 1 : sp + 2;
            g[0] = stack[3 * k]; g[1] = stack[3 * k + 1]; g[2] = stack[3 * k + 2];
        }
        stack[3 * sp] = g[0]; stack[3 * sp + 1] = g[1]; stack[3 * sp + 2] = g[2];
        sp += 1;
        if (bad < 0 && !isfinite(g[0])) bad = i;
    }
    if (isfinite(stack[0])) bad = -1;
    jet[0] = stack[0]; jet[1] = stack[1]; jet[2] = stack[2];
    return bad;
}
