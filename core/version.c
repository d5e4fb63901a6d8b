/* The library's version at run time: the header's macros say what a
 * program was compiled against, this says what it is linked with. */
#include <tidepool/core.h>

const char *tide_version(void)
{
    return TIDE_VERSION_STRING;
}
