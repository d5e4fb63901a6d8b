/* demos/web/engine.c: the virtual-time engine, one behaviour per test, on
 * the terminal simulator's run (the presets: a pool of 8; burst in seconds
 * 7-10, outage in 15-18, rows numbered from 1) unless a test says. */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "runner.h"

#define MAX_ROWS 64

struct run {
    struct web_row rows[MAX_ROWS];
    int64_t n;
    uint64_t decisions;
};

/* Runs the presets with `n` overrides (index, value) to the end. */
static void run_with(struct run *out, const int *keys, const double *values,
                     int n)
{
    double p[WEB_PARAMS];
    web_params_preset(p);
    for (int i = 0; i < n; i++)
        p[keys[i]] = values[i];
    struct web_engine *e = NULL;
    ck_assert_int_eq(web_engine_new(p, &e), 0);
    out->n = web_engine_run(e, INT64_MAX);
    ck_assert(web_engine_done(e));
    ck_assert_int_le(out->n, MAX_ROWS);
    for (int64_t i = 0; i < out->n; i++)
        out->rows[i] = *web_engine_row(e, i);
    out->decisions = web_engine_decisions(e);
    web_engine_free(e);
}

#define RUN(out, ...)                                                          \
    do {                                                                       \
        const struct {                                                         \
            int k;                                                             \
            double v;                                                          \
        } set_[] = {{WEB_P_SEED, 1}, __VA_ARGS__};                             \
        int keys_[sizeof set_ / sizeof set_[0]];                               \
        double values_[sizeof set_ / sizeof set_[0]];                          \
        for (size_t i_ = 0; i_ < sizeof set_ / sizeof set_[0]; i_++) {         \
            keys_[i_] = set_[i_].k;                                            \
            values_[i_] = set_[i_].v;                                          \
        }                                                                      \
        run_with((out), keys_, values_, (int)(sizeof set_ / sizeof set_[0]));  \
    } while (0)

static bool saw(const struct web_row *r, enum tide_breaker_state b)
{
    for (int i = 0; i < r->n_trail; i++)
        if (r->trail[i] == b)
            return true;
    return false;
}

static int64_t sum(const struct run *r, int64_t from, int64_t to, size_t offset)
{
    int64_t total = 0;
    for (int64_t s = from; s <= to; s++) {
        int64_t v;
        memcpy(&v, (const char *)&r->rows[s - 1] + offset, sizeof v);
        total += v;
    }
    return total;
}
#define SUM(r, from, to, field)                                                \
    sum((r), (from), (to), offsetof(struct web_row, field))

static struct run a, b;

