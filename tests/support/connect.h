/* A blocking client socket to 127.0.0.1, for tests that talk to a server
 * the way a plain client would. */
#ifndef TIDEPOOL_TEST_CONNECT_H
#define TIDEPOOL_TEST_CONNECT_H

/* A TCP connection to 127.0.0.1:port with a 10 s receive timeout, so a
 * test whose server never answers fails instead of hanging; -1 when the
 * connect fails. The caller owns and closes the descriptor. */
int tide_test_connect(int port);

#endif
