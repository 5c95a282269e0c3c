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
#include "domscan.h"
#include "guestindex.h"
#include "hookop.h"
#include "pciaddr.h"
#include "uevent.h"
#include "util.h"

static void test_safe_atou(void) {
        unsigned u = 7;

        check(safe_atou("0", &u) == 0 && u == 0);
        check(safe_atou("16", &u) == 0 && u == 16);
        check(safe_atou("16\n", &u) == 0 && u == 16); /* a sysfs attribute */
        check(safe_atou("4294967295", &u) == 0 && u == 4294967295u);
        u = 7;
        check(safe_atou("4294967296", &u) == -ERANGE);
        check(safe_atou("99999999999999999999999", &u) == -ERANGE);
        check(safe_atou("", &u) == -EINVAL);
        check(safe_atou(NULL, &u) == -EINVAL);
        check(safe_atou("-1", &u) == -EINVAL);
        check(safe_atou("+1", &u) == -EINVAL);
        check(safe_atou(" 1", &u) == -EINVAL);
        check(safe_atou("1 ", &u) == -EINVAL);
        check(safe_atou("1\n\n", &u) == -EINVAL);
        check(safe_atou("0x10", &u) == -EINVAL);
        check(safe_atou("12a", &u) == -EINVAL);
        check(u == 7); /* untouched on failure */
}

