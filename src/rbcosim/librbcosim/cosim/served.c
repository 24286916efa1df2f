/* The joints' gaps of a served rigid side in one call (see served.h). */
#include "served.h"

#include <stddef.h>

#include "../flex/continuity.h"

int64_t rbc_sv_gaps(const double *outputs, const int64_t *point, const double *const *flex,
                    int64_t nj, const double *tol, double *gaps) {
    int64_t over = 0;
    for (int64_t j = 0; j < nj; j++) {
        double *g = gaps + 4 * j;
        if (flex[j] == NULL) {
            for (int c = 0; c < 4; c++) g[c] = 0.0;
            continue;
        }
        rbc_fx_joint_gaps(outputs + 13 * point[j], flex[j], g);
        int any = 0;
        for (int c = 0; c < 4; c++) any |= g[c] > tol[4 * j + c];
        over += any;
    }
    return over;
}
