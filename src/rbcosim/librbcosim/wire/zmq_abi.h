/* The few libzmq functions and types the C core uses, declared here rather than taken from
 * zmq.h: libzmq is not needed at build time.  At run time the core uses the libzmq that pyzmq
 * has already loaded (zmq_link.h).  These are the declarations of the libzmq 4.x ABI
 * (libzmq.so.5; zmq.h of 4.0 to 4.3): zmq_msg_t is 64 opaque bytes, pointer aligned. */
#ifndef RBC_ZMQ_ABI_H
#define RBC_ZMQ_ABI_H

#include <stddef.h>

typedef struct rbc_zmq_msg {
    _Alignas(void *) unsigned char _[64];
} rbc_zmq_msg;

typedef struct rbc_zmq_pollitem {
    void *socket;
    int fd;
    short events;
    short revents;
} rbc_zmq_pollitem;

enum { RBC_ZMQ_DONTWAIT = 1, RBC_ZMQ_SNDMORE = 2, RBC_ZMQ_POLLIN = 1, RBC_ZMQ_POLLOUT = 2 };

/* The functions, looked up by name in the loaded libzmq (zmq_link.c). */
typedef struct rbc_zmq {
    int (*msg_init)(rbc_zmq_msg *msg);
    int (*msg_recv)(rbc_zmq_msg *msg, void *socket, int flags);
    void *(*msg_data)(rbc_zmq_msg *msg);
    size_t (*msg_size)(const rbc_zmq_msg *msg);
    int (*msg_more)(const rbc_zmq_msg *msg);
    int (*msg_close)(rbc_zmq_msg *msg);
    int (*send)(void *socket, const void *buf, size_t len, int flags);
    int (*poll)(rbc_zmq_pollitem *items, int n, long timeout_ms);
    int (*errno_)(void);
    const char *(*strerror)(int errnum);
} rbc_zmq;

#endif
