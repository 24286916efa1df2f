/* fmi3_native.c: the FMI 3.0 co-simulation API of the native rbcosim FMU.
 *
 * As fmi2_native.c: each function names its call; a refused call is fmi3Error (the instance
 * is in the error state and still usable), a doStep refused or failed is fmi3Discard. The FMU
 * has Float64, Int32, Boolean and String variables only (vr 0 is time, readable); it has no
 * event mode, no clocks and no model partitions: those calls are refused, fmi3EnterStepMode is
 * allowed and changes nothing. Times in s.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3Functions.h"
#include "rbcosim_fmu.h"

typedef struct fmi3_instance {
    rbf_instance *core;
    fmi3InstanceEnvironment environment;
    fmi3LogMessageCallback log;
    int logging;
} fmi3_instance;

static const char *const CATEGORY[] = {"logAll", "logStatusWarning", "logStatusError"};
static const fmi3Status LOG_STATUS[] = {fmi3OK, fmi3Warning, fmi3Error};

static void log_message(void *host, int severity, const char *message) {
    fmi3_instance *c = host;
    if (c->log == NULL || (severity == 0 && !c->logging)) return;
    c->log(c->environment, LOG_STATUS[severity], CATEGORY[severity], message);
}

static fmi3Status status_of(rbf_result r) {
    return r == RBF_OK ? fmi3OK : r == RBF_DISCARD ? fmi3Discard : fmi3Error;
}

#define CORE(c) (((fmi3_instance *)(c))->core)
#define NEED(c) \
    if ((c) == NULL) return fmi3Error

static fmi3Status refuse(fmi3Instance c, const char *call, const char *reason) {
    NEED(c);
    return status_of(rbf_refuse(CORE(c), call, reason));
}

const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance c, fmi3Boolean loggingOn, size_t nCategories,
                               const fmi3String categories[]) {
    (void)nCategories, (void)categories;
    NEED(c);
    ((fmi3_instance *)c)->logging = loggingOn != fmi3False;
    return fmi3OK;
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String instanceName, fmi3String token,
                                          fmi3String resourcePath, fmi3Boolean visible,
                                          fmi3Boolean loggingOn, fmi3InstanceEnvironment env,
                                          fmi3LogMessageCallback logMessage) {
    (void)instanceName, (void)token, (void)resourcePath, (void)visible, (void)loggingOn;
    if (logMessage != NULL) logMessage(env, fmi3Error, "logStatusError",
                                       "this FMU is for co-simulation only");
    return NULL;
}

fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String instanceName, fmi3String token, fmi3String resourcePath, fmi3Boolean visible,
    fmi3Boolean loggingOn, fmi3InstanceEnvironment env, fmi3LogMessageCallback logMessage,
    fmi3ClockUpdateCallback clockUpdate, fmi3LockPreemptionCallback lockPreemption,
    fmi3UnlockPreemptionCallback unlockPreemption) {
    (void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
    return fmi3InstantiateModelExchange(instanceName, token, resourcePath, visible, loggingOn,
                                        env, logMessage);
}

fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
    fmi3Boolean earlyReturnAllowed, const fmi3ValueReference requiredIntermediateVariables[],
    size_t nRequiredIntermediateVariables, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3IntermediateUpdateCallback intermediateUpdate) {
    (void)instanceName, (void)visible, (void)earlyReturnAllowed;
    (void)requiredIntermediateVariables, (void)intermediateUpdate;
    fmi3_instance *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->environment = instanceEnvironment;
    c->log = logMessage;
    c->logging = loggingOn != fmi3False;
    const char *problem = NULL;
    if (instantiationToken == NULL || strcmp(instantiationToken, RBF_MODEL.guid) != 0) {
        problem = "the instantiationToken is not this FMU's (modelDescription.xml of another "
                  "export?)";
    } else if (eventModeUsed || nRequiredIntermediateVariables > 0) {
        problem = "this FMU has no event mode and no intermediate variables";
    } else if (resourcePath == NULL) {
        problem = "no resourcePath";
    }
    char *resources = problem == NULL ? strdup(resourcePath) : NULL;
    size_t n = resources != NULL ? strlen(resources) : 0;
    if (n > 1 && resources[n - 1] == '/') resources[n - 1] = '\0';
    if (problem == NULL &&
        (resources == NULL || (c->core = rbf_new(resources, log_message, c)) == NULL)) {
        problem = "out of memory";
    }
    if (problem == NULL) c->core->time_variable = 1;
    free(resources);
    if (problem != NULL) {
        log_message(c, 2, problem);
        free(c);
        return NULL;
    }
    return c;
}

void fmi3FreeInstance(fmi3Instance c) {
    if (c == NULL) return;
    rbf_free(CORE(c));
    free(c);
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance c, fmi3Boolean toleranceDefined,
                                       fmi3Float64 tolerance, fmi3Float64 startTime,
                                       fmi3Boolean stopTimeDefined, fmi3Float64 stopTime) {
    (void)toleranceDefined, (void)tolerance, (void)stopTimeDefined, (void)stopTime;
    NEED(c);
    if (startTime != CORE(c)->m->start_time) {
        return refuse(c, "fmi3EnterInitializationMode", "the start time must be the "
                      "scenario's (the session starts there)");
    }
    return status_of(rbf_enter_initialization(CORE(c), "fmi3EnterInitializationMode"));
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance c) {
    NEED(c);
    return status_of(rbf_exit_initialization(CORE(c), "fmi3ExitInitializationMode"));
}

fmi3Status fmi3EnterStepMode(fmi3Instance c) {
    NEED(c);
    if (CORE(c)->state != RBF_STEPPING) return refuse(c, "fmi3EnterStepMode", "not in step mode");
    return fmi3OK;
}

fmi3Status fmi3Terminate(fmi3Instance c) {
    NEED(c);
    return status_of(rbf_terminate(CORE(c), "fmi3Terminate"));
}

fmi3Status fmi3Reset(fmi3Instance c) {
    NEED(c);
    return status_of(rbf_reset(CORE(c), "fmi3Reset"));
}

fmi3Status fmi3GetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                          fmi3Float64 values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3GetFloat64", "nValues is not nValueReferences");
    return status_of(rbf_get_reals(CORE(c), "fmi3GetFloat64", vr, nvr, values));
}

fmi3Status fmi3SetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                          const fmi3Float64 values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3SetFloat64", "nValues is not nValueReferences");
    return status_of(rbf_set_reals(CORE(c), "fmi3SetFloat64", vr, nvr, values));
}

fmi3Status fmi3GetString(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                         fmi3String values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3GetString", "nValues is not nValueReferences");
    return status_of(rbf_get_strings(CORE(c), "fmi3GetString", vr, nvr, values));
}

fmi3Status fmi3SetString(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                         const fmi3String values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3SetString", "nValues is not nValueReferences");
    return status_of(rbf_set_strings(CORE(c), "fmi3SetString", vr, nvr, values));
}

/* Int32 and Boolean parameters: fmi3Int32 is int32_t, int on the Linux targets this builds
 * for; fmi3Boolean (bool) goes through an int copy. */

