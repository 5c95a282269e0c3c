/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu: the program libvirt runs from /etc/libvirt/hooks/qemu.d/ as
 *
 *     <guest> <op> <subop> <extra>     with the domain XML on stdin
 *
 * libvirt runs it for every operation of every guest, and a guest without
 * mdevs must cost about what /bin/true costs. So this program links libc
 * alone. Operations that never concern mdevs exit 0 at once, reading
 * nothing. For the others it reads all of stdin, whatever its size, and
 * only if the XML may hold an mdev hostdev or a VFIO-framework vGPU
 * (domscan.h) does it go on: it loads the worker module (worker.h), which
 * brings libxml2 and the rest, at the point of use, as kmod loads its
 * compression libraries, and runs the operation there on the XML it read.
 * No config, no lock, no output otherwise. (On release it also goes on
 * when the record's guest index names the guest: one stat.)
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domscan.h"
#include "guestindex.h"
#include "hookop.h"
#include "log.h"
#include "util.h"
#include "worker.h"

/* Whether the record's guest index names this guest (guestindex.h): it still
 * holds an mdev that its XML no longer shows (one hot-unplugged while it
 * ran), which its release must free. One stat; no config, no lock. */
static bool guest_is_indexed(const char *guest) {
        char path[GUEST_INDEX_PATH_MAX];
        _cleanup_close_ int rootfd = -1;
        struct stat st;

        if (root_open(&rootfd) < 0)
                return false;
        guest_index_path(guest, path);
        return fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Loads the worker module from this program's own directory and runs it on
 * the XML (xml[len] is '\0'). Returns its exit status, or -errno
 * (error_set) when it cannot be loaded. */
static int run_worker(int argc, char **argv, const char *xml, size_t len) {
        char dir[PATH_MAX], path[PATH_MAX];
        WorkerEntry entry = NULL;
        void *module;
        int r;

        r = program_dir(dir, sizeof dir);
        if (r < 0)
                return r;
        if (snprintf(path, sizeof path, "%s/%s", dir, WORKER_MODULE) >= (int) sizeof path)
                return error_set(-ENAMETOOLONG, "cannot find my own directory: its path is too long");
        /* RTLD_LOCAL: nothing of it, or of libxml2, joins the program's
         * namespace. Never closed: the process ends when it returns. */
        module = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (module)
                /* ISO C has no cast from void * to a function pointer;
                 * POSIX's dlsym() documents this form. */
                *(void **) &entry = dlsym(module, WORKER_ENTRY);
        if (!module || !entry)
                return error_set(-ENOENT, "cannot load the hook's worker (is mdev-hooks installed whole?): %s", dlerror());
        return entry(argc, argv, xml, len);
}

/* Does this call need the worker? Only when the XML may hold an mdev
 * hostdev or a vGPU (may_hold: domscan_read_all()), or on release when the
 * guest index names the guest (it may hold an mdev its XML no longer
 * shows). Everything else exits 0 here. */
static bool needs_worker(HookOp op, const char *guest, bool may_hold) {
        return may_hold || (op == HOOK_OP_RELEASE && guest_is_indexed(guest));
}

int main(int argc, char **argv) {
        _cleanup_free_ char *buf = NULL;
        bool may_hold = false;
        HookOp op;
        size_t len;
        int r;

        /* libvirt always passes four arguments: one is a person asking. */
        if (argc == 2 && streq(argv[1], "--help")) {
                puts("Usage: mdev-hooks-qemu GUEST OPERATION SUB-OPERATION EXTRA < DOMAIN.XML\n"
                     "\n"
                     "The libvirt qemu hook of mdev-hooks, run by libvirtd as\n"
                     "/etc/libvirt/hooks/qemu.d/mdev-hooks with the domain XML on stdin. It\n"
                     "creates a guest's mdevs at prepare and removes them at release; migrate\n"
                     "and restore find or create them here, reconnect re-asserts them.\n"
                     "Guests without an mdev hostdev cost nothing. A refusal is one line on\n"
                     "stderr (libvirt shows it) and in syslog: 'mdev-hooks: GUEST: reason'.\n"
                     "\n"
                     "  --help     show this help\n"
                     "  --version  show the version\n"
                     "\n"
                     "Exit status: 0 done or nothing to do, 1 the guest must not start,\n"
                     "2 bad usage.\n"
                     "See mdev-hooks-qemu(8) and mdev-hooks.conf(5).");
                return 0;
        }
        if (argc == 2 && streq(argv[1], "--version")) {
                puts("mdev-hooks-qemu " PACKAGE_VERSION);
                return 0;
        }
        if (argc < 3) {
                fprintf(stderr, "usage: %s <guest> <operation> <sub-operation> <extra>  (run by libvirt, with the domain XML on stdin)\n",
                        program_invocation_short_name);
                return 2;
        }
        op = hook_op_from_string(argv[2]);
        if (!hook_op_is_handled(op))
                return 0;

        /* Read whole, whatever its size: a guest without mdevs is never
         * held up, however large its XML (thousands of disks). */
        r = domscan_read_all(STDIN_FILENO, DOMSCAN_MAX_SIZE, &buf, &len, &may_hold);
        if ((r >= 0 || r == -EFBIG) && !needs_worker(op, argv[1], may_hold))
                return 0;

        /* Too large to parse, and it may hold an mdev: the operations that
         * change what a guest gets refuse it; release and reconnect hand
         * the worker the head, which it refuses to parse (release then
         * frees the guest's mdevs by the record alone). */
        if (r == -EFBIG && hook_op_fails_start(op))
                r = error_set(r, "the domain XML on stdin is larger than %u MiB and holds an mdev hostdev; mdev-hooks parses at most %u MiB: refusing it",
                              DOMSCAN_MAX_SIZE >> 20, DOMSCAN_MAX_SIZE >> 20);
        else if (r >= 0 || r == -EFBIG) {
                r = run_worker(argc, argv, buf, len);
                if (r >= 0)
                        return r;
        } else
                r = error_set(r, "cannot read the domain XML from stdin: %s", strerror(-r));
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        log_error("%s", error_get(r));
        return hook_op_fails_start(op) ? 1 : 0;
}
