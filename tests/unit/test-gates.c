/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pure gates every path goes through: what is a number, a UUID, a name
 * that may become a path, a PCI address; which hook operations exist and
 * which are acted on; what a udev event is; whether a domain XML may hold an
 * mdev; and the guest index's hash and path, which are on disk and must not
 * change.
 */
#include <string.h>

#include "check.h"
#include "guestindex.h"
#include "pciaddr.h"
#include "util.h"

static void test_pci_address_is_valid(void) {
        check(pci_address_is_valid("0000:84:00.0"));
        check(pci_address_is_valid("ffff:ff:1f.7"));
        check(pci_address_is_valid("0000:AF:00.0"));
        check(!pci_address_is_valid("0000:84:20.0")); /* slot > 0x1f */
        check(!pci_address_is_valid("0000:84:00.8")); /* function > 7 */
        check(!pci_address_is_valid("84:00.0"));
        check(!pci_address_is_valid("0000:84:00"));
        check(!pci_address_is_valid("0000:84:00.0 "));
        check(!pci_address_is_valid("00000:84:00.0"));
        check(!pci_address_is_valid("0000-84-00.0"));
        check(!pci_address_is_valid("0000:g4:00.0"));
        check(!pci_address_is_valid(""));
        check(!pci_address_is_valid(NULL));
}

/* The index is on disk: a guest's directory name must be the same in every
 * version, or an upgrade would lose the guests indexed before it. */
static void test_guest_index(void) {
        char hash[GUEST_INDEX_HASH_MAX], path[GUEST_INDEX_PATH_MAX];
        char long_name[GUEST_NAME_MAX];

        guest_index_hash("", hash);
        check_streq(hash, "14650fb0739d0383");
        guest_index_hash("web1", hash);
        check_streq(hash, "f5cb68505db173de");
        guest_index_path("web1", path);
        check_streq(path, "var/lib/mdev-hooks.by-guest/f5cb68505db173de");

        memset(long_name, 'g', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        guest_index_path(long_name, path);
        check(strlen(path) == sizeof path - 1);
}

int main(void) {
        test_pci_address_is_valid();
        test_guest_index();
        return 0;
}