static void test_uuid_is_valid(void) {
        char out[UUID_STRING_MAX];

        check(uuid_is_valid("b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01"));
        check(uuid_is_valid("B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01"));
        check(!uuid_is_valid("b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b0"));   /* short */
        check(!uuid_is_valid("b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b011")); /* long */
        check(!uuid_is_valid("b1ae8bf638b04c819d4478ce2e5d2b01"));      /* no dashes */
        check(!uuid_is_valid("b1ae8bf6-38b0-4c81-9d4478ce-2e5d2b01"));  /* dash misplaced */
        check(!uuid_is_valid("g1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01"));
        check(!uuid_is_valid("../../../../etc/passwd-0000-000000000000"));
        check(!uuid_is_valid("b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01\n"));
        check(!uuid_is_valid(""));
        check(!uuid_is_valid(NULL));
        uuid_normalize("B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01", out);
        check_streq(out, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01");
}

static void test_name_is_valid(void) {
        char longest[NAME_STRING_MAX], too_long[NAME_STRING_MAX + 1];

        check(name_is_valid("0000:84:00.0"));
        check(name_is_valid("nvidia-35"));
        check(name_is_valid("mtty"));
        check(name_is_valid("i915-GVTg_V5_4"));
        check(name_is_valid("a+b"));
        check(!name_is_valid("."));
        check(!name_is_valid(".."));
        check(!name_is_valid("a/b"));
        check(!name_is_valid("../x"));
        check(!name_is_valid("a b"));
        check(!name_is_valid("a\n"));
        check(!name_is_valid("nvidia*"));
        check(!name_is_valid(""));
        check(!name_is_valid(NULL));
        memset(longest, 'a', sizeof longest - 1);
        longest[sizeof longest - 1] = '\0';
        check(name_is_valid(longest));
        memset(too_long, 'a', sizeof too_long - 1);
        too_long[sizeof too_long - 1] = '\0';
        check(!name_is_valid(too_long));
}

static void test_pci_address_is_valid(void) {
        check(pci_address_is_valid("0000:84:00.0"));
        check(pci_address_is_valid("ffff:ff:1f.7"));
        check(pci_address_is_valid("0000:AF:00.0"));
        check(pci_address_is_valid("0000:84:1F.7"));
        check(!pci_address_is_valid("0000:84:20.0")); /* slot > 0x1f */
        check(!pci_address_is_valid("0000:84:2f.0"));
        check(!pci_address_is_valid("0000:84:00.8")); /* function > 7 */
        check(!pci_address_is_valid("84:00.0"));
        check(!pci_address_is_valid("0000:84:00"));
        check(!pci_address_is_valid("0000:84:00.0 "));
        check(!pci_address_is_valid("00000:84:00.0"));
        check(!pci_address_is_valid("0000-84-00.0"));
        check(!pci_address_is_valid("0000:g4:00.0"));
        check(!pci_address_is_valid("0000:84:0G.0"));
        check(!pci_address_is_valid("0000:84:00.0\n"));
        check(!pci_address_is_valid(""));
        check(!pci_address_is_valid(NULL));
}

/* One parser for every PCI address (pciaddr.h): the parts, the one form
 * out (lower case), and the same rule as pci_address_is_valid(). */
static void test_pci_address_parts(void) {
        char out[PCI_ADDRESS_STRING_MAX], same[PCI_ADDRESS_STRING_MAX] = "0000:C1:1F.7";
        PciAddress a = { 1, 2, 3, 4 };

        check(pci_address_split("0000:C1:02.3", &a) == 0);
        check(a.domain == 0 && a.bus == 0xc1 && a.slot == 2 && a.function == 3);
        check(pci_address_split("ffff:ff:1f.7", &a) == 0);
        check(a.domain == 0xffff && a.bus == 0xff && a.slot == 0x1f && a.function == 7);
        check(pci_address_split("0000:84:20.0", &a) == -EINVAL); /* slot > 0x1f */
        check(pci_address_split("0000:84:00.8", &a) == -EINVAL);
        check(pci_address_split(NULL, &a) == -EINVAL);
        check(a.domain == 0xffff && a.slot == 0x1f); /* untouched on failure */
        check(pci_address_split("0000:84:00.0", NULL) == 0);

        check(pci_address_normalize("0000:AF:00.0", out) && streq(out, "0000:af:00.0"));
        check(pci_address_normalize("0000:41:00.4", out) && streq(out, "0000:41:00.4"));
        check(pci_address_normalize(same, same) && streq(same, "0000:c1:1f.7"));
        strcpy(out, "unchanged");
        check(!pci_address_normalize("0000:41:2f.0", out) && streq(out, "unchanged"));
        check(!pci_address_normalize("../../etc/x", out));
        check(!pci_address_normalize("0000:41:00.4\n", out));

        check(pci_address_format(&(PciAddress) { 0, 0x84, 0x1f, 7 }, out) == 0 && streq(out, "0000:84:1f.7"));
        check(pci_address_format(&(PciAddress) { 0x10000, 0, 0, 0 }, out) == -EINVAL);
        check(pci_address_format(&(PciAddress) { 0, 0x100, 0, 0 }, out) == -EINVAL);
        check(pci_address_format(&(PciAddress) { 0, 0, 0x20, 0 }, out) == -EINVAL);
        check(pci_address_format(&(PciAddress) { 0, 0, 0, 8 }, out) == -EINVAL);
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

static Uevent classify(const char *action, const char *subsystem, const char *devpath,
                       const char *state, const char *kernel, int expect_r) {
        Uevent ev = { .kind = _UEVENT_KIND_MAX };

        check(uevent_classify(action, subsystem, devpath, state, kernel, &ev) == expect_r);
        return ev;
}

static void test_uevent_classify(void) {
        const char *pdev = "/devices/pci0000:80/0000:80:03.0/0000:84:00.0";
        Uevent ev;

        /* A parent registers or unregisters: on its own device, any subsystem. */
        ev = classify("change", "pci", pdev, "registered", "0000:84:00.0", 0);
        check(ev.kind == UEVENT_PARENT_REGISTERED);
        check_streq(ev.name, "0000:84:00.0");
        ev = classify("change", "mtty", "/devices/virtual/mtty/mtty", "unregistered", NULL, 0);
        check(ev.kind == UEVENT_PARENT_UNREGISTERED);
        check_streq(ev.name, "mtty"); /* from devpath when %k is not given */
        check(classify("change", "pci", pdev, "bogus", "0000:84:00.0", 0).kind == UEVENT_IGNORE);
        check(classify("change", "pci", pdev, NULL, "0000:84:00.0", 0).kind == UEVENT_IGNORE);

        /* An mdev: every action that can make or end one; its UUID lower-cased. */
        for (const char *const *a = (const char *const[]) { "add", "bind", "unbind", "remove", NULL }; *a; a++) {
                ev = classify(*a, "mdev", "/devices/x/B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01", NULL, NULL, 0);
                check(ev.kind == UEVENT_MDEV);
                check_streq(ev.name, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01");
        }
        check(classify("change", "mdev", "/devices/x/b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01", NULL, NULL, 0).kind == UEVENT_IGNORE);
        classify("add", "mdev", "/devices/x/not-a-uuid", NULL, NULL, -EINVAL);
        check(strstr(error_get(-EINVAL), "'not-a-uuid' is not named by a UUID"));

        /* A PCI device: add (the driver may not be bound yet) or bind. */
        ev = classify("add", "pci", pdev, NULL, "0000:84:00.0", 0);
        check(ev.kind == UEVENT_PCI && ev.add);
        ev = classify("bind", "pci", pdev, NULL, "0000:84:00.0", 0);
        check(ev.kind == UEVENT_PCI && !ev.add);
        check(classify("remove", "pci", pdev, NULL, "0000:84:00.0", 0).kind == UEVENT_IGNORE);
        classify("add", "pci", "/devices/pci0000:80/x", NULL, "../etc", -EINVAL);
        classify("add", "pci", "/devices/pci0000:80/x", NULL, "0000:84:00", -EINVAL);

        /* A parent's name must be safe as a path component. */
        classify("change", "pci", "/devices/x", "registered", "..", -EINVAL);
        classify("change", "pci", "/devices/x", "registered", "a/b", -EINVAL);

        /* Nothing to go by, or not ours. */
        check(classify(NULL, "pci", pdev, "registered", "0000:84:00.0", 0).kind == UEVENT_IGNORE);
        check(classify("add", "pci", NULL, NULL, NULL, 0).kind == UEVENT_IGNORE);
        check(classify("add", "pci", "/devices/", NULL, NULL, 0).kind == UEVENT_IGNORE);
        check(classify("add", "usb", "/devices/usb1", NULL, "usb1", 0).kind == UEVENT_IGNORE);
}

/* The hook's scan may say yes wrongly, never no to an mdev hostdev. */
static void test_domscan_has_mdev(void) {
        static const struct {
                const char *xml;
                bool has;
        } cases[] = {
                { "<hostdev mode='subsystem' type='mdev' model='vfio-pci'>", true },
                { "<hostdev mode=\"subsystem\" type=\"mdev\">", true },
                { "<hostdev\n    type='mdev'\n    mode='subsystem'>", true },
                { "<domain><devices><disk/><hostdev type = 'mdev' ></hostdev></devices></domain>", true },
                { "<hostdev mode='subsystem' type='pci' managed='yes'>", false },
                { "<hostdev mode='subsystem' type='pci'><source mdev='x'/></hostdev>", false }, /* mdev after the tag */
                { "<hostdevice type='mdev'>", false }, /* another element */
                { "<hostdev type='pci' alias='mdev'>", true }, /* over-reports: the worker parses and finds none */
                { "<!-- no hostdev here --> <interface type='mdev'/>", false },
                { "<hostdev type='pci' note='>'/> <hostdev type='mdev'>", true },
                { "<hostdev alias='a>b' type='mdev'>", true }, /* a quoted '>' does not end the tag */
                { "", false },
                { "<hostdev", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (domscan_has_mdev(cases[i].xml, strlen(cases[i].xml)) != cases[i].has) {
                        fprintf(stderr, "case %zu: '%s' should %sbe seen\n", i, cases[i].xml, cases[i].has ? "" : "not ");
                        abort();
                }
        }
        /* buf need not be NUL-terminated: the length is the end. */
        check(!domscan_has_mdev("<hostdev type='mdev'>", 14));
}

int main(void) {
        test_safe_atou();
        test_uuid_is_valid();
        test_name_is_valid();
        test_pci_address_is_valid();
        test_pci_address_parts();
        test_guest_index();
        test_hook_op_table();
        test_uevent_kind_table();
        test_uevent_classify();
        test_domscan_has_mdev();
        return 0;
}
