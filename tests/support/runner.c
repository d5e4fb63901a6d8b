#include "runner.h"

#include <signal.h>
#include <stdlib.h>

int tide_test_run(Suite *s)
{
    signal(SIGPIPE, SIG_IGN);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
