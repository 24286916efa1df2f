/* Finding the loaded libzmq: dl_iterate_phdr for its path, dlopen(RTLD_NOLOAD) for a handle to
 * the copy already in memory (never a second copy), dlsym for each function. */
#define _GNU_SOURCE
#include "zmq_link.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int find_libzmq(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && strstr(base, "libzmq")) {
        *(const char **)data = name;
        return 1;
    }
    return 0;
}

static rbc_zmq linked;
static int have;

#define LOOK(field, symbol)                                                      \
    do {                                                                         \
        *(void **)&linked.field = dlsym(lib, symbol);                           \
        if (!linked.field) {                                                     \
            snprintf(err, n, "%s has no function %s", path, symbol);            \
            return NULL;                                                         \
        }                                                                        \
    } while (0)

const rbc_zmq *rbc_zmq_link(char *err, size_t n) {
    if (have) return &linked;
    const char *path = NULL;
    dl_iterate_phdr(find_libzmq, &path);
    if (!path) {
        snprintf(err, n, "no libzmq is loaded in this process (import zmq first; pyzmq "
                 "bundles it)");
        return NULL;
    }
    void *lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (!lib) {
        snprintf(err, n, "cannot open the loaded libzmq %s: %s", path, dlerror());
        return NULL;
    }
    LOOK(msg_init, "zmq_msg_init");
    LOOK(msg_recv, "zmq_msg_recv");
    LOOK(msg_data, "zmq_msg_data");
    LOOK(msg_size, "zmq_msg_size");
    LOOK(msg_more, "zmq_msg_more");
    LOOK(msg_close, "zmq_msg_close");
    LOOK(send, "zmq_send");
    LOOK(poll, "zmq_poll");
    LOOK(errno_, "zmq_errno");
    LOOK(strerror, "zmq_strerror");
    have = 1;  /* the handle stays open: libzmq stays loaded while pyzmq is */
    return &linked;
}
