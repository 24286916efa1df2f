/* fmi2_native.c: the FMI 2.0 co-simulation API of the native rbcosim FMU.
 *
 * Each function only names its call and maps outcomes to statuses (fmu/README.md, "The native
 * FMU"): a refused call is fmi2Error (the instance is in the error state and still usable:
 * reset, setFMUstate with a saved state, terminate or free it), a doStep that is refused or
 * fails (server lost, timeout, numerical failure on the server) is fmi2Discard. Messages go
 * to the host's logger with the instance name and the categories logStatusWarning,
 * logStatusError and logAll.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "rbcosim_fmu.h"

typedef struct fmi2_instance {
    rbf_instance *core;
    char *name;
    fmi2CallbackFunctions callbacks;
    int logging;
} fmi2_instance;

static const char *const CATEGORY[] = {"logAll", "logStatusWarning", "logStatusError"};
static const fmi2Status LOG_STATUS[] = {fmi2OK, fmi2Warning, fmi2Error};

/* The message goes as the format argument with its '%' doubled: hosts that format it (C
 * hosts) and hosts that print it as it is (FMPy, which cannot pass varargs) both show it. */
static void log_message(void *host, int severity, const char *message) {
    fmi2_instance *c = host;
    char text[2048];
    size_t n = 0;
    if (c->callbacks.logger == NULL || (severity == 0 && !c->logging)) return;
    for (const char *p = message; *p && n + 2 < sizeof text; ++p) {
        if (*p == '%') text[n++] = '%';
        text[n++] = *p;
    }
    text[n] = '\0';
    c->callbacks.logger(c->callbacks.componentEnvironment, c->name, LOG_STATUS[severity],
                        CATEGORY[severity], text);
}

static fmi2Status status_of(rbf_result r) {
    return r == RBF_OK ? fmi2OK : r == RBF_DISCARD ? fmi2Discard : fmi2Error;
}

/* "file:///a%20b/resources" -> "/a b/resources" (plain paths pass unchanged). */
static char *resource_path(const char *uri) {
    if (uri == NULL) return NULL;
    if (strncmp(uri, "file://", 7) == 0) {
        uri += 7;
        if (strncmp(uri, "localhost/", 10) == 0) uri += 9;
    } else if (strncmp(uri, "file:", 5) == 0) {
        uri += 5;
    }
    char *path = malloc(strlen(uri) + 1), *out = path;
    if (path == NULL) return NULL;
    for (const char *p = uri; *p; ++p) {
        unsigned hex;
        if (*p == '%' && p[1] && p[2] && sscanf(p + 1, "%2x", &hex) == 1) {
            *out++ = (char)hex;
            p += 2;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
    size_t n = strlen(path);
    if (n > 1 && path[n - 1] == '/') path[n - 1] = '\0';
    return path;
}

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
    (void)nCategories;
    (void)categories;
    if (c == NULL) return fmi2Error;
    ((fmi2_instance *)c)->logging = loggingOn != fmi2False;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
    (void)visible;
    fmi2_instance *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    if (functions != NULL) c->callbacks = *functions;
    c->logging = loggingOn != fmi2False;
    c->name = strdup(instanceName != NULL ? instanceName : "rbcosim");
    const char *problem = NULL;
    if (fmuType != fmi2CoSimulation) {
        problem = "this FMU is for co-simulation only";
    } else if (fmuGUID == NULL || strcmp(fmuGUID, RBF_MODEL.guid) != 0) {
        problem = "the GUID is not this FMU's (modelDescription.xml of another export?)";
    } else if (fmuResourceLocation == NULL) {
        problem = "no fmuResourceLocation";
    }
    char *resources = problem == NULL ? resource_path(fmuResourceLocation) : NULL;
    if (problem == NULL && (c->name == NULL || resources == NULL ||
                            (c->core = rbf_new(resources, log_message, c)) == NULL)) {
        problem = "out of memory";
    }
    free(resources);
    if (problem != NULL) {
        log_message(c, 2, problem);
        free(c->name);
        free(c);
        return NULL;
    }
    return c;
}

void fmi2FreeInstance(fmi2Component c) {
    fmi2_instance *i = c;
    if (i == NULL) return;
    rbf_free(i->core);
    free(i->name);
    free(i);
}

#define CORE(c) (((fmi2_instance *)(c))->core)
#define NEED(c) \
    if ((c) == NULL) return fmi2Error

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                               fmi2Real tolerance, fmi2Real startTime,
                               fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    (void)toleranceDefined;
    (void)tolerance;
    (void)stopTimeDefined;
    (void)stopTime;
    NEED(c);
    rbf_instance *core = CORE(c);
    if (core->state != RBF_INSTANTIATED) {
        return status_of(rbf_refuse(core, "fmi2SetupExperiment", "not allowed after "
                                    "fmi2EnterInitializationMode"));
    }
    if (startTime != core->m->start_time) {
        return status_of(rbf_refuse(core, "fmi2SetupExperiment", "the start time must be the "
                                    "scenario's (the session starts there)"));
    }
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    NEED(c);
    return status_of(rbf_enter_initialization(CORE(c), "fmi2EnterInitializationMode"));
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    NEED(c);
    return status_of(rbf_exit_initialization(CORE(c), "fmi2ExitInitializationMode"));
}