fmi3Status fmi3GetInt32(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                        fmi3Int32 values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3GetInt32", "nValues is not nValueReferences");
    return status_of(rbf_get_ints(CORE(c), "fmi3GetInt32", RBF_INTEGER, vr, nvr, (int *)values));
}

fmi3Status fmi3SetInt32(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                        const fmi3Int32 values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3SetInt32", "nValues is not nValueReferences");
    return status_of(rbf_set_ints(CORE(c), "fmi3SetInt32", RBF_INTEGER, vr, nvr,
                                  (const int *)values));
}

fmi3Status fmi3GetBoolean(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                          fmi3Boolean values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3GetBoolean", "nValues is not nValueReferences");
    int *copy = calloc(nvr + 1, sizeof(int));
    if (copy == NULL) return refuse(c, "fmi3GetBoolean", "out of memory");
    rbf_result r = rbf_get_ints(CORE(c), "fmi3GetBoolean", RBF_BOOLEAN, vr, nvr, copy);
    for (size_t i = 0; r == RBF_OK && i < nvr; ++i) values[i] = copy[i] != 0;
    free(copy);
    return status_of(r);
}

fmi3Status fmi3SetBoolean(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                          const fmi3Boolean values[], size_t nValues) {
    NEED(c);
    if (nValues != nvr) return refuse(c, "fmi3SetBoolean", "nValues is not nValueReferences");
    int *copy = calloc(nvr + 1, sizeof(int));
    if (copy == NULL) return refuse(c, "fmi3SetBoolean", "out of memory");
    for (size_t i = 0; values != NULL && i < nvr; ++i) copy[i] = values[i] ? 1 : 0;
    rbf_result r = rbf_set_ints(CORE(c), "fmi3SetBoolean", RBF_BOOLEAN, vr, nvr,
                                values == NULL ? NULL : copy);
    free(copy);
    return status_of(r);
}

