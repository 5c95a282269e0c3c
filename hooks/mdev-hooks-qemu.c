/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu: the program libvirt runs from /etc/libvirt/hooks/qemu.d/ as
 *
 *     <guest> <op> <subop> <extra>     with the domain XML on stdin
 *
 * This is its front end, which loads no library at all: it is linked
 * statically, glibc and inih with it, and libxml2 not at all
 * (hooks/meson.build; a build with sanitizers links it dynamically, libc
 * alone). libvirt runs it for every operation of every guest, and a guest
 * without mdevs must cost about what /bin/true costs: loading libc.so cost
 * a seventh of a prepare (BENCHMARKS.md). Operations that never concern
 * mdevs exit 0 at once, reading nothing. For the others it reads all of
 * stdin, whatever its size, and only if the XML may hold an mdev hostdev
 * or a VFIO-framework vGPU (domscan.h) does it go on. A prepare, a release or a reconnect it first
 * reads with a strict libc-only reader (domlite.h); when that reads it, the
 * front end runs the operation itself (lite.h). It does the same for
 * migrate and restore, and for a prepare of a large XML, handing the call
 * to the worker, having changed nothing, when domlite declines or a
 * hostdev may need another UUID (only libxml2's document can be
 * rewritten). Otherwise it runs the worker's program from the same
 * directory in its place (execve: worker.h), which loads libxml2 and the
 * rest, and hands it the XML in a memfd. No config, no lock, no output
 * otherwise. (On release it also goes on when the record's guest index
 * names the guest: one stat.)
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h> /* memfd_create */
#include <sys/stat.h>
#include <unistd.h>

#include "domlite.h"
#include "domscan.h"
#include "guestindex.h"
#include "hookop.h"
#include "log.h"
#include "lite.h"
#include "util.h"
#include "worker.h"
#include "worker-setup.h"

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

/* The worker's program (worker.h), from this program's own directory, in
 * place of this one: execve(), argv as libvirt gave it after --ahead=, the
 * XML on stdin in a memfd (with its '\0'), and what was done ahead of a
 * parse that declined (or NULL) handed over (ahead_hand_over()). Its exit
 * status is the hook's. Returns only when it cannot be run: -errno
 * (error_set). */
static int run_worker(int argc, char **argv, const char *buf, size_t len, Ahead *ahead) {
        char dir[PATH_MAX], path[PATH_MAX], aheadarg[32] = "--ahead=none";
        _cleanup_close_ int xmlfd = -1, aheadfd = -1;
        char *args[argc + 2];
        int r;

        r = program_dir(dir, sizeof dir);
        if (r < 0)
                return r;
        if (snprintf(path, sizeof path, "%s/%s", dir, WORKER_PROGRAM) >= (int) sizeof path)
                return error_set(-ENAMETOOLONG, "cannot find my own directory: its path is too long");
        if (ahead && ahead->set_up) {
                r = ahead_hand_over(ahead, &aheadfd);
                if (r < 0)
                        return r;
                snprintf(aheadarg, sizeof aheadarg, "--ahead=%d", aheadfd);
        }
        xmlfd = memfd_create("mdev-hooks-domain-xml", MFD_CLOEXEC);
        if (xmlfd < 0)
                return error_set(-errno, "cannot hand the worker the domain XML: memfd_create: %s", strerror(errno));
        r = write_full(xmlfd, buf, len + 1);
        if (r < 0)
                return error_set(r, "cannot hand the worker the domain XML: %s", strerror(-r));
        if (dup2(xmlfd, STDIN_FILENO) < 0 || (aheadfd >= 0 && fcntl(aheadfd, F_SETFD, 0) < 0))
                return error_set(-errno, "cannot hand the worker the domain XML: %s", strerror(errno));

        args[0] = path;
        args[1] = aheadarg;
        for (int i = 1; i < argc; i++)
                args[i + 1] = argv[i];
        args[argc + 1] = NULL;
        execv(path, args);
        return error_set(-errno, "cannot run the hook's worker (is mdev-hooks installed whole?): %s: %s", path, strerror(errno));
}

/* prepare, release and reconnect: when the strict reader (domlite.h)
 * reads the XML, the front end runs the operation with what it read, and
 * libxml2 is never loaded. Otherwise (it declined: a comment, an entity,
 * anything it is not certain to read as libxml2 does) the worker, as for
 * every other operation. */
static int run_read(HookOp op, int argc, char **argv, const char *buf, size_t len) {
        Domxml *dom = NULL;

        if (domlite_parse(buf, len, &dom) < 0) {
                error_clear();
                return run_worker(argc, argv, buf, len, NULL);
        }
        return op_lite(op, argc, argv, dom);
}

/* migrate begin, restore begin and a prepare of a large XML: the front end
 * reads the XML itself (a second thread reads the candidates meanwhile, for
 * a large XML), and hands the call to the worker (LITE_FALLBACK) when it is
 * the worker's, with what it did ahead (the lock, the thread still reading;
 * let go of by the caller after the worker returns). */
static int run_lite(int argc, char **argv, const char *buf, size_t len, Ahead *ahead) {
        int r = migrate_lite(argc, argv, buf, len, ahead);

        return r == LITE_FALLBACK ? run_worker(argc, argv, buf, len, ahead) : r;
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

        /* Too large for the worker's parse, and it may hold an mdev: the
         * operations that change what a guest gets refuse it; release and
         * reconnect hand the worker the head, which it refuses to parse
         * (release then frees the guest's mdevs by the record alone). */
        if (r == -EFBIG && hook_op_fails_start(op))
                r = error_set(r, "the domain XML on stdin is larger than %u MiB and holds an mdev hostdev; mdev-hooks parses at most %u MiB: refusing it",
                              DOMSCAN_MAX_SIZE >> 20, DOMSCAN_MAX_SIZE >> 20);
        else if (r == -EFBIG) {
                r = run_worker(argc, argv, buf, len, NULL);
                if (r >= 0)
                        return r;
        } else if (r < 0)
                r = error_set(r, "cannot read the domain XML from stdin: %s", strerror(-r));
        else {
                if ((op == HOOK_OP_PREPARE && len < LITE_PREFETCH_MIN_XML) ||
                    op == HOOK_OP_RELEASE || op == HOOK_OP_RECONNECT)
                        r = run_read(op, argc, argv, buf, len);
                else if (op == HOOK_OP_PREPARE || op == HOOK_OP_MIGRATE || op == HOOK_OP_RESTORE) {
                        /* for a large XML the lock first and the candidates
                         * read on a second thread during domlite's parse
                         * (lite.h); the worker's after run_lite() */
                        _cleanup_(ahead_done) Ahead ahead = AHEAD_INIT;

                        r = run_lite(argc, argv, buf, len, &ahead);
                } else
                        r = run_worker(argc, argv, buf, len, NULL);
                if (r >= 0)
                        return r;
        }
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        log_error("%s", error_get(r));
        return hook_op_fails_start(op) ? 1 : 0;
}
