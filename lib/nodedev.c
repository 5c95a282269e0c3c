/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libvirt's node-device names for mdev parents (nodedev.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodedev.h"
#include "util.h"

static bool is_pci_address(const char *s) {
        static const char pattern[] = "xxxx:xx:xx.x";

        if (strlen(s) != sizeof pattern - 1)
                return false;
        for (size_t i = 0; pattern[i]; i++)
                if (pattern[i] == 'x' ? !isxdigit((unsigned char) s[i]) : s[i] != pattern[i])
                        return false;
        return true;
}

/* A subchannel bus id "0.0.0052": cssid.ssid.devno, hex. */
static bool is_css_busid(const char *s) {
        return strlen(s) == 8 && isxdigit((unsigned char) s[0]) && s[1] == '.' &&
               isxdigit((unsigned char) s[2]) && s[3] == '.' && strspn(s + 4, "0123456789abcdefABCDEF") == 4;
}

char *nodedev_name(const char *subsystem, const char *sysname) {
        char *r;

        if (!subsystem)
                subsystem = is_pci_address(sysname) ? "pci" : is_css_busid(sysname) ? "css" : sysname;
        if (streq(subsystem, "matrix"))
                return strdup("ap_matrix");
        r = strdup_printf("%s_%s", subsystem, sysname);
        if (!r)
                return NULL;
        for (char *c = r; *c; c++)
                if (!isalnum((unsigned char) *c) || (unsigned char) *c >= 0x80)
                        *c = '_';
        return r;
}

int nodedev_to_parent(const char *name, char **ret) {
        const char *u = strchr(name, '_');
        char *r = NULL;
        size_t n;

        if (!u)
                return 0;
        n = strlen(name);
        if (strncmp(name, "pci_", 4) == 0 && n == 4 + 12 && name[8] == '_' && name[11] == '_' && name[14] == '_') {
                r = strdup_printf("%.4s:%.2s:%.2s.%c", name + 4, name + 9, name + 12, name[15]);
                if (!r)
                        return -ENOMEM;
                for (char *c = r; *c; c++)
                        *c = (char) tolower((unsigned char) *c);
                if (!is_pci_address(r)) {
                        free(r);
                        return 0;
                }
        } else if (strncmp(name, "css_", 4) == 0 && n == 4 + 8 && name[5] == '_' && name[7] == '_') {
                r = strdup_printf("%c.%c.%.4s", name[4], name[6], name + 8);
                if (!r)
                        return -ENOMEM;
                if (!is_css_busid(r)) {
                        free(r);
                        return 0;
                }
        } else if (streq(name, "ap_matrix"))
                r = strdup("matrix");
        else if (n % 2 == 1 && name[n / 2] == '_' && strncmp(name, name + n / 2 + 1, n / 2) == 0)
                r = strndup(name, n / 2);
        else
                return 0;
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 1;
}
