/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD MxGPU with the open-source GIM driver (amd/MxGPU-Virtualization;
 * doc/design.md §9): the PF is bound to gim, and its VFs appear by
 * themselves when gim loads, as many as the GPU's partition mode gives
 * (MI300X: 1 SPX, 2 DPX, 4 QPX or CPX-4, 8 CPX). A VF has no attribute of
 * its own: no type, no size; it is what the partition makes it, and a
 * guest gets it whole through vfio-pci (<hostdev type='pci'
 * managed='yes'>). Read under the root dirfd:
 *
 *   sys/bus/pci/devices/<PF>/driver                 -> .../drivers/gim
 *   sys/bus/pci/devices/<PF>/sriov_numvfs           the VFs (a write: ENOENT)
 *   sys/bus/pci/devices/<PF>/spatial_partition_mode SPX, DPX, QPX, CPX
 *   sys/bus/pci/devices/<PF>/memory_partition_mode  NPS1, NPS4
 *   sys/bus/pci/devices/<PF>/device                 0x74a1 (MI300X)
 *   sys/bus/pci/devices/<PF>/virtfnN, <VF>/physfn
 *
 * mdev-hooks never writes a partition (a failed write reports success and
 * only logs; the mode persists in /etc/gim_config): it reads it.
 *
 * The type of a VF is named amd-mxgpu-<N>, N the VFs its GPU is split into
 * (amd-mxgpu-8: an eighth of the GPU, CPX on an MI300X): the name says the
 * size, as the partition does, whatever the model.
 */
#pragma once

#include <stdbool.h>

#include "pciaddr.h"
#include "util.h"
#include "vfio.h"

#define AMDGIM_TYPE_PREFIX "amd-mxgpu-"

/* The kind (vfio.h) whose VFs are GIM's: no attribute of their own. */
extern const VfioKind vfio_amdgim;

typedef struct AmdgimPartition {
        unsigned nvfs;          /* sriov_numvfs */
        char spatial[16];       /* "CPX", "" when unreadable */
        char memory[16];        /* "NPS1", "" when unreadable */
        char model[16];         /* "MI300X", or the device ID "0x74a1" */
} AmdgimPartition;

/* 1 if the PCI device is a PF bound to gim, 0 if not, -errno. */
int amdgim_is_pf(int rootfd, const char *pf);
/* 1 if the PCI device is a VF of such a PF, 0 if not. */
int amdgim_is_vf(int rootfd, const char *vf);
/* The VF's type ID: how many VFs its PF has. -ENOENT: not such a VF. */
int amdgim_vf_current(int rootfd, const char *vf, unsigned *ret);
/* The PF's partition as it reads now. */
int amdgim_pf_partition(int rootfd, const char *pf, AmdgimPartition *ret);
/* How many VFs a spatial partition mode gives on an MI300X ("CPX": 8), 0
 * for a name that is none (pure). */
unsigned amdgim_partition_vfs(const char *spatial);
/* Compares the partition read with the one declared ([gpu_<PF>]
 * spatial_partition): 0 if it is the one, 1 with one line in buf saying
 * how it differs: the mode, or the VFs (counted on an MI300X only) (pure). */
int amdgim_partition_check(const char *pf, const AmdgimPartition *p, const char *declared, char *buf, size_t size);
/* "MI300X CPX, 1/8 of the GPU" for a type's description. */
void amdgim_describe(const AmdgimPartition *p, char *buf, size_t size);
