/* Model files: arrays of a handle's C struct written by Python (rbcosim.model_file) and read
 * back into rbc_arr members without Python -- the self-contained FMU's resources/model.bin
 * (fmu/native/fmu_local.c) and a flexible body's file (rbcosim.flex.io.body_file, read by
 * rbc_fx_body_file_load in flex/body_file.h).
 *
 * Layout (host byte order): an 8-byte tag, u32 n_arrays, then a header of a size fixed by the
 * tag (starting at byte 12), then n_arrays records, each: u8 type 'd' (float64) or 'l' (int64),
 * u8 ndim (<= 4), 6 bytes 0, i64 shape[ndim], the elements (C order).  Every record is a
 * multiple of 8 bytes and the file is read into one malloc'ed buffer, so the elements are
 * 8-byte aligned and the rbc_arr views point straight into it.
 */
#ifndef RBC_MODEL_FILE_H
#define RBC_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rbc_array.h"

typedef struct rbc_model_file {
    unsigned char *data; /* the whole file (the arrays' storage): free with rbc_model_file_free */
    size_t size;         /* bytes */
    uint32_t n_arrays;   /* records in the file */
    size_t next;         /* offset of the next record to read */
} rbc_model_file;

/* Read the file at path: 0, or -1 with the reason in reason[size] (cannot open / read, shorter
 * than header bytes, not this tag).  header: bytes before the first record (tag and count
 * included); the header's fields are read from f->data by the caller. */
int rbc_model_file_open(rbc_model_file *f, const char *path, const char tag[8], size_t header,
                        char *reason, size_t size);

/* The next n records as views into the file: out[i] gets record i; types (n chars 'd'/'l', or
 * NULL for any) must match.  0, or -1 with the reason (too few records, a damaged record, a
 * type mismatch naming its index). */
int rbc_model_file_arrays(rbc_model_file *f, int64_t n, const char *types, rbc_arr *out,
                          char *reason, size_t size);

/* Free the file's storage (the views become invalid). */
void rbc_model_file_free(rbc_model_file *f);

#endif
