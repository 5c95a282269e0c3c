/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Intel xe SR-IOV (xesriov.h): which PCI devices are its PFs and VFs, a
 * VF's place in sriov_admin/, its VRAM quota and the type it gives, and
 * whether xe-vfio-pci drives a GPU's VFs (modules.alias), on a fixture
 * root.
 */
#include <errno.h>

#include "fixture.h"
#include "xesriov.h"

#define DEV "sys/bus/pci/devices/"

static char tmpdir[] = "/tmp/test-xesriov-XXXXXX";

static void link_at(int rootfd, const char *target, const char *path) {
        check(symlinkat(target, rootfd, path) == 0);
}

/* A PF bound to driver with a VF per quota (NULL: no sriov_admin). */
static void fixture_pf(int rootfd, const char *pf, const char *driver, const char *const *quotas, size_t n) {
        char path[256], target[256];

        snprintf(target, sizeof target, "../../../bus/pci/drivers/%s", driver);
        snprintf(path, sizeof path, DEV "%s/sriov_numvfs", pf);
        fixture_file(rootfd, path, "0\n");
        snprintf(path, sizeof path, DEV "%s/driver", pf);
        link_at(rootfd, target, path);
        for (size_t i = 0; i < n; i++) {
                char vf[16];

                snprintf(vf, sizeof vf, "%.11s%zu", pf, 4 + i);
                if (quotas) {
                        snprintf(path, sizeof path, DEV "%s/sriov_admin/vf%zu/profile/vram_quota", pf, i + 1);
                        fixture_file(rootfd, path, quotas[i]);
                }
                snprintf(path, sizeof path, DEV "%s/vendor", vf);
                fixture_file(rootfd, path, "0x8086\n");
                snprintf(path, sizeof path, DEV "%s/physfn", vf);
                snprintf(target, sizeof target, "../%s", pf);
                link_at(rootfd, target, path);
                snprintf(path, sizeof path, DEV "%s/virtfn%zu", pf, i);
                snprintf(target, sizeof target, "../%s", vf);
                link_at(rootfd, target, path);
        }
}

static void test_pf_vf(int root) {
        char pf[PCI_ADDRESS_STRING_MAX];
        unsigned k = 0;

        check(xesriov_is_pf(root, "0000:03:00.0") == 1);
        check(xesriov_is_pf(root, "0000:04:00.0") == 0); /* xe without sriov_admin */
        check(xesriov_is_pf(root, "0000:41:00.0") == 0); /* bound to nvidia */
        check(xesriov_is_vf(root, "0000:03:00.6") == 1);
        check(xesriov_is_vf(root, "0000:04:00.4") == 0);
        check(xesriov_is_vf(root, "0000:41:00.4") == 0);
        check(xesriov_vf_index(root, "0000:03:00.6", pf, &k) == 0 && k == 3);
        check_streq(pf, "0000:03:00.0");
        check(xesriov_vf_index(root, "0000:41:00.4", pf, &k) == -ENOENT);
        check(vfio_is_pf(&vfio_xe, root, "0000:03:00.0") == 1);
}

static void test_quota(int root) {
        uint64_t q = 0;
        unsigned cur = 99;

        check(xesriov_vf_quota(root, "0000:03:00.4", &q) == 0 && q == 8589934592ull);
        check(xesriov_vf_current(root, "0000:03:00.4", &cur) == 0 && cur == 8192);
        check(vfio_vf_current(&vfio_xe, root, "0000:03:00.5", &cur) == 0 && cur == 0); /* no quota */
        check(vfio_kind_type_id(&vfio_xe, "intel-xe-8192", &cur) == 0 && cur == 8192);
        check(vfio_kind_type_id(&vfio_xe, "intel-xe-8G", &cur) < 0);
        /* a quota that is no number of bytes is refused, not read as 0 */
        check(xesriov_vf_quota(root, "0000:03:00.6", &q) == -EBADMSG);
        fixture_file(root, DEV "0000:03:00.0/sriov_admin/vf3/profile/vram_quota", "6442450944\n");
        check(xesriov_vf_current(root, "0000:03:00.6", &cur) == 0 && cur == 6144);
}

/* xesriov_pf_migratable(): what the kernel's modules.alias says, as
 * libvirt reads it, and one line on what is missing. */
static void test_migratable(int root) {
        static const char alias[] = "lib/modules/6.19.0-t/modules.alias";
        _cleanup_free_ char *why = NULL;

        fixture_file(root, DEV "0000:03:00.0/vendor", "0x8086\n");
        fixture_file(root, DEV "0000:03:00.0/device", "0xe211\n");
        error_clear();
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == -ENOENT); /* no osrelease */
        fixture_file(root, "proc/sys/kernel/osrelease", "6.19.0-t\n");
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == 0 && strstr(why, "(run depmod)"));
        free(steal_pointer(&why));
        fixture_file(root, alias, "alias vfio_pci:v000015B3d0000101Esv*sd*bc*sc*i* mlx5_vfio_pci\n");
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == 0 && strstr(why, "not installed for kernel 6.19.0-t"));
        free(steal_pointer(&why));
        fixture_file(root, alias, "alias vfio_pci:v00008086d0000E20Bsv*sd*bc*sc*i* xe_vfio_pci\n"
                                  "alias pci:v00008086d0000E211sv*sd*bc03sc*i* xe\n");
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == 0 &&
              strstr(why, "GPU 0000:03:00.0 (device 0xe211) is not one that xe-vfio-pci drives"));
        free(steal_pointer(&why));
        fixture_file(root, alias, "alias vfio_pci:v00008086d0000E20Bsv*sd*bc*sc*i* xe_vfio_pci\n"
                                  "alias vfio_pci:v00008086d0000E211sv*sd*bc*sc*i* xe_vfio_pci\n");
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == 1 && !why);
        /* the device's own modalias, when sysfs has it, is what is matched */
        fixture_file(root, DEV "0000:03:00.0/modalias", "pci:v00008086d0000E20Bsv00008086sd00001100bc03sc00i00\n");
        fixture_file(root, alias, "alias vfio_pci:v00008086d0000E20Bsv*sd*bc03sc*i* xe_vfio_pci\n");
        check(xesriov_pf_migratable(root, "0000:03:00.0", &why) == 1);
}

int main(void) {
        static const char *const quotas[] = { "8589934592\n", "0\n", "-1\n" };
        int root;

        check(mkdtemp(tmpdir));
        root = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(root >= 0);
        fixture_pf(root, "0000:03:00.0", "xe", quotas, 3);
        fixture_pf(root, "0000:04:00.0", "xe", NULL, 1);
        fixture_pf(root, "0000:41:00.0", "nvidia", quotas, 1);
        test_pf_vf(root);
        test_quota(root);
        test_migratable(root);
        close(root);
        tmpdir_remove(tmpdir);
        return EXIT_SUCCESS;
}
