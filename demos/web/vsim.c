/* The virtual-time simulator, native: runs the engine to its end and prints
 * its rows, as fast as the machine goes (thousands of times real time).
 *
 *   vsim [--heads] [--fields] [--steps] [--bench] [--help] [name=value ...]
 *
 * --steps prints, instead of the rows, the pool at every step of the run
 * (steps.h: each millisecond, "ms lent idle waiting"), what the page's
 * chart is drawn from.
 * --fields prints after each row its fields by name (name=value ...), as
 * the page reads them. --bench prints, instead of the rows, how many decisions
 * the core made (take, made, give, ...) and how fast, against the wall clock.
 * Each name=value sets one of the engine's parameters (engine.h, params.c:
 * seed=7 size=12 outage_start_s=10 ...). The rows are the bytes the wasm
 * build gives for the same parameters: the differential test compares
 * them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "steps.h"

/* C11's clock, so the program needs no POSIX feature macro. */
static double wall_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_fields(const struct web_row *r)
{
    int64_t v[WEB_ROW_FIELDS];
    web_row_values(r, v);
    for (int k = 0; k < WEB_ROW_FIELDS; k++)
        printf("%s%s=%lld", k ? " " : "", web_row_field_name(k),
               (long long)v[k]);
    putchar('\n');
}

/* Runs e to its end printing every step, a ring's worth at a time. 0, or
 * a tidepool code when the recorder could not be made. */
static int print_steps(struct web_engine *e)
{
    enum { CAP = 1024 };
    struct web_steps *s;
    int rc = web_steps_new(e, CAP, &s);
    if (rc)
        return rc;
    int32_t out[CAP * WEB_STEP_VALUES];
    uint32_t n;
    do {
        web_steps_run(s, INT64_MAX);
        n = web_steps_take(s, out, CAP);
        for (uint32_t k = 0; k < n; k++) {
            const int32_t *v = &out[k * WEB_STEP_VALUES];
            printf("%ld %ld %ld %ld\n", (long)v[WEB_STEP_MS],
                   (long)v[WEB_STEP_LENT], (long)v[WEB_STEP_IDLE],
                   (long)v[WEB_STEP_WAITING]);
        }
    } while (n == CAP);
    web_steps_free(s);
    return 0;
}

/* Prints the usage and the parameters' names on out and returns code, the
 * exit status: 2 for a command line refused, 0 for --help. */
static int usage(FILE *out, const char *argv0, int code)
{
    fprintf(out,
            "usage: %s [--heads] [--fields] [--steps] [--bench] [--help] "
            "[name=value ...]\nnames:",
            argv0);
    for (int i = 0; web_param_name(i); i++)
        fprintf(out, " %s", web_param_name(i));
    fputc('\n', out);
    return code;
}

int main(int argc, char **argv)
{
    double params[WEB_PARAMS];
    web_params_preset(params);
    bool heads = false, bench = false, fields = false, steps = false;
    for (int i = 1; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!strcmp(argv[i], "--heads")) {
            heads = true;
            continue;
        }
        if (!strcmp(argv[i], "--fields")) {
            fields = true;
            continue;
        }
        if (!strcmp(argv[i], "--steps")) {
            steps = true;
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout, argv[0], 0);
        if (!strcmp(argv[i], "--bench")) {
            bench = true;
            continue;
        }
        if (!eq) {
            fprintf(stderr, "vsim: '%s' is neither an option nor name=value\n",
                    argv[i]);
            return usage(stderr, argv[0], 2);
        }
        *eq = '\0';
        int k = web_param_find(argv[i]);
        if (k < 0) {
            fprintf(stderr, "vsim: no parameter is named '%s'\n", argv[i]);
            return usage(stderr, argv[0], 2);
        }
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end) {
            fprintf(stderr, "vsim: %s: '%s' is not a number\n", argv[i],
                    eq + 1);
            return 2;
        }
        params[k] = v;
    }
    struct web_engine *e;
    int rc = web_engine_new(params, &e);
    if (rc) {
        /* the value at fault by name, where the engine's bounds say it */
        int bad = web_params_check(params);
        if (bad >= 0)
            fprintf(stderr, "vsim: %s=%g is out of range\n",
                    web_param_name(bad), params[bad]);
        else
            fprintf(stderr, "vsim: parameters refused: %s\n",
                    tide_strerror(rc));
        return 1;
    }
    if (steps) {
        rc = print_steps(e);
        web_engine_free(e);
        if (rc)
            fprintf(stderr, "vsim: %s\n", tide_strerror(rc));
        return rc ? 1 : 0;
    }
    if (heads)
        puts(web_row_heads());
    double started = wall_seconds();
    web_engine_run(e, INT64_MAX);
    double took = wall_seconds() - started;
    if (bench) {
        double decisions = (double)web_engine_decisions(e);
        printf("native: %.0f decisions in %.3f s: %.0f decisions/s, %.0fx "
               "real time\n",
               decisions, took, decisions / took, params[WEB_P_SECONDS] / took);
        web_engine_free(e);
        return 0;
    }
    char text[WEB_ROW_TEXT];
    for (int64_t i = 0; web_engine_row(e, i); i++) {
        web_row_text(web_engine_row(e, i), text);
        puts(text);
        if (fields)
            print_fields(web_engine_row(e, i));
    }
    web_engine_free(e);
    return 0;
}
