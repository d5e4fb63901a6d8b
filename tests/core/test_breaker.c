/* tests for core/breaker.c: states, the built-in policies, strategies. */
#include <tidepool/core.h>

#include "runner.h"

static struct tide_breaker *new_breaker(struct tide_breaker_options o)
{
    struct tide_breaker *b = NULL;
    ck_assert_int_eq(tide_breaker_new(&o, &b), 0);
    return b;
}

START_TEST(starts_active_refusing_nothing)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){0});
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    ck_assert(tide_breaker_refusal(b, 0) == 0.0);
    ck_assert(tide_breaker_admit(b, 0, 0.0));
    tide_breaker_free(b);
}
END_TEST

START_TEST(adaptive_share_follows_the_sre_formula)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){.k = 2});
    /* 10 attempts, 3 successes: (10 - 6) / 11 */
    for (int i = 0; i < 3; i++)
        tide_breaker_success(b, 0);
    for (int i = 0; i < 7; i++)
        tide_breaker_failure(b, 0);
    ck_assert_double_eq_tol(tide_breaker_refusal(b, 0), 4.0 / 11.0, 1e-12);
    /* healthy enough: attempts <= k x successes refuses none */
    for (int i = 0; i < 4; i++)
        tide_breaker_success(b, 0); /* 14 attempts, 7 successes */
    ck_assert(tide_breaker_refusal(b, 0) == 0.0);
    tide_breaker_free(b);
}
END_TEST

START_TEST(adaptive_refused_attempts_count)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){0});
    tide_breaker_failure(b, 0);                /* 1 attempt: 1/2 */
    ck_assert(!tide_breaker_admit(b, 0, 0.1)); /* refused, 2 attempts: 2/3 */
    ck_assert_double_eq_tol(tide_breaker_refusal(b, 0), 2.0 / 3.0, 1e-12);
    ck_assert(tide_breaker_admit(b, 0, 0.9));
    tide_breaker_free(b);
}
END_TEST

START_TEST(adaptive_history_slides_out_of_the_window)
{
    struct tide_breaker *b =
        new_breaker((struct tide_breaker_options){.window = TIDE_SEC(16)});
    for (int i = 0; i < 9; i++)
        tide_breaker_failure(b, 0);
    ck_assert_double_eq_tol(tide_breaker_refusal(b, TIDE_SEC(15)), 0.9, 1e-12);
    ck_assert(tide_breaker_refusal(b, TIDE_SEC(16)) == 0.0);
    tide_breaker_free(b);
}
END_TEST

START_TEST(adaptive_never_deactivates_by_itself)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){0});
    for (int i = 0; i < 1000; i++)
        tide_breaker_failure(b, 0);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    tide_breaker_free(b);
}
END_TEST

START_TEST(manual_deactivate_holds_until_activate)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){0});
    tide_breaker_deactivate(b, 0);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    ck_assert(!tide_breaker_admit(b, TIDE_MIN(60), 0.99));
    ck_assert(tide_breaker_refusal(b, 0) == 1.0);
    tide_breaker_activate(b, TIDE_MIN(60));
    ck_assert(tide_breaker_admit(b, TIDE_MIN(60), 0.0));
    tide_breaker_free(b);
}
END_TEST

START_TEST(activate_forgets_adaptive_history)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){0});
    for (int i = 0; i < 9; i++)
        tide_breaker_failure(b, 0);
    tide_breaker_activate(b, 1);
    ck_assert(tide_breaker_refusal(b, 1) == 0.0);
    tide_breaker_free(b);
}
END_TEST

START_TEST(strikes_deactivate_after_n_in_a_row)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 5});
    for (int i = 0; i < 4; i++)
        tide_breaker_failure(b, 0);
    tide_breaker_success(b, 0); /* resets the count */
    for (int i = 0; i < 4; i++)
        tide_breaker_failure(b, 0);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    tide_breaker_failure(b, 0);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    tide_breaker_free(b);
}
END_TEST