/* Types this FMU has no variables of: no reference is fine, any other is refused. */
#define NO_TYPE(name, T, CONST)                                                              \
    fmi3Status name(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,              \
                    CONST T values[], size_t nValues) {                                      \
        (void)vr, (void)values, (void)nValues;                                               \
        NEED(c);                                                                             \
        return nvr == 0 ? fmi3OK : refuse(c, #name, "this FMU has no variables of this type"); \
    }
#define GET_SET(T) NO_TYPE(fmi3Get##T, fmi3##T, ) NO_TYPE(fmi3Set##T, fmi3##T, const)
GET_SET(Float32) GET_SET(Int8) GET_SET(UInt8) GET_SET(Int16) GET_SET(UInt16) GET_SET(UInt32)
GET_SET(Int64) GET_SET(UInt64)

fmi3Status fmi3GetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                         size_t valueSizes[], fmi3Binary values[], size_t nValues) {
    (void)vr, (void)valueSizes, (void)values, (void)nValues;
    return nvr == 0 ? fmi3OK : refuse(c, "fmi3GetBinary", "this FMU has no Binary variables");
}

fmi3Status fmi3SetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                         const size_t valueSizes[], const fmi3Binary values[], size_t nValues) {
    (void)vr, (void)valueSizes, (void)values, (void)nValues;
    return nvr == 0 ? fmi3OK : refuse(c, "fmi3SetBinary", "this FMU has no Binary variables");
}

/* -- FMU state: the blob of fmu_state.c behind a box with its size ------------------------ */

typedef struct state_box { size_t size; unsigned char *bytes; } state_box;

static void free_box(state_box *box) {
    if (box != NULL) free(box->bytes);
    free(box);
}

fmi3Status fmi3GetFMUState(fmi3Instance c, fmi3FMUState *FMUState) {
    NEED(c);
    state_box *box = calloc(1, sizeof *box);
    if (FMUState == NULL || box == NULL) {
        free(box);
        return refuse(c, "fmi3GetFMUState", "no place for the state");
    }
    rbf_result r = rbf_get_state(CORE(c), "fmi3GetFMUState", &box->bytes, &box->size);
    if (r != RBF_OK) {
        free(box);
        return status_of(r);
    }
    free_box(*FMUState);
    *FMUState = box;
    return fmi3OK;
}

fmi3Status fmi3SetFMUState(fmi3Instance c, fmi3FMUState FMUState) {
    state_box *box = FMUState;
    if (box == NULL) return refuse(c, "fmi3SetFMUState", "NULL state");
    NEED(c);
    return status_of(rbf_set_state(CORE(c), "fmi3SetFMUState", box->bytes, box->size));
}

