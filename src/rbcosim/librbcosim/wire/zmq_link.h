/* The libzmq that pyzmq loaded into this process, found at run time (no libzmq at build time). */
#ifndef RBC_ZMQ_LINK_H
#define RBC_ZMQ_LINK_H

#include "zmq_abi.h"

/* The functions of the libzmq already loaded (a shared object whose name contains "libzmq",
 * e.g. pyzmq's bundled pyzmq.libs/libzmq-*.so.5), looked up once.  Returns NULL and writes the
 * reason to err (n bytes) when none is loaded or it lacks a function. */
const rbc_zmq *rbc_zmq_link(char *err, size_t n);

#endif
