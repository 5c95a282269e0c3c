/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Intel's xe driver in SR-IOV PF mode (doc/design.md §9; the kernel's
 * Documentation/ABI/testing/sysfs-driver-intel-xe-sriov): the PF is bound
 * to xe and has sriov_admin/vf1..vfN, one per possible VF; a VF's size is
 * its VRAM quota, given before the VFs are enabled (or shared out evenly
 * by the driver), and a guest gets the VF whole through vfio-pci
 * (<hostdev type='pci' managed='yes'>). Read under the root dirfd:
 *
 *   sys/bus/pci/devices/<PF>/driver                          -> .../drivers/xe
 *   sys/bus/pci/devices/<PF>/virtfnN, <VF>/physfn
 *   sys/bus/pci/devices/<PF>/sriov_admin/vf<N+1>/profile/vram_quota   bytes
 *
 * The type of a VF is named intel-xe-<MiB>, its quota in MiB
 * (intel-xe-6144: 6 GiB of VRAM). The boot plan provisions a GPU as its
 * [gpu_<PF>] vfs, vram_quota, exec_quantum_ms and preempt_timeout_us
 * declare (xesriov_pf_provision()).
 */
#pragma once

#include <stdint.h>

#include "config.h"
#include "pciaddr.h"
#include "vfio.h"

#define XESRIOV_TYPE_PREFIX "intel-xe-"

/* The kind (vfio.h) whose VFs are xe's. */
extern const VfioKind vfio_xe;

/* 1 if the PCI device is a PF bound to xe with sriov_admin/, 0 if not. */
int xesriov_is_pf(int rootfd, const char *pf);
/* 1 if the PCI device is a VF of such a PF, 0 if not. */
int xesriov_is_vf(int rootfd, const char *vf);
/* The VF's N in sriov_admin/vfN (1-based) and its PF. -ENOENT: not one. */
int xesriov_vf_index(int rootfd, const char *vf, char pf[PCI_ADDRESS_STRING_MAX], unsigned *ret);
/* The VF's VRAM quota in bytes. */
int xesriov_vf_quota(int rootfd, const char *vf, uint64_t *ret);
/* The VF's type ID: its quota in MiB (0: none). -ENOENT: not such a VF. */
int xesriov_vf_current(int rootfd, const char *vf, unsigned *ret);

/* A VF's scheduling knob, name "exec_quantum_ms" or "preempt_timeout_us"
 * (sriov_admin/vfN/profile/<name>, a u32, 0: unlimited): read; written and
 * read back (-errno with one line naming the file, the value and the errno:
 * EINVAL malformed, EPERM not applicable, EIO refused by the firmware). */
int xesriov_vf_sched_read(int rootfd, const char *vf, const char *name, unsigned *ret);
int xesriov_vf_sched_write(int rootfd, const char *vf, const char *name, unsigned v);

/* Whether the PF's VFs can be live-migrated: 1 when xe-vfio-pci (kernel
 * 6.19, drivers/vfio/pci/xe/: Battlemage, Panther Lake, Wildcat Lake) is
 * installed for the running kernel and its ID table matches the GPU, read
 * as libvirt reads it to choose the VFIO driver of a managed hostdev: the
 * "vfio_pci:" aliases of xe_vfio_pci in /lib/modules/<release>/modules.alias
 * against the PF's modalias (Intel's VFs share the PF's device ID). 0 with
 * *reterr_why (one line: what is missing) when not; -errno with a message
 * when it cannot be told. */
int xesriov_pf_migratable(int rootfd, const char *pf, char **reterr_why);

/* 0 if the PF is one of xe's in SR-IOV PF mode that can have vfs VFs
 * (sriov_totalvfs), -errno with one line if not. */
int xesriov_pf_check(int rootfd, const char *pf, unsigned vfs);
/* One VF's declared profile: what the boot plan writes under the PF's
 * sriov_admin/vfN/profile/. sched[] are exec_quantum_ms and
 * preempt_timeout_us, each written only when has_sched[] says so. */
typedef struct XesriovVfProfile {
        uint64_t vram_quota; /* bytes; 0: none declared (the driver shares out) */
        bool has_sched[2];
        unsigned sched[2];
} XesriovVfProfile;

/* A PF's state against its declared one. */
typedef struct XesriovState {
        unsigned numvfs;      /* the VFs it has */
        bool quotas_differ;   /* it has the declared VFs, with other quotas */
        unsigned sched_differ; /* declared scheduling knobs that differ, on VFs nobody holds */
        unsigned held;        /* VFs bound to a VFIO driver: their scheduling is their guest's */
} XesriovState;

/* The profile of each of a [gpu_<PF>]'s g->vfs VFs (ret: g->vfs of them). */
int xesriov_declared_from_config(const ConfigGpu *g, XesriovVfProfile **ret);
/* 1 if the PF has vfs VFs, VF k with vf[k-1]'s quota, and each declared
 * scheduling knob on every VF nobody holds (a VF bound to a VFIO driver
 * keeps the scheduling its guest's entry set); 0 if not; -errno (with a
 * message) if it cannot be read. *ret says how it differs. */
int xesriov_pf_state(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, XesriovState *ret);
/* Brings the PF to vfs VFs with the profiles vf[] declare, in the driver's
 * order: from no VFs, each VF's quota (only while the VFs are disabled),
 * each scheduling knob, then sriov_numvfs, each write read back, and the
 * scheduling read again once the VFs are there (written again where it
 * differs); with the VFs and their
 * quotas as declared, only the scheduling knobs that differ (on VFs nobody
 * holds). 0 with *ret_changed the writes made (0: it was so already) and
 * *ret_held the VFs whose scheduling was left to their guest; -errno with
 * one line naming the file, the value and the errno. VFs enabled otherwise
 * are never disabled (a guest may hold one): that is an error that says
 * what to do. */
int xesriov_pf_provision(int rootfd, const char *pf, const XesriovVfProfile *vf, unsigned vfs, unsigned *ret_changed,
                         unsigned *ret_held);
/* "8G", "512M", or bytes: a size as the config writes it (pure). */
void xesriov_format_size(uint64_t bytes, char *buf, size_t size);