fmi2Status fmi2Terminate(fmi2Component c) {
    NEED(c);
    return status_of(rbf_terminate(CORE(c), "fmi2Terminate"));
}

fmi2Status fmi2Reset(fmi2Component c) {
    NEED(c);
    return status_of(rbf_reset(CORE(c), "fmi2Reset"));
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
    NEED(c);
    return status_of(rbf_get_reals(CORE(c), "fmi2GetReal", vr, nvr, value));
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
    NEED(c);
    return status_of(rbf_set_reals(CORE(c), "fmi2SetReal", vr, nvr, value));
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
    NEED(c);
    return status_of(rbf_get_strings(CORE(c), "fmi2GetString", vr, nvr, value));
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
    NEED(c);
    return status_of(rbf_set_strings(CORE(c), "fmi2SetString", vr, nvr, value));
}

/* Integer and Boolean parameters (fmi2Integer and fmi2Boolean are int). */
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
    NEED(c);
    return status_of(rbf_get_ints(CORE(c), "fmi2GetInteger", RBF_INTEGER, vr, nvr, value));
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
    NEED(c);
    return status_of(rbf_set_ints(CORE(c), "fmi2SetInteger", RBF_INTEGER, vr, nvr, value));
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
    NEED(c);
    return status_of(rbf_get_ints(CORE(c), "fmi2GetBoolean", RBF_BOOLEAN, vr, nvr, value));
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
    NEED(c);
    return status_of(rbf_set_ints(CORE(c), "fmi2SetBoolean", RBF_BOOLEAN, vr, nvr, value));
}

/* -- FMU state: a blob (fmu_state.c) behind a small box holding its size ----------------- */

