/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The udev helper's classifier (lib/uevent.c uevent_classify()) on arbitrary
 * properties. The input is up to five NUL-separated fields: ACTION,
 * SUBSYSTEM, DEVPATH, MDEV_STATE, %k; a missing field, or one that is a
 * single 0xff byte, is passed as NULL (udev did not set it).
 *
 * Properties: it returns 0 or -EINVAL; on 0 the kind is a known one, and a
 * name that is not UEVENT_IGNORE's is non-empty and safe as a path component
 * (an mdev's is a lower-case UUID, a PCI device's a PCI address).
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "fuzz-common.h"
#include "pciaddr.h"
#include "uevent.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
        char *copy, *field[5] = { NULL };
        const char *arg[5];
        size_t pos = 0;
        Uevent ev;
        int r;

        copy = malloc(size + 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';
        for (size_t i = 0; i < 5 && pos <= size; i++) {
                field[i] = copy + pos;
                pos += strlen(copy + pos) + 1;
        }
        for (size_t i = 0; i < 5; i++)
                arg[i] = (field[i] && strcmp(field[i], "\xff") != 0) ? field[i] : NULL;

        memset(&ev, 0xa5, sizeof ev);
        r = uevent_classify(arg[0], arg[1], arg[2], arg[3], arg[4], &ev);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "unexpected return %d", r);
        if (r == 0) {
                FUZZ_CHECK(ev.kind >= UEVENT_IGNORE && ev.kind < _UEVENT_KIND_MAX, "kind %d", (int) ev.kind);
                FUZZ_CHECK(uevent_kind_to_string(ev.kind) != NULL, "kind %d has no name", (int) ev.kind);
                if (ev.kind != UEVENT_IGNORE) {
                        FUZZ_CHECK(memchr(ev.name, '\0', sizeof ev.name), "name not terminated");
                        FUZZ_CHECK(name_is_valid(ev.name), "unsafe name '%s'", ev.name);
                        FUZZ_CHECK(arg[0] != NULL, "no action, yet kind %d", (int) ev.kind);
                }
                if (ev.kind == UEVENT_MDEV) {
                        char norm[UUID_STRING_MAX];

                        FUZZ_CHECK(uuid_is_valid(ev.name), "mdev name '%s' is not a UUID", ev.name);
                        uuid_normalize(ev.name, norm);
                        FUZZ_CHECK(strcmp(norm, ev.name) == 0, "mdev name '%s' is not lower case", ev.name);
                }
                if (ev.kind == UEVENT_PCI)
                        FUZZ_CHECK(pci_address_is_valid(ev.name), "'%s' is not a PCI address", ev.name);
        }
        free(copy);
        return 0;
}
