/* model_file.c: see model_file.h. */
#include "model_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rbc_model_file_free(rbc_model_file *f) {
    if (f == NULL) return;
    free(f->data);
    f->data = NULL;
    f->size = 0;
}

int rbc_model_file_open(rbc_model_file *f, const char *path, const char tag[8], size_t header,
                        char *reason, size_t size) {
    memset(f, 0, sizeof *f);
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        snprintf(reason, size, "cannot open %.4000s", path);
        return -1;
    }
    long n = -1;
    if (fseek(file, 0, SEEK_END) == 0) n = ftell(file);
    if (n < 0 || fseek(file, 0, SEEK_SET) != 0 || (f->data = malloc((size_t)n + 8)) == NULL ||
        fread(f->data, 1, (size_t)n, file) != (size_t)n) {
        fclose(file);
        rbc_model_file_free(f);
        snprintf(reason, size, "cannot read %.4000s", path);
        return -1;
    }
    fclose(file);
    f->size = (size_t)n;
    if (f->size < header || header < 12 || memcmp(f->data, tag, 8) != 0) {
        rbc_model_file_free(f);
        snprintf(reason, size, "%.4000s is not a %.8s file", path, tag);
        return -1;
    }
    memcpy(&f->n_arrays, f->data + 8, 4);
    f->next = header;
    return 0;
}

int rbc_model_file_arrays(rbc_model_file *f, int64_t n, const char *types, rbc_arr *out,
                          char *reason, size_t size) {
    unsigned char *p = f->data + f->next, *stop = f->data + f->size;
    for (int64_t k = 0; k < n; ++k) {
        rbc_arr *a = &out[k];
        memset(a, 0, sizeof *a);
        if (stop - p < 8 || p[1] > 4 || (p[0] != 'd' && p[0] != 'l')) {
            snprintf(reason, size, "record %lld: damaged or missing", (long long)k);
            return -1;
        }
        char type = (char)p[0];
        a->ndim = p[1];
        p += 8;
        if (stop - p < 8 * a->ndim) {
            snprintf(reason, size, "record %lld: truncated shape", (long long)k);
            return -1;
        }
        a->size = 1;
        for (int64_t d = 0; d < a->ndim; ++d) {
            memcpy(&a->shape[d], p, 8);
            p += 8;
            if (a->shape[d] < 0) {
                snprintf(reason, size, "record %lld: negative shape", (long long)k);
                return -1;
            }
            a->size *= a->shape[d];
        }
        if (types != NULL && type != types[k]) {
            snprintf(reason, size, "record %lld: expected type '%c', got '%c'", (long long)k,
                     types[k], type);
            return -1;
        }
        if ((stop - p) / 8 < a->size) {
            snprintf(reason, size, "record %lld: truncated elements", (long long)k);
            return -1;
        }
        /* 8-byte aligned: malloc'ed storage, every header and record a multiple of 8 bytes. */
        if (type == 'd') a->d = (double *)(void *)p;
        else a->i = (int64_t *)(void *)p;
        p += 8 * a->size;
    }
    f->next = (size_t)(p - f->data);
    return 0;
}