START_TEST(strikes_recover_after_cooldown)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_SEC(5)});
    tide_breaker_failure(b, TIDE_SEC(1));
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(6) - 1, 0.5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(6), 0.5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_RECOVERING);
    tide_breaker_free(b);
}
END_TEST

START_TEST(retry_after_is_the_rest_of_the_cooldown)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .cooldown = TIDE_SEC(5)});
    ck_assert_int_eq(tide_breaker_retry_after(b, 0), 0); /* not open */
    tide_breaker_failure(b, TIDE_SEC(1));
    ck_assert_int_eq(tide_breaker_retry_after(b, TIDE_SEC(2)), TIDE_SEC(4));
    ck_assert_int_eq(tide_breaker_retry_after(b, TIDE_SEC(6)), 0);
    tide_breaker_free(b);
    /* adaptive: a manual deactivate holds; nothing to promise */
    b = new_breaker((struct tide_breaker_options){0});
    tide_breaker_deactivate(b, 0);
    ck_assert_int_eq(tide_breaker_retry_after(b, 1), 0);
    tide_breaker_free(b);
}
END_TEST

START_TEST(recovering_bounds_probes)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .probes = 2});
    tide_breaker_failure(b, 0);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(tide_breaker_refusal(b, TIDE_SEC(5)) == 1.0);
    tide_breaker_free(b);
}
END_TEST

/* A probe given up with no outcome gives its place back, once: another
 * may probe, the state stays RECOVERING, and outside RECOVERING (or with
 * no probe out) a forgo changes nothing. */
START_TEST(forgone_probe_gives_its_place_back)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1, .probes = 1});
    tide_breaker_forgo(b, 0); /* ACTIVE: nothing to give back */
    ck_assert(tide_breaker_admit(b, 0, 0.5));
    tide_breaker_failure(b, 0);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    tide_breaker_forgo(b, TIDE_SEC(5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_RECOVERING);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    /* twice for one probe, or with none out: never below none */
    tide_breaker_forgo(b, TIDE_SEC(5));
    tide_breaker_forgo(b, TIDE_SEC(5));
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    tide_breaker_success(b, TIDE_SEC(5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    tide_breaker_forgo(NULL, 0);
    tide_breaker_free(b);
}
END_TEST

START_TEST(recovering_success_returns_to_active)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 1});
    tide_breaker_failure(b, 0);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    tide_breaker_success(b, TIDE_SEC(5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    tide_breaker_free(b);
}
END_TEST

START_TEST(recovering_failure_returns_to_inactive)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 3, .cooldown = TIDE_SEC(5)});
    for (int i = 0; i < 3; i++)
        tide_breaker_failure(b, 0);
    ck_assert(tide_breaker_admit(b, TIDE_SEC(5), 0.5));
    tide_breaker_failure(b, TIDE_SEC(6));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    /* the cooldown starts again from the failed probe */
    ck_assert(!tide_breaker_admit(b, TIDE_SEC(10), 0.5));
    ck_assert(tide_breaker_admit(b, TIDE_SEC(11), 0.5));
    tide_breaker_free(b);
}
END_TEST

/* A strategy that records its calls and trips on the first failure. */
struct journal {
    int successes;
    int failures;
    int asked;
    bool recover;
};

static void on_success(struct tide_breaker *b, int64_t now, void *arg)
{
    ((struct journal *)arg)->successes++;
    tide_breaker_activate(b, now);
}

static void on_failure(struct tide_breaker *b, int64_t now, void *arg)
{
    ((struct journal *)arg)->failures++;
    tide_breaker_deactivate(b, now);
}

static bool on_recover(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    struct journal *j = arg;
    j->asked++;
    return j->recover;
}

static double half(struct tide_breaker *b, int64_t now, void *arg)
{
    (void)b;
    (void)now;
    (void)arg;
    return 0.5;
}