START_TEST(new_refuses_parameters_out_of_range)
{
    double p[WEB_PARAMS];
    struct web_engine *e = (struct web_engine *)&e;
    const struct {
        int k;
        double v;
    } bad[] = {{WEB_P_SIZE, 0},
               {WEB_P_SIZE, 1e300},
               {WEB_P_KEEP_S, NAN},
               {WEB_P_SEED, -1},
               {WEB_P_MIN, 9},
               {WEB_P_QUEUE_MAX, 0},
               {WEB_P_SECONDS, 0},
               {WEB_P_OUTAGE_START_S, 1e7},
               {WEB_P_ACQUIRE_TIMEOUT_MS, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        web_params_preset(p);
        p[bad[i].k] = bad[i].v;
        ck_assert_int_eq(web_engine_new(p, &e), TIDE_EINVAL);
        ck_assert_ptr_null(e);
    }
    ck_assert_int_eq(web_engine_new(NULL, &e), TIDE_EINVAL);
    web_params_preset(p);
    ck_assert_int_eq(web_engine_new(p, NULL), TIDE_EINVAL);
}
END_TEST

START_TEST(check_names_the_parameter_at_fault)
{
    double p[WEB_PARAMS];
    web_params_preset(p);
    ck_assert_int_eq(web_params_check(p), -1);
    const struct {
        int k;
        double v;
    } bad[] = {{WEB_P_SIZE, 0},         {WEB_P_SIZE, 12.5},
               {WEB_P_SEED, 1.5},       {WEB_P_SECONDS, 24.5},
               {WEB_P_KEEP_S, 2.5},     {WEB_P_OUTAGE_START_S, NAN},
               {WEB_P_STRIKES, 0.5},    {WEB_P_BREAKER, 3},
               {WEB_P_BREAKER, 1.5},    {WEB_P_BACKOFF, 2},
               {WEB_P_SHEDDER, 7},      {WEB_P_MIN, 9},
               {WEB_P_RATE_BURST, 2e6}, {WEB_P_ACQUIRE_TIMEOUT_MS, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        web_params_preset(p);
        p[bad[i].k] = bad[i].v;
        ck_assert_msg(web_params_check(p) == bad[i].k, "%s=%g: check says %d",
                      web_param_name(bad[i].k), bad[i].v, web_params_check(p));
        struct web_engine *e;
        ck_assert_int_eq(web_engine_new(p, &e), TIDE_EINVAL);
    }
    /* fractions where the engine keeps them */
    web_params_preset(p);
    p[WEB_P_SPREAD] = 0.3;
    p[WEB_P_SERVICE_MS] = 2.5;
    p[WEB_P_ACQUIRE_TIMEOUT_MS] = 0.5;
    ck_assert_int_eq(web_params_check(p), -1);
}
END_TEST

START_TEST(new_passes_the_cores_refusal_on)
{
    double p[WEB_PARAMS];
    web_params_preset(p);
    p[WEB_P_SPREAD] = 2;
    struct web_engine *e;
    ck_assert_int_eq(web_engine_new(p, &e), TIDE_ELIMITS);
    web_params_preset(p);
    p[WEB_P_BREAKER_K] = 0.5;
    ck_assert_int_eq(web_engine_new(p, &e), TIDE_EBREAKER);
}
END_TEST

START_TEST(param_names_find_their_index)
{
    for (int i = 0; i < WEB_PARAMS; i++) {
        ck_assert_ptr_nonnull(web_param_name(i));
        ck_assert_int_eq(web_param_find(web_param_name(i)), i);
    }
    ck_assert_ptr_null(web_param_name(WEB_PARAMS));
    ck_assert_int_eq(web_param_find("no_such"), -1);
}
END_TEST

START_TEST(a_row_a_second_in_the_phases_of_the_run)
{
    RUN(&a, {WEB_P_SEED, 1});
    ck_assert_int_eq(a.n, 24);
    const enum web_phase want[] = {
        WEB_CALM,   WEB_CALM,   WEB_CALM,   WEB_CALM,    WEB_CALM,
        WEB_CALM,   WEB_BURST,  WEB_BURST,  WEB_BURST,   WEB_BURST,
        WEB_DRAIN,  WEB_DRAIN,  WEB_DRAIN,  WEB_DRAIN,   WEB_OUTAGE,
        WEB_OUTAGE, WEB_OUTAGE, WEB_OUTAGE, WEB_RECOVERY};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_int_eq(a.rows[i].second, (int64_t)i + 1);
        ck_assert_int_eq(a.rows[i].phase, want[i]);
    }
}
END_TEST

START_TEST(same_seed_same_rows_other_seed_other_rows)
{
    RUN(&a, {WEB_P_SEED, 7});
    RUN(&b, {WEB_P_SEED, 7});
    ck_assert_int_eq(memcmp(a.rows, b.rows, sizeof a.rows), 0);
    RUN(&b, {WEB_P_SEED, 8});
    ck_assert_int_ne(memcmp(a.rows, b.rows, sizeof a.rows), 0);
}
END_TEST

START_TEST(rows_do_not_depend_on_the_steps)
{
    RUN(&a, {WEB_P_SEED, 5});
    double p[WEB_PARAMS];
    web_params_preset(p);
    p[WEB_P_SEED] = 5;
    struct web_engine *e;
    ck_assert_int_eq(web_engine_new(p, &e), 0);
    for (int64_t t = 0; !web_engine_done(e); t += TIDE_US(700))
        web_engine_run(e, t);
    for (int64_t i = 0; i < a.n; i++)
        ck_assert_int_eq(
            memcmp(web_engine_row(e, i), &a.rows[i], sizeof a.rows[i]), 0);
    ck_assert_ptr_null(web_engine_row(e, a.n));
    web_engine_free(e);
}
END_TEST

START_TEST(calm_serves_all_and_refuses_none)
{
    RUN(&a, {WEB_P_SEED, 1});
    for (int64_t s = 1; s <= 6; s++) {
        const struct web_row *r = &a.rows[s - 1];
        ck_assert_int_gt(r->served, 30);
        ck_assert_int_eq(r->timeouts + r->queue_full + r->shed, 0);
        ck_assert_int_eq(r->n_trail, 1);
        ck_assert_int_eq(r->trail[0], TIDE_BREAKER_ACTIVE);
    }
}
END_TEST

START_TEST(burst_queues_past_the_pool_then_drains)
{
    RUN(&a, {WEB_P_SEED, 1});
    ck_assert_int_gt(a.rows[7].waiting, 8);
    ck_assert_int_eq(a.rows[7].lent, 8);
    ck_assert_int_le(a.rows[11].waiting, 1);
    ck_assert_int_gt(a.rows[11].idle, 2);
}
END_TEST

START_TEST(larger_pool_waits_less_in_the_burst)
{
    RUN(&a, {WEB_P_SEED, 1});
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_SIZE, 16});
    ck_assert_int_lt(SUM(&b, 7, 10, waiting), SUM(&a, 7, 10, waiting));
    ck_assert_int_gt(SUM(&b, 7, 10, served), SUM(&a, 7, 10, served));
}
END_TEST

