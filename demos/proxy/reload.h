/* demos/proxy: the configuration read again while the proxy runs (SIGHUP).
 *
 * A reload reads the command line again, and with it the file of
 * --config, exactly as at startup (px_config_parse): the options of the
 * command line go on overriding the file's. A configuration that does not
 * parse or check, or an upstream that cannot be made (a CA file that
 * cannot be read), changes nothing: the error is logged, naming the file
 * and its line, and the proxy goes on with the configuration in use.
 *
 * What a reload changes, without closing a client's connection:
 * - upstreams added are added to the group, as at startup (px_upstream_add:
 *   factory, TLS, ward) and drain in as the pick sends them requests;
 * - upstreams removed are removed from the group: they lend nothing more,
 *   their idle connections close, their lent ones finish their exchange
 *   and then close, and their factories are freed once the group has no
 *   removed upstream left draining;
 * - the settings of the upstreams' pools and connections (pool-size, keep,
 *   connect-timeout, the breaker and backoff options; ca and insecure for
 *   tls:// ones) apply to new pools only, so the upstreams they concern are
 *   made again with them: the new pools drain in as the old ones drain out;
 * - drain-timeout applies to the next SIGTERM.
 * What it cannot change keeps its value in use, and the reload says which
 * and why: listen (the listening socket stays open), cap (the group's, set
 * when it is made), acquire-timeout, response-timeout, client-timeout and
 * max-body (the proxy reads them when it starts).
 *
 * Each reload writes one line to its log: what was added, removed,
 * changed and ignored, or why nothing was.
 */
#ifndef TIDEPOOL_DEMO_PROXY_RELOAD_H
#define TIDEPOOL_DEMO_PROXY_RELOAD_H

#include <stdio.h>

#include "config.h"

struct px_reload;

/* Makes a reload for the proxy built from cfg (its configuration in use,
 * borrowed and updated by each reload that changes it) and ups (borrowed;
 * opened on its base with cfg), reading argv[1..argc) (borrowed: the
 * program's, as px_config_parse read them) again at each px_reload_run;
 * its lines go to log (borrowed). Both must outlive it. 0, or -1 when
 * out of memory. */
int px_reload_new(struct px_config *cfg, struct px_upstreams *ups, int argc,
                  char *const *argv, FILE *log, struct px_reload **out);

/* Reads the configuration again and applies it (see above). Runs inside a
 * loop callback (a SIGHUP event), never inside a group's. */
void px_reload_run(struct px_reload *r);

/* Frees the reload (its timer). The factories it retired are ups's: they
 * are freed by px_upstreams_dispose, before or after this. */
void px_reload_free(struct px_reload *r);

#endif
