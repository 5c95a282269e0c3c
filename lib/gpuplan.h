/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A GPU's boot plan: bring an NVIDIA GPU to the state its [gpu_<PF>]
 * section declares, in the order the driver requires
 * (doc/design.md §9): MIG mode, then the VFs (sriov-manage
 * -e wipes the heterogeneous mode and every GPU instance), then the
 * heterogeneous mode, then the GPU instances. Read state -> plan (pure) ->
 * apply, each step read back. Run from a oneshot systemd service that the
 * udev rule starts when the PF appears (never inside the udev event), or by
 * hand (`mdev-hooks gpu plan`). A second run finds nothing to do.
 */
#pragma once

#include <stddef.h>

#include "config.h"
#include "gpustate.h"

typedef enum GpuStepKind {
        GPU_STEP_MIG_ON,   /* nvidia-smi -mig 1 -i PF */
        GPU_STEP_MIG_OFF,  /* nvidia-smi -mig 0 -i PF */
        GPU_STEP_VFS,      /* sriov-manage -e PF */
        GPU_STEP_HET_ON,   /* nvidia-smi vgpu -shm 1 -i PF */
        GPU_STEP_HET_OFF,  /* nvidia-smi vgpu -shm 0 -i PF */
        GPU_STEP_GIS,      /* nvidia-smi mig -cgi P,... -C -i PF */
        _GPU_STEP_MAX,
        _GPU_STEP_INVALID = -EINVAL,
} GpuStepKind;

#define GPU_PLAN_MAX_STEPS 4

typedef struct GpuPlan {
        GpuStepKind steps[GPU_PLAN_MAX_STEPS];
        size_t n;
        char **gis; /* GPU_STEP_GIS: the profiles to make */
} GpuPlan;

ENUM_DECL(gpu_step, GpuStepKind);

void gpu_plan_done(GpuPlan *p);

/* The steps that bring a GPU in state s to g's declared state, in order
 * (pure). The GPU instances to make are those g names that s lacks (all of
 * them when the VFs are to be enabled, which wipes them). -ENOMEM only. */
int gpu_plan_make(const ConfigGpu *g, const GpuState *s, GpuPlan *ret);

/* Reads the PF's state, plans and applies. 0 with *ret_changed the number
 * of steps done (0: it was in its declared state already); -errno with one
 * line: the step, the GPU, what the tool printed. A failed run leaves the
 * GPU where it stopped: the next run starts from there. */
int gpu_plan_run(int rootfd, const Config *c, const ConfigGpu *g, unsigned *ret_changed);
