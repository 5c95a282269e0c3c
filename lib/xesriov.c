/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Intel xe's SR-IOV PFs, VFs and their provisioning (xesriov.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "pcidev.h"
#include "util.h"
#include "xesriov.h"

#define PCI_DEVICES "sys/bus/pci/devices"
#define MIB (1024ull * 1024ull)

const VfioKind vfio_xe = {
        .prefix = XESRIOV_TYPE_PREFIX,
        .label = "Intel xe SR-IOV",
        .is_vf = xesriov_is_vf,
        .current_of = xesriov_vf_current,
};

int xesriov_is_pf(int rootfd, const char *pf) {
        char a[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], driver[NAME_STRING_MAX];

        if (!pci_address_normalize(pf, a) || pci_device_driver(rootfd, a, driver) < 0 || !streq(driver, "xe"))
                return 0;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin", a);
        return faccessat(rootfd, path, F_OK, 0) == 0;
}

int xesriov_is_vf(int rootfd, const char *vf) {
        char pf[PCI_ADDRESS_STRING_MAX];

        if (vfio_vf_pf(rootfd, vf, pf) < 0) {
                error_clear();
                return 0;
        }
        return xesriov_is_pf(rootfd, pf);
}

int xesriov_vf_index(int rootfd, const char *vf, char pf[PCI_ADDRESS_STRING_MAX], unsigned *ret) {
        _cleanup_strv_free_ char **vfs = NULL;
        char a[PCI_ADDRESS_STRING_MAX], p[PCI_ADDRESS_STRING_MAX];

        if (!pci_address_normalize(vf, a) || xesriov_is_vf(rootfd, a) <= 0)
                return -ENOENT;
        if (vfio_vf_pf(rootfd, a, p) < 0 || vfio_pf_vfs(rootfd, p, &vfs) < 0) {
                error_clear();
                return -ENOENT;
        }
        for (size_t i = 0; vfs[i]; i++)
                if (streq(vfs[i], a)) {
                        memcpy(pf, p, PCI_ADDRESS_STRING_MAX);
                        *ret = (unsigned) i + 1;
                        return 0;
                }
        return -ENOENT;
}

int xesriov_vf_quota(int rootfd, const char *vf, uint64_t *ret) {
        char pf[PCI_ADDRESS_STRING_MAX], path[PATH_MAX], buf[32], *end;
        unsigned long long v;
        unsigned k;
        int r;

        r = xesriov_vf_index(rootfd, vf, pf, &k);
        if (r < 0)
                return r;
        snprintf(path, sizeof path, PCI_DEVICES "/%s/sriov_admin/vf%u/profile/vram_quota", pf, k);
        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end || buf[0] == '-')
                return error_set(-EBADMSG, "'/%s' holds '%s', not a number of bytes", path, buf);
        *ret = v;
        return 0;
}

int xesriov_vf_current(int rootfd, const char *vf, unsigned *ret) {
        uint64_t q;
        int r;

        r = xesriov_vf_quota(rootfd, vf, &q);
        if (r < 0)
                return r;
        *ret = q / MIB > UINT_MAX ? UINT_MAX : (unsigned) (q / MIB);
        return 0;
}