START_TEST(outage_fails_makes_opens_the_breaker_and_sheds)
{
    RUN(&a, {WEB_P_SEED, 1});
    ck_assert_int_gt(SUM(&a, 15, 18, make_failures), 0);
    /* makes held while they fail, one probe at a time: a few failures a
     * second, so the five strikes take the outage's first second or two */
    ck_assert_int_le(a.rows[14].make_failures, 8);
    ck_assert(saw(&a.rows[14], TIDE_BREAKER_INACTIVE) ||
              saw(&a.rows[15], TIDE_BREAKER_INACTIVE));
    ck_assert_int_gt(SUM(&a, 15, 18, shed_breaker), 0);
    ck_assert_int_eq(SUM(&a, 16, 18, served), 0);
    ck_assert_int_eq(a.rows[16].refusal_pm, 1000);
}
END_TEST

START_TEST(backoff_holds_makes_after_a_failure)
{
    RUN(&a, {WEB_P_SEED, 1});
    ck_assert_int_gt(SUM(&a, 15, 18, later_backoff), 0);
    ck_assert_int_gt(a.rows[14].backoff_span, 0);
}
END_TEST

START_TEST(recovery_probes_and_closes_the_breaker)
{
    RUN(&a, {WEB_P_SEED, 1});
    ck_assert(saw(&a.rows[18], TIDE_BREAKER_RECOVERING));
    const struct web_row *last = &a.rows[a.n - 1];
    ck_assert_int_eq(last->trail[last->n_trail - 1], TIDE_BREAKER_ACTIVE);
    ck_assert_int_gt(last->served, 30);
    ck_assert_int_eq(last->refusal_pm, 0);
}
END_TEST

/* Without a breaker the outage's callers are not shed: makes are held
 * after each failed one, and the callers who would need one are told so
 * (held) rather than left to time out; the backend sees a probe a hold. */
START_TEST(no_breaker_means_held_not_shed_in_the_outage)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_BREAKER, 0});
    ck_assert_int_eq(SUM(&a, 1, 24, shed_breaker), 0);
    ck_assert_int_gt(SUM(&a, 15, 18, held), 0);
    ck_assert_int_eq(SUM(&a, 15, 18, timeouts), 0);
    ck_assert_int_le(SUM(&a, 16, 18, make_failures), 6);
}
END_TEST

START_TEST(bounded_queue_refuses_when_full)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_QUEUE_MAX, 16});
    ck_assert_int_gt(SUM(&a, 7, 10, queue_full), 0);
    for (int64_t s = 7; s <= 10; s++)
        ck_assert_int_le(a.rows[s - 1].waiting, 16);
}
END_TEST

START_TEST(short_acquire_timeout_times_callers_out)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_ACQUIRE_TIMEOUT_MS, 50});
    ck_assert_int_gt(SUM(&a, 7, 10, timeouts), 0);
    ck_assert_int_lt(a.rows[8].p99, TIDE_MS(60));
}
END_TEST

START_TEST(bucket_spaces_makes)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_BUCKET_RATE, 2}, {WEB_P_BUCKET_BURST, 1},
        {WEB_P_MIN, 0});
    ck_assert_int_gt(SUM(&a, 1, 24, later_bucket), 0);
    ck_assert_int_le(SUM(&a, 1, 14, made), 2 * 14 + 1);
}
END_TEST

