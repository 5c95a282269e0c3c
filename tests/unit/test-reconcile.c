/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reconcile_plan() over every combination of one mdev's record, its sysfs
 * presence, two guests' use of it and the release policy: the rules that
 * must hold whatever the state (doc/design.md §4), and that a plan carried out
 * leaves nothing for the next run to do.
 *
 * The planner is part of the library: no libvirt here.
 */
#include <inttypes.h>

#include "check.h"
#include "reconcile.h"

#define U "aaaaaaaa-0000-4000-8000-000000000001"
#define BOOT "bbbbbbbb-0000-4000-8000-000000000001"
#define OLD_BOOT "bbbbbbbb-0000-4000-8000-000000000000"
#define NOW 1800000000u

/* What a guest does with U. */
typedef enum Use {
        USE_ABSENT,       /* not defined */
        USE_DEFINED,      /* shut off, its definition uses U */
        USE_RUNNING,      /* running with U */
        USE_RUNNING_NOT,  /* running without U */
        _USE_MAX,
} Use;

typedef enum Dev {
        DEV_ABSENT,
        DEV_PRESENT,      /* on the record's parent, of its type */
        DEV_ELSEWHERE,    /* another parent than the record says */
        _DEV_MAX,
} Dev;

typedef struct Model {
        bool has_record;
        bool bad;         /* instead: a record file for U that does not parse */
        LedgerEntry record;
        Dev dev;
        Use use[2];       /* guests "g" and "h" */
        ConfigRelease release;
} Model;

static const char *const guest_names[2] = { "g", "h" };
static const char *const guest_uuids[2] = {
        "11111111-0000-4000-8000-000000000001",
        "22222222-0000-4000-8000-000000000002",
};

static unsigned n_cases, n_findings;

static const char *model_describe(const Model *m) {
        static char buf[512];

        snprintf(buf, sizeof buf, "record=%s bad=%d state=%s origin=%s guest='%s' pending=%d boot=%s since=%" PRIu64
                 " dev=%d use[g]=%d use[h]=%d release=%d",
                 m->has_record ? "yes" : "no", m->bad, strna(ledger_state_to_string(m->record.state)),
                 strna(ledger_origin_to_string(m->record.origin)), m->record.guest, m->record.remove_pending,
                 streq(m->record.boot_id, BOOT) ? "this" : "old", m->record.since, m->dev, m->use[0], m->use[1],
                 m->release);
        return buf;
}

/* check() for a rule, naming the rule and the state it broke from. */
#define check_rule(m, cond, what)                                                        \
        do {                                                                             \
                bool held_ = (cond);                                                     \
                if (!held_)                                                              \
                        fprintf(stderr, "rule broken: %s\n  from: %s\n", what, model_describe(m)); \
                check(held_);                                                            \
        } while (0)

/* Plans for a model. The guests and mdevs live in the caller's storage. */
static void model_plan(const Model *m, ReconcileGuest guests[2], SysfsMdev *mdev, ReconcilePlan *ret) {
        static char *with_u[] = { (char *) U, NULL };
        size_t n = 0;

        for (size_t i = 0; i < 2; i++) {
                if (m->use[i] == USE_ABSENT)
                        continue;
                guests[n] = (ReconcileGuest) {
                        .name = (char *) guest_names[i],
                        .active = m->use[i] == USE_RUNNING || m->use[i] == USE_RUNNING_NOT,
                        .persistent = true,
                        .live = m->use[i] == USE_RUNNING ? with_u : NULL,
                        .config = m->use[i] == USE_RUNNING_NOT ? NULL : with_u,
                };
                snprintf(guests[n].uuid, sizeof guests[n].uuid, "%s", guest_uuids[i]);
                n++;
        }
        *mdev = (SysfsMdev) { .uuid = U };
        snprintf(mdev->parent, sizeof mdev->parent, "%s", m->dev == DEV_ELSEWHERE ? "0000:85:00.0" : "0000:84:00.0");
        snprintf(mdev->type, sizeof mdev->type, "nvidia-35");

        check(reconcile_plan(&(ReconcileInput) {
                        .guests = guests,
                        .n_guests = n,
                        .records = m->has_record ? &m->record : NULL,
                        .n_records = m->has_record,
                        .n_bad_records = m->bad,
                        .bad_records = m->bad ? with_u : NULL,
                        .mdevs = mdev,
                        .n_mdevs = m->dev != DEV_ABSENT,
                        .release = m->release,
                        .boot_id = BOOT,
                        .now = NOW,
                }, ret) >= 0);
}

