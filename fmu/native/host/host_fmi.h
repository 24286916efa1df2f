/* host_fmi.h: the FMI calls a C co-simulation master without Python makes, FMI 2 or 3 behind
 * one set of functions (two_mass_host.c, pendulum_host.c). Every failure ends the process with
 * a message on stderr and exit status 1. */
#ifndef RBCOSIM_HOST_FMI_H
#define RBCOSIM_HOST_FMI_H

#include <stddef.h>
#include <stdio.h>

/* Value references as both versions number them (fmi2ValueReference == fmi3ValueReference). */
typedef unsigned int host_vr;

/* Print the message and exit(1). */
void fail(const char *format, ...);
/* The setup file being read, named by fail_setup(): "PATH: message". */
extern const char *setup_path;
void fail_setup(const char *format, ...);
/* Read n numbers into out from the setup file, failing with "PATH: KEY needs N numbers". */
void read_numbers(FILE *f, double *out, int n, const char *key);

/* dlopen() the FMU binary of FMI version 2 or 3. */
void host_open(int fmi_version, const char *binary);
/* Instantiate (co-simulation; RESOURCES a file URI for FMI 2, a path for FMI 3; TOKEN the
 * GUID / instantiationToken), enter initialization mode at t = 0 and set the string variable
 * `address` (server.address; "-": none, a self-contained FMU). Initial values may be set and
 * read until host_exit_init(). */
void host_start(const char *resources, const char *token, host_vr address_vr,
                const char *address);
void host_exit_init(void);
void host_get(const host_vr *vr, size_t n, double *value);
void host_set(const host_vr *vr, size_t n, const double *value);
void host_set_string(host_vr vr, const char *value);
/* One co-simulation step from t over h (s). */
void host_do_step(double t, double h);
/* Terminate, free the instance, dlclose(). */
void host_stop(void);

#endif
