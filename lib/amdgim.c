/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* AMD MxGPU with the GIM driver: its PFs, VFs and partition (amdgim.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "amdgim.h"
#include "error.h"
#include "pcidev.h"

#define PCI_DEVICES "sys/bus/pci/devices"

const VfioKind vfio_amdgim = {
        .prefix = AMDGIM_TYPE_PREFIX,
        .label = "AMD MxGPU (GIM)",
        .is_vf = amdgim_is_vf,
        .current_of = amdgim_vf_current,
};

/* The PCI device IDs of the PFs GIM drives that doc/design.md §9 names (the
 * others are shown by their ID). */
static const struct {
        const char *id;
        const char *model;
} models[] = {
        { "0x74a1", "MI300X" },
};

int amdgim_is_pf(int rootfd, const char *pf) {
        char driver[NAME_STRING_MAX];
        int r;

        r = pci_device_driver(rootfd, pf, driver);
        return r < 0 ? r : streq(driver, "gim");
}

int amdgim_is_vf(int rootfd, const char *vf) {
        char pf[PCI_ADDRESS_STRING_MAX];
        int r;

        r = vfio_vf_pf(rootfd, vf, pf);
        if (r < 0) {
                error_clear();
                return 0;
        }
        return amdgim_is_pf(rootfd, pf);
}

int amdgim_vf_current(int rootfd, const char *vf, unsigned *ret) {
        char pf[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], buf[32];
        int r;

        r = amdgim_is_vf(rootfd, vf);
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        r = vfio_vf_pf(rootfd, vf, pf);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_numvfs", pf);
        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r < 0)
                return r == -ENOENT ? r : error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        if (safe_atou(buf, ret) < 0 || *ret == 0)
                return error_set(-EBADMSG, "'/%s' holds '%s', not a number of VFs", path, buf);
        return 0;
}

/* An attribute of the PF, "" when it cannot be read. */
static void pf_attr(int rootfd, const char *pf, const char *name, char *buf, size_t size) {
        char path[PATH_MAX];

        snprintf(path, sizeof path, PCI_DEVICES "/%s/%s", pf, name);
        if (read_small_at(rootfd, path, buf, size) < 0) {
                error_clear();
                buf[0] = '\0';
        }
}

int amdgim_pf_partition(int rootfd, const char *pf, AmdgimPartition *ret) {
        AmdgimPartition p = { 0 };
        char a[PCI_ADDRESS_STRING_MAX], num[32], id[16];

        if (!pci_address_normalize(pf, a))
                return error_set(-EINVAL, "'%s' is not a PCI address", pf);
        pf_attr(rootfd, a, "sriov_numvfs", num, sizeof num);
        if (safe_atou(num, &p.nvfs) < 0)
                return error_set(-EBADMSG, "cannot read the VFs of GPU %s (/" PCI_DEVICES "/%s/sriov_numvfs)", a, a);
        pf_attr(rootfd, a, "spatial_partition_mode", p.spatial, sizeof p.spatial);
        pf_attr(rootfd, a, "memory_partition_mode", p.memory, sizeof p.memory);
        pf_attr(rootfd, a, "device", id, sizeof id);
        snprintf(p.model, sizeof p.model, "%s", id[0] ? id : "?");
        for (size_t i = 0; i < ELEMENTSOF(models); i++)
                if (streq(models[i].id, id))
                        snprintf(p.model, sizeof p.model, "%s", models[i].model);
        *ret = p;
        return 0;
}

static const struct {
        const char *spatial;
        unsigned vfs;
} partitions[] = {
        { "SPX", 1 },
        { "DPX", 2 },
        { "QPX", 4 },
        { "CPX", 8 },
};

unsigned amdgim_partition_vfs(const char *spatial) {
        for (size_t i = 0; spatial && i < ELEMENTSOF(partitions); i++)
                if (streq(partitions[i].spatial, spatial))
                        return partitions[i].vfs;
        return 0;
}

int amdgim_partition_check(const char *pf, const AmdgimPartition *p, const char *declared, char *buf, size_t size) {
        unsigned want = amdgim_partition_vfs(declared);

        if (!p->spatial[0])
                snprintf(buf, size, "GPU %s: its spatial_partition_mode cannot be read (is the PF bound to gim?), [gpu_%s] declares %s",
                         pf, pf, declared);
        else if (!streq(p->spatial, declared))
                snprintf(buf, size, "GPU %s is partitioned %s (%u VFs), not %s as [gpu_%s] declares: mdev-hooks never changes a partition; set it with amd-smi and reload gim, or change spatial_partition",
                         pf, p->spatial, p->nvfs, declared, pf);
        else if (streq(p->model, "MI300X") && p->nvfs != want)
                snprintf(buf, size, "GPU %s is partitioned %s but has %u VFs, not the %u of %s: reload gim, which makes them as it loads",
                         pf, p->spatial, p->nvfs, want, declared);
        else
                return 0;
        return 1;
}

void amdgim_describe(const AmdgimPartition *p, char *buf, size_t size) {
        snprintf(buf, size, "%s %s%s%s, 1/%u of the GPU", p->model, p->spatial[0] ? p->spatial : "?",
                 p->memory[0] ? "/" : "", p->memory, p->nvfs);
}
