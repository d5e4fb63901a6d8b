/* demos/web/events.c: the engine's event queue, in virtual time. */
#include "events.h"
#include "runner.h"

START_TEST(empty_queue_has_nothing_due)
{
    struct web_events q;
    web_events_init(&q);
    struct web_event ev;
    ck_assert(!web_events_pop(&q, &ev));
    ck_assert(web_events_next(&q) == INT64_MAX);
    web_events_dispose(&q);
}
END_TEST

START_TEST(pops_in_time_order)
{
    struct web_events q;
    web_events_init(&q);
    /* a scrambled order, past the first growth of the heap */
    for (uint32_t i = 0; i < 1000; i++)
        ck_assert(web_events_push(
            &q,
            (struct web_event){.at = (int64_t)(i * 7919 % 1000), .who = i}));
    struct web_event ev;
    int64_t last = -1;
    for (int i = 0; i < 1000; i++) {
        ck_assert(web_events_pop(&q, &ev));
        ck_assert_int_ge(ev.at, last);
        last = ev.at;
    }
    ck_assert(!web_events_pop(&q, &ev));
    web_events_dispose(&q);
}
END_TEST

START_TEST(same_time_pops_in_scheduling_order)
{
    struct web_events q;
    web_events_init(&q);
    for (uint32_t i = 0; i < 300; i++)
        ck_assert(web_events_push(
            &q, (struct web_event){.at = i % 3 ? 5 : 9, .who = i}));
    struct web_event ev;
    uint32_t prev5 = 0, prev9 = 0;
    bool first5 = true, first9 = true;
    for (int i = 0; i < 300; i++) {
        ck_assert(web_events_pop(&q, &ev));
        if (ev.at == 5) {
            ck_assert(first5 || ev.who > prev5);
            prev5 = ev.who;
            first5 = false;
        } else {
            ck_assert(!first5); /* every 5 before any 9 */
            ck_assert(first9 || ev.who > prev9);
            prev9 = ev.who;
            first9 = false;
        }
    }
    web_events_dispose(&q);
}
END_TEST

START_TEST(next_is_the_earliest)
{
    struct web_events q;
    web_events_init(&q);
    ck_assert(web_events_push(&q, (struct web_event){.at = 40}));
    ck_assert(web_events_push(&q, (struct web_event){.at = 10}));
    ck_assert(web_events_push(&q, (struct web_event){.at = 30}));
    ck_assert(web_events_next(&q) == 10);
    web_events_dispose(&q);
}
END_TEST

static Suite *events_suite(void)
{
    Suite *s = suite_create("web_events");
    TCase *tc = tcase_create("events");
    tcase_add_test(tc, empty_queue_has_nothing_due);
    tcase_add_test(tc, pops_in_time_order);
    tcase_add_test(tc, same_time_pops_in_scheduling_order);
    tcase_add_test(tc, next_is_the_earliest);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(events_suite)