typedef struct state_box { size_t size; unsigned char *bytes; } state_box;

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    NEED(c);
    state_box *box = calloc(1, sizeof *box);
    if (FMUstate == NULL || box == NULL) {
        free(box);
        return status_of(rbf_refuse(CORE(c), "fmi2GetFMUstate", "no place for the state"));
    }
    rbf_result r = rbf_get_state(CORE(c), "fmi2GetFMUstate", &box->bytes, &box->size);
    if (r != RBF_OK) {
        free(box);
        return status_of(r);
    }
    if (*FMUstate != NULL) {
        free(((state_box *)*FMUstate)->bytes);
        free(*FMUstate);
    }
    *FMUstate = box;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
    NEED(c);
    state_box *box = FMUstate;
    if (box == NULL) return status_of(rbf_refuse(CORE(c), "fmi2SetFMUstate", "NULL state"));
    return status_of(rbf_set_state(CORE(c), "fmi2SetFMUstate", box->bytes, box->size));
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    NEED(c);
    if (FMUstate != NULL && *FMUstate != NULL) {
        free(((state_box *)*FMUstate)->bytes);
        free(*FMUstate);
        *FMUstate = NULL;
    }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size) {
    NEED(c);
    if (FMUstate == NULL || size == NULL) {
        return status_of(rbf_refuse(CORE(c), "fmi2SerializedFMUstateSize", "NULL argument"));
    }
    *size = ((state_box *)FMUstate)->size;
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serialized[],
                                 size_t size) {
    NEED(c);
    state_box *box = FMUstate;
    if (box == NULL || serialized == NULL || size != box->size) {
        return status_of(rbf_refuse(CORE(c), "fmi2SerializeFMUstate",
                                    "NULL argument or size not fmi2SerializedFMUstateSize's"));
    }
    memcpy(serialized, box->bytes, size);
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serialized[], size_t size,
                                   fmi2FMUstate *FMUstate) {
    NEED(c);
    state_box *box = calloc(1, sizeof *box);
    if (box != NULL) box->bytes = malloc(size ? size : 1);
    if (serialized == NULL || FMUstate == NULL || box == NULL || box->bytes == NULL) {
        if (box != NULL) free(box->bytes);
        free(box);
        return status_of(rbf_refuse(CORE(c), "fmi2DeSerializeFMUstate", "NULL argument or "
                                    "out of memory"));
    }
    memcpy(box->bytes, serialized, size);
    box->size = size;
    *FMUstate = box;  /* checked whole by fmi2SetFMUstate */
    return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown[],
                                        size_t nUnknown, const fmi2ValueReference vKnown[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
    (void)vUnknown, (void)nUnknown, (void)vKnown, (void)nKnown, (void)dvKnown, (void)dvUnknown;
    NEED(c);
    return status_of(rbf_refuse(CORE(c), "fmi2GetDirectionalDerivative", "not provided"));
}

/* -- co-simulation ---------------------------------------------------------------------- */

/* Input and output derivatives are not provided (canInterpolateInputs and
 * maxOutputDerivativeOrder are not declared): no reference is fine, any other is refused. */
static fmi2Status no_derivatives(fmi2Component c, const char *call, size_t nvr) {
    NEED(c);
    if (nvr == 0) return fmi2OK;
    return status_of(rbf_refuse(CORE(c), call, "input and output derivatives are not provided"));
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                       size_t nvr, const fmi2Integer order[],
                                       const fmi2Real value[]) {
    (void)vr, (void)order, (void)value;
    return no_derivatives(c, "fmi2SetRealInputDerivatives", nvr);
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                        size_t nvr, const fmi2Integer order[],
                                        fmi2Real value[]) {
    (void)vr, (void)order, (void)value;
    return no_derivatives(c, "fmi2GetRealOutputDerivatives", nvr);
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
    (void)noSetFMUStatePriorToCurrentPoint;
    NEED(c);
    return status_of(rbf_do_step(CORE(c), "fmi2DoStep", currentCommunicationPoint,
                                 communicationStepSize));
}

fmi2Status fmi2CancelStep(fmi2Component c) {
    NEED(c);
    return status_of(rbf_refuse(CORE(c), "fmi2CancelStep", "doStep is synchronous"));
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    (void)s, (void)value;
    NEED(c);
    return fmi2Discard;
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value) {
    NEED(c);
    if (s == fmi2LastSuccessfulTime && value != NULL) {
        *value = CORE(c)->reals[0];
        return fmi2OK;
    }
    return fmi2Discard;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value) {
    (void)s, (void)value;
    NEED(c);
    return fmi2Discard;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value) {
    (void)s, (void)value;
    NEED(c);
    return fmi2Discard;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value) {
    (void)s, (void)value;
    NEED(c);
    return fmi2Discard;
}
