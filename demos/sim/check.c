#include "check.h"

#include <stdarg.h>

/* A make that follows a failed one sooner than this was not held back.
 * The preset backoff waits 100 ms less a fifth of jitter at least, while a
 * connect refused on loopback fails in well under a millisecond, so 50 ms
 * tells the two apart even on a busy machine. */
#define HELD_AT_LEAST TIDE_MS(50)

/* One phase's verdict line: its figures, then each point yes or NO. */
struct line {
    FILE *out;
    int points;
    bool ok;
};

static struct line line_begin(FILE *out)
{
    return (struct line){.out = out, .ok = true};
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
line_point(struct line *l, bool ok, const char *what, ...)
{
    fputs(l->points++ ? ", " : " ", l->out);
    va_list ap;
    va_start(ap, what);
    vfprintf(l->out, what, ap);
    va_end(ap);
    fputs(ok ? " yes" : " NO", l->out);
    l->ok &= ok;
}

static bool line_end(struct line *l)
{
    fputc('\n', l->out);
    return l->ok;
}

static bool all_active(const struct row *r)
{
    return r->n_trail == 1 && r->trail[0] == TIDE_BREAKER_ACTIVE;
}

static bool check_calm(const struct row *rows, int n, FILE *out)
{
    bool seen = false, served = true, clean = true, active = true;
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->phase != CALM)
            continue;
        seen = true;
        served &= r->served > 0;
        clean &= r->make_failures == 0 && r->timeouts == 0 &&
                 r->queue_full == 0 && r->shed == 0;
        active &= all_active(r);
    }
    struct line l = line_begin(out);
    fputs("check calm:", out);
    line_point(&l, seen && served, "served every second");
    line_point(&l, seen && clean, "nothing failed or refused");
    line_point(&l, seen && active, "breaker ACTIVE");
    return line_end(&l);
}

/* Callers queue when more want a connection than there are: more waiting
 * than the pool holds is a queue, not a caller the pump has yet to serve.
 * It has drained when connections sit idle again and no caller waits: a
 * row closes before its tick asks for more, so every caller asked for
 * earlier has had a loop pass to be answered. */
static bool check_burst(const struct row *rows, int n, int64_t size, FILE *out)
{
    int64_t most = 0;
    bool drained = false;
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->phase == BURST && r->waiting > most)
            most = r->waiting;
        if (r->phase == DRAIN && most > size && r->idle > 0 && r->waiting == 0)
            drained = true;
    }
    struct line l = line_begin(out);
    fputs("check burst:", out);
    line_point(&l, most > size, "up to %lld callers queued for %lld",
               (long long)most, (long long)size);
    line_point(&l, drained, "then the queue drained");
    return line_end(&l);
}

static bool check_outage(const struct row *rows, int n, FILE *out)
{
    int64_t failed = 0, shed = 0, held = -1;
    bool opened = false;
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->phase != OUTAGE)
            continue;
        failed += r->make_failures;
        shed += r->shed;
        opened |= row_saw(r, TIDE_BREAKER_INACTIVE);
        if (r->held >= 0 && (held < 0 || r->held < held))
            held = r->held;
    }
    struct line l = line_begin(out);
    fputs("check outage:", out);
    line_point(&l, failed > 0, "%lld makes failed", (long long)failed);
    if (held < 0)
        line_point(&l, false, "backoff held them (no make followed)");
    else
        line_point(&l, held >= HELD_AT_LEAST, "backoff held them %.0f ms",
                   (double)held / 1e6);
    line_point(&l, opened, "breaker INACTIVE");
    line_point(&l, shed > 0, "%lld shed", (long long)shed);
    return line_end(&l);
}

/* Reads the breaker's states in order across the rows: opened during the
 * outage, then RECOVERING, then ACTIVE again in the recovery. */
static bool check_recovery(const struct row *rows, int n, FILE *out)
{
    enum { CLOSED, OPENED, PROBED, RECOVERED } stage = CLOSED;
    int64_t probes = 0;
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->phase >= OUTAGE)
            probes += r->probes;
        for (int k = 0; k < r->n_trail; k++) {
            enum tide_breaker_state b = r->trail[k];
            if (stage == CLOSED && r->phase == OUTAGE &&
                b == TIDE_BREAKER_INACTIVE)
                stage = OPENED;
            else if (stage == OPENED && b == TIDE_BREAKER_RECOVERING)
                stage = PROBED;
            else if (stage == PROBED && r->phase == RECOVERY &&
                     b == TIDE_BREAKER_ACTIVE)
                stage = RECOVERED;
        }
    }
    const struct row *last = n > 0 ? &rows[n - 1] : NULL;
    bool serving = last && last->phase == RECOVERY && last->served > 0 &&
                   last->trail[last->n_trail - 1] == TIDE_BREAKER_ACTIVE;
    struct line l = line_begin(out);
    fputs("check recovery:", out);
    line_point(&l, stage >= PROBED && probes > 0, "RECOVERING, %lld probe%s",
               (long long)probes, probes == 1 ? "" : "s");
    line_point(&l, stage == RECOVERED, "back to ACTIVE");
    line_point(&l, serving, "serving at the end");
    return line_end(&l);
}

bool check_run(const struct row *rows, int n, int64_t size, FILE *out)
{
    /* every phase is checked and printed, whichever fails first */
    bool ok = check_calm(rows, n, out);
    ok &= check_burst(rows, n, size, out);
    ok &= check_outage(rows, n, out);
    ok &= check_recovery(rows, n, out);
    fprintf(out, "check: %s\n",
            ok ? "every phase showed what it should"
               : "a phase did not show what it should");
    return ok;
}

bool check_square(const struct row *rows, int n, FILE *out)
{
    int bursts = 0;
    bool in_burst = false;
    int64_t made = 0, waited = 0, asked = 0, ahead = 0, retired = 0, peak = 0;
    bool served = n > 0;
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->phase == BURST && !in_burst)
            bursts++;
        in_burst = r->phase == BURST;
        /* the first second of each burst and of what follows: the load
         * changed within it (phases start just after a whole second) */
        if (bursts >= 2 && r->phase != AFTER) {
            made += r->made;
            waited += r->waited;
            asked += r->served;
        }
        if (r->phase == BURST && r->lent + r->idle > peak)
            peak = r->lent + r->idle;
        ahead += r->ahead;
        if (r->phase == AFTER)
            retired += r->retired;
        served &= r->served > 0;
    }
    const struct row *last = n > 0 ? &rows[n - 1] : NULL;
    int64_t end = last ? last->lent + last->idle : 0;

    struct line l = line_begin(out);
    fputs("check bursts:", out);
    line_point(&l, bursts >= 2, "%d bursts", bursts);
    line_point(&l, asked > 0 && made * 100 <= asked && waited * 100 <= asked,
               "from the second on %lld made, %lld of %lld waited for a "
               "connect",
               (long long)made, (long long)waited, (long long)asked);
    bool ok = line_end(&l);

    l = line_begin(out);
    fputs("check ahead:", out);
    line_point(&l, ahead > 0, "%lld preconnects", (long long)ahead);
    ok &= line_end(&l);

    l = line_begin(out);
    fputs("check after:", out);
    line_point(&l, retired > 0, "%lld retired by demand", (long long)retired);
    line_point(&l, last && last->phase == AFTER && end * 2 <= peak,
               "%lld live at the end, from %lld in the bursts", (long long)end,
               (long long)peak);
    line_point(&l, served, "served every second");
    ok &= line_end(&l);
    fprintf(out, "check: %s\n",
            ok ? "the square wave showed what it should"
               : "the square wave did not show what it should");
    return ok;
}
