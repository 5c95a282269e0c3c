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
#include "hookop.h"
#include "pciaddr.h"
#include "uevent.h"
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

/* Every operation libvirt's qemu hook passes (libvirt's virHookQemuOp), in
 * both directions; what mdev-hooks acts on; and an unknown one is a no-op
 * (exit 0, reading nothing), because libvirt adds operations over time. */
static void test_hook_op_table(void) {
        static const struct {
                const char *name;
                HookOp op;
                bool handled, fails_start;
        } ops[] = {
                { "start", HOOK_OP_START, false, false },
                { "stopped", HOOK_OP_STOPPED, false, false },
                { "prepare", HOOK_OP_PREPARE, true, true },
                { "release", HOOK_OP_RELEASE, true, false },
                { "migrate", HOOK_OP_MIGRATE, true, true },
                { "started", HOOK_OP_STARTED, false, false },
                { "reconnect", HOOK_OP_RECONNECT, true, false },
                { "attach", HOOK_OP_ATTACH, false, false },
                { "restore", HOOK_OP_RESTORE, true, true },
        };

        check(ELEMENTSOF(ops) == _HOOK_OP_MAX);
        for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
                check(hook_op_from_string(ops[i].name) == ops[i].op);
                check_streq(hook_op_to_string(ops[i].op), ops[i].name);
                check(hook_op_is_handled(ops[i].op) == ops[i].handled);
                check(hook_op_fails_start(ops[i].op) == ops[i].fails_start);
        }
        check(hook_op_from_string("shutdown") == _HOOK_OP_INVALID);
        check(hook_op_from_string("Prepare") == _HOOK_OP_INVALID);
        check(hook_op_from_string("") == _HOOK_OP_INVALID);
        check(hook_op_from_string(NULL) == _HOOK_OP_INVALID);
        check(!hook_op_is_handled(_HOOK_OP_INVALID));
        check(!hook_op_fails_start(_HOOK_OP_INVALID));
        check(!hook_op_to_string(_HOOK_OP_INVALID));
        check(!hook_op_to_string(_HOOK_OP_MAX));
}

/* The same macro's other table: the udev helper's kinds of event. */
static void test_uevent_kind_table(void) {
        check_streq(uevent_kind_to_string(UEVENT_PARENT_REGISTERED), "registered");
        check_streq(uevent_kind_to_string(UEVENT_PCI), "pci");
        check(uevent_kind_from_string("unregistered") == UEVENT_PARENT_UNREGISTERED);
        check(uevent_kind_from_string("bind") == _UEVENT_KIND_INVALID);
        check(!uevent_kind_to_string(_UEVENT_KIND_MAX));
}

int main(void) {
        test_pci_address_is_valid();
        test_guest_index();
        test_hook_op_table();
        test_uevent_kind_table();
        return 0;
}