fmi3Status fmi3FreeFMUState(fmi3Instance c, fmi3FMUState *FMUState) {
    NEED(c);
    if (FMUState != NULL) {
        free_box(*FMUState);
        *FMUState = NULL;
    }
    return fmi3OK;
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance c, fmi3FMUState FMUState, size_t *size) {
    if (FMUState == NULL || size == NULL) return refuse(c, "fmi3SerializedFMUStateSize", "NULL");
    *size = ((state_box *)FMUState)->size;
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance c, fmi3FMUState FMUState, fmi3Byte serialized[],
                                 size_t size) {
    state_box *box = FMUState;
    if (box == NULL || serialized == NULL || size != box->size) {
        return refuse(c, "fmi3SerializeFMUState", "NULL or a size not "
                      "fmi3SerializedFMUStateSize's");
    }
    memcpy(serialized, box->bytes, size);
    return fmi3OK;
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance c, const fmi3Byte serialized[], size_t size,
                                   fmi3FMUState *FMUState) {
    state_box *box = calloc(1, sizeof *box);
    if (box != NULL) box->bytes = malloc(size ? size : 1);
    if (serialized == NULL || FMUState == NULL || box == NULL || box->bytes == NULL) {
        free_box(box);
        return refuse(c, "fmi3DeserializeFMUState", "NULL argument or out of memory");
    }
    memcpy(box->bytes, serialized, size);
    box->size = size;
    *FMUState = box;  /* checked whole by fmi3SetFMUState */
    return fmi3OK;
}

/* -- co-simulation ---------------------------------------------------------------------- */

fmi3Status fmi3DoStep(fmi3Instance c, fmi3Float64 currentCommunicationPoint,
                      fmi3Float64 communicationStepSize,
                      fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation,
                      fmi3Boolean *earlyReturn, fmi3Float64 *lastSuccessfulTime) {
    (void)noSetFMUStatePriorToCurrentPoint;
    NEED(c);
    fmi3Status s = status_of(rbf_do_step(CORE(c), "fmi3DoStep", currentCommunicationPoint,
                                         communicationStepSize));
    if (eventHandlingNeeded != NULL) *eventHandlingNeeded = fmi3False;
    if (terminateSimulation != NULL) *terminateSimulation = fmi3False;
    if (earlyReturn != NULL) *earlyReturn = fmi3False;
    if (lastSuccessfulTime != NULL) *lastSuccessfulTime = CORE(c)->reals[0];
    return s;
}

/* -- what this FMU does not provide: refused, naming the call ----------------------------- */

#define NOT_PROVIDED(call) return refuse(c, call, "not provided by this FMU")

