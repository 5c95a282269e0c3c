/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NVIDIA's vendor-specific VFIO framework (vGPU 17+, kernels 6.8+): no mdev.
 * The physical GPU (PF) is bound to nvidia; each of its SR-IOV VFs stays
 * bound to nvidia and carries at most one vGPU, set through the VF's own
 * attributes (read and written with openat() under the root dirfd):
 *
 *   sys/bus/pci/devices/<PF>/virtfnN                 -> ../<VF>
 *   sys/bus/pci/devices/<VF>/physfn                  -> ../<PF>
 *   sys/bus/pci/devices/<VF>/nvidia/creatable_vgpu_types
 *       "ID    : vGPU Name" (the shipped driver's header; the upstream RFC
 *       driver prints none), then "%-5d : %s" per type the VF can create
 *       now: nothing once it holds a vGPU or when its GPU is full
 *   sys/bus/pci/devices/<VF>/nvidia/current_vgpu_type    "%d", 0: none;
 *       write an ID to create the vGPU, 0 to destroy it
 *
 * A vGPU type ID <ID> is named "nvidia-<ID>" everywhere in mdev-hooks, the
 * name the mdev framework gives the same vGPU type. IDs are the driver's
 * and are read, never assumed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pciaddr.h"
#include "util.h"

#define VFIO_TYPE_PREFIX "nvidia-"
/* The old name of PCI_ADDRESS_STRING_MAX (pciaddr.h). */
#define PCI_ADDRESS_MAX PCI_ADDRESS_STRING_MAX

/* A kind of VF that carries a vGPU through attributes of its own, as
 * NVIDIA's does: <VF>/<dir>/<current> holds the type's ID (0: none; write
 * an ID to program it, 0 to clear it), <VF>/<dir>/<creatable> lists "ID :
 * NAME" per type it can take now, and the type of ID n is named
 * "<prefix><n>". Every function below that takes one reads that kind's
 * attributes; the others are the same for every kind. */
typedef struct VfioKind {
        const char *prefix;     /* "nvidia-" */
        const char *dir;        /* "nvidia" */
        const char *creatable;  /* "creatable_vgpu_types" */
        const char *current;    /* "current_vgpu_type" */
        const char *label;      /* "NVIDIA VFIO framework": in descriptions */
        /* A kind whose VFs have no attribute of their own (AMD's GIM: a
         * VF's size is its GPU's partition, amdgim.h) says through these
         * what the attributes say for the others; dir, creatable and
         * current are then NULL, nothing is ever programmed (program:
         * -EOPNOTSUPP) and nothing is cleared (clear: 0). */
        int (*is_vf)(int rootfd, const char *vf);                /* 1, 0, -errno */
        int (*current_of)(int rootfd, const char *vf, unsigned *ret); /* the type's ID */
} VfioKind;

/* NVIDIA's vendor-specific VFIO framework. */
extern const VfioKind vfio_nvidia;

typedef struct VfioType {
        unsigned id;                  /* the driver's vGPU type ID */
        char type[NAME_STRING_MAX];   /* "nvidia-<ID>" */
        char name[NAME_STRING_MAX];   /* "NVIDIA L40S-4Q" */
} VfioType;

/* "nvidia-1150" -> 1150. -EINVAL for anything else. */
int vfio_type_id(const char *type, unsigned *ret);
/* The same for a kind: "<prefix><ID>" -> ID. */
int vfio_kind_type_id(const VfioKind *k, const char *type, unsigned *ret);
/* pci_address_normalize() under its old name. */
bool vfio_pci_address_parse(const char *s, char out[PCI_ADDRESS_STRING_MAX]);

/* Parses creatable_vgpu_types: with or without the header line; blank lines
 * are skipped; any other line that is not "ID : NAME" is -EBADMSG. */
int vfio_creatable_parse(const char *text, VfioType **ret, size_t *ret_n);
/* The same for a kind (its types named with its prefix). */
int vfio_kind_creatable_parse(const VfioKind *k, const char *text, VfioType **ret, size_t *ret_n);

/* 1 if the PCI device is a VF of the VFIO framework (has nvidia/
 * current_vgpu_type), 0 if not (or no such device), <0 on error. */
int vfio_is_vf(const VfioKind *k, int rootfd, const char *vf);
/* The VF's PF (its physfn link). */
int vfio_vf_pf(int rootfd, const char *vf, char pf[PCI_ADDRESS_STRING_MAX]);
/* The PF's VFs (virtfn0, virtfn1, ... in that order). -ENOENT: not a PF or
 * its VFs are not enabled (an empty list is returned as -ENOENT too). */
int vfio_pf_vfs(int rootfd, const char *pf, char ***ret);
/* 1 if the PCI device is a PF whose first VF belongs to the VFIO framework. */
int vfio_is_pf(const VfioKind *k, int rootfd, const char *pf);
/* Every such PF on the host (a scan of sys/bus/pci/devices: for the CLI and
 * for a config without device_addresses; never on a hook's fast path). */
int vfio_pf_list(const VfioKind *k, int rootfd, char ***ret);

/* current_vgpu_type: the ID (0: none). */
int vfio_vf_current(const VfioKind *k, int rootfd, const char *vf, unsigned *ret);
/* creatable_vgpu_types, parsed. */
int vfio_vf_creatable(const VfioKind *k, int rootfd, const char *vf, VfioType **ret, size_t *ret_n);
/* Writes id to current_vgpu_type, then reads it back: 0 when the VF carries
 * the type. The raw -errno of the write (any means "try another VF"), or
 * -EIO when the read back disagrees. Sets no message. */
int vfio_vf_program(const VfioKind *k, int rootfd, const char *vf, unsigned id);
/* Writes 0: the vGPU is destroyed. -EPERM while a guest holds it (and on a
 * VF without a vGPU, shipped driver), -EBUSY (RFC driver). Sets no message. */
int vfio_vf_clear(const VfioKind *k, int rootfd, const char *vf);
/* Appends every programmed VF of every VFIO PF on the host to a list of
 * mdevs, as an mdev named by the VF's address, with its PF as parent and
 * nvidia-<ID> as type, and sorts the list by name again: so that list and
 * reconcile see VFIO vGPUs beside mdevs. A scan of sys/bus/pci/devices. */
/* What a PF offers, read from its VFs: each type that a VF carries or that
 * an unprogrammed VF lists as creatable now. existing: VFs carrying it;
 * creatable: unprogrammed VFs listing it (an upper bound of how many more
 * fit: the driver tells whether one more fits on a VF, not how many; exact
 * when it is 0). */
typedef struct VfioOffer {
        VfioType type;
        unsigned existing;
        unsigned creatable;
} VfioOffer;
/* The offers of one PF, by ID; *ret_vfs: its VFs, *ret_free: unprogrammed. */
int vfio_pf_offers(const VfioKind *k, int rootfd, const char *pf, VfioOffer **ret, size_t *ret_n, unsigned *ret_vfs, unsigned *ret_free);
/* The offer of one type, zeros when not offered (*ret_offered false). */
int vfio_pf_offer(const VfioKind *k, int rootfd, const char *pf, const char *type, VfioOffer *ret, bool *ret_offered);

struct SysfsMdev;
int vfio_vgpus_append(const VfioKind *k, int rootfd, struct SysfsMdev **mdevs, size_t *n);

/* "1150 (NVIDIA L40S-4Q), 1149 (...)" or "nothing" for messages. */
void vfio_types_describe(const VfioType *t, size_t n, char *buf, size_t size);