static size_t running_users(const Model *m, size_t *ret_i) {
        size_t n = 0;

        for (size_t i = 0; i < 2; i++)
                if (m->use[i] == USE_RUNNING) {
                        if (n++ == 0 && ret_i)
                                *ret_i = i;
                }
        return n;
}

/* Carries the plan out on the model, checking each action against the rules. */
static void model_apply(Model *m, const ReconcilePlan *p) {
        size_t runner = 0, n_run = running_users(m, &runner);

        for (size_t i = 0; i < p->n_findings; i++) {
                const ReconcileFinding *f = &p->findings[i];

                n_findings++;
                check_rule(m, streq(f->uuid, U), "a finding about another UUID");
                switch (f->action) {
                case RECONCILE_ACTION_NONE:
                        break;
                case RECONCILE_ACTION_DROP:
                        check_rule(m, m->has_record || m->bad, "drop without a record");
                        check_rule(m, n_run == 0 || m->dev == DEV_ABSENT, "dropped the record of an mdev a running guest uses");
                        m->has_record = false;
                        m->bad = false;
                        break;
                case RECONCILE_ACTION_MARK_LOST:
                        check_rule(m, m->has_record && m->dev == DEV_ABSENT, "marked lost an mdev that exists");
                        check_rule(m, f->entry.state == LEDGER_LOST, "mark-lost writes another state");
                        m->record = f->entry;
                        break;
                case RECONCILE_ACTION_RECORD:
                        check_rule(m, m->dev != DEV_ABSENT, "recorded an mdev that does not exist");
                        check_rule(m, n_run == 1 && streq(f->entry.guest, guest_names[runner]),
                              "recorded for a guest that does not run with it");
                        check_rule(m, m->has_record || f->entry.origin == LEDGER_BORROWED,
                              "an mdev without record recorded as created");
                        check_rule(m, f->entry.state == LEDGER_ASSIGNED && !f->entry.remove_pending, "record writes another state");
                        m->has_record = true;
                        m->bad = false;
                        m->record = f->entry;
                        break;
                case RECONCILE_ACTION_KEEP_FREE:
                        check_rule(m, m->release == CONFIG_RELEASE_KEEP, "kept free under release = remove");
                        check_rule(m, m->has_record && m->record.origin == LEDGER_CREATED, "kept free what mdev-hooks did not create");
                        check_rule(m, n_run == 0, "freed an mdev a running guest uses");
                        m->record = f->entry;
                        break;
                case RECONCILE_ACTION_REMOVE:
                        check_rule(m, m->has_record && m->record.origin == LEDGER_CREATED, "removed an mdev mdev-hooks did not create");
                        check_rule(m, m->dev == DEV_PRESENT, "removed an mdev the record does not describe");
                        check_rule(m, n_run == 0, "removed an mdev a running guest uses");
                        m->dev = DEV_ABSENT;
                        m->has_record = false;
                        break;
                default:
                        check_rule(m, false, "unknown action");
                }
        }
}