static const struct tide_breaker_strategy journal_strategy = {
    .report_success = on_success,
    .report_failure = on_failure,
    .should_recover = on_recover,
};

START_TEST(strategy_hears_every_success_and_failure)
{
    struct journal j = {0};
    struct tide_breaker *b =
        new_breaker((struct tide_breaker_options){.policy = TIDE_BREAKER_CUSTOM,
                                                  .strategy = &journal_strategy,
                                                  .strategy_arg = &j});
    tide_breaker_success(b, 0);
    tide_breaker_success(b, 0);
    tide_breaker_failure(b, 0);
    ck_assert_int_eq(j.successes, 2);
    ck_assert_int_eq(j.failures, 1);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    ck_assert(!tide_breaker_admit(b, 1, 0.5));
    ck_assert_int_eq(j.asked, 1);
    j.recover = true;
    ck_assert(tide_breaker_admit(b, 2, 0.5));
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_RECOVERING);
    tide_breaker_free(b);
}
END_TEST

START_TEST(strategy_refusal_applies_while_active)
{
    struct tide_breaker_strategy s = journal_strategy;
    s.refusal = half;
    struct journal j = {0};
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_CUSTOM, .strategy = &s, .strategy_arg = &j});
    ck_assert(tide_breaker_refusal(b, 0) == 0.5);
    ck_assert(!tide_breaker_admit(b, 0, 0.49));
    ck_assert(tide_breaker_admit(b, 0, 0.5));
    tide_breaker_free(b);
}
END_TEST

START_TEST(set_strategy_installs_and_removes)
{
    struct journal j = {0};
    struct tide_breaker *b = new_breaker(
        (struct tide_breaker_options){.policy = TIDE_BREAKER_STRIKES});
    ck_assert_int_eq(tide_breaker_set_strategy(b, &journal_strategy, &j), 0);
    tide_breaker_failure(b, 0);
    ck_assert_int_eq(j.failures, 1);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_INACTIVE);
    tide_breaker_activate(b, 0);
    ck_assert_int_eq(tide_breaker_set_strategy(b, NULL, NULL), 0);
    tide_breaker_failure(b, 0); /* STRIKES again: one of five */
    ck_assert_int_eq(j.failures, 1);
    ck_assert_int_eq(tide_breaker_state(b), TIDE_BREAKER_ACTIVE);
    struct tide_breaker_strategy incomplete = {.report_success = on_success};
    ck_assert_int_eq(tide_breaker_set_strategy(b, &incomplete, &j),
                     TIDE_EBREAKER);
    tide_breaker_free(b);
}
END_TEST

START_TEST(bad_options_refused)
{
    struct tide_breaker *b = NULL;
    struct tide_breaker_options o = {.k = 0.5};
    ck_assert_int_eq(tide_breaker_new(&o, &b), TIDE_EBREAKER);
    o = (struct tide_breaker_options){.window = -1};
    ck_assert_int_eq(tide_breaker_new(&o, &b), TIDE_EBREAKER);
    o = (struct tide_breaker_options){.policy = TIDE_BREAKER_CUSTOM};
    ck_assert_int_eq(tide_breaker_new(&o, &b), TIDE_EBREAKER);
    o = (struct tide_breaker_options){.policy = (enum tide_breaker_policy)9};
    ck_assert_int_eq(tide_breaker_new(&o, &b), TIDE_EBREAKER);
    ck_assert_int_eq(tide_breaker_new(NULL, NULL), TIDE_EINVAL);
    ck_assert_ptr_null(b);
}
END_TEST

#include "breaker_listen.h"

static int heard;

static void count_change(void *arg)
{
    (void)arg;
    heard++;
}

/* The listener hears every change of state, whoever made it, and nothing
 * else: a runtime holding parked callers wakes them on it. */