START_TEST(shedder_sheds_when_loans_overrun)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_LOAN_TARGET_MS, 20},
        {WEB_P_SLOW_SHARE, 0.1});
    ck_assert_int_gt(SUM(&a, 7, 10, shed_shedder), 0);
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_SLOW_SHARE, 0.1});
    ck_assert_int_eq(SUM(&b, 1, 24, shed_shedder), 0);
}
END_TEST

START_TEST(shedder_sheds_when_the_loop_lags)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_BURST_LAG_MS, 80});
    ck_assert_int_gt(SUM(&a, 7, 10, shed_shedder), 0);
    ck_assert_int_eq(SUM(&a, 1, 6, shed_shedder), 0);
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_BURST_LAG_MS, 80}, {WEB_P_SHEDDER, 0});
    ck_assert_int_eq(SUM(&b, 1, 24, shed_shedder), 0);
}
END_TEST

START_TEST(server_idle_cut_makes_the_pool_reconnect)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_KEEP_S, 30});
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_KEEP_S, 30}, {WEB_P_SERVER_IDLE_S, 1});
    ck_assert_int_gt(SUM(&b, 11, 14, made), SUM(&a, 11, 14, made));
    ck_assert_int_eq(SUM(&b, 11, 14, make_failures), 0);
}
END_TEST

START_TEST(keep_retires_what_the_burst_left_idle)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_KEEP_S, 1});
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_KEEP_S, 60});
    ck_assert_int_lt(a.rows[13].idle + a.rows[13].lent,
                     b.rows[13].idle + b.rows[13].lent);
}
END_TEST

START_TEST(min_is_made_at_start)
{
    RUN(&a, {WEB_P_SEED, 1}, {WEB_P_MIN, 4}, {WEB_P_RATE_CALM, 0});
    ck_assert_int_eq(a.rows[0].made, 4);
    ck_assert_int_eq(a.rows[0].idle, 4);
}
END_TEST

/* The square wave: bursts and calm spells of 2 s by turns in seconds
 * 7-18, keep long enough to retire nothing itself. With demand and
 * preconnect the bursts after the first are served by what the first left
 * (next to nothing made or waited for), and after the wave the
 * pool steps down, where without them it keeps the burst's connections. */
#define WAVE                                                                   \
    {WEB_P_WAVE_S, 2}, {WEB_P_BURST_LEN_S, 12}, {WEB_P_OUTAGE_START_S, 30},    \
        {WEB_P_SECONDS, 40}, {WEB_P_KEEP_S, 600},                              \
    {                                                                          \
        WEB_P_SIZE, 24                                                         \
    }

START_TEST(square_wave_keeps_connections_by_demand)
{
    RUN(&a, WAVE, {WEB_P_DEMAND_S, 6}, {WEB_P_PRECONNECT, 0.8});
    RUN(&b, WAVE);
    ck_assert_int_eq(a.rows[6].phase, WEB_BURST);
    ck_assert_int_eq(a.rows[8].phase, WEB_CALM);
    ck_assert_int_eq(a.rows[10].phase, WEB_BURST);
    ck_assert_int_eq(a.rows[19].phase, WEB_DRAIN);
    /* from the second burst (second 11) on: a make or two as a burst's
     * random peak passes the first's, hardly a caller waiting on one */
    ck_assert_int_le(SUM(&a, 11, 18, made), 3);
    ck_assert_int_le(SUM(&a, 11, 18, connect_waits) * 100,
                     SUM(&a, 11, 18, served)); /* <= 1% */
    ck_assert_int_gt(SUM(&a, 1, 18, preconnects), 0);
    ck_assert_int_gt(SUM(&a, 19, 30, demand_retired), 0);
    const struct web_row *end = &a.rows[29];
    ck_assert_int_le(end->lent + end->idle,
                     2 * (end->needed > 2 ? end->needed : 2));
    ck_assert_int_lt(end->lent + end->idle, b.rows[29].lent + b.rows[29].idle);
    ck_assert_int_eq(SUM(&b, 1, 30, demand_retired), 0);
    ck_assert_int_eq(SUM(&b, 1, 30, preconnects), 0);
}
END_TEST

/* Both off (the presets): the knobs change no row. */
START_TEST(demand_off_changes_nothing)
{
    RUN(&a, {WEB_P_SEED, 1});
    RUN(&b, {WEB_P_SEED, 1}, {WEB_P_RETIRE, 0.25});
    ck_assert_int_eq(a.n, b.n);
    for (int64_t i = 0; i < a.n; i++) {
        char x[WEB_ROW_TEXT], y[WEB_ROW_TEXT];
        web_row_text(&a.rows[i], x);
        web_row_text(&b.rows[i], y);
        ck_assert_str_eq(x, y);
        ck_assert_int_eq(a.rows[i].preconnects + a.rows[i].demand_retired, 0);
    }
}
END_TEST

