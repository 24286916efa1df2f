/* The Linux x86-64 binary of a pythonfmu / pythonfmu3 FMU: a guard in front of the wrapper,
 * and directional derivatives.
 *
 * This library takes the place of the wrapper binary <id>.so in the FMU: it loads the wrapper
 * (renamed <id>.pythonfmu.so, same folder) and forwards every FMI function to it.
 *
 * The guard. pythonfmu 0.7 and pythonfmu3 0.3.4 dereference the instance of every call
 * without a check, so a host that calls with a null instance (PyFMI's cleanup terminates
 * again after freeInstance with a null pointer) or with a freed one crashes the process. And
 * a Python exception, which is how the slave refuses a call (rbcosim.fmu_export.runtime.lifecycle),
 * comes back as fmiFatal, which means "the instance is corrupt, free it" although nothing
 * changed. So every call taking an instance goes through a trampoline (GUARDED below) that
 *   - answers Error, without calling the wrapper, when the instance is not one this library
 *     instantiated and has not freed yet (null, freed, foreign), or when it had a real
 *     fatal error before (rbc_guard_enter);
 *   - turns the wrapper's Fatal (or FMI 2 doStep's Discard) into Error when the slave
 *     declared the call refused (it calls rbc_shim_refusal through ctypes before raising or
 *     returning: the instance is intact);
 *     any other Fatal marks the instance broken (rbc_guard_leave);
 *   - instantiate wraps the host's logger so that the wrapper's "Fatal py exception" message
 *     after a refused call is left out (the slave logged the refusal and its reason).
 * The trampoline saves the argument registers, calls the check, and calls the wrapper's
 * function with the same registers and the first 8 stack words (no FMI function that goes
 * through it has more than 6 integer and 8 floating arguments; the status is an int).
 *
 * Directional derivatives (built with -DRBC_DERIVATIVES): pythonfmu answers
 * fmi2GetDirectionalDerivative, fmi3GetDirectionalDerivative and fmi3GetAdjointDerivative
 * with "not supported" without calling Python. They are answered here through two calls the
 * wrapper does forward to the Python slave (rbcosim.fmu_export.runtime.derivatives):
 *
 *   SetString(REQUEST_VR, "u <unknown vrs> k <known vrs>")  the slave computes the Jacobian
 *   GetReal/GetFloat64(RESULT_VR0 + m, m < nU * nK)         its entries, row-major
 *
 * and the seed is applied here: J * seed (directional), seed^T * J (adjoint, FMI 3).
 *
 * Built by rbcosim.fmu_export.packaging.shim with -DRBC_FMI=2 or 3 and FORWARDED_H naming a generated
 * header of X(function) lines: the FMI functions forwarded (from the FMI headers), G(...) for
 * those taking an instance, P(...) for the others.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#if RBC_FMI == 2
#include "fmi2Functions.h"
typedef fmi2Component Instance;
typedef fmi2ValueReference ValueReference;
typedef fmi2Status Status;
#define STATUS_ERROR fmi2Error
#define STATUS_WARNING fmi2Warning
#define STATUS_FATAL fmi2Fatal
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
#define STATUS_FATAL fmi3Fatal
#define SET_STRING(c, vrs, n, values) \
    ((fmi3SetStringTYPE *)rbc_p_fmi3SetString)(c, vrs, n, values, n)
#define GET_REAL(c, vrs, n, values) \
    ((fmi3GetFloat64TYPE *)rbc_p_fmi3GetFloat64)(c, vrs, n, values, n)
#endif

/* Keep in step with rbcosim/fmu_export/runtime/derivatives.py. */
#define REQUEST_VR 0x7FFFFF00u
#define RESULT_VR0 0x40000000u

#include FORWARDED_H

/* One pointer per forwarded function, filled when the library is loaded. */
#define POINTER(name) __attribute__((visibility("hidden"))) void *rbc_p_##name;
ALL(POINTER)

