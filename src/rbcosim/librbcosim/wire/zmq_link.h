/* The libzmq that pyzmq loaded into this process, found at run time (no libzmq at build time). */
#ifndef RBC_ZMQ_LINK_H
#define RBC_ZMQ_LINK_H

#include "zmq_abi.h"

/* The functions of the libzmq already loaded (a shared object whose name contains "libzmq",
 * e.g. pyzmq's bundled pyzmq.libs/libzmq-*.so.5), looked up once.  Returns NULL and writes the
 * reason to err (n bytes) when none is loaded or it lacks a function. */
const rbc_zmq *rbc_zmq_link(char *err, size_t n);

/* Read the parts of one message on sock without waiting, into parts (at most cap of them):
 * *n parts read (open messages, rbc_zmq_close_parts closes them), *more nonzero when the
 * message has further parts still to be read.  Returns *n > 0. */
int rbc_zmq_receive(const rbc_zmq *z, void *sock, rbc_zmq_msg *parts, int cap, int *n,
                    int *more);

/* Close the *n open messages in parts; *n becomes 0. */
void rbc_zmq_close_parts(const rbc_zmq *z, rbc_zmq_msg *parts, int *n);

/* Wait at most ms (0: look only) for input on first or, when not NULL, on second: 1 first has
 * some, 2 only second, 0 neither (also after EINTR), -1 an error. */
int rbc_zmq_wait_input(const rbc_zmq *z, void *first, void *second, long ms);

#endif