fmi3Status fmi3EnterEventMode(fmi3Instance c) { NOT_PROVIDED("fmi3EnterEventMode"); }
fmi3Status fmi3EnterConfigurationMode(fmi3Instance c) {
    NOT_PROVIDED("fmi3EnterConfigurationMode");
}
fmi3Status fmi3ExitConfigurationMode(fmi3Instance c) {
    NOT_PROVIDED("fmi3ExitConfigurationMode");
}
fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance c) {
    NOT_PROVIDED("fmi3EnterContinuousTimeMode");
}
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance c) {
    NOT_PROVIDED("fmi3EvaluateDiscreteStates");
}
fmi3Status fmi3GetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                        fmi3Clock values[]) {
    (void)vr, (void)nvr, (void)values;
    NOT_PROVIDED("fmi3GetClock");
}
fmi3Status fmi3SetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                        const fmi3Clock values[]) {
    (void)vr, (void)nvr, (void)values;
    NOT_PROVIDED("fmi3SetClock");
}
fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance c, fmi3ValueReference vr,
                                               size_t *n) {
    (void)vr, (void)n;
    NOT_PROVIDED("fmi3GetNumberOfVariableDependencies");
}
fmi3Status fmi3GetVariableDependencies(fmi3Instance c, fmi3ValueReference dependent,
                                       size_t a[], fmi3ValueReference b[], size_t d[],
                                       fmi3DependencyKind k[], size_t n) {
    (void)dependent, (void)a, (void)b, (void)d, (void)k, (void)n;
    NOT_PROVIDED("fmi3GetVariableDependencies");
}
#define NO_DERIVATIVE(name)                                                                \
    fmi3Status name(fmi3Instance c, const fmi3ValueReference u[], size_t nu,                \
                    const fmi3ValueReference k[], size_t nk, const fmi3Float64 seed[],      \
                    size_t ns, fmi3Float64 out[], size_t no) {                              \
        (void)u, (void)nu, (void)k, (void)nk, (void)seed, (void)ns, (void)out, (void)no;    \
        NOT_PROVIDED(#name);                                                                \
    }
NO_DERIVATIVE(fmi3GetDirectionalDerivative)
NO_DERIVATIVE(fmi3GetAdjointDerivative)
fmi3Status fmi3GetOutputDerivatives(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                    const fmi3Int32 orders[], fmi3Float64 values[],
                                    size_t nValues) {
    (void)vr, (void)nvr, (void)orders, (void)values, (void)nValues;
    NOT_PROVIDED("fmi3GetOutputDerivatives");
}
fmi3Status fmi3GetIntervalDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                  fmi3Float64 intervals[], fmi3IntervalQualifier q[]) {
    (void)vr, (void)nvr, (void)intervals, (void)q;
    NOT_PROVIDED("fmi3GetIntervalDecimal");
}
fmi3Status fmi3GetIntervalFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                   fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                   fmi3IntervalQualifier q[]) {
    (void)vr, (void)nvr, (void)counters, (void)resolutions, (void)q;
    NOT_PROVIDED("fmi3GetIntervalFraction");
}
fmi3Status fmi3GetShiftDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                               fmi3Float64 shifts[]) {
    (void)vr, (void)nvr, (void)shifts;
    NOT_PROVIDED("fmi3GetShiftDecimal");
}
fmi3Status fmi3GetShiftFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    NOT_PROVIDED("fmi3GetShiftFraction");
}
fmi3Status fmi3SetIntervalDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                  const fmi3Float64 intervals[]) {
    (void)vr, (void)nvr, (void)intervals;
    NOT_PROVIDED("fmi3SetIntervalDecimal");
}
fmi3Status fmi3SetIntervalFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                   const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    NOT_PROVIDED("fmi3SetIntervalFraction");
}
fmi3Status fmi3SetShiftDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                               const fmi3Float64 shifts[]) {
    (void)vr, (void)nvr, (void)shifts;
    NOT_PROVIDED("fmi3SetShiftDecimal");
}
fmi3Status fmi3SetShiftFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    NOT_PROVIDED("fmi3SetShiftFraction");
}
fmi3Status fmi3UpdateDiscreteStates(fmi3Instance c, fmi3Boolean *a, fmi3Boolean *b,
                                    fmi3Boolean *d, fmi3Boolean *e, fmi3Boolean *f,
                                    fmi3Float64 *t) {
    (void)a, (void)b, (void)d, (void)e, (void)f, (void)t;
    NOT_PROVIDED("fmi3UpdateDiscreteStates");
}
fmi3Status fmi3CompletedIntegratorStep(fmi3Instance c, fmi3Boolean noSet, fmi3Boolean *enter,
                                       fmi3Boolean *terminate) {
    (void)noSet, (void)enter, (void)terminate;
    NOT_PROVIDED("fmi3CompletedIntegratorStep");
}
fmi3Status fmi3SetTime(fmi3Instance c, fmi3Float64 time) {
    (void)time;
    NOT_PROVIDED("fmi3SetTime");
}
#define NO_STATES(name, CONST)                                                  \
    fmi3Status name(fmi3Instance c, CONST fmi3Float64 x[], size_t n) {          \
        (void)x, (void)n;                                                       \
        NOT_PROVIDED(#name);                                                    \
    }
NO_STATES(fmi3SetContinuousStates, const)
NO_STATES(fmi3GetContinuousStateDerivatives, )
NO_STATES(fmi3GetEventIndicators, )
NO_STATES(fmi3GetContinuousStates, )
NO_STATES(fmi3GetNominalsOfContinuousStates, )
fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance c, size_t *n) {
    (void)n;
    NOT_PROVIDED("fmi3GetNumberOfEventIndicators");
}
fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance c, size_t *n) {
    (void)n;
    NOT_PROVIDED("fmi3GetNumberOfContinuousStates");
}
fmi3Status fmi3ActivateModelPartition(fmi3Instance c, fmi3ValueReference clock,
                                      fmi3Float64 activationTime) {
    (void)clock, (void)activationTime;
    NOT_PROVIDED("fmi3ActivateModelPartition");
}
