/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A set of NUMA nodes (nodeset.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "nodeset.h"

/* A node number at *p (blanks before it skipped); p moved past it. */
static int node_number(const char **p, unsigned long *ret) {
        char *end;

        while (**p == ' ' || **p == '\t')
                (*p)++;
        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        *ret = strtoul(*p, &end, 10);
        if (errno != 0 || *ret > 1000000)
                return -EINVAL;
        *p = end;
        return 0;
}

/* The bits of nodes lo..hi that fit in a NodeSet. */
static NodeSet range_bits(unsigned long lo, unsigned long hi) {
        NodeSet s = 0;

        for (unsigned long n = lo; n <= hi && n < NODESET_MAX; n++)
                s |= (NodeSet) 1 << n;
        return s;
}

int nodeset_parse(const char *s, NodeSet *ret) {
        NodeSet set = 0, minus = 0;
        const char *p = s;

        for (;;) {
                unsigned long lo, hi;
                bool neg;

                while (*p == ' ' || *p == '\t')
                        p++;
                neg = *p == '^';
                if (neg)
                        p++;
                if (node_number(&p, &lo) < 0)
                        return -EINVAL;
                hi = lo;
                if (!neg && *p == '-') {
                        p++;
                        if (node_number(&p, &hi) < 0 || hi < lo)
                                return -EINVAL;
                }
                if (neg)
                        minus |= range_bits(lo, lo);
                else
                        set |= range_bits(lo, hi);
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\0')
                        break;
                if (*p++ != ',')
                        return -EINVAL;
        }
        *ret = set & ~minus;
        return 0;
}
