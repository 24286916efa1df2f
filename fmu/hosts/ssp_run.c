/* ssp_run: a plain C Jacobi master for the FMUs of an export-ssp package (FMI 2 or 3), no
 * Python of its own. The test (tests/test_fmu_ssp_c_host.py) reads the package's .ssd and
 * writes the plan; this host only makes the FMI calls.
 *
 *   ssp_run 2|3 PLAN
 *
 * PLAN: one item per line, in this order:
 *   fmu NAME BINARY RESOURCES GUID   a component (RESOURCES: a file URI for FMI 2, a path
 *                                    ending in "/" for FMI 3)
 *   start NAME VR VALUE              a Real start value, set in initialization mode
 *   link NAME VR NAME VR             a connection: output of the first, input of the second
 *   print NAME VR                    a Real printed after every step
 *   run T0 H STEPS                   start time, macro step (s), number of steps
 *
 * Per communication point t_k = T0 + k H: read every linked output, then set every linked
 * input, then doStep(t_k, H) each FMU (the order of tests/ssp_fmpy_master.py read-first).
 * Prints after each step a line "t v1 v2 ..." (%.17g). Exit status 0 when every call
 * returned OK, 1 on the first that did not (naming it), 2 on bad usage or a bad plan.
 *
 * Build: cc -o ssp_run fmu/hosts/ssp_run.c -Ifmu/native/include -ldl */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2Functions.h"
#include "fmi3Functions.h"

#define MAX_FMUS 8
#define MAX_ITEMS 4096

typedef struct component {
  char name[4096];
  void *lib, *instance;
} component;

typedef struct ref { int fmu; unsigned vr; } ref;

static int version;
static component fmus[MAX_FMUS];
static int n_fmus;

static void *sym(int i, const char *name) {
  void *f = dlsym(fmus[i].lib, name);
  if (!f) {
    fprintf(stderr, "ssp_run: %s is missing from %s's binary\n", name, fmus[i].name);
    exit(2);
  }
  return f;
}
#define F(i, name) ((name##TYPE *)sym(i, #name))

static void log_fmi2(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                     fmi2String category, fmi2String message, ...) {
  va_list args;
  (void)env;
  (void)category;
  va_start(args, message);
  fprintf(stderr, "[%s %d] ", instance ? instance : "?", (int)status);
  vfprintf(stderr, message, args);
  fputc('\n', stderr);
  va_end(args);
}

static void log_fmi3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                     fmi3String message) {
  (void)category;
  fprintf(stderr, "[%s %d] %s\n", env ? ((component *)env)->name : "?", (int)status, message);
}

static void check(int status, const char *call, int i) {
  if (status != 0) {
    fprintf(stderr, "ssp_run: %s of %s returned %d\n", call, fmus[i].name, status);
    exit(1);
  }
}

static int find(const char *name) {
  for (int i = 0; i < n_fmus; i++)
    if (!strcmp(fmus[i].name, name)) return i;
  fprintf(stderr, "ssp_run: no fmu %s in the plan\n", name);
  exit(2);
}

static void load(const char *name, const char *binary, const char *resources, const char *guid) {
  component *c = &fmus[n_fmus];
  if (n_fmus == MAX_FMUS) exit(2);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->lib = dlopen(binary, RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    fprintf(stderr, "ssp_run: %s\n", dlerror());
    exit(2);
  }
  n_fmus++;
  if (version == 2) {
    static fmi2CallbackFunctions callbacks = {log_fmi2, calloc, free, NULL, NULL};
    c->instance = F(n_fmus - 1, fmi2Instantiate)(c->name, fmi2CoSimulation, guid, resources,
                                                &callbacks, fmi2False, fmi2False);
  } else {
    c->instance = F(n_fmus - 1, fmi3InstantiateCoSimulation)(
        c->name, guid, resources, fmi3False, fmi3False, fmi3False, fmi3False, NULL, 0, c,
        log_fmi3, NULL);
  }
  if (!c->instance) {
    fprintf(stderr, "ssp_run: instantiating %s failed\n", name);
    exit(1);
  }
}

static double get(ref r) {
  double v = 0.0;
  void *c = fmus[r.fmu].instance;
  check(version == 2 ? F(r.fmu, fmi2GetReal)(c, &r.vr, 1, &v)
                     : F(r.fmu, fmi3GetFloat64)(c, &r.vr, 1, &v, 1), "get", r.fmu);
  return v;
}

