#include "row.h"

static const char *const phase_names[PHASES] = {"calm",   "burst",    "drain",
                                                "outage", "recovery", "after"};

const char *phase_name(enum phase p)
{
    return p < PHASES ? phase_names[p] : "?";
}

const char *breaker_name(enum tide_breaker_state b)
{
    switch (b) {
    case TIDE_BREAKER_ACTIVE:
        return "ACTIVE";
    case TIDE_BREAKER_INACTIVE:
        return "INACTIVE";
    case TIDE_BREAKER_RECOVERING:
        return "RECOVERING";
    }
    return "?";
}

void row_start(struct row *r, enum tide_breaker_state b)
{
    *r = (struct row){.held = -1, .trail = {b}, .n_trail = 1};
}

void row_see(struct row *r, enum tide_breaker_state b)
{
    if (r->trail[r->n_trail - 1] == b)
        return;
    if (r->n_trail < ROW_TRAIL)
        r->n_trail++;
    r->trail[r->n_trail - 1] = b;
}

bool row_saw(const struct row *r, enum tide_breaker_state b)
{
    for (int i = 0; i < r->n_trail; i++)
        if (r->trail[i] == b)
            return true;
    return false;
}

void row_held(struct row *r, int64_t pause)
{
    if (r->held < 0 || pause < r->held)
        r->held = pause;
}

void row_print_legend(FILE *out, bool demand)
{
    if (demand) {
        fputs("now: lent idle wait; this second: made ahead(preconnects) "
              "retired(by demand) waited(for a connect) served; p99ms: 60 s\n",
              out);
        fputs("  t phase    lent idle wait made ahead retired waited served "
              "p99ms breaker\n",
              out);
        return;
    }
    /* at most 100 columns, as the rows */
    fputs("now: lent idle wait; this second: made failed(makes) timeout "
          "qfull shed served breaker; p99ms: 60 s\n",
          out);
    /* the heads are the legend's words, right-aligned over row_print's
     * columns */
    fputs("  t phase    lent idle wait made failed timeout qfull shed served "
          "p99ms breaker\n",
          out);
}

/* The states the breaker went through, joined by '>': the last three at
 * most, so the row stays within 100 columns. With the simulator's cooldown
 * of a second, a second rarely holds more. */
#define TRAIL_SHOWN 3

static void print_trail(FILE *out, const struct row *r)
{
    int first = r->n_trail > TRAIL_SHOWN ? r->n_trail - TRAIL_SHOWN : 0;
    for (int i = first; i < r->n_trail; i++)
        fprintf(out, "%s%s", i > first ? ">" : "", breaker_name(r->trail[i]));
}

void row_print(FILE *out, const struct row *r, int n)
{
    if (r->demand) {
        fprintf(out,
                "%3d %-8s %4lld %4lld %4lld %4lld %5lld %7lld %6lld "
                "%6lld %5.1f ",
                n, phase_name(r->phase), (long long)r->lent, (long long)r->idle,
                (long long)r->waiting, (long long)r->made, (long long)r->ahead,
                (long long)r->retired, (long long)r->waited,
                (long long)r->served, (double)r->p99 / 1e6);
        print_trail(out, r);
        fputc('\n', out);
        fflush(out);
        return;
    }
    fprintf(out,
            "%3d %-8s %4lld %4lld %4lld %4lld %6lld %7lld %5lld %4lld %6lld "
            "%5.1f ",
            n, phase_name(r->phase), (long long)r->lent, (long long)r->idle,
            (long long)r->waiting, (long long)r->made,
            (long long)r->make_failures, (long long)r->timeouts,
            (long long)r->queue_full, (long long)r->shed, (long long)r->served,
            (double)r->p99 / 1e6);
    print_trail(out, r);
    fputc('\n', out);
    fflush(out);
}