/* A quiet hour in virtual time after a burst, a window of a minute: the
 * pool comes down to what the calm needs (half the burst's) and then
 * neither grows nor churns: as the calm's random peak moves, a connection
 * is made now and then, under 0.2 per 1,000 requests. */
START_TEST(quiet_hour_after_a_burst)
{
    double p[WEB_PARAMS];
    web_params_preset(p);
    p[WEB_P_SECONDS] = 3600;
    p[WEB_P_SIZE] = 24;
    p[WEB_P_KEEP_S] = 1800;
    p[WEB_P_OUTAGE_LEN_S] = 0;
    p[WEB_P_DEMAND_S] = 60;
    p[WEB_P_PRECONNECT] = 0.8;
    struct web_engine *e = NULL;
    ck_assert_int_eq(web_engine_new(p, &e), 0);
    ck_assert_int_eq(web_engine_run(e, INT64_MAX), 3600);
    int64_t made = 0, retired = 0, most = 0, served = 0, waits = 0;
    for (int64_t i = 180; i < 3600; i++) {
        const struct web_row *r = web_engine_row(e, i);
        made += r->made;
        retired += r->demand_retired;
        served += r->served;
        waits += r->connect_waits;
        most = r->lent + r->idle > most ? r->lent + r->idle : most;
        ck_assert_int_eq(r->timeouts + r->shed + r->queue_full, 0);
    }
    const struct web_row *burst = web_engine_row(e, 8);
    ck_assert_int_ge(burst->lent + burst->idle, 12);
    ck_assert_int_le(most, 12);
    ck_assert_int_gt(served, 100000);
    ck_assert_int_le(made * 5000, served); /* <= 0.2 per 1,000 */
    ck_assert_int_le(retired, made + 12);
    ck_assert_int_le(waits, 5);
    web_engine_free(e);
}
END_TEST

START_TEST(decisions_are_counted)
{
    RUN(&a, {WEB_P_SEED, 1});
    /* at least a take and a give per request served */
    ck_assert_uint_ge(a.decisions, 2 * (uint64_t)SUM(&a, 1, 24, served));
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("web_engine");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, new_refuses_parameters_out_of_range);
    tcase_add_test(tc, square_wave_keeps_connections_by_demand);
    tcase_add_test(tc, demand_off_changes_nothing);
    tcase_add_test(tc, quiet_hour_after_a_burst);
    tcase_add_test(tc, check_names_the_parameter_at_fault);
    tcase_add_test(tc, new_passes_the_cores_refusal_on);
    tcase_add_test(tc, param_names_find_their_index);
    tcase_add_test(tc, a_row_a_second_in_the_phases_of_the_run);
    tcase_add_test(tc, same_seed_same_rows_other_seed_other_rows);
    tcase_add_test(tc, rows_do_not_depend_on_the_steps);
    tcase_add_test(tc, calm_serves_all_and_refuses_none);
    tcase_add_test(tc, burst_queues_past_the_pool_then_drains);
    tcase_add_test(tc, larger_pool_waits_less_in_the_burst);
    tcase_add_test(tc, outage_fails_makes_opens_the_breaker_and_sheds);
    tcase_add_test(tc, backoff_holds_makes_after_a_failure);
    tcase_add_test(tc, recovery_probes_and_closes_the_breaker);
    tcase_add_test(tc, no_breaker_means_held_not_shed_in_the_outage);
    tcase_add_test(tc, bounded_queue_refuses_when_full);
    tcase_add_test(tc, short_acquire_timeout_times_callers_out);
    tcase_add_test(tc, bucket_spaces_makes);
    tcase_add_test(tc, shedder_sheds_when_loans_overrun);
    tcase_add_test(tc, shedder_sheds_when_the_loop_lags);
    tcase_add_test(tc, server_idle_cut_makes_the_pool_reconnect);
    tcase_add_test(tc, keep_retires_what_the_burst_left_idle);
    tcase_add_test(tc, min_is_made_at_start);
    tcase_add_test(tc, decisions_are_counted);
    suite_add_tcase(s, tc);
    return s;
}

TIDE_TEST_MAIN(engine_suite)