static void set(ref r, double v) {
  void *c = fmus[r.fmu].instance;
  check(version == 2 ? F(r.fmu, fmi2SetReal)(c, &r.vr, 1, &v)
                     : F(r.fmu, fmi3SetFloat64)(c, &r.vr, 1, &v, 1), "set", r.fmu);
}

int main(int argc, char **argv) {
  static ref from[MAX_ITEMS], to[MAX_ITEMS], shown[MAX_ITEMS], started[MAX_ITEMS];
  static double start_values[MAX_ITEMS], values[MAX_ITEMS];
  int n_links = 0, n_shown = 0, n_started = 0;
  double t0 = 0.0, h = 0.0;
  long steps = -1;
  char line[8192], a[4096], b[4096], c[4096], d[4096];
  FILE *plan;
  if (argc != 3 || (strcmp(argv[1], "2") && strcmp(argv[1], "3")) ||
      !(plan = fopen(argv[2], "r"))) {
    fprintf(stderr, "usage: ssp_run 2|3 PLAN\n");
    return 2;
  }
  version = atoi(argv[1]);
  while (fgets(line, sizeof line, plan)) {
    unsigned v1, v2;
    double x;
    if (n_links == MAX_ITEMS || n_shown == MAX_ITEMS || n_started == MAX_ITEMS) return 2;
    if (sscanf(line, "fmu %4095s %4095s %4095s %4095s", a, b, c, d) == 4) {
      load(a, b, c, d);
    } else if (sscanf(line, "start %4095s %u %lf", a, &v1, &x) == 3) {
      started[n_started] = (ref){find(a), v1};
      start_values[n_started++] = x;
    } else if (sscanf(line, "link %4095s %u %4095s %u", a, &v1, b, &v2) == 4) {
      from[n_links] = (ref){find(a), v1};
      to[n_links++] = (ref){find(b), v2};
    } else if (sscanf(line, "print %4095s %u", a, &v1) == 2) {
      shown[n_shown++] = (ref){find(a), v1};
    } else if (sscanf(line, "run %lf %lf %ld", &t0, &h, &steps) != 3) {
      fprintf(stderr, "ssp_run: bad plan line: %s", line);
      return 2;
    }
  }
  fclose(plan);
  if (steps < 0 || n_fmus == 0) return 2;
  for (int i = 0; i < n_fmus; i++) {
    void *inst = fmus[i].instance;
    if (version == 2) {
      check(F(i, fmi2SetupExperiment)(inst, fmi2False, 0.0, t0, fmi2False, 0.0), "setup", i);
      check(F(i, fmi2EnterInitializationMode)(inst), "enterInitializationMode", i);
    } else {
      check(F(i, fmi3EnterInitializationMode)(inst, fmi3False, 0.0, t0, fmi3False, 0.0),
            "enterInitializationMode", i);
    }
  }
  for (int k = 0; k < n_started; k++) set(started[k], start_values[k]);
  for (int i = 0; i < n_fmus; i++) {
    check(version == 2 ? F(i, fmi2ExitInitializationMode)(fmus[i].instance)
                       : F(i, fmi3ExitInitializationMode)(fmus[i].instance),
          "exitInitializationMode", i);
  }
  for (long k = 0; k < steps; k++) {
    double t = t0 + (double)k * h;
    fmi3Boolean event = 0, terminate = 0, early = 0;
    fmi3Float64 last = 0.0;
    for (int l = 0; l < n_links; l++) values[l] = get(from[l]);
    for (int l = 0; l < n_links; l++) set(to[l], values[l]);
    for (int i = 0; i < n_fmus; i++) {
      check(version == 2 ? F(i, fmi2DoStep)(fmus[i].instance, t, h, fmi2True)
                         : F(i, fmi3DoStep)(fmus[i].instance, t, h, fmi3True, &event,
                                            &terminate, &early, &last),
            "doStep", i);
    }
    printf("%.17g", t0 + (double)(k + 1) * h);
    for (int s = 0; s < n_shown; s++) printf(" %.17g", get(shown[s]));
    putchar('\n');
  }
  for (int i = 0; i < n_fmus; i++) {
    check(version == 2 ? F(i, fmi2Terminate)(fmus[i].instance)
                       : F(i, fmi3Terminate)(fmus[i].instance), "terminate", i);
    if (version == 2) F(i, fmi2FreeInstance)(fmus[i].instance);
    else F(i, fmi3FreeInstance)(fmus[i].instance);
  }
  return 0;
}
