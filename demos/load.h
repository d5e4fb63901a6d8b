/* What the load programs (demos/redis/redis_load, demos/smtp/smtp_load)
 * share: the options every one of them takes, read with the program's own
 * from one table, and a closed-loop run: CONC requests in flight, each
 * answer sending the next, a warm-up not measured (the pool fills during
 * it), a deadline, and the figures of what was measured. A program says
 * only how one request is sent and how many connections its pool has made;
 * what a request is, what counts as a good answer and how the figures are
 * printed stay its own. */
#ifndef TIDEPOOL_DEMO_LOAD_H
#define TIDEPOOL_DEMO_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct tide_evpool;

/* ---- options ---- */

/* One option in a table: its word and exactly one place for it. A number
 * is read whole: decimal digits (a leading '-' allowed) and nothing else,
 * within [min, max], so that a typo ("abc", "10x", a port of 99999) is
 * refused by name instead of read as 0, a prefix, or a value that fails
 * later in words that do not say which option was wrong. */
struct tide_demo_opt {
    const char *name;   /* "--host", "-c" */
    bool *flag;         /* set to true when the word is there; takes no value */
    int *i;             /* the next word, a whole number in [min, max] */
    long *l;            /* ... the same, for a long */
    const char **s;     /* the next word itself (borrowed from argv) */
    long long min, max; /* i's or l's bounds; max must fit the field */
};

/* Reads v as a whole decimal number in [min, max] into *out. False when it
 * is not one (empty, a sign alone, other characters, leading blanks, out
 * of range), with a line on stderr naming prog, the option and v. */
bool tide_demo_parse_number(const char *prog, const char *option, const char *v,
                            long long min, long long max, long long *out);

/* The options every load program takes. The program sets its presets
 * before reading; warmup -1 means "not given". */
struct tide_demo_load_args {
    const char *host;   /* --host */
    int port;           /* --port */
    const char *cacert; /* --cacert */
    const char *name;   /* --name: the name the certificate is checked for */
    int conc;           /* -c: requests in flight */
    long count;         /* -n: requests measured */
    long size;          /* -d: bytes of each request's payload */
    long warmup;        /* --warmup: requests before measuring */
    int seconds;        /* --seconds: the deadline of the whole run */
    bool csv;           /* --csv: the figures as one CSV line */
};

/* The bounds of a's numbers: a port, at most a million requests in
 * flight (a record each), a billion measured (8 bytes of latency each,
 * allocated up front), a payload of at most 512 MiB, a day's deadline. */
#define TIDE_DEMO_MAX_CONC    1000000
#define TIDE_DEMO_MAX_COUNT   1000000000L
#define TIDE_DEMO_MAX_SIZE    (512L << 20)
#define TIDE_DEMO_MAX_SECONDS 86400

/* Reads argv[1..argc) into a and the program's own options (n of them in
 * own; NULL when n is 0). False for bad usage, said on stderr with prog
 * and the word at fault: a word no option names, an option without its
 * value, a number that is not one or is out of its bounds (see
 * TIDE_DEMO_MAX_*; conc, count and seconds at least 1, size and warmup at
 * least 0); the program then prints its usage and exits 2. */
bool tide_demo_load_args_read(struct tide_demo_load_args *a, const char *prog,
                              const struct tide_demo_opt *own, size_t n,
                              int argc, char **argv);

/* ---- the run ---- */

struct tide_demo_load;

/* One request in flight; the same record carries the requests of one
 * slot of the concurrency from the first to the last. */
struct tide_demo_req {
    struct tide_demo_load *l;
    int64_t sent_at; /* ns, monotonic */
    bool measured;   /* sent after the warm-up */
};

/* What a program fills in (designated initialisers); arg is the load's. */
struct tide_demo_load_ops {
    /* Sends one request whose answer calls tide_demo_load_answered(r, ...)
     * exactly once; 0, or an error code for strerror (then no answer). */
    int (*send)(struct tide_demo_req *r, void *arg);
    const char *(*strerror)(int code);
    /* The code's name ("TIDE_REDIS_EREPLY"), the program's own codes
     * included, for the first error's line. NULL: tide_err_name, which
     * knows tidepool's codes only. */
    const char *(*err_name)(int code);
    /* The connections (sessions) its pool has made so far. */
    uint64_t (*made)(void *arg);
    /* The pool under the client (or sender), whose last failed make
     * (tide_evpool_last_error) and makes still running are said when a
     * run fails with no answer that says why. NULL: not known. */
    struct tide_evpool *(*pool)(void *arg);
    /* Optional: whether a failed answer is one that no retry changes
     * soon, in the program's own terms (the server refuses the session
     * for good, it does not speak the protocol): a phrase that says so,
     * for the line that ends the run, or NULL. The run asks only about
     * the answers tidepool's own codes leave open (see
     * tide_demo_load_answered). */
    const char *(*hopeless)(int code, const char *message, void *arg);
};

