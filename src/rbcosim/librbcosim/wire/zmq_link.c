/* Finding the loaded libzmq: dl_iterate_phdr for its path, dlopen(RTLD_NOLOAD) for a handle to
 * the copy already in memory (never a second copy), dlsym for each function. */
#define _GNU_SOURCE
#include "zmq_link.h"

#include <dlfcn.h>
#include <errno.h>
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

int rbc_zmq_receive(const rbc_zmq *z, void *sock, rbc_zmq_msg *parts, int cap, int *n,
                    int *more) {
    *n = 0;
    *more = 0;
    for (int again = 1; again;) {
        if (*n == cap) {
            *more = 1;
            break;
        }
        rbc_zmq_msg *msg = &parts[*n];
        z->msg_init(msg);
        if (z->msg_recv(msg, sock, RBC_ZMQ_DONTWAIT) < 0) {
            z->msg_close(msg);
            break;
        }
        (*n)++;
        again = z->msg_more(msg);
    }
    return *n > 0;
}

void rbc_zmq_close_parts(const rbc_zmq *z, rbc_zmq_msg *parts, int *n) {
    for (int i = 0; i < *n; i++) z->msg_close(&parts[i]);
    *n = 0;
}

int rbc_zmq_wait_input(const rbc_zmq *z, void *first, void *second, long ms) {
    rbc_zmq_pollitem items[2] = {{first, 0, RBC_ZMQ_POLLIN, 0}, {second, 0, RBC_ZMQ_POLLIN, 0}};
    int got = z->poll(items, second ? 2 : 1, ms);
    if (got < 0) return z->errno_() == EINTR ? 0 : -1;
    if (got > 0 && (items[0].revents & RBC_ZMQ_POLLIN)) return 1;
    if (got > 0 && second && (items[1].revents & RBC_ZMQ_POLLIN)) return 2;
    return 0;
}
