/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The config loader (lib/config.c config_load()) on arbitrary text. The input
 * goes into a memfd (no file system) that config_load() opens as
 * /proc/self/fd/N, as it opens an explicit --config path.
 *
 * Properties: it returns 0 or -EINVAL. On -EINVAL every error line is
 * "<path>:<line>: <reason>" with a line of the input, sorted by line. On 0
 * the config is consistent: every type is found by name, has a name and a
 * VGPU/CUSTOM_ class, sorted unique device_addresses that are PCI addresses
 * (or none: then it is the one default type), each parent listed once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fuzz-common.h"
#include "macro.h"
#include "pciaddr.h"
#include "util.h"

static int memfd = -1;

static void check_config(const Config *c) {
        size_t n_default = 0;
        char buf[256];

        for (size_t i = 0; i < c->n_types; i++) {
                const ConfigType *t = &c->types[i];

                FUZZ_CHECK(t->name && t->name[0], "type %zu has no name", i);
                FUZZ_CHECK(config_find_type(c, t->name) == t, "type '%s' not found by name", t->name);
                FUZZ_CHECK(t->mdev_class && (strcmp(t->mdev_class, "VGPU") == 0 ||
                                             strncmp(t->mdev_class, "CUSTOM_", 7) == 0),
                           "type '%s' has class '%s'", t->name, t->mdev_class ? t->mdev_class : "(null)");
                if (!t->addresses || !t->addresses[0]) {
                        n_default++;
                        FUZZ_CHECK(c->default_type == t, "type '%s' without addresses is not the default", t->name);
                        continue;
                }
                for (size_t j = 0; t->addresses[j]; j++) {
                        FUZZ_CHECK(config_parent_is_listed(c, t->addresses[j]), "'%s' not listed", t->addresses[j]);
                        FUZZ_CHECK(config_parent_type(c, t->addresses[j]) == t,
                                   "parent '%s' of type '%s' maps to another type", t->addresses[j], t->name);
                        FUZZ_CHECK(j == 0 || strcmp(t->addresses[j - 1], t->addresses[j]) < 0,
                                   "addresses of '%s' not sorted and unique", t->name);
                }
        }
        FUZZ_CHECK(n_default <= 1, "%zu default types", n_default);
        FUZZ_CHECK((n_default == 0) == (c->default_type == NULL), "default type mismatch");
        FUZZ_CHECK(c->release == CONFIG_RELEASE_REMOVE || c->release == CONFIG_RELEASE_KEEP, "release %d", (int) c->release);
        FUZZ_CHECK(config_release_to_string(c->release) && config_placement_to_string(c->placement) &&
                   config_recreate_to_string(c->recreate), "an enum without a name");
        for (size_t i = 0; i < c->n_sriov; i++)
                FUZZ_CHECK(pci_address_is_valid(c->sriov[i].address), "[sriov] '%s'", c->sriov[i].address);
        config_enabled_types_string(c, buf, sizeof buf);
        FUZZ_CHECK(memchr(buf, '\0', sizeof buf), "enabled types string not terminated");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        char path[64];
        size_t off = 0;
        int r;

        if (memfd < 0) {
                memfd = memfd_create("mdev-hooks.conf", MFD_CLOEXEC);
                FUZZ_CHECK(memfd >= 0, "memfd_create: %m");
                FUZZ_CHECK(fchmod(memfd, 0600) == 0, "fchmod: %m");
        }
        FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate: %m");
        while (off < size) {
                ssize_t n = pwrite(memfd, data + off, size - off, (off_t) off);
                FUZZ_CHECK(n > 0, "pwrite: %m");
                off += (size_t) n;
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);

        r = config_load(-1, path, &c, &errors);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "config_load() returned %d: %s", r, error_get(r));
        if (r == 0) {
                FUZZ_CHECK(c != NULL, "no config");
                check_config(c);
                return 0;
        }
        FUZZ_CHECK(errors && errors[0], "-EINVAL without an error line");
        {
                unsigned last = 0;
                size_t plen = strlen(path);

                for (size_t i = 0; errors[i]; i++) {
                        unsigned line;
                        char *end;

                        FUZZ_CHECK(strncmp(errors[i], path, plen) == 0 && errors[i][plen] == ':',
                                   "error without the file: '%s'", errors[i]);
                        line = (unsigned) strtoul(errors[i] + plen + 1, &end, 10);
                        FUZZ_CHECK(end[0] == ':' && end[1] == ' ', "error without a line: '%s'", errors[i]);
                        FUZZ_CHECK(line >= last, "errors not sorted by line: '%s'", errors[i]);
                        last = line;
                }
        }
        return 0;
}
