/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "pciaddr.h"

bool pci_address_is_valid(const char *s) {
        static const char pattern[] = "xxxx:xx:xx.x";
        unsigned slot;

        if (!s || strlen(s) != sizeof pattern - 1)
                return false;
        for (size_t i = 0; pattern[i]; i++) {
                if (pattern[i] == 'x') {
                        if (!isxdigit((unsigned char) s[i]))
                                return false;
                } else if (s[i] != pattern[i])
                        return false;
        }
        slot = (unsigned) strtoul((char[]) { s[8], s[9], '\0' }, NULL, 16);
        return slot <= 0x1f && s[11] >= '0' && s[11] <= '7';
}
