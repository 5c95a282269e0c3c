/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How many more vGPUs of a type fit on an NVIDIA GPU now, by its mode
 * (doc/design.md §9): equal-size by the framebuffer left and
 * the size the first vGPU fixed; mixed-size by the framebuffer left; MIG by
 * the GPU instances (one size at a time each) and how many of the size one
 * holds. A type's size comes from its name, as the driver names it
 * ("NVIDIA L40S-4Q": 4 GiB; "... DC-1-24Q": one MIG slice, 24 GiB), a GPU
 * instance's from its profile ("1g.24gb"). Pure: gpu status reads the GPU
 * (gpustate.h) and hands the numbers in.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A type's framebuffer in MiB and, for a MIG-backed type, its slices (0:
 * time-sliced), from its name's last words: "-4Q", "-1-24Q", "-24C".
 * -EINVAL when the name says no size. */
int gpu_type_size(const char *name, unsigned *ret_mib, unsigned *ret_slices);
/* A GPU instance profile's slices and framebuffer: "1g.24gb" -> 1, 24576. */
int gpu_instance_size(const char *profile, unsigned *ret_slices, unsigned *ret_mib);

typedef struct GpuInstanceUse {
        unsigned slices, mib;  /* the instance's, from its profile */
        unsigned vgpus;        /* vGPUs in it */
        unsigned vgpu_type;    /* their type ID (one size per instance), 0: none */
} GpuInstanceUse;

typedef struct GpuCapacityInput {
        bool mig, mixed;         /* the GPU's actual mode */
        unsigned free_vfs;       /* VFs without a vGPU: one vGPU each */
        unsigned fb_total, fb_used; /* MiB (time-sliced) */
        unsigned vgpus;          /* vGPUs on the GPU */
        const GpuInstanceUse *gis;
        size_t n_gis;
} GpuCapacityInput;

/* How many more vGPUs of the type (its ID, size and slices) fit now. */
unsigned gpu_capacity(const GpuCapacityInput *in, unsigned type_id, unsigned mib, unsigned slices);