/* An exported function without an instance (version, platform): a jump through the pointer. */
#define PLAIN(name)                                                                   \
    __asm__(".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n"       \
            "\tjmp *rbc_p_" #name "(%rip)\n.size " #name ", .-" #name "\n");

/* An exported function taking the instance first: checked, called, its status checked. */
#define GUARDED(name)                                                                 \
    __asm__(".section .rodata\n.Lname_" #name ":\n\t.asciz \"" #name "\"\n"          \
            ".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n"       \
            "\tpushq %rbp\n\tmovq %rsp, %rbp\n"                                       \
            "\tpushq %rdi\n\tpushq %rsi\n\tpushq %rdx\n\tpushq %rcx\n"                \
            "\tpushq %r8\n\tpushq %r9\n\tsubq $128, %rsp\n"                           \
            "\tmovdqu %xmm0, 0(%rsp)\n\tmovdqu %xmm1, 16(%rsp)\n"                    \
            "\tmovdqu %xmm2, 32(%rsp)\n\tmovdqu %xmm3, 48(%rsp)\n"                   \
            "\tmovdqu %xmm4, 64(%rsp)\n\tmovdqu %xmm5, 80(%rsp)\n"                   \
            "\tmovdqu %xmm6, 96(%rsp)\n\tmovdqu %xmm7, 112(%rsp)\n"                  \
            "\tleaq .Lname_" #name "(%rip), %rsi\n"                                   \
            "\tcall rbc_guard_enter\n\ttestl %eax, %eax\n\tjnz 1f\n"                  \
            "\tmovdqu 0(%rsp), %xmm0\n\tmovdqu 16(%rsp), %xmm1\n"                    \
            "\tmovdqu 32(%rsp), %xmm2\n\tmovdqu 48(%rsp), %xmm3\n"                   \
            "\tmovdqu 64(%rsp), %xmm4\n\tmovdqu 80(%rsp), %xmm5\n"                   \
            "\tmovdqu 96(%rsp), %xmm6\n\tmovdqu 112(%rsp), %xmm7\n"                  \
            "\tsubq $64, %rsp\n"                                                      \
            "\tmovq 16(%rbp), %rax\n\tmovq %rax, 0(%rsp)\n"                          \
            "\tmovq 24(%rbp), %rax\n\tmovq %rax, 8(%rsp)\n"                          \
            "\tmovq 32(%rbp), %rax\n\tmovq %rax, 16(%rsp)\n"                         \
            "\tmovq 40(%rbp), %rax\n\tmovq %rax, 24(%rsp)\n"                         \
            "\tmovq 48(%rbp), %rax\n\tmovq %rax, 32(%rsp)\n"                         \
            "\tmovq 56(%rbp), %rax\n\tmovq %rax, 40(%rsp)\n"                         \
            "\tmovq 64(%rbp), %rax\n\tmovq %rax, 48(%rsp)\n"                         \
            "\tmovq 72(%rbp), %rax\n\tmovq %rax, 56(%rsp)\n"                         \
            "\tmovq -8(%rbp), %rdi\n\tmovq -16(%rbp), %rsi\n\tmovq -24(%rbp), %rdx\n" \
            "\tmovq -32(%rbp), %rcx\n\tmovq -40(%rbp), %r8\n\tmovq -48(%rbp), %r9\n"  \
            "\tmovl $8, %eax\n\tcall *rbc_p_" #name "(%rip)\n"                        \
            "\tmovq -8(%rbp), %rdi\n\tmovl %eax, %esi\n\tcall rbc_guard_leave\n"      \
            "1:\n\tleave\n\tret\n.size " #name ", .-" #name "\n");

#define TRAMPOLINE(name) PLAIN(name)
FORWARDED_PLAIN(TRAMPOLINE)
FORWARDED_GUARDED(GUARDED)

/* A function the wrapper does not have answers Error (3 in FMI 2 and FMI 3). */
static int missing(void) { return 3; }

/* The wrapper's release of its interpreter (pythonfmu's finalizePythonInterpreter: it drops
 * the wrapper's global shared_ptr to its Python state, which finalizes Python when no
 * instance holds it any more).
 *
 * Why it is called here, at exit. The wrapper calls it itself from its library destructor
 * (__attribute__((destructor)), run by _dl_fini), but at process exit the C++ destructor of
 * that same global shared_ptr, registered with __cxa_atexit when the wrapper was loaded, has
 * already run: the destructor then releases the freed control block a second time (valgrind:
 * "Invalid read of size 4 in finalizePythonInterpreter ... inside a block of size 128
 * free'd"). When that freed memory has been reused, the release frees it again and corrupts
 * the heap, and a later free aborts the host ("free(): corrupted unsorted chunks" in
 * libgfortran's close_units, "corrupted double-linked list"), in some runs only.
 * Registered with atexit after the wrapper is loaded, release_python runs before that C++
 * destructor: the shared_ptr is empty by the time both run, so neither releases anything, and
 * Python is finalized (when no instance is alive) while every library is still intact. This
 * library is made NODELETE (as the wrapper already is) so that the handler runs at exit only,
 * never at a dlclose while the interpreter may still be in use.
 *
 * After it, no call may reach the wrapper: a host's exit handler registered before this
 * library was loaded runs later (OMSimulator terminates the instances its model scope still
 * holds from a static destructor), and pythonfmu's Terminate then crashed in
 * PyGILState_Ensure. Such calls are answered Error (rbc_guard_enter), a free frees ours. */
static void (*release_wrapper_python)(void);
static volatile int python_released;

static void release_python(void)
{
    void (*release)(void) = release_wrapper_python;
    release_wrapper_python = NULL;
    if (release) release();
    python_released = 1;
}

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
    ALL(RESOLVE)
    if (wrapper && self.dli_fname) {
        *(void **)&release_wrapper_python = dlsym(wrapper, "finalizePythonInterpreter");
        if (release_wrapper_python && dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
            atexit(release_python);
        else
            release_wrapper_python = NULL;
    }
}


/* ---- the guard ------------------------------------------------------------------------ */

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORTED __attribute__((visibility("default")))

/* One instance this library instantiated and has not freed: the wrapper's handle, the host's
 * callbacks (the wrapper gets ours, see log_fmi2 / log_fmi3) and whether it had a fatal
 * error that was not a refusal. */
typedef struct Guarded {
    void *inner;
    int broken;
#if RBC_FMI == 2
    fmi2CallbackFunctions host, mine;
#else
    fmi3InstanceEnvironment environment;
    fmi3LogMessageCallback log;
    fmi3IntermediateUpdateCallback update;
#endif
    struct Guarded *next;
} Guarded;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static Guarded *live;
/* Set by the Python slave (rbc_shim_refusal) while the current call of this thread is being
 * refused: the exception that follows is a refusal, the instance is intact. */
static __thread int refusing;

/* Called by the Python slave (rbcosim.fmu_export.runtime.lifecycle) right before it raises to
 * refuse a call. */
EXPORTED void rbc_shim_refusal(void) { refusing = 1; }

static Guarded *find(void *inner)
{
    Guarded *g;
    for (g = live; g && g->inner != inner; g = g->next) {}
    return inner ? g : NULL;
}

/* 0: forward the call; otherwise the status to return without calling the wrapper. */
HIDDEN int rbc_guard_enter(void *inner, const char *name)
{
    Guarded *g;
    int broken;
    pthread_mutex_lock(&live_lock);
    g = find(inner);
    broken = g && g->broken;
    pthread_mutex_unlock(&live_lock);
    refusing = 0;
    if (!g) {
        fprintf(stderr, "rbcosim FMU: %s refused: the instance %p is not a live instance of "
                "this FMU (null, freed, or another FMU's)\n", name, inner);
        return STATUS_ERROR;
    }
    if (python_released) {
        fprintf(stderr, "rbcosim FMU: %s refused: the FMU's Python interpreter was released "
                "at process exit\n", name);
        return STATUS_ERROR;
    }
    if (broken) {
        fprintf(stderr, "rbcosim FMU: %s refused: the instance had a fatal error; only "
                "freeInstance is allowed\n", name);
        return STATUS_ERROR;
    }
    return 0;
}

/* The status of a forwarded call: Error when the slave refused it (its exception, Fatal, or
 * FMI 2's refused doStep, which pythonfmu can only answer Discard); any other Fatal marks
 * the instance broken. */
HIDDEN int rbc_guard_leave(void *inner, int status)
{
    if (refusing && status > STATUS_WARNING) {
        status = STATUS_ERROR;
    } else if (status == STATUS_FATAL) {
        Guarded *g;
        pthread_mutex_lock(&live_lock);
        g = find(inner);
        if (g) g->broken = 1;
        pthread_mutex_unlock(&live_lock);
    }
    refusing = 0;
    return status;
}

/* The wrapper's own message after a refusal ("Fatal py exception encountered: [call] ...")
 * says nothing the slave's "... refused: <reason>" did not: it is left out. */
static int wrapper_noise(const char *message)
{
    static const char prefix[] = "Fatal py exception encountered";
    return refusing && message && !strncmp(message, prefix, sizeof prefix - 1);
}

static void enlist(Guarded *g)
{
    pthread_mutex_lock(&live_lock);
    g->next = live;
    live = g;
    pthread_mutex_unlock(&live_lock);
}

/* Take the live instance out of the list; NULL if it is not there. */
static Guarded *delist(void *inner)
{
    Guarded **at, *g = NULL;
    pthread_mutex_lock(&live_lock);
    for (at = &live; inner && *at; at = &(*at)->next) {
        if ((*at)->inner == inner) {
            g = *at;
            *at = g->next;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    return g;
}

/* A message of the wrapper with status Fatal during a refused call is logged as Error. */
#if RBC_FMI == 2
static void log_fmi2(fmi2ComponentEnvironment environment, fmi2String instance,
                     fmi2Status status, fmi2String category, fmi2String message, ...)
{
    Guarded *g = environment;
    va_list args;
    char *text, *escaped, *out;
    const char *in;
    int size;
    if (!g->host.logger || wrapper_noise(message)) return;
    va_start(args, message);
    size = vsnprintf(NULL, 0, message, args);
    va_end(args);
    if (size < 0) return;
    text = malloc((size_t)size + 1);
    escaped = malloc(2 * (size_t)size + 1);
    if (text && escaped) {
        va_start(args, message);
        vsnprintf(text, (size_t)size + 1, message, args);
        va_end(args);
        /* Passed as the message itself (hosts that do not format, FMPy, show it as is);
         * a '%' doubled for those that do. */
        for (in = text, out = escaped; *in; ++in) {
            if (*in == '%') *out++ = '%';
            *out++ = *in;
        }
        *out = '\0';
        g->host.logger(g->host.componentEnvironment, instance, status, category, escaped);
    }
    free(text);
    free(escaped);
}

EXPORTED fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                       fmi2String resources,
                                       const fmi2CallbackFunctions *functions,
                                       fmi2Boolean visible, fmi2Boolean loggingOn)
{
    Guarded *g;
    if (!functions || !functions->allocateMemory || !functions->freeMemory) {
        fprintf(stderr, "rbcosim FMU: fmi2Instantiate refused: no callback functions\n");
        return NULL;
    }
    g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->host = *functions;
    g->mine = *functions;
    g->mine.logger = log_fmi2;
    g->mine.componentEnvironment = g;
    g->inner = ((fmi2InstantiateTYPE *)rbc_p_fmi2Instantiate)(name, type, guid, resources,
                                                              &g->mine, visible, loggingOn);
    if (!g->inner) {
        free(g);
        return NULL;
    }
    enlist(g);
    return g->inner;
}

EXPORTED void fmi2FreeInstance(fmi2Component c)
{
    Guarded *g = delist(c);
    if (!g) return; /* null, freed twice, or not ours: nothing to free */
    if (!g->broken && !python_released) ((fmi2FreeInstanceTYPE *)rbc_p_fmi2FreeInstance)(c);
    free(g);
}
#else
static void log_fmi3(fmi3InstanceEnvironment environment, fmi3Status status,
                     fmi3String category, fmi3String message)
{
    Guarded *g = environment;
    if (!g->log || wrapper_noise(message)) return;
    g->log(g->environment, status, category, message);
}

static void update_fmi3(fmi3InstanceEnvironment environment, fmi3Float64 time,
                        fmi3Boolean intermediateVariableSetRequested,
                        fmi3Boolean intermediateVariableGetAllowed,
                        fmi3Boolean intermediateStepFinished, fmi3Boolean canReturnEarly,
                        fmi3Boolean *earlyReturnRequested, fmi3Float64 *earlyReturnTime)
{
    Guarded *g = environment;
    g->update(g->environment, time, intermediateVariableSetRequested,
              intermediateVariableGetAllowed, intermediateStepFinished, canReturnEarly,
              earlyReturnRequested, earlyReturnTime);
}

EXPORTED fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
    fmi3Boolean loggingOn, fmi3Boolean eventModeUsed, fmi3Boolean earlyReturnAllowed,
    const fmi3ValueReference required[], size_t nRequired,
    fmi3InstanceEnvironment environment, fmi3LogMessageCallback logMessage,
    fmi3IntermediateUpdateCallback intermediateUpdate)
{
    Guarded *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->environment = environment;
    g->log = logMessage;
    g->update = intermediateUpdate;
    g->inner = ((fmi3InstantiateCoSimulationTYPE *)rbc_p_fmi3InstantiateCoSimulation)(
        name, token, resources, visible, loggingOn, eventModeUsed, earlyReturnAllowed,
        required, nRequired, g, log_fmi3, intermediateUpdate ? update_fmi3 : NULL);
    if (!g->inner) {
        free(g);
        return NULL;
    }
    enlist(g);
    return g->inner;
}

EXPORTED void fmi3FreeInstance(fmi3Instance c)
{
    Guarded *g = delist(c);
    if (!g) return; /* null, freed twice, or not ours: nothing to free */
    if (!g->broken && !python_released) ((fmi3FreeInstanceTYPE *)rbc_p_fmi3FreeInstance)(c);
    free(g);
}
#endif

#ifdef RBC_DERIVATIVES
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
    int status = rbc_guard_enter(c, "fmi2GetDirectionalDerivative");
    if (status) return (fmi2Status)status;
    return (fmi2Status)rbc_guard_leave(
        c, apply(c, vUnknown, nUnknown, vKnown, nKnown, dvKnown, dvUnknown, 0));
}
#else
fmi3Status fmi3GetDirectionalDerivative(fmi3Instance c, const fmi3ValueReference unknowns[],
                                        size_t nUnknowns, const fmi3ValueReference knowns[],
                                        size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                        fmi3Float64 sensitivity[], size_t nSensitivity)
{
    int status = rbc_guard_enter(c, "fmi3GetDirectionalDerivative");
    if (status) return (fmi3Status)status;
    if (nSeed != nKnowns || nSensitivity != nUnknowns) return fmi3Error;
    return (fmi3Status)rbc_guard_leave(
        c, apply(c, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity, 0));
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance c, const fmi3ValueReference unknowns[],
                                    size_t nUnknowns, const fmi3ValueReference knowns[],
                                    size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                    fmi3Float64 sensitivity[], size_t nSensitivity)
{
    int status = rbc_guard_enter(c, "fmi3GetAdjointDerivative");
    if (status) return (fmi3Status)status;
    if (nSeed != nUnknowns || nSensitivity != nKnowns) return fmi3Error;
    return (fmi3Status)rbc_guard_leave(
        c, apply(c, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity, 1));
}
#endif
#endif /* RBC_DERIVATIVES */
