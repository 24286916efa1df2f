/* matrix_market.c: see matrix_market.h. */
#include "matrix_market.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE 1024

/* The next line that is not a comment or blank, or NULL at the end of the file. */
static char *next_data_line(FILE *f, char *line)
{
    while (fgets(line, LINE, f)) {
        const char *p = line + strspn(line, " \t\r\n");
        if (*p && *p != '%')
            return line;
    }
    return NULL;
}

typedef struct mm_header {
    int coordinate; /* 1: coordinate, 0: array */
    int symmetric;  /* 1: symmetric, 0: general */
} mm_header;

static int parse_header(const char *line, mm_header *h)
{
    char banner[64], object[64], format[64], field[64], symmetry[64];
    if (sscanf(line, "%63s %63s %63s %63s %63s", banner, object, format, field, symmetry) != 5)
        return -1;
    if (strcasecmp(banner, "%%MatrixMarket") || strcasecmp(object, "matrix"))
        return -1;
    if (strcasecmp(field, "real") && strcasecmp(field, "double") && strcasecmp(field, "integer"))
        return -1;
    if (!strcasecmp(format, "coordinate"))
        h->coordinate = 1;
    else if (!strcasecmp(format, "array"))
        h->coordinate = 0;
    else
        return -1;
    if (!strcasecmp(symmetry, "symmetric"))
        h->symmetric = 1;
    else if (!strcasecmp(symmetry, "general"))
        h->symmetric = 0;
    else
        return -1;
    return 0;
}

static int read_array(FILE *f, const mm_header *h, double *a, int n, int m)
{
    char line[LINE];
    for (int j = 0; j < m; ++j) {
        for (int i = h->symmetric ? j : 0; i < n; ++i) {
            if (!next_data_line(f, line) || sscanf(line, "%lf", &a[(size_t)i * m + j]) != 1)
                return -1;
            if (h->symmetric)
                a[(size_t)j * m + i] = a[(size_t)i * m + j];
        }
    }
    return 0;
}

static int read_coordinate(FILE *f, const mm_header *h, double *a, int n, int m, long nnz)
{
    char line[LINE];
    for (long e = 0; e < nnz; ++e) {
        int i, j;
        double v;
        if (!next_data_line(f, line) || sscanf(line, "%d %d %lf", &i, &j, &v) != 3)
            return -1;
        if (i < 1 || i > n || j < 1 || j > m)
            return -1;
        a[(size_t)(i - 1) * m + (j - 1)] += v;
        if (h->symmetric && i != j)
            a[(size_t)(j - 1) * m + (i - 1)] += v;
    }
    return 0;
}

int mm_read_dense(const char *path, double **values, int *rows, int *cols, char *err,
                  size_t err_size)
{
    char line[LINE];
    mm_header h;
    long nnz = 0;
    int n = 0, m = 0, rc = -1;
    double *a = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_size, "%s: cannot open", path);
        return -1;
    }
    if (!fgets(line, LINE, f) || parse_header(line, &h)) {
        snprintf(err, err_size, "%s: not a '%%%%MatrixMarket matrix array|coordinate real "
                 "general|symmetric' file", path);
        goto done;
    }
    if (!next_data_line(f, line) ||
        (h.coordinate ? sscanf(line, "%d %d %ld", &n, &m, &nnz) != 3
                      : sscanf(line, "%d %d", &n, &m) != 2) ||
        n < 1 || m < 1 || (h.symmetric && n != m)) {
        snprintf(err, err_size, "%s: bad size line", path);
        goto done;
    }
    a = calloc((size_t)n * m, sizeof *a);
    if (!a) {
        snprintf(err, err_size, "%s: no memory for %d x %d", path, n, m);
        goto done;
    }
    if (h.coordinate ? read_coordinate(f, &h, a, n, m, nnz) : read_array(f, &h, a, n, m)) {
        snprintf(err, err_size, "%s: truncated or malformed values", path);
        goto done;
    }
    *values = a;
    *rows = n;
    *cols = m;
    a = NULL;
    rc = 0;
done:
    free(a);
    fclose(f);
    return rc;
}
