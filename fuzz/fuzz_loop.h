/* The loop and socket plumbing of the libFuzzer targets over demos/proxy
 * (fuzz_proxy_framing, fuzz_proxy_h2): the loop run until it is quiet, a
 * loopback client of the proxy, reads and writes that never block, and
 * the descriptor check that ends each input. */
#ifndef TIDEPOOL_FUZZ_LOOP_H
#define TIDEPOOL_FUZZ_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

#define FZ_CAP (1u << 20) /* bytes kept of each side's output */

/* Runs what the loop has to do now, until three passes in a row find
 * nothing active after them (socket readiness shows on the next poll). */
void fz_settle(struct event_base *base);

/* Reads what fd has now onto *p (fz_grow; up to about FZ_CAP bytes kept);
 * *eof set when the peer closed or the read failed. */
void fz_read_all(int fd, char **p, size_t *len, size_t *cap, bool *eof);

/* Writes s[0, n) to fd; what the other side does not take (gone, or its
 * buffer full) is lost. */
void fz_write_all(int fd, const uint8_t *s, size_t n);

/* The lowest descriptor free now: the same before and after an input
 * when nothing was left open. */
int fz_lowest_free_fd(void);

/* A non-blocking TCP connection to 127.0.0.1:port (aborts on failure). */
int fz_client_connect(int port);

/* Closes a client with a reset, not a FIN: a FIN (or the proxy's close
 * first) leaves a TIME_WAIT on a loopback port for 60 s, a thousand an
 * input second, and within half a minute no port is left to bind (px_new
 * fails, and so do the listeners of anything else on the machine). The
 * proxy reads an end either way (client_gone). */
void fz_client_reset(int fd);

#endif
