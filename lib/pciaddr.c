/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdbool.h>
#include <string.h>

#include "pciaddr.h"

/* isxdigit() without the locale's table: a PCI address is ASCII. */
static bool is_hex_digit(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool pci_address_is_valid(const char *s) {
        static const char pattern[] = "xxxx:xx:xx.x";

        if (!s)
                return false;
        /* a NUL before the end fails its position's test */
        for (size_t i = 0; pattern[i]; i++) {
                if (pattern[i] == 'x') {
                        if (!is_hex_digit(s[i]))
                                return false;
                } else if (s[i] != pattern[i])
                        return false;
        }
        if (s[sizeof pattern - 1] != '\0')
                return false;
        /* the slot, two hex digits, is at most 0x1f; the function at most 7 */
        return (s[8] == '0' || s[8] == '1') && s[11] >= '0' && s[11] <= '7';
}
