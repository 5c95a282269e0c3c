/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-sysfs-sim: AMD MxGPU on the open-source GIM driver (doc/design.md §9,
 * amd/MxGPU-Virtualization): a PF bound to gim whose VFs are there from the
 * start, as many as its partition mode gives ("amdgim PF-ADDRESS mode=CPX
 * [devpath=]": 1 VF SPX, 2 DPX, 4 QPX, 8
 * CPX). The VFs carry no attribute of their own and are bound to no driver
 * (amdgpu is blacklisted on the host; libvirt binds them to vfio-pci). GIM
 * has no sriov_configure: a write to sriov_numvfs fails with ENOENT. The
 * PF's memory_partition_mode and accelerator_partition_profile take a
 * write, report success and change nothing, as GIM does when a partition
 * switch fails (it only logs): a tool must read the mode back.
 */
#include "sim.h"

static const TypeSet no_types = { .name = (char *) "amdgim", .types = NULL, .n = 0 };

static void amdgim_pf_build(Pf *pf) {
        node_text(pf->dev, "device", "0x74a1");
        node_text(pf->dev, "spatial_partition_mode", pf->partition);
        Node *m = node_attr(pf->dev, "memory_partition_mode", K_PARTITION, 0644, pf);
        m->text = xstrdup("NPS1");
        Node *a = node_attr(pf->dev, "accelerator_partition_profile", K_PARTITION, 0644, pf);
        a->text = xstrdup(pf->partition);
}

const VfModel vf_model_amdgim = {
        .statement = "amdgim",
        .driver = NULL,
        .vendor = "0x1002",
        .dir = NULL,
        .pf_driver = "gim",
        .pf_vendor = "0x1002",
        .device = "0x74b5",
        .numvfs_errno = ENOENT,
        .pf_build = amdgim_pf_build,
};

/* GIM's partition store: the switch "fails" on the device, the write
 * reports success, the driver logs. */
int partition_write(Pf *pf, const char *buf, size_t len) {
        char tmp[WRITE_TEXT_MAX];

        if (write_text(buf, len, tmp) < 0)
                return -EINVAL;
        fprintf(stderr, "mdev-sysfs-sim: gim %s: partition switch to '%s' failed (the write reports success)\n",
                pf->name, tmp);
        return 0;
}

static unsigned mode_vfs(const char *mode) {
        static const struct {
                const char *mode;
                unsigned vfs;
        } modes[] = { { "SPX", 1 }, { "DPX", 2 }, { "QPX", 4 }, { "CPX", 8 } };

        for (size_t i = 0; i < ELEMENTSOF(modes); i++)
                if (streq(modes[i].mode, mode))
                        return modes[i].vfs;
        return 0;
}

const char *stmt_amdgim(char **w, size_t n, const TypeSet *cur) {
        static const char *const keys[] = { "mode", "devpath", NULL };
        const char *mode, *devpath;
        unsigned vfs;

        if (cur || n < 3 || !name_is_pci(w[1]))
                return "expected: amdgim PCI-ADDRESS mode=SPX|DPX|QPX|CPX [devpath=]";
        if (!words_known(w, n, 2, keys))
                return "unknown key for amdgim";
        mode = word_opt(w, n, 2, "mode");
        vfs = mode ? mode_vfs(mode) : 0;
        if (vfs == 0)
                return "mode: SPX, DPX, QPX or CPX";
        Pf *pf = xcalloc(1, sizeof(Pf));
        model.pfs = xrealloc(model.pfs, (model.n_pfs + 1) * sizeof(Pf *));
        model.pfs[model.n_pfs++] = pf;
        pf->name = xstrdup(w[1]);
        pf->vfio = true;
        pf->vfm = &vf_model_amdgim;
        devpath = word_opt(w, n, 2, "devpath");
        pf->devpath = devpath ? xstrdup(devpath) : pci_devpath(w[1]);
        pf->vf_set = &no_types;
        pf->total = 8; /* MI300X */
        pf->start_num = vfs;
        pf->partition = xstrdup(mode);
        return NULL;
}
