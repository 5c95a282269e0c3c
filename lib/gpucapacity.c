/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpucapacity.h"

/* The number that ends at end (exclusive), and where it starts. */
static bool number_before(const char *s, const char *end, unsigned *ret, const char **ret_start) {
        const char *b = end;
        unsigned long v = 0;

        while (b > s && isdigit((unsigned char) b[-1]))
                b--;
        if (b == end || end - b > 6)
                return false;
        for (const char *c = b; c < end; c++)
                v = v * 10 + (unsigned) (*c - '0');
        *ret = (unsigned) v;
        *ret_start = b;
        return true;
}

int gpu_type_size(const char *name, unsigned *ret_mib, unsigned *ret_slices) {
        const char *end = name + strlen(name), *start, *s_start;
        unsigned gib, slices = 0, s;

        /* the class letters ("Q", "C", "B", "A"), then the GiB */
        while (end > name && isalpha((unsigned char) end[-1]))
                end--;
        if (end == name + strlen(name) || !number_before(name, end, &gib, &start) || gib == 0)
                return -EINVAL;
        if (start == name || start[-1] != '-')
                return -EINVAL;
        /* "-1-24Q": a MIG slice count before it, a word of its own */
        if (number_before(name, start - 1, &s, &s_start) && s_start > name && s_start[-1] == '-')
                slices = s;
        *ret_mib = gib * 1024;
        *ret_slices = slices;
        return 0;
}

int gpu_instance_size(const char *profile, unsigned *ret_slices, unsigned *ret_mib) {
        char *end;
        unsigned long slices = strtoul(profile, &end, 10), gb;

        if (slices == 0 || end[0] != 'g' || end[1] != '.')
                return -EINVAL;
        gb = strtoul(end + 2, &end, 10);
        if (gb == 0 || strncmp(end, "gb", 2) != 0)
                return -EINVAL;
        *ret_slices = (unsigned) slices;
        *ret_mib = (unsigned) gb * 1024;
        return 0;
}

static unsigned min_u(unsigned a, unsigned b) {
        return a < b ? a : b;
}

unsigned gpu_capacity(const GpuCapacityInput *in, unsigned type_id, unsigned mib, unsigned slices) {
        unsigned n = 0;

        if (mib == 0)
                return 0;
        if (in->mig) {
                if (slices == 0)
                        return 0; /* time-sliced types are not creatable with MIG on */
                for (size_t i = 0; i < in->n_gis; i++) {
                        const GpuInstanceUse *g = &in->gis[i];

                        if (g->slices != slices || (g->vgpus > 0 && g->vgpu_type != type_id))
                                continue;
                        n += g->mib / mib > g->vgpus ? g->mib / mib - g->vgpus : 0;
                }
                return min_u(n, in->free_vfs);
        }
        if (slices > 0 || in->fb_used > in->fb_total)
                return 0; /* MIG-backed types need MIG on */
        /* equal-size: the first vGPU fixed the size of all */
        if (!in->mixed && in->vgpus > 0 && in->fb_used / in->vgpus != mib)
                return 0;
        return min_u((in->fb_total - in->fb_used) / mib, in->free_vfs);
}
