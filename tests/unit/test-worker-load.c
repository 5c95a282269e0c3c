/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook's worker with the ICU stand-in (hooks/no-icu/): loaded the way
 * the front end loads them (the stand-in by its path, then the worker), they
 * must bring libxml2 bound to the stand-in, and neither the real libicuuc
 * nor libstdc++. The worker is loaded with RTLD_NOW: every symbol of every
 * library it brings is bound at once, so this fails if libxml2 imports an
 * ICU function the stand-in lacks (a libxml2 update would show here, not in
 * a hook run at 3 a.m.).
 *
 *     test-worker-load <worker.so> <stand-in>
 *
 * This program links libc only, and counts only what was not loaded before
 * the dlopen() (a sanitizer's runtime brings libstdc++ of its own).
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BEFORE 64

typedef struct Seen {
        const char *stand_in;
        const char *before[MAX_BEFORE]; /* loaded before the worker */
        size_t n_before;
        bool counting;
        bool libxml2, stand_in_seen, real_icu, libstdcxx;
} Seen;

static int visit(struct dl_phdr_info *info, size_t size, void *userdata) {
        Seen *s = userdata;
        const char *name = info->dlpi_name, *base;
        char real[PATH_MAX];

        (void) size;
        if (!name || !*name)
                return 0;
        if (!s->counting) {
                if (s->n_before < MAX_BEFORE)
                        s->before[s->n_before++] = name;
                return 0;
        }
        for (size_t i = 0; i < s->n_before; i++)
                if (strcmp(s->before[i], name) == 0)
                        return 0;
        base = strrchr(name, '/');
        base = base ? base + 1 : name;
        printf("loaded: %s\n", name);
        if (strncmp(base, "libxml2.so", 10) == 0)
                s->libxml2 = true;
        if (strncmp(base, "libstdc++.so", 12) == 0)
                s->libstdcxx = true;
        if (strncmp(base, "libicuuc.so", 11) == 0 || strncmp(base, "libicudata.so", 13) == 0) {
                if (realpath(name, real) && strcmp(real, s->stand_in) == 0)
                        s->stand_in_seen = true;
                else
                        s->real_icu = true;
        }
        return 0;
}

int main(int argc, char **argv) {
        char stand_in[PATH_MAX];
        Seen s = { .stand_in = stand_in };
        void *h;

        if (argc != 3) {
                fprintf(stderr, "usage: %s <worker.so> <stand-in>\n", argv[0]);
                return 2;
        }
        if (!realpath(argv[2], stand_in)) {
                fprintf(stderr, "FAIL: no stand-in %s\n", argv[2]);
                return 1;
        }
        dl_iterate_phdr(visit, &s);
        s.counting = true;
        if (!dlopen(stand_in, RTLD_LAZY | RTLD_LOCAL)) {
                fprintf(stderr, "FAIL: the stand-in does not load: %s\n", dlerror());
                return 1;
        }
        h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                fprintf(stderr, "FAIL: the worker does not load with every symbol bound: %s\n", dlerror());
                return 1;
        }
        if (!dlsym(h, "mdev_hooks_qemu_worker")) {
                fprintf(stderr, "FAIL: the worker has no entry point: %s\n", dlerror());
                return 1;
        }
        dl_iterate_phdr(visit, &s);
        if (!s.libxml2 || !s.stand_in_seen || s.real_icu || s.libstdcxx) {
                fprintf(stderr, "FAIL: libxml2 %s, the stand-in %s, the real ICU %s, libstdc++ %s\n",
                        s.libxml2 ? "loaded" : "missing", s.stand_in_seen ? "loaded" : "missing",
                        s.real_icu ? "loaded" : "not loaded", s.libstdcxx ? "loaded" : "not loaded");
                return 1;
        }
        printf("ok: libxml2 with the ICU stand-in %s; no ICU, no libstdc++\n", stand_in);
        return 0;
}
