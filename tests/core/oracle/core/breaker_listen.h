/* The one core internal the adapter needs beside the item map: hearing of
 * a breaker's changes of state, so callers parked on it are answered at
 * once whatever opened it (a manual deactivate included). */
#ifndef TIDEPOOL_CORE_BREAKER_LISTEN_H
#define TIDEPOOL_CORE_BREAKER_LISTEN_H

#include <tidepool/core.h>

/* Has changed(arg) called after each change of b's state, from inside the
 * call that changed it (NULL: nobody). One listener; the callback may read
 * b, not change it. */
void tide__breaker_listen(struct tide_breaker *b, void (*changed)(void *arg),
                          void *arg);

#endif