struct tide_demo_load {
    const char *prog; /* for messages: "redis_load: out of time" */
    /* The Unix socket the run connects to (borrowed), NULL over TCP; set
     * before run: a path that is missing or no socket ends the run. */
    const char *path;
    const struct tide_demo_load_ops *ops;
    void *arg;
    struct event_base *base;
    int conc;      /* requests in flight at most */
    long warmup;   /* requests before measuring */
    long count;    /* measured requests */
    long sent;     /* all requests sent */
    long answered; /* all requests answered */
    long errors;   /* measured requests without a good answer */
    long failed;   /* all answers not good, the warm-up's included */
    long refused;  /* sends that failed at once (no answer will come) */
    long streak;   /* answers not good in a row, the last ones */
    bool stopped;  /* a send failed, or the run gave up: no more are sent */
    int64_t *lat;  /* measured latencies, ns */
    long nlat;
    struct tide_demo_req *reqs; /* one a slot of the concurrency */
    int64_t start;              /* when measuring began */
    int64_t end;
    uint64_t made_at_start;
    /* the first answer not good, the warm-up's included (a run whose every
     * connection fails fails them all there) */
    char first_error[256];
    int first_code;
    bool first_measured;
};

/* Makes l's event base and room for count latencies; false when out of
 * memory (said on stderr). Dispose of l either way. ops (borrowed; must
 * outlive l) and arg are given to run. */
bool tide_demo_load_init(struct tide_demo_load *l, const char *prog,
                         long warmup, long count);
/* Runs the load: conc requests at once (fewer when fewer are asked for),
 * until warmup + count are answered or seconds have passed ("out of time"
 * on stderr), or a send fails: its error once on stderr, and no request is
 * sent after it (the loop is not entered when it failed before; the
 * requests already sent are left to the client's free), or the run gives
 * up (see tide_demo_load_answered). Then the latencies at p50 and p99 are put
 * in place. -1 when out of memory, else 0 (what the run achieved is in l: see
 * tide_demo_load_ok). */
int tide_demo_load_run(struct tide_demo_load *l,
                       const struct tide_demo_load_ops *ops, void *arg,
                       int conc, int seconds);
/* An answer to r, good or not; message and code say what went wrong for
 * the first error kept. Sends r again while requests remain to be sent.
 * Call from the request's callback.
 *
 * A failure that no retry changes soon ends the run at once, said on
 * stderr ("stopped: ...") with its message and code, instead of every
 * request waiting out the pool's backoff until --seconds: a connect
 * refused (nothing listens there), and with path set a path that is no
 * socket or not there at all (whatever code the connect failed with), or
 * what ops->hopeless says. Any other failure ends the run once it repeats:
 * twice as many answers in a row as requests in flight, none good, so
 * that every request in flight failed twice (a server that accepts and
 * closes, one that never answers the opening exchange); a good answer
 * between them starts the count again, so a server short of room for all
 * connections (Redis's maxclients) does not end a run it still serves. */
void tide_demo_load_answered(struct tide_demo_req *r, bool good,
                             const char *message, int code);

/* The figures of what was measured, after run. */
struct tide_demo_load_figures {
    long n;          /* requests measured */
    double rate;     /* requests a second */
    double p50, p99; /* latency, ns */
    uint64_t opened; /* connections made after the warm-up */
    double per_k;    /* ... per 1,000 requests */
};

/* made_now: the connections the pool has made up to now. */
struct tide_demo_load_figures
tide_demo_load_figures(const struct tide_demo_load *l, uint64_t made_now);
/* Whether every one of count requests got a good answer. When not, why on
 * stderr: the first answer not good (the warm-up's too) with its message
 * and its code's name; with none, the pool's last failed make, or else
 * how many makes are still running; and how many sends more than the
 * first were refused. */
bool tide_demo_load_ok(const struct tide_demo_load *l);
/* Frees the event base (free what runs on it first: the client or sender),
 * the latencies and the request records. What those frees left queued on
 * the base runs first, as <tidepool/tls.h> asks of a teardown: a freed
 * bufferevent whose deferred callback is still queued is held by it, and
 * event_base_free drops such callbacks without running them, so the
 * bufferevent, its buffers and its socket would never be freed. */
void tide_demo_load_dispose(struct tide_demo_load *l);

#endif
