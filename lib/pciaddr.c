/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pciaddr.h"
#include "util.h"

int pci_address_split(const char *s, PciAddress *ret) {
        static const char pattern[] = "xxxx:xx:xx.x";
        unsigned part[4] = { 0 };
        size_t k = 0;

        if (!s)
                return -EINVAL;
        /* a NUL before the end fails its position's test */
        for (size_t i = 0; pattern[i]; i++) {
                if (pattern[i] == 'x') {
                        int v = hex_digit_value(s[i]);
                        if (v < 0)
                                return -EINVAL;
                        part[k] = part[k] * 16 + (unsigned) v;
                } else if (s[i] != pattern[i])
                        return -EINVAL;
                else
                        k++;
        }
        if (s[sizeof pattern - 1] != '\0')
                return -EINVAL;
        if (part[2] > 0x1f || part[3] > 7)
                return -EINVAL;
        if (ret)
                *ret = (PciAddress) { .domain = part[0], .bus = part[1], .slot = part[2], .function = part[3] };
        return 0;
}

bool pci_address_is_valid(const char *s) {
        return pci_address_split(s, NULL) == 0;
}

int pci_address_format(const PciAddress *a, char out[PCI_ADDRESS_STRING_MAX]) {
        if (a->domain > 0xffff || a->bus > 0xff || a->slot > 0x1f || a->function > 7)
                return -EINVAL;
        snprintf(out, PCI_ADDRESS_STRING_MAX, "%04x:%02x:%02x.%x", a->domain, a->bus, a->slot, a->function);
        return 0;
}

bool pci_address_normalize(const char *s, char out[PCI_ADDRESS_STRING_MAX]) {
        PciAddress a;

        if (pci_address_split(s, &a) < 0)
                return false;
        return pci_address_format(&a, out) == 0;
}
