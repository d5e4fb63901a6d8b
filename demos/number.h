/* Numbers from the demos' command lines, read whole. */
#ifndef TIDEPOOL_DEMO_NUMBER_H
#define TIDEPOOL_DEMO_NUMBER_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* v as a whole decimal number in [min, max] into *out; false when it is
 * not one. strtoll alone skips leading blanks, takes a '+', stops at the
 * first other character and saturates on overflow: each is refused here.
 * Saying what was wrong is the caller's. */
static inline bool tide_demo_whole_number(const char *v, long long min,
                                          long long max, long long *out)
{
    const char *digits = v[0] == '-' ? v + 1 : v;
    if (!isdigit((unsigned char)digits[0]))
        return false;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end != '\0' || errno == ERANGE || x < min || x > max)
        return false;
    *out = x;
    return true;
}

#endif
