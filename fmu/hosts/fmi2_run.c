/* fmi2_run: a plain C host for FMI 2.0 co-simulation FMUs, with no Python of its own.
 *
 *   fmi2_run BINARY RESOURCES_URI GUID T_END STEP VR [VR ...]
 *
 * dlopen()s the FMU's binary (binaries/linux64/<modelIdentifier>.so of an unzipped FMU),
 * instantiates it with logging on (messages to stderr), runs from 0 to T_END in fixed steps
 * of STEP seconds and prints the Real values of the given value references, one per line
 * (%.17g, so a reader recovers the doubles exactly), then terminates, frees the instance and
 * unloads the binary. Exit status 0 on success, 1 when an FMI call fails, 2 on bad usage or
 * a binary that does not load.
 *
 * Build (from the repository root): cc -o fmi2_run fmu/hosts/fmi2_run.c -Ifmu/native/include -ldl
 * (the FMI 2.0.5 headers the native FMU ships). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmi2Functions.h"

#define MAX_VALUES 256

static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                   fmi2String category, fmi2String message, ...) {
  va_list args;
  (void)env;
  va_start(args, message);
  fprintf(stderr, "[%s status %d %s] ", instance, (int)status, category ? category : "");
  vfprintf(stderr, message, args);
  fputc('\n', stderr);
  va_end(args);
}

#define LOAD(name)                                                   \
  name##TYPE *name = (name##TYPE *)dlsym(lib, #name);                \
  if (!name) {                                                       \
    fprintf(stderr, "fmi2_run: %s is missing from %s\n", #name, argv[1]); \
    return 2;                                                        \
  }

#define CHECK(call, what)                                            \
  if ((call) > fmi2Warning) {                                        \
    fprintf(stderr, "fmi2_run: %s failed\n", what);                  \
    return 1;                                                        \
  }

int main(int argc, char **argv) {
  if (argc < 7 || argc - 6 > MAX_VALUES) {
    fprintf(stderr, "usage: fmi2_run BINARY RESOURCES_URI GUID T_END STEP VR [VR ...]\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "fmi2_run: %s\n", dlerror());
    return 2;
  }
  LOAD(fmi2Instantiate)
  LOAD(fmi2SetupExperiment)
  LOAD(fmi2EnterInitializationMode)
  LOAD(fmi2ExitInitializationMode)
  LOAD(fmi2DoStep)
  LOAD(fmi2GetReal)
  LOAD(fmi2Terminate)
  LOAD(fmi2FreeInstance)

  const double t_end = atof(argv[4]), step = atof(argv[5]);
  const int n = argc - 6;
  fmi2ValueReference refs[MAX_VALUES];
  double values[MAX_VALUES];
  for (int i = 0; i < n; i++) refs[i] = (fmi2ValueReference)strtoul(argv[6 + i], NULL, 10);
  if (!(step > 0.0) || !(t_end >= 0.0)) {
    fprintf(stderr, "fmi2_run: T_END must be >= 0 and STEP > 0\n");
    return 2;
  }

  fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};
  fmi2Component fmu = fmi2Instantiate("fmi2_run", fmi2CoSimulation, argv[3], argv[2],
                                      &callbacks, fmi2False, fmi2True);
  if (!fmu) {
    fprintf(stderr, "fmi2_run: fmi2Instantiate failed\n");
    return 1;
  }
  CHECK(fmi2SetupExperiment(fmu, fmi2False, 0.0, 0.0, fmi2True, t_end), "fmi2SetupExperiment")
  CHECK(fmi2EnterInitializationMode(fmu), "fmi2EnterInitializationMode")
  CHECK(fmi2ExitInitializationMode(fmu), "fmi2ExitInitializationMode")
  const long steps = (long)(t_end / step + 0.5);
  for (long k = 0; k < steps; k++) CHECK(fmi2DoStep(fmu, k * step, step, fmi2True), "fmi2DoStep")
  CHECK(fmi2GetReal(fmu, refs, (size_t)n, values), "fmi2GetReal")
  for (int i = 0; i < n; i++) printf("%.17g\n", values[i]);
  CHECK(fmi2Terminate(fmu), "fmi2Terminate")
  fmi2FreeInstance(fmu);
  dlclose(lib);
  return 0;
}
