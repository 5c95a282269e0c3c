/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NVIDIA's VFIO framework: the creatable_vgpu_types parser in
 * both of the driver's forms, type names, PCI addresses, record keys, the
 * domain XML's PCI hostdevs and <mh:vgpu> entries and their rewrite, and the
 * hook's quick filter.
 */
#include <libxml/parser.h>

#include "check.h"
#include "domscan.h"
#include "domxml.h"
#include "ledger.h"
#include "vfio.h"

static void test_creatable_parse(void) {
        VfioType *t = NULL;
        size_t n = 99;

        /* the shipped driver: a header, then "%-5d : %s" */
        check(vfio_creatable_parse("ID    : vGPU Name\n1150  : NVIDIA L40S-4Q\n1155  : NVIDIA L40S-8Q\n", &t, &n) == 0);
        check(n == 2);
        check(t && t[0].id == 1150 && streq(t[0].type, "nvidia-1150") && streq(t[0].name, "NVIDIA L40S-4Q"));
        check(t && t[1].id == 1155 && streq(t[1].name, "NVIDIA L40S-8Q"));
        free(t);
        t = NULL;
        /* a full GPU or a programmed VF: only the header */
        check(vfio_creatable_parse("ID    : vGPU Name\n", &t, &n) == 0);
        check(n == 0);
        free(t);
        t = NULL;
        /* the upstream RFC driver: no header */
        check(vfio_creatable_parse("1414 : NVIDIA H200X-1-18C\n", &t, &n) == 0);
        check(n == 1 && t && t[0].id == 1414 && streq(t[0].name, "NVIDIA H200X-1-18C"));
        free(t);
        t = NULL;
        /* empty */
        check(vfio_creatable_parse("", &t, &n) == 0 && n == 0);
        free(t);
        t = NULL;
        /* blank lines are skipped, trailing blanks cut */
        check(vfio_creatable_parse("\n1150 : NVIDIA L40S-4Q  \n\n", &t, &n) == 0 && n == 1 &&
              streq(t[0].name, "NVIDIA L40S-4Q"));
        free(t);
        t = NULL;
        /* garbage is refused */
        check(vfio_creatable_parse("ID : vGPU Name\nnot a line\n", &t, &n) == -EBADMSG);
        check(vfio_creatable_parse("1150 NVIDIA L40S-4Q\n", &t, &n) == -EBADMSG);
        check(vfio_creatable_parse("0 : none\n", &t, &n) == -EBADMSG);
        check(vfio_creatable_parse("99999999999 : big\n", &t, &n) == -EBADMSG);
}

static void test_names(void) {
        unsigned id = 0;
        char a[PCI_ADDRESS_MAX];

        check(vfio_type_id("nvidia-1150", &id) == 0 && id == 1150);
        check(vfio_type_id("nvidia-", &id) < 0);
        check(vfio_type_id("nvidia-0150", &id) < 0);
        check(vfio_type_id("nvidia-12a", &id) < 0);
        check(vfio_type_id("mtty-1", &id) < 0);
        check(vfio_type_id(NULL, &id) < 0);

        check(vfio_pci_address_parse("0000:41:00.4", a) && streq(a, "0000:41:00.4"));
        check(vfio_pci_address_parse("0000:C1:02.3", a) && streq(a, "0000:c1:02.3"));
        check(!vfio_pci_address_parse("0000:41:00.8", a));
        check(!vfio_pci_address_parse("0000:41:00", a));
        check(!vfio_pci_address_parse("../../etc/x", a));

        check(ledger_key_is_valid("b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d"));
        check(ledger_key_is_valid("0000:41:00.4"));
        check(ledger_key_is_vf("0000:41:00.4"));
        check(!ledger_key_is_vf("0000:41:00.8"));
        check(!ledger_key_is_vf("0000:C1:00.4")); /* file names are lower case */
        check(!ledger_key_is_valid(".."));
        check(!ledger_key_is_valid("0000:41:00.4/x"));
}

static const char dom_ok[] =
        "<domain type='kvm'><name>g</name>"
        "<metadata><mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>"
        "<mh:vgpu pci='0000:41:00.4' type='nvidia-1150'/>"
        "<mh:vgpu pci='0000:C1:00.5' class='CUSTOM_BIG'/>"
        "<mh:vgpu pci='0000:99:00.0' type='nvidia-1'/>"
        "</mh:mdevs></metadata><devices>"
        "<hostdev mode='subsystem' type='pci' managed='no'><source>"
        "<address domain='0x0000' bus='0x41' slot='0x00' function='0x4'/></source></hostdev>"
        "<hostdev mode='subsystem' type='pci' managed='no'><source>"
        "<address domain='0' bus='193' slot='0' function='5'/></source></hostdev>"
        "<hostdev mode='subsystem' type='pci'><source>"
        "<address domain='0x0000' bus='0x02' slot='0x00' function='0x0'/></source></hostdev>"
        "</devices></domain>";

