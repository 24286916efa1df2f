/* host_fmi.c: see host_fmi.h. */
#define _POSIX_C_SOURCE 200809L
#include "host_fmi.h"

#include <string.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>

#include "fmi2Functions.h"
#include "fmi3Functions.h"

void fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    exit(1);
}

const char *setup_path = "setup";

void fail_setup(const char *format, ...) {
    va_list args;
    fprintf(stderr, "%s: ", setup_path);
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    exit(1);
}

void read_numbers(FILE *f, double *out, int n, const char *key) {
    for (int i = 0; i < n; ++i) {
        if (fscanf(f, "%lf", &out[i]) != 1) fail_setup("%s needs %d numbers", key, n);
    }
}

static int fmi;
static void *lib, *inst;
static fmi2SetRealTYPE *set2;
static fmi2GetRealTYPE *get2;
static fmi2DoStepTYPE *step2;
static fmi3SetFloat64TYPE *set3;
static fmi3GetFloat64TYPE *get3;
static fmi3DoStepTYPE *step3;

static void *load(const char *name) {
    void *f = dlsym(lib, name);
    if (f == NULL) fail("the FMU binary has no %s", name);
    return f;
}

static void check(int status, const char *call) {
    if (status != 0) fail("%s returned status %d", call, status);
}

void host_open(int fmi_version, const char *binary) {
    fmi = fmi_version;
    lib = dlopen(binary, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) fail("dlopen: %s", dlerror());
    if (fmi == 2) {
        set2 = (fmi2SetRealTYPE *)load("fmi2SetReal");
        get2 = (fmi2GetRealTYPE *)load("fmi2GetReal");
        step2 = (fmi2DoStepTYPE *)load("fmi2DoStep");
    } else {
        set3 = (fmi3SetFloat64TYPE *)load("fmi3SetFloat64");
        get3 = (fmi3GetFloat64TYPE *)load("fmi3GetFloat64");
        step3 = (fmi3DoStepTYPE *)load("fmi3DoStep");
    }
}

void host_get(const host_vr *vr, size_t n, double *value) {
    check(fmi == 2 ? (int)get2(inst, vr, n, value) : (int)get3(inst, vr, n, value, n), "get");
}

void host_set(const host_vr *vr, size_t n, const double *value) {
    check(fmi == 2 ? (int)set2(inst, vr, n, value) : (int)set3(inst, vr, n, value, n), "set");
}

void host_set_string(host_vr vr, const char *value) {
    check(fmi == 2 ? (int)((fmi2SetStringTYPE *)load("fmi2SetString"))(inst, &vr, 1, &value)
                   : (int)((fmi3SetStringTYPE *)load("fmi3SetString"))(inst, &vr, 1, &value, 1),
          "setString");
}

void host_do_step(double t, double h) {
    fmi3Boolean event, terminate, early;
    double last;
    check(fmi == 2 ? (int)step2(inst, t, h, fmi2True)
                   : (int)step3(inst, t, h, fmi3True, &event, &terminate, &early, &last),
          "doStep");
}

static void logger2(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                    fmi2String category, fmi2String message, ...) {
    va_list args;
    (void)env;
    fprintf(stderr, "[%s %d %s] ", name, (int)status, category);
    va_start(args, message);
    vfprintf(stderr, message, args);
    va_end(args);
    fputc('\n', stderr);
}

static void logger3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                    fmi3String message) {
    (void)env;
    fprintf(stderr, "[%d %s] %s\n", (int)status, category, message);
}

void host_start(const char *resources, const char *token, host_vr address_vr,
                const char *address) {
    if (fmi == 2) {
        static fmi2CallbackFunctions callbacks = {logger2, NULL, NULL, NULL, NULL};
        inst = ((fmi2InstantiateTYPE *)load("fmi2Instantiate"))(
            "rigid", fmi2CoSimulation, token, resources, &callbacks, fmi2False, fmi2False);
        if (inst == NULL) fail("fmi2Instantiate failed");
        check(((fmi2SetupExperimentTYPE *)load("fmi2SetupExperiment"))(
                  inst, fmi2False, 0.0, 0.0, fmi2False, 0.0), "fmi2SetupExperiment");
        check(((fmi2EnterInitializationModeTYPE *)load("fmi2EnterInitializationMode"))(inst),
              "fmi2EnterInitializationMode");
    } else {
        inst = ((fmi3InstantiateCoSimulationTYPE *)load("fmi3InstantiateCoSimulation"))(
            "rigid", token, resources, fmi3False, fmi3False, fmi3False, fmi3False, NULL, 0,
            NULL, logger3, NULL);
        if (inst == NULL) fail("fmi3InstantiateCoSimulation failed");
        check(((fmi3EnterInitializationModeTYPE *)load("fmi3EnterInitializationMode"))(
                  inst, fmi3False, 0.0, 0.0, fmi3False, 0.0), "fmi3EnterInitializationMode");
    }
    /* "-": a self-contained FMU, which has no server.address */
    if (address != NULL && strcmp(address, "-") != 0) host_set_string(address_vr, address);
}

void host_exit_init(void) {
    if (fmi == 2) {
        check(((fmi2ExitInitializationModeTYPE *)load("fmi2ExitInitializationMode"))(inst),
              "fmi2ExitInitializationMode");
    } else {
        check(((fmi3ExitInitializationModeTYPE *)load("fmi3ExitInitializationMode"))(inst),
              "fmi3ExitInitializationMode");
    }
}

void host_stop(void) {
    if (fmi == 2) {
        check(((fmi2TerminateTYPE *)load("fmi2Terminate"))(inst), "fmi2Terminate");
        ((fmi2FreeInstanceTYPE *)load("fmi2FreeInstance"))(inst);
    } else {
        check(((fmi3TerminateTYPE *)load("fmi3Terminate"))(inst), "fmi3Terminate");
        ((fmi3FreeInstanceTYPE *)load("fmi3FreeInstance"))(inst);
    }
    dlclose(lib);
}