static void run_case(const Model *start) {
        Model m = *start;
        ReconcileGuest guests[2];
        SysfsMdev mdev;
        ReconcilePlan p;
        size_t runner = 0, n_run = running_users(&m, &runner);

        n_cases++;
        model_plan(&m, guests, &mdev, &p);
        model_apply(&m, &p);
        reconcile_plan_done(&p);

        /* The rules that hold after one run. */
        if (!start->has_record && start->dev != DEV_ABSENT)
                check_rule(start, m.dev != DEV_ABSENT, "an mdev without record was removed");
        if (n_run == 1 && start->dev != DEV_ABSENT)
                check_rule(start, m.dev != DEV_ABSENT && m.has_record && m.record.state == LEDGER_ASSIGNED &&
                          streq(m.record.guest, guest_names[runner]),
                      "the running guest's mdev is not recorded as its own");
        if (m.has_record && m.dev == DEV_ABSENT)
                check_rule(start, m.record.state == LEDGER_LOST || m.record.remove_pending || n_run > 1,
                      "a record that is not lost names an mdev that does not exist");
        if (start->has_record && start->record.state == LEDGER_INCOMING && start->record.since == NOW &&
            start->dev == DEV_PRESENT && streq(start->record.boot_id, BOOT) && !start->record.remove_pending &&
            n_run == 0)
                check_rule(start, m.dev == DEV_PRESENT && m.has_record && m.record.state == LEDGER_INCOMING,
                      "a recent incoming claim was undone while its guest may be arriving");
        if (start->has_record && start->record.origin == LEDGER_BORROWED)
                check_rule(start, m.dev == start->dev, "a borrowed mdev was removed");
        /* An unreadable record is repaired (dropped or rewritten) unless two
         * running guests use the mdev (a person decides), and its mdev,
         * whose origin cannot be read, is never removed. */
        if (start->bad) {
                check_rule(start, !m.bad || n_run > 1, "an unreadable record was left as it is");
                check_rule(start, m.dev == start->dev, "an mdev whose record does not parse was removed");
        }

        /* A second run finds nothing to do. */
        model_plan(&m, guests, &mdev, &p);
        for (size_t i = 0; i < p.n_findings; i++)
                check_rule(start, p.findings[i].action == RECONCILE_ACTION_NONE, "the second run still acts");
        reconcile_plan_done(&p);
}

int main(void) {
        static const LedgerState states[] = { LEDGER_ASSIGNED, LEDGER_INCOMING, LEDGER_FREE, LEDGER_LOST };
        static const uint64_t sinces[] = { NOW, NOW - 3600 };
        static const char *const boots[] = { BOOT, OLD_BOOT };
        static const char *const owners[] = { "g", "h", "" };

        for (unsigned release = 0; release < 2; release++)
        for (unsigned dev = 0; dev < _DEV_MAX; dev++)
        for (unsigned ug = 0; ug < _USE_MAX; ug++)
        for (unsigned uh = 0; uh < _USE_MAX; uh++) {
                Model m = {
                        .dev = dev,
                        .use = { ug, uh },
                        .release = release ? CONFIG_RELEASE_KEEP : CONFIG_RELEASE_REMOVE,
                };

                /* No record, or one that does not parse. */
                if (dev != DEV_ELSEWHERE) {
                        run_case(&m);
                        m.bad = true;
                        run_case(&m);
                        m.bad = false;
                }

                m.has_record = true;
                for (size_t s = 0; s < ELEMENTSOF(states); s++)
                for (unsigned origin = 0; origin < _LEDGER_ORIGIN_MAX; origin++)
                for (unsigned pending = 0; pending < 2; pending++)
                for (size_t b = 0; b < ELEMENTSOF(boots); b++)
                for (size_t t = 0; t < ELEMENTSOF(sinces); t++)
                for (size_t o = 0; o < ELEMENTSOF(owners); o++) {
                        /* Free records have no guest; the others one. */
                        if ((states[s] == LEDGER_FREE) != (owners[o][0] == '\0'))
                                continue;
                        m.record = (LedgerEntry) {
                                .uuid = U,
                                .parent = "0000:84:00.0",
                                .type = "nvidia-35",
                                .state = states[s],
                                .origin = origin,
                                .since = sinces[t],
                                .remove_pending = pending,
                        };
                        snprintf(m.record.guest, sizeof m.record.guest, "%s", owners[o]);
                        if (owners[o][0])
                                snprintf(m.record.guest_uuid, sizeof m.record.guest_uuid, "%s",
                                         guest_uuids[owners[o][0] == 'h']);
                        snprintf(m.record.boot_id, sizeof m.record.boot_id, "%s", boots[b]);
                        run_case(&m);
                }
        }

        printf("%u states, %u findings: every rule held and every second run was idle\n", n_cases, n_findings);
        /* Every state of the model was planned for: a loop above that
         * skips more than it should would shrink it. */
        check(n_cases == 10880);
        return EXIT_SUCCESS;
}
