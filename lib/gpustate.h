/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An NVIDIA GPU's actual state on the vendor-specific VFIO framework, as
 * the boot plan (gpuplan.c) and `mdev-hooks gpu status` read it: its VFs
 * from sysfs, its MIG and heterogeneous modes from `nvidia-smi -q`, its GPU
 * instances from `nvidia-smi mig -lgi` (doc/design.md §9).
 * The tools are run by the paths of [gpu] in the config.
 */
#pragma once

#include <stdbool.h>

#include "config.h"
#include "util.h"

#define GPU_TOOL_TIMEOUT 120 /* seconds: sriov-manage rebinds the PF */

/* A mode as read back: on, off, or unknown (not printed, N/A, the tool failed). */
typedef enum GpuTristate {
        GPU_OFF = 0,
        GPU_ON = 1,
        GPU_UNKNOWN = -1,
} GpuTristate;

typedef struct GpuState {
        unsigned numvfs;   /* sriov_numvfs: 0 until sriov-manage -e */
        bool vgpus;        /* a VF carries a vGPU */
        GpuTristate mig;   /* "MIG Mode / Current" */
        GpuTristate het;   /* "vGPU Heterogeneous Mode" (N/A in MIG mode: unknown) */
        bool het_capable;  /* "Heterogeneous Time-Slice Sizes : Supported" */
        char **gis;        /* GPU instance profiles ("1g.24gb"), as listed; NULL: none */
        unsigned *gi_ids;  /* their instance IDs, as many */
        unsigned fb_total, fb_used; /* "FB Memory Usage" Total, Used (MiB); 0: not said */
} GpuState;

/* A type a free VF lists now, and how many more of it fit (gpucapacity.h). */
typedef struct GpuOffer {
        unsigned id;
        char type[NAME_STRING_MAX];  /* "nvidia-1201" */
        char name[NAME_STRING_MAX];  /* "NVIDIA RTX Pro 6000 Blackwell DC-4Q" */
        bool sized;                  /* its name says its size */
        unsigned free;               /* how many more fit now (sized only) */
} GpuOffer;

/* What one run of a vendor tool gave. */
typedef struct GpuToolRun {
        int exit;          /* its exit status; -1 killed or timed out */
        char *output;      /* stdout and stderr, lines joined by "; " ("" if none) */
} GpuToolRun;

void gpu_state_done(GpuState *s);
void gpu_tool_run_done(GpuToolRun *t);

/* Runs `TOOL ARGS PF` (tool a path, args words that need no quoting). 0
 * with *ret filled once it ran (whatever its exit), -errno if it could not
 * be run. */
int gpu_tool_run(const char *tool, const char *args, const char *pf, GpuToolRun *ret);

/* The parts of `nvidia-smi -q -i PF`'s text the plan reads (pure). */
void gpu_state_parse_query(const char *text, GpuState *s);
/* `nvidia-smi mig -lgi -i PF`'s table: the profiles, in order (pure).
 * -ENOMEM only. */
int gpu_state_parse_gis(const char *text, char ***ret, unsigned **ret_ids);

/* Reads the PF's whole state. -errno with a message when sysfs cannot be
 * read or nvidia-smi cannot be run at all; a tool that fails leaves the
 * value unknown. */
int gpu_state_read(int rootfd, const Config *c, const char *pf, GpuState *ret);

/* Each type a free VF of the PF lists now, with how many more fit by the
 * GPU's mode in s (read by gpu_state_read()). */
int gpu_state_offers(int rootfd, const char *pf, const GpuState *s, GpuOffer **ret, size_t *ret_n);
