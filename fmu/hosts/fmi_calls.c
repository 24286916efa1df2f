/* fmi_calls: replay a sequence of FMI 2 or FMI 3 co-simulation calls on one FMU binary, in
 * any order, including calls a careful host would not make (a second terminate, a null
 * instance, calls after free, exiting without free). A plain C host, no Python of its own.
 *
 *   fmi_calls 2|3 BINARY RESOURCES GUID CALL [CALL ...]
 *
 * RESOURCES: the FMU's resources folder, as a file URI for FMI 2 (fmuResourceLocation), as a
 * path ending in "/" for FMI 3 (resourcePath).
 *
 * CALLs, in the order given (T, H, V: numbers; VR: a value reference):
 *   instantiate           fmi2Instantiate / fmi3InstantiateCoSimulation (logging on)
 *   setup:T               FMI 2 fmi2SetupExperiment(start T); FMI 3: nothing (see enter)
 *   enter:T               enterInitializationMode (FMI 3 with start time T)
 *   exit                  exitInitializationMode
 *   step:T:H              doStep(T, H)
 *   set:VR:V  get:VR      set / get one Real (Float64) value; get prints "value VR V"
 *   save  restore         get / set the FMU state (one slot)
 *   serialize  deserialize serialize the slot's state to bytes / deserialize them into the slot
 *   terminate  reset  free  freestate
 *   null:CALL             CALL (terminate, reset, free, step, get, set) with a null instance
 *   unload                dlclose the binary
 *   sleep:S               sleep S seconds (a host that is killed meanwhile)
 *   quit                  exit(0) right here, whatever was (not) freed
 *   atexit                the CALLs after it run at process exit, in a handler registered
 *                         before the binary was loaded: after the FMU's own exit handlers,
 *                         as a host's static destructors (OMSimulator terminates and frees
 *                         the instances its model scope still holds there)
 *
 * Prints one line per call, "CALL STATUS" (the status number the FMU returned; "-" for void
 * calls), messages of the FMU on stderr. Exit status 0 when the sequence ran to its end (or
 * to quit), 2 on bad usage or a binary that does not load.
 *
 * Build: cc -o fmi_calls fmu/hosts/fmi_calls.c -Ifmu/native/include -ldl */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmi2Functions.h"
#include "fmi3Functions.h"

static void *lib;
static int version;

static void *sym(const char *name) {
  void *f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "fmi_calls: %s is missing from the binary\n", name);
    exit(2);
  }
  return f;
}
#define F2(name) ((name##TYPE *)sym(#name))
#define F3(name) ((name##TYPE *)sym(#name))

static void log_fmi2(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                 fmi2String category, fmi2String message, ...) {
  va_list args;
  (void)env;
  va_start(args, message);
  fprintf(stderr, "[%s status %d %s] ", instance ? instance : "?", (int)status,
          category ? category : "");
  vfprintf(stderr, message, args);
  fputc('\n', stderr);
  va_end(args);
}

static void log_fmi3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                 fmi3String message) {
  (void)env;
  fprintf(stderr, "[status %d %s] %s\n", (int)status, category ? category : "", message);
}

static void *instance;  /* fmi2Component or fmi3Instance */
static void *state;     /* the one FMU state slot */
static unsigned char *bytes;
static size_t nbytes;

static int instantiate(const char *uri, const char *guid) {
  if (version == 2) {
    static fmi2CallbackFunctions callbacks = {log_fmi2, calloc, free, NULL, NULL};
    instance = F2(fmi2Instantiate)("fmi_calls", fmi2CoSimulation, guid, uri, &callbacks,
                                   fmi2False, fmi2True);
  } else {
    instance = F3(fmi3InstantiateCoSimulation)("fmi_calls", guid, uri, fmi3False, fmi3True,
                                               fmi3False, fmi3False, NULL, 0, NULL, log_fmi3, NULL);
  }
  return instance ? 0 : 3;
}

static int serialize(void *c) {
  size_t size = 0;
  int status = version == 2 ? F2(fmi2SerializedFMUstateSize)(c, state, &size)
                            : F3(fmi3SerializedFMUStateSize)(c, state, &size);
  if (status > 1) return status;
  free(bytes);
  bytes = malloc(size ? size : 1);
  nbytes = size;
  return version == 2 ? F2(fmi2SerializeFMUstate)(c, state, (fmi2Byte *)bytes, size)
                      : F3(fmi3SerializeFMUState)(c, state, bytes, size);
}

