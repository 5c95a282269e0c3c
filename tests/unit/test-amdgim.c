/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * AMD MxGPU on GIM (amdgim.h): which PCI devices are its PFs and VFs, a
 * VF's type from its GPU's partition, the partition read back, and what a
 * kind without attributes of its own does in vfio.c (never programs, never
 * clears, lists nothing creatable), on a fixture sysfs.
 */
#include <errno.h>

#include "amdgim.h"
#include "fixture.h"

#define DEV "sys/bus/pci/devices/"

static char tmpdir[] = "/tmp/test-amdgim-XXXXXX";

static void link_at(int rootfd, const char *target, const char *path) {
        check(symlinkat(target, rootfd, path) == 0);
}

/* A PF at pf bound to driver, with n VFs from pf's function 4 on. */
static void fixture_pf(int rootfd, const char *pf, const char *driver, unsigned n, const char *mode) {
        char path[256], target[256], num[16];

        snprintf(num, sizeof num, "%u\n", n);
        snprintf(path, sizeof path, DEV "%s/sriov_numvfs", pf);
        fixture_file(rootfd, path, num);
        snprintf(path, sizeof path, DEV "%s/spatial_partition_mode", pf);
        fixture_file(rootfd, path, mode);
        snprintf(path, sizeof path, DEV "%s/memory_partition_mode", pf);
        fixture_file(rootfd, path, "NPS1\n");
        snprintf(path, sizeof path, DEV "%s/device", pf);
        fixture_file(rootfd, path, "0x74a1\n");
        snprintf(path, sizeof path, DEV "%s/driver", pf);
        snprintf(target, sizeof target, "../../../bus/pci/drivers/%s", driver);
        link_at(rootfd, target, path);
        for (unsigned i = 0; i < n; i++) {
                char vf[16];

                snprintf(vf, sizeof vf, "%.11s%u", pf, 4 + i);
                snprintf(path, sizeof path, DEV "%s/vendor", vf);
                fixture_file(rootfd, path, "0x1002\n");
                snprintf(path, sizeof path, DEV "%s/physfn", vf);
                snprintf(target, sizeof target, "../%s", pf);
                link_at(rootfd, target, path);
                snprintf(path, sizeof path, DEV "%s/virtfn%u", pf, i);
                snprintf(target, sizeof target, "../%s", vf);
                link_at(rootfd, target, path);
        }
}

static void test_pf_vf(int root) {
        char **l = NULL;

        check(amdgim_is_pf(root, "0000:c1:00.0") == 1);
        check(amdgim_is_pf(root, "0000:41:00.0") == 0); /* bound to nvidia */
        check(amdgim_is_pf(root, "0000:99:00.0") == 0); /* no such device */
        check(amdgim_is_pf(root, "../../etc") == 0);
        check(amdgim_is_vf(root, "0000:c1:00.4") == 1);
        check(amdgim_is_vf(root, "0000:c1:00.0") == 0); /* the PF */
        check(amdgim_is_vf(root, "0000:41:00.4") == 0);
        check(vfio_is_pf(&vfio_amdgim, root, "0000:c1:00.0") == 1);
        check(vfio_pf_list(&vfio_amdgim, root, &l) == 0);
        check(strv_length(l) == 1 && streq(l[0], "0000:c1:00.0"));
        strv_free(l);
}

static void test_type(int root) {
        unsigned cur = 0;

        check(amdgim_vf_current(root, "0000:c1:00.7", &cur) == 0 && cur == 4);
        check(vfio_vf_current(&vfio_amdgim, root, "0000:c1:00.4", &cur) == 0 && cur == 4);
        check(amdgim_vf_current(root, "0000:41:00.4", &cur) == -ENOENT);
        check(vfio_kind_type_id(&vfio_amdgim, "amd-mxgpu-4", &cur) == 0 && cur == 4);
        check(vfio_kind_type_id(&vfio_amdgim, "amd-mxgpu-cpx", &cur) < 0);
        check(vfio_kind_type_id(&vfio_amdgim, "nvidia-4", &cur) < 0);
}

/* A kind without attributes: nothing is programmed, cleared or creatable. */
static void test_no_attributes(int root) {
        VfioType *t = NULL;
        size_t n = 99;

        check(vfio_vf_program(&vfio_amdgim, root, "0000:c1:00.4", 8) == -EOPNOTSUPP);
        check(vfio_vf_clear(&vfio_amdgim, root, "0000:c1:00.4") == 0);
        check(vfio_vf_creatable(&vfio_amdgim, root, "0000:c1:00.4", &t, &n) == 0 && n == 0 && !t);
}

static void test_partition(int root) {
        AmdgimPartition p;
        char s[96];
        unsigned cur;

        check(amdgim_pf_partition(root, "0000:c1:00.0", &p) == 0);
        check(p.nvfs == 4);
        check_streq(p.spatial, "QPX");
        check_streq(p.memory, "NPS1");
        check_streq(p.model, "MI300X");
        amdgim_describe(&p, s, sizeof s);
        check_streq(s, "MI300X QPX/NPS1, 1/4 of the GPU");
        /* an unknown model is named by its ID; a VF count that is no
         * number is refused, not guessed */
        fixture_file(root, DEV "0000:c1:00.0/device", "0x7777\n");
        fixture_file(root, DEV "0000:c1:00.0/sriov_numvfs", "four\n");
        check(amdgim_pf_partition(root, "0000:c1:00.0", &p) == -EBADMSG);
        check(amdgim_vf_current(root, "0000:c1:00.4", &cur) == -EBADMSG);
        fixture_file(root, DEV "0000:c1:00.0/sriov_numvfs", "4\n");
        check(amdgim_pf_partition(root, "0000:c1:00.0", &p) == 0);
        check_streq(p.model, "0x7777");
}

int main(void) {
        int root;

        check(mkdtemp(tmpdir));
        root = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(root >= 0);
        fixture_pf(root, "0000:c1:00.0", "gim", 4, "QPX\n");
        fixture_pf(root, "0000:41:00.0", "nvidia", 2, "SPX\n");
        test_pf_vf(root);
        test_type(root);
        test_no_attributes(root);
        test_partition(root);
        close(root);
        tmpdir_remove(tmpdir);
        return EXIT_SUCCESS;
}
