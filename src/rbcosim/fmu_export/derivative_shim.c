/* Directional derivatives for a pythonfmu / pythonfmu3 FMU (Linux x86-64).
 *
 * pythonfmu 0.7 and pythonfmu3 0.3.4 answer fmi2GetDirectionalDerivative,
 * fmi3GetDirectionalDerivative and fmi3GetAdjointDerivative with "not supported" without
 * calling Python. This library takes the place of the wrapper binary <id>.so in the FMU: it
 * loads the wrapper (renamed <id>.pythonfmu.so, same folder) and jumps straight into it for
 * every other FMI function (one `jmp` per function, so any signature passes untouched). The
 * derivative calls are answered through two calls the wrapper does forward to the Python
 * slave (rbcosim.fmu_export.derivatives):
 *
 *   SetString(REQUEST_VR, "u <unknown vrs> k <known vrs>")  the slave computes the Jacobian
 *   GetReal/GetFloat64(RESULT_VR0 + m, m < nU * nK)         its entries, row-major
 *
 * and the seed is applied here: J * seed (directional), seed^T * J (adjoint, FMI 3).
 *
 * Built by rbcosim.fmu_export.shim with -DRBC_FMI=2 or 3 and FORWARDED_H naming a generated
 * header of X(function) lines: the FMI functions forwarded (from the FMI headers).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if RBC_FMI == 2
#include "fmi2Functions.h"
typedef fmi2Component Instance;
typedef fmi2ValueReference ValueReference;
typedef fmi2Status Status;
#define STATUS_ERROR fmi2Error
#define STATUS_WARNING fmi2Warning
#define SET_STRING(c, vrs, n, values) \
    ((fmi2SetStringTYPE *)rbc_p_fmi2SetString)(c, vrs, n, values)
#define GET_REAL(c, vrs, n, values) ((fmi2GetRealTYPE *)rbc_p_fmi2GetReal)(c, vrs, n, values)
#else
#include "fmi3Functions.h"
typedef fmi3Instance Instance;
typedef fmi3ValueReference ValueReference;
typedef fmi3Status Status;
#define STATUS_ERROR fmi3Error
#define STATUS_WARNING fmi3Warning
#define SET_STRING(c, vrs, n, values) \
    ((fmi3SetStringTYPE *)rbc_p_fmi3SetString)(c, vrs, n, values, n)
#define GET_REAL(c, vrs, n, values) \
    ((fmi3GetFloat64TYPE *)rbc_p_fmi3GetFloat64)(c, vrs, n, values, n)
#endif

/* Keep in step with rbcosim/fmu_export/derivatives.py. */
#define REQUEST_VR 0x7FFFFF00u
#define RESULT_VR0 0x40000000u

#include FORWARDED_H

/* One pointer per forwarded function, filled when the library is loaded. */
#define POINTER(name) __attribute__((visibility("hidden"))) void *rbc_p_##name;
FORWARDED(POINTER)