START_TEST(listener_hears_every_change_of_state)
{
    struct tide_breaker *b = new_breaker((struct tide_breaker_options){
        .policy = TIDE_BREAKER_STRIKES, .strikes = 2, .cooldown = 100});
    heard = 0;
    tide__breaker_listen(b, count_change, NULL);
    tide_breaker_success(b, 0);
    tide_breaker_failure(b, 0);
    ck_assert_int_eq(heard, 0); /* still ACTIVE */
    tide_breaker_failure(b, 0); /* the policy opens it */
    ck_assert_int_eq(heard, 1);
    ck_assert(!tide_breaker_admit(b, 50, 0.5)); /* still cooling down */
    ck_assert_int_eq(heard, 1);
    ck_assert(tide_breaker_admit(b, 100, 0.5)); /* RECOVERING */
    ck_assert_int_eq(heard, 2);
    tide_breaker_success(b, 100); /* ACTIVE */
    ck_assert_int_eq(heard, 3);
    tide_breaker_deactivate(b, 200); /* by hand */
    ck_assert_int_eq(heard, 4);
    tide_breaker_deactivate(b, 200); /* no change */
    ck_assert_int_eq(heard, 4);
    tide_breaker_activate(b, 300);
    ck_assert_int_eq(heard, 5);
    tide__breaker_listen(b, NULL, NULL);
    tide_breaker_deactivate(b, 400);
    ck_assert_int_eq(heard, 5);
    tide_breaker_free(b);
}
END_TEST

START_TEST(null_breaker_refuses_nothing_and_never_crashes)
{
    ck_assert_int_eq(tide_breaker_state(NULL), TIDE_BREAKER_ACTIVE);
    ck_assert(tide_breaker_admit(NULL, 0, 0.5));
    ck_assert(tide_breaker_refusal(NULL, 0) == 0.0);
    ck_assert_int_eq(tide_breaker_retry_after(NULL, 0), 0);
    ck_assert_int_eq(tide_breaker_set_strategy(NULL, NULL, NULL), TIDE_EINVAL);
    tide_breaker_activate(NULL, 0);
    tide_breaker_deactivate(NULL, 0);
    tide_breaker_success(NULL, 0);
    tide_breaker_failure(NULL, 0);
    tide_breaker_free(NULL);
    ck_assert_int_eq(tide_breaker_new(NULL, NULL), TIDE_EINVAL);
}
END_TEST

static Suite *breaker_suite(void)
{
    Suite *s = suite_create("breaker");
    TCase *tc = tcase_create("states");
    tcase_add_test(tc, starts_active_refusing_nothing);
    tcase_add_test(tc, manual_deactivate_holds_until_activate);
    tcase_add_test(tc, recovering_bounds_probes);
    tcase_add_test(tc, forgone_probe_gives_its_place_back);
    tcase_add_test(tc, retry_after_is_the_rest_of_the_cooldown);
    tcase_add_test(tc, recovering_success_returns_to_active);
    tcase_add_test(tc, recovering_failure_returns_to_inactive);
    tcase_add_test(tc, bad_options_refused);
    tcase_add_test(tc, listener_hears_every_change_of_state);
    tcase_add_test(tc, null_breaker_refuses_nothing_and_never_crashes);
    suite_add_tcase(s, tc);

    tc = tcase_create("policies");
    tcase_add_test(tc, adaptive_share_follows_the_sre_formula);
    tcase_add_test(tc, adaptive_refused_attempts_count);
    tcase_add_test(tc, adaptive_history_slides_out_of_the_window);
    tcase_add_test(tc, adaptive_never_deactivates_by_itself);
    tcase_add_test(tc, activate_forgets_adaptive_history);
    tcase_add_test(tc, strikes_deactivate_after_n_in_a_row);
    tcase_add_test(tc, strikes_recover_after_cooldown);
    suite_add_tcase(s, tc);

    tc = tcase_create("strategy");
    tcase_add_test(tc, strategy_hears_every_success_and_failure);
    tcase_add_test(tc, strategy_refusal_applies_while_active);
    tcase_add_test(tc, set_strategy_installs_and_removes);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(breaker_suite)
