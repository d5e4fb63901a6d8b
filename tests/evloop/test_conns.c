/* tests for evloop/conns.c: the record of every resource, found by pointer,
 * growing past its first capacity while resources are lent out. */
#include "fixture.h"

#include <stdlib.h>

#define MANY 1500 /* past the first capacity of an unbounded pool (1024) */

static int made;
static int destroyed;

static void make_int(struct tide_evpool *pool, struct tide_make *token,
                     void *arg)
{
    (void)pool;
    (void)arg;
    int *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    *r = made++;
    tide_evpool_made(token, r);
}

static void destroy_int(void *resource, void *arg)
{
    (void)arg;
    destroyed++;
    free(resource);
}

static int *lent[MANY];

static void take(struct tide_evpool *pool, int status, void *resource,
                 const struct tide_why *why, void *arg)
{
    (void)pool;
    (void)why;
    int **slot = arg;
    ck_assert_int_eq(status, 0);
    ck_assert_ptr_null(*slot);
    *slot = resource;
}

static bool all_answered(void)
{
    for (int i = 0; i < MANY; i++)
        if (!lent[i])
            return false;
    return true;
}

START_TEST(records_grow_while_resources_are_lent)
{
    made = destroyed = 0;
    fx->factory =
        (struct tide_factory){.make = make_int, .destroy = destroy_int};
    struct tide_evpool_options o = {
        .limits = TIDE_LIMITS(.size = TIDE_UNLIMITED, .idle = 100)};
    fixture_pool(&o);
    for (int i = 0; i < MANY; i++) {
        lent[i] = NULL;
        ck_assert_int_eq(tide_evpool_acquire(fx->pool, 0, take, &lent[i], NULL),
                         0);
    }
    ck_assert(run_until(all_answered, 2000));
    ck_assert_int_eq(made, MANY);
    struct tide_evpool_stats s = stats();
    ck_assert_int_eq(s.lent, MANY);
    ck_assert_int_eq(s.live, MANY);
    /* every one is distinct, and each is found again by its pointer after
     * the records moved: the first 100 released stay idle, the others are
     * closed (and then unknown) */
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(*lent[i], i);
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(tide_evpool_release(fx->pool, lent[i]), 0);
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(tide_evpool_release(fx->pool, lent[i]),
                         i < 100 ? TIDE_EBUSY : TIDE_EUNKNOWN);
    s = stats();
    ck_assert_int_eq(s.idle, 100);
    ck_assert_int_eq(destroyed, MANY - 100);
    ck_assert_int_eq(tide_evpool_close(fx->pool, fixture_closed, NULL), 0);
    ck_assert_int_eq(destroyed, MANY);
}
END_TEST

static Suite *conns_suite(void)
{
    Suite *s = suite_create("conns");
    TCase *tc = tcase_create("records");
    fixture_add(tc);
    tcase_add_test(tc, records_grow_while_resources_are_lent);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(conns_suite)