/* The status of CALL on instance c; -1 for a void call, -2 for an unknown CALL. */
static int call(const char *what, void *c, const char *uri, const char *guid) {
  double t = 0.0, h = 0.0, v = 0.0;
  unsigned vr = 0;
  fmi3Boolean event = 0, terminated = 0, early = 0;
  fmi3Float64 last = 0.0;
  if (!strcmp(what, "instantiate")) return instantiate(uri, guid);
  if (sscanf(what, "setup:%lf", &t) == 1)
    return version == 2 ? F2(fmi2SetupExperiment)(c, fmi2False, 0.0, t, fmi2False, 0.0) : 0;
  if (sscanf(what, "enter:%lf", &t) == 1)
    return version == 2 ? F2(fmi2EnterInitializationMode)(c)
                        : F3(fmi3EnterInitializationMode)(c, fmi3False, 0.0, t, fmi3False, 0.0);
  if (!strcmp(what, "exit"))
    return version == 2 ? F2(fmi2ExitInitializationMode)(c) : F3(fmi3ExitInitializationMode)(c);
  if (sscanf(what, "step:%lf:%lf", &t, &h) == 2)
    return version == 2 ? F2(fmi2DoStep)(c, t, h, fmi2True)
                        : F3(fmi3DoStep)(c, t, h, fmi3True, &event, &terminated, &early, &last);
  if (sscanf(what, "set:%u:%lf", &vr, &v) == 2)
    return version == 2 ? F2(fmi2SetReal)(c, &vr, 1, &v) : F3(fmi3SetFloat64)(c, &vr, 1, &v, 1);
  if (sscanf(what, "get:%u", &vr) == 1) {
    int status = version == 2 ? F2(fmi2GetReal)(c, &vr, 1, &v)
                              : F3(fmi3GetFloat64)(c, &vr, 1, &v, 1);
    if (status <= 1) printf("value %u %.17g\n", vr, v);
    return status;
  }
  if (!strcmp(what, "save"))
    return version == 2 ? F2(fmi2GetFMUstate)(c, &state) : F3(fmi3GetFMUState)(c, &state);
  if (!strcmp(what, "restore"))
    return version == 2 ? F2(fmi2SetFMUstate)(c, state) : F3(fmi3SetFMUState)(c, state);
  if (!strcmp(what, "freestate"))
    return version == 2 ? F2(fmi2FreeFMUstate)(c, &state) : F3(fmi3FreeFMUState)(c, &state);
  if (!strcmp(what, "serialize")) return serialize(c);
  if (!strcmp(what, "deserialize"))
    return version == 2 ? F2(fmi2DeSerializeFMUstate)(c, (fmi2Byte *)bytes, nbytes, &state)
                        : F3(fmi3DeserializeFMUState)(c, bytes, nbytes, &state);
  if (!strcmp(what, "terminate"))
    return version == 2 ? F2(fmi2Terminate)(c) : F3(fmi3Terminate)(c);
  if (!strcmp(what, "reset")) return version == 2 ? F2(fmi2Reset)(c) : F3(fmi3Reset)(c);
  if (!strcmp(what, "free")) {
    if (version == 2) F2(fmi2FreeInstance)(c);
    else F3(fmi3FreeInstance)(c);
    return -1;
  }
  return -2;
}

static int run(int first, int argc, char **argv);
static int exit_first, exit_argc;
static char **exit_argv;

/* The CALLs after "atexit", at process exit. */
static void run_at_exit(void) {
  if (exit_argv) run(exit_first, exit_argc, exit_argv);
}

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "2") && strcmp(argv[1], "3"))) {
    fprintf(stderr, "usage: fmi_calls 2|3 BINARY RESOURCES GUID CALL [CALL ...]\n");
    return 2;
  }
  version = atoi(argv[1]);
  atexit(run_at_exit);  /* before the binary's own handlers: it runs after them */
  lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "fmi_calls: %s\n", dlerror());
    return 2;
  }
  return run(5, argc, argv);
}

/* Run CALLs argv[first..argc-1]; 0 at their end (or at atexit), 2 on a bad CALL. */
static int run(int first, int argc, char **argv) {
  for (int i = first; i < argc; i++) {
    const char *what = argv[i];
    unsigned seconds;
    int status;
    if (!strcmp(what, "atexit")) {
      printf("atexit -\n");
      fflush(stdout);
      exit_first = i + 1, exit_argc = argc, exit_argv = argv;
      return 0;
    }
    if (!strcmp(what, "quit")) {
      printf("quit -\n");
      fflush(stdout);
      exit(0);
    }
    if (sscanf(what, "sleep:%u", &seconds) == 1) {
      sleep(seconds);
      continue;
    }
    if (!strcmp(what, "unload")) {
      printf("unload %d\n", dlclose(lib));
      lib = NULL;
      continue;
    }
    if (!lib) {
      fprintf(stderr, "fmi_calls: %s after unload\n", what);
      return 2;
    }
    if (!strncmp(what, "null:", 5)) status = call(what + 5, NULL, argv[3], argv[4]);
    else status = call(what, instance, argv[3], argv[4]);
    if (status == -2) {
      fprintf(stderr, "fmi_calls: unknown call %s\n", what);
      return 2;
    }
    if (status == -1) printf("%s -\n", what);
    else printf("%s %d\n", what, status);
    fflush(stdout);
  }
  return 0;
}
