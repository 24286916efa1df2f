/* Evaluation of an expression program with its first two derivatives in t.
 *
 * A program (rbcosim.scenario.expressions.compile_expression) is a float array
 * [n, depth, op_0, arg_0, ..., op_{n-1}, arg_{n-1}]: n postfix instructions on a stack of jets
 * (u, u', u'') whose deepest point is `depth`.  CONST pushes (arg, 0, 0), TIME pushes (t, 1, 0);
 * the others pop their operands and push the result, derivatives by the chain rule (forward
 * mode, second order).  A comparison is (1, 0, 0) when true, else (0, 0, 0); where(c, a, b) is
 * a's jet where c is non-zero, else b's.
 */
#ifndef RBC_RIGID_EXPRESSION_H
#define RBC_RIGID_EXPRESSION_H

#include <stdint.h>

enum {
    RBC_OP_CONST = 0, RBC_OP_TIME = 1,
    RBC_OP_ADD = 2, RBC_OP_SUB, RBC_OP_MUL, RBC_OP_DIV, RBC_OP_POW, RBC_OP_MIN, RBC_OP_MAX,
    RBC_OP_ATAN2, RBC_OP_LT, RBC_OP_LE, RBC_OP_GT, RBC_OP_GE, RBC_OP_EQ, RBC_OP_NE, RBC_OP_AND,
    RBC_OP_NEG = 17, RBC_OP_SIN, RBC_OP_COS, RBC_OP_TAN, RBC_OP_ASIN, RBC_OP_ACOS, RBC_OP_ATAN,
    RBC_OP_SQRT, RBC_OP_EXP, RBC_OP_LOG, RBC_OP_ABS,
    RBC_OP_WHERE = 28,
};

/* f, f', f'' of `program` at time t s into jet[0..2], using stack (>= depth rows of 3) as
 * scratch.  Returns -1 when f is finite, else the index of the first instruction whose value
 * was not (a branch that where() discards may be non-finite). */
int64_t rbc_program_jet(const double *program, double t, double *stack, double *jet);

#endif
