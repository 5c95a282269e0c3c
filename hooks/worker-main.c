/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu-worker: the program the hook's front end (mdev-hooks-qemu.c)
 * runs in its own place, with execve(), for a call it does not run itself
 * (worker.h):
 *
 *     mdev-hooks-qemu-worker --ahead=FD|none <guest> <op> <subop> <extra>
 *
 * stdin: a memfd with the domain XML the front end read, and its '\0'.
 * --ahead=FD: a memfd with what the front end set up and read before its
 * strict reader declined a large XML (ahead_hand_over()), the lock held by
 * a descriptor it left open; taken over whole (ahead_take_over()).
 *
 * It loads the worker module (dlopen: libxml2 and the rest come with it)
 * and runs it. The front end cannot: it is linked statically, to spare
 * every hook call the loading of libc.so, and a static program cannot load
 * a module. This program pays that loading, and an execve(), only for the
 * calls that load libxml2 anyway.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hookop.h"
#include "log.h"
#include "util.h"
#include "worker.h"
#include "worker-setup.h"

/* Loads a module (worker.h) from this program's own directory: its entry
 * point, or -errno (error_set). */
static int load_module(const char *dir, const char *name, const char *entry, void **ret) {
        char path[PATH_MAX];
        void *module;

        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int) sizeof path)
                return error_set(-ENAMETOOLONG, "cannot find my own directory: its path is too long");
        /* RTLD_LOCAL: nothing of it, or of libxml2, joins the program's
         * namespace. Never closed: the process ends when it returns. */
        module = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (!module)
                return error_set(-ENOENT, "cannot load the hook's worker (is mdev-hooks installed whole?): %s", dlerror());
        *ret = dlsym(module, entry);
        if (!*ret)
                return error_set(-ENOENT, "cannot load the hook's worker (is mdev-hooks installed whole?): %s", dlerror());
        return 0;
}

/* Loads the worker module and runs it. Returns its exit status, or -errno
 * (error_set) when it cannot be loaded. */
static int run_module(int argc, char **argv, const char *xml, size_t len, Ahead *ahead) {
        char dir[PATH_MAX];
        WorkerEntry entry;
        int r;

        r = program_dir(dir, sizeof dir);
        if (r < 0)
                return r;
#ifdef ICU_STAND_IN
        /* libxml2 needs ICU's libicuuc, and with it libstdc++: a quarter of
         * a prepare. The stand-in (hooks/no-icu/icuuc-stand-in.c says why
         * that is safe) is loaded first, by its path; the libicuuc.so.N
         * that libxml2 needs is then that library, matched by its soname.
         * Without it (not installed) libxml2 loads the real ICU, only slower. */
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, ICU_STAND_IN) < (int) sizeof path)
                (void) dlopen(path, RTLD_LAZY | RTLD_LOCAL);
#endif
        /* ISO C has no cast from void * to a function pointer; POSIX's
         * dlsym() documents this form. */
        r = load_module(dir, WORKER_MODULE, WORKER_ENTRY, (void **) &entry);
        if (r < 0)
                return r;
        return entry(argc, argv, xml, len, ahead);
}

/* The XML the front end wrote to the memfd on stdin, mapped: *ret_len bytes
 * and the '\0' after them. -errno (error_set). */
static int xml_map(const char **ret, size_t *ret_len) {
        struct stat st;
        char *map;

        if (fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 1)
                return error_set(-EINVAL, "stdin is not the domain XML that mdev-hooks-qemu hands its worker");
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, STDIN_FILENO, 0);
        if (map == MAP_FAILED)
                return error_set(-errno, "cannot map the domain XML on stdin: %s", strerror(errno));
        if (map[st.st_size - 1] != '\0') {
                (void) munmap(map, (size_t) st.st_size);
                return error_set(-EINVAL, "stdin is not the domain XML that mdev-hooks-qemu hands its worker");
        }
        *ret = map;
        *ret_len = (size_t) st.st_size - 1;
        return 0;
}

/* "--ahead=FD" or "--ahead=none" (-1). */
static int ahead_arg(const char *arg, int *ret_fd) {
        static const char prefix[] = "--ahead=";
        const char *v = arg + sizeof prefix - 1;
        char *end;
        long fd;

        if (strncmp(arg, prefix, sizeof prefix - 1) != 0)
                return -EINVAL;
        if (streq(v, "none")) {
                *ret_fd = -1;
                return 0;
        }
        errno = 0;
        fd = strtol(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0' || fd < 0 || fd > INT_MAX)
                return -EINVAL;
        *ret_fd = (int) fd;
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_(ahead_done) Ahead ahead = AHEAD_INIT;
        const char *xml = NULL;
        size_t len = 0;
        int aheadfd, r;

        if (argc < 4 || ahead_arg(argv[1], &aheadfd) < 0) {
                fprintf(stderr, "usage: %s --ahead=FD|none <guest> <operation> <sub-operation> <extra>  (run by mdev-hooks-qemu, not by hand)\n",
                        program_invocation_short_name);
                return 2;
        }
        r = xml_map(&xml, &len);
        if (r >= 0 && aheadfd >= 0)
                r = ahead_take_over(aheadfd, &ahead);
        if (r >= 0) {
                /* argv as libvirt gave it to the front end */
                argv[1] = argv[0];
                r = run_module(argc - 1, argv + 1, xml, len, aheadfd >= 0 ? &ahead : NULL);
        }
        if (xml)
                (void) munmap((void *) xml, len + 1);
        if (r >= 0)
                return r;
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[2]);
        log_error("%s", error_get(r));
        return hook_op_fails_start(hook_op_from_string(argv[3])) ? 1 : 0;
}
