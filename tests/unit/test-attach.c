/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* attach.c's XML: the metadata element in the form of libvirt's metadata
 * API, the definition's <hostdev>s, and which devices detach names. */
#include "attach.h"
#include "check.h"
#include "domxml.h"

static const AttachDevice mdev = {
        .kind = ATTACH_MDEV, .key = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01", .type = "nvidia-35", .what = "nvidia-35",
};
static const AttachDevice classed = {
        .kind = ATTACH_MDEV, .key = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02", .mdev_class = "CUSTOM_X",
        .parent = "0000:84:00.0", .what = "class CUSTOM_X",
};
static const AttachDevice vgpu = {
        .kind = ATTACH_VGPU, .key = "0000:41:00.5", .type = "nvidia-1150", .what = "nvidia-1150",
};

static void test_metadata(void) {
        char *s = NULL, *t = NULL;
        AttachDevice two[2] = { mdev, vgpu };

        /* none yet: the element is made, without a namespace */
        check(attach_metadata_add(NULL, two, 2, &s) == 0);
        check_streq(s, "<mdevs>\n"
                       "  <mdev uuid=\"b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01\" type=\"nvidia-35\"/>\n"
                       "  <vgpu pci=\"0000:41:00.5\" type=\"nvidia-1150\"/>\n"
                       "</mdevs>");
        /* appended to what libvirt gives, indented anew */
        check(attach_metadata_add(s, &classed, 1, &t) == 0);
        check(strstr(t, "  <mdev uuid=\"b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02\" class=\"CUSTOM_X\" parent=\"0000:84:00.0\"/>\n</mdevs>"));
        free(s);
        /* removed by key, whatever the case of the UUID in the element */
        s = NULL;
        check(attach_metadata_remove("<mdevs><mdev uuid=\"B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01\"/><mdev uuid=\"b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02\"/></mdevs>",
                                     &mdev, 1, &s) == 0);
        check_streq(s, "<mdevs>\n  <mdev uuid=\"b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02\"/>\n</mdevs>");
        free(s);
        /* the last entry gone: no element (libvirt then removes it) */
        s = (char *) "x";
        check(attach_metadata_remove(t, (AttachDevice[]) { mdev, vgpu, classed }, 3, &s) == 0);
        check(s == NULL);
        free(t);
        /* not XML: refused */
        check(attach_metadata_add("<mdevs><mdev", &mdev, 1, &s) < 0);
        check(attach_metadata_add("<!DOCTYPE x [<!ENTITY a 'b'>]><mdevs/>", &mdev, 1, &s) < 0);
}

static const char definition[] =
        "<domain type='kvm'>\n"
        "  <name>web1</name>\n"
        "  <metadata>\n"
        "    <nova:instance xmlns:nova=\"http://openstack.org/xmlns/libvirt/nova/1.1\"><nova:name>a  b &amp; c</nova:name></nova:instance>\n"
        "  </metadata>\n"
        "  <!-- a comment -->\n"
        "  <devices>\n"
        "    <disk type='file'><source file='/x'/></disk>\n"
        "  </devices>\n"
        "</domain>\n";

static void test_definition(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        char *added = NULL, *removed = NULL;
        _cleanup_free_ AttachDevice *found = NULL;
        AttachDevice two[2] = { mdev, vgpu };
        size_t n;

        check(attach_define_add(definition, two, 2, &added) == 0);
        check(domxml_parse(added, strlen(added), &d) == 0);
        check(d->n_mdevs == 1 && d->n_vgpus == 1);
        check_streq(d->mdevs[0].uuid, mdev.key);
        check_streq(d->vgpus[0].pci, vgpu.key);
        check(!d->vgpus[0].managed);
        /* every other node as it was */
        check(strstr(added, "<nova:name>a  b &amp; c</nova:name>"));
        check(strstr(added, "<!-- a comment -->"));
        check(strstr(added, "<disk type=\"file\"><source file=\"/x\"/></disk>"));

        /* detach names them: by UUID (any case), by PCI, or all */
        check(attach_find(-1, d, "B1AE8BF6-38B0-4C81-9D44-78CE2E5D2B01", &found, &n) == 0 && n == 1);
        check(found[0].kind == ATTACH_MDEV);
        free(found);
        found = NULL;
        check(attach_find(-1, d, "0000:41:00.5", &found, &n) == -EINVAL); /* no entry, and no such VF here */
        check(attach_find(-1, d, "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b09", &found, &n) == -ENOENT);
        check(attach_find(-1, d, "../x", &found, &n) == -EINVAL);

        check(attach_define_remove(added, two, 2, &removed) == 0);
        check(!strstr(removed, "hostdev"));
        check(strstr(removed, "<!-- a comment -->"));
        free(added);
        free(removed);
}

int main(void) {
        test_metadata();
        test_definition();
        return 0;
}