/* The exported symbol: a jump through the pointer, arguments and return value untouched. */
#define TRAMPOLINE(name)                                                              \
    __asm__(".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n"       \
            "\tjmp *rbc_p_" #name "(%rip)\n.size " #name ", .-" #name "\n");
FORWARDED(TRAMPOLINE)

/* A function the wrapper does not have answers Error (3 in FMI 2 and FMI 3). */
static int missing(void) { return 3; }

__attribute__((constructor)) static void load(void)
{
    Dl_info self;
    char path[4096];
    void *wrapper = NULL;
    if (dladdr((void *)load, &self) && self.dli_fname
        && strlen(self.dli_fname) + 16 < sizeof path) {
        char *dot;
        strcpy(path, self.dli_fname);
        dot = strrchr(path, '.');
        if (dot) {
            strcpy(dot, ".pythonfmu.so");
            wrapper = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!wrapper)
        fprintf(stderr, "rbcosim FMU: cannot load the pythonfmu wrapper next to %s: %s\n",
                self.dli_fname ? self.dli_fname : "?", dlerror());
#define RESOLVE(name)                                                                 \
    rbc_p_##name = wrapper ? dlsym(wrapper, #name) : NULL;                            \
    if (!rbc_p_##name) rbc_p_##name = (void *)missing;
    FORWARDED(RESOLVE)
}

/* J (nU x nK, row-major, malloc'ed into *out) from the Python slave; *out is NULL when
 * nU * nK is 0. */
static Status jacobian(Instance c, const ValueReference unknowns[], size_t nU,
                       const ValueReference knowns[], size_t nK, double **out)
{
    size_t i, n = nU * nK;
    char *text, *at;
    const char *value;
    ValueReference request = REQUEST_VR, *results;
    double *entries;
    Status status;
    *out = NULL;
    if (n == 0) return (Status)0;
    if (n >= REQUEST_VR - RESULT_VR0) return STATUS_ERROR;
    text = malloc(8 + 11 * (nU + nK));
    if (!text) return STATUS_ERROR;
    at = text + sprintf(text, "u");
    for (i = 0; i < nU; ++i) at += sprintf(at, " %u", (unsigned)unknowns[i]);
    at += sprintf(at, " k");
    for (i = 0; i < nK; ++i) at += sprintf(at, " %u", (unsigned)knowns[i]);
    value = text;
    status = SET_STRING(c, &request, 1, &value);
    free(text);
    if (status > STATUS_WARNING) return status;
    results = malloc(n * sizeof *results);
    entries = malloc(n * sizeof *entries);
    if (!results || !entries) {
        free(results);
        free(entries);
        return STATUS_ERROR;
    }
    for (i = 0; i < n; ++i) results[i] = RESULT_VR0 + (ValueReference)i;
    status = GET_REAL(c, results, n, entries);
    free(results);
    if (status > STATUS_WARNING) {
        free(entries);
        return status;
    }
    *out = entries;
    return status;
}

/* dvUnknown = J dvKnown (transpose: dvKnown = J^T dvUnknown, with dvKnown of nK entries). */
static Status apply(Instance c, const ValueReference unknowns[], size_t nU,
                    const ValueReference knowns[], size_t nK, const double seed[],
                    double sensitivity[], int transpose)
{
    double *J;
    size_t i, j;
    Status status = jacobian(c, unknowns, nU, knowns, nK, &J);
    if (status > STATUS_WARNING) return status;
    if (transpose) {
        for (j = 0; j < nK; ++j) {
            double sum = 0.0;
            for (i = 0; i < nU; ++i) sum += J[i * nK + j] * seed[i];
            sensitivity[j] = sum;
        }
    } else {
        for (i = 0; i < nU; ++i) {
            double sum = 0.0;
            for (j = 0; j < nK; ++j) sum += J[i * nK + j] * seed[j];
            sensitivity[i] = sum;
        }
    }
    free(J);
    return status;
}

#if RBC_FMI == 2
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown[],
                                        size_t nUnknown, const fmi2ValueReference vKnown[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[])
{
    return apply(c, vUnknown, nUnknown, vKnown, nKnown, dvKnown, dvUnknown, 0);
}
#else
fmi3Status fmi3GetDirectionalDerivative(fmi3Instance c, const fmi3ValueReference unknowns[],
                                        size_t nUnknowns, const fmi3ValueReference knowns[],
                                        size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                        fmi3Float64 sensitivity[], size_t nSensitivity)
{
    if (nSeed != nKnowns || nSensitivity != nUnknowns) return fmi3Error;
    return apply(c, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity, 0);
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance c, const fmi3ValueReference unknowns[],
                                    size_t nUnknowns, const fmi3ValueReference knowns[],
                                    size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                    fmi3Float64 sensitivity[], size_t nSensitivity)
{
    if (nSeed != nUnknowns || nSensitivity != nKnowns) return fmi3Error;
    return apply(c, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity, 1);
}
#endif