static void test_domxml(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *out = NULL;
        size_t len;

        check(domxml_parse(dom_ok, strlen(dom_ok), &d) == 0);
        if (!d)
                return;
        check(d->n_mdevs == 0 && d->n_vgpus == 3);
        check(streq(d->vgpus[0].pci, "0000:41:00.4") && streq(d->vgpus[0].type, "nvidia-1150") && !d->vgpus[0].managed);
        check(streq(d->vgpus[1].pci, "0000:c1:00.5") && streq(d->vgpus[1].mdev_class, "CUSTOM_BIG") && d->vgpus[1].meta);
        check(streq(d->vgpus[2].pci, "0000:02:00.0") && !d->vgpus[2].meta && d->vgpus[2].managed);
        check(domxml_find_vgpu(d, "0000:C1:00.5") == 1);
        /* a rewrite: the address and the entry, nothing else */
        check(domxml_set_vgpu_pci(d, 0, "0000:41:00.6") == 0);
        check(domxml_set_vgpu_pci(d, 1, "0000:41:00.6") == -EEXIST);
        check(domxml_format(d, &out, &len) == 0);
        check(out && strstr(out, "bus=\"0x41\" slot=\"0x00\" function=\"0x6\""));
        check(out && strstr(out, "pci=\"0000:41:00.6\" type=\"nvidia-1150\""));
        check(out && !strstr(out, "0000:41:00.4"));
        check(out && strstr(out, "pci=\"0000:C1:00.5\"") && strstr(out, "bus=\"0x02\""));
}

static void refuse(const char *meta, const char *devices) {
        _cleanup_free_ char *x = strdup_printf(
                "<domain><name>g</name><metadata><mh:mdevs xmlns:mh='http://mdev-hooks.org/xmlns/domain/1.0'>%s"
                "</mh:mdevs></metadata><devices>%s</devices></domain>", meta, devices);
        Domxml *d = NULL;
        int r = domxml_parse(x, strlen(x), &d);

        if (r >= 0)
                fprintf(stderr, "accepted: %s\n", x);
        check(r == -EINVAL);
        domxml_free(d);
}

static void test_domxml_refused(void) {
        static const char hd[] = "<hostdev mode='subsystem' type='pci' managed='no'><source>"
                                 "<address domain='0x0000' bus='0x41' slot='0x00' function='0x4'/></source></hostdev>";
        refuse("<mh:vgpu pci='0000:41:00.4/../x' type='nvidia-1'/>", hd);
        refuse("<mh:vgpu pci='41:00.4' type='nvidia-1'/>", hd);
        refuse("<mh:vgpu pci='0000:41:00.9' type='nvidia-1'/>", hd);
        refuse("<mh:vgpu pci='0x00:41:00.4' type='nvidia-1'/>", hd);
        refuse("<mh:vgpu type='nvidia-1'/>", hd);
        refuse("<mh:vgpu pci='0000:41:00.4' type='../x'/>", hd);
        refuse("<mh:vgpu pci='0000:41:00.4' class='lower'/>", hd);
        refuse("<mh:vgpu pci='0000:41:00.4'/><mh:vgpu pci='0000:41:00.4'/>", hd);
        refuse("", "<hostdev mode='subsystem' type='pci'><source><address domain='0' bus='0x41' slot='0x20' function='0'/></source></hostdev>");
        refuse("", "<hostdev mode='subsystem' type='pci'><source><address domain='0' bus='0x141' slot='0' function='0'/></source></hostdev>");
        refuse("", "<hostdev mode='subsystem' type='pci'><source><address bus='-1' slot='0' function='0'/></source></hostdev>");
        {
                _cleanup_free_ char *two = strdup_printf("%s%s", hd, hd);
                refuse("", two);
        }
}

static void test_domscan(void) {
        static const char plain[] = "<domain><devices><hostdev mode='subsystem' type='pci' managed='yes'>"
                                    "<source><address bus='2'/></source></hostdev></devices></domain>";
        static const char unmanaged[] = "<domain><devices><hostdev mode='subsystem' type='pci' managed = \"no\">"
                                        "</hostdev></devices></domain>";
        static const char meta[] = "<domain><metadata><x:mdevs xmlns:x='http://mdev-hooks.org/xmlns/domain/1.0'>"
                                   "<x:vgpu pci='0000:41:00.4'/></x:mdevs></metadata></domain>";
        static const char nothing[] = "<domain><name>vgpuless</name><description>a vgpus guest</description></domain>";
        static const char quoted[] = "<domain><devices><hostdev mode='subsystem' type='pci' alias=\"managed='no'\">"
                                     "</hostdev></devices></domain>";

        check(!domscan_has_vgpu(plain, strlen(plain)));
        check(domscan_has_vgpu(unmanaged, strlen(unmanaged)));
        check(domscan_has_vgpu(meta, strlen(meta)));
        check(!domscan_has_vgpu(nothing, strlen(nothing)));
        check(!domscan_has_vgpu(quoted, strlen(quoted)));
}

int main(void) {
        test_creatable_parse();
        test_names();
        test_domxml();
        test_domxml_refused();
        test_domscan();
        xmlCleanupParser();
        return EXIT_SUCCESS;
}
