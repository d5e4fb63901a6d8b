/* The one error table of every tidepool layer: code, name and sentence.
 * The codes of the upper layers are spelled out here as numbers so the core
 * includes none of their headers; their headers hold the names. */
#include <tidepool/core.h>

struct error_entry {
    int code;
    const char *name;
    const char *text;
};

static const struct error_entry errors[] = {
    {0, "TIDE_OK", "success"},
    {TIDE_EINVAL, "TIDE_EINVAL",
     "invalid argument: a required pointer is NULL or a value is out of range"},
    {TIDE_ENOMEM, "TIDE_ENOMEM", "out of memory"},
    {TIDE_ELIMITS, "TIDE_ELIMITS",
     "invalid limits: size, idle, keep and life must be >= 0, spread within "
     "[0, 1], streams within [0, 65535] and sharing pack or spread"},
    {TIDE_EBREAKER, "TIDE_EBREAKER",
     "invalid breaker options: k >= 1, window, cooldown, strikes and probes >= "
     "0, a known policy, and a strategy with report_success, report_failure "
     "and should_recover for CUSTOM"},
    {TIDE_EBUCKET, "TIDE_EBUCKET",
     "invalid bucket options: rate must be > 0 and burst >= 1"},
    {TIDE_EBACKOFF, "TIDE_EBACKOFF",
     "invalid backoff: base and cap >= 0, factor >= 1, attempts >= 0, a known "
     "jitter and spread within [0, 1]"},
    {TIDE_ESHEDDER, "TIDE_ESHEDDER",
     "invalid shedder options: spans >= 0, floor >= 0 and decrease within (0, "
     "1)"},
    {TIDE_EDOUBLE, "TIDE_EDOUBLE",
     "resource given back twice: the pool already holds it idle (do not close "
     "it)"},
    {TIDE_EUNKNOWN, "TIDE_EUNKNOWN",
     "resource unknown to this pool and no reservation open: the caller still "
     "owns it"},
    {TIDE_ENORESERVE, "TIDE_ENORESERVE",
     "made or unmade called with no MAKE outstanding"},
    {TIDE_EDUPLICATE, "TIDE_EDUPLICATE",
     "made called with a resource the pool already holds"},
    {TIDE_ECLOSED, "TIDE_ECLOSED", "the pool is closed"},
    {TIDE_EGATE, "TIDE_EGATE", "gate left more often than it was entered"},
    {TIDE_ENOTIDLE, "TIDE_ENOTIDLE",
     "the resource is not idle in this pool (lent, held or being made)"},
    {TIDE_ENOTLENT, "TIDE_ENOTLENT",
     "no loan of the resource is out (it is idle or held for a check)"},
    {TIDE_ESHARED, "TIDE_ESHARED",
     "other loans of the resource are out: it cannot be made exclusive"},
    /* evloop */
    {-20, "TIDE_ETIMEDOUT", "timed out waiting for a resource"},
    {-21, "TIDE_EUNAVAILABLE",
     "refused at once: the breaker is open or the host is shedding load"},
    {-22, "TIDE_EQUEUEFULL",
     "too many callers waiting: the waiter queue is at its bound"},
    {-23, "TIDE_ECANCELLED", "the acquire was cancelled"},
    {-24, "TIDE_EMAKE", "the factory failed to make a resource"},
    {-25, "TIDE_EMAKETIMEDOUT",
     "the factory did not make a resource within the make timeout"},
    {-26, "TIDE_EWOULDBLOCK",
     "nothing idle to hand out now (or callers are queued): acquire instead"},
    {-27, "TIDE_EBUSY", "the resource is not lent out by this pool"},
    {-28, "TIDE_EUNPROVEN",
     "the resource was made, then found dead before its first loan or "
     "failed in it, within a second (the peer closed it, sent bytes nobody "
     "asked for, or broke the first exchange)"},
    /* tls */
    {-40, "TIDE_EDNS",
     "the host name did not resolve: no such name, no address, or the DNS "
     "server failed or refused"},
    {-41, "TIDE_EDNS_TIMEOUT", "no DNS answer in time"},
    {-42, "TIDE_EREFUSED", "the connection was refused"},
    {-43, "TIDE_EUNREACHABLE",
     "no route to the host: the network or host is unreachable"},
    {-44, "TIDE_ECONNECT_TIMEOUT",
     "no address connected within the connect timeout"},
    {-45, "TIDE_ECONNECT", "the connection could not be made"},
    {-46, "TIDE_EHANDSHAKE", "the TLS handshake failed"},
    {-47, "TIDE_EHANDSHAKE_TIMEOUT",
     "the TLS handshake did not finish within the handshake timeout"},
    {-48, "TIDE_EUNTRUSTED",
     "the server's certificate is not trusted: it does not lead to a trusted "
     "CA"},
    {-49, "TIDE_ENAME_MISMATCH",
     "the server's certificate is not for this host name or IP address"},
    {-50, "TIDE_EEXPIRED",
     "the server's certificate has expired or is not valid yet"},
    {-51, "TIDE_EALPN", "the server chose none of the offered ALPN protocols"},
    {-52, "TIDE_ETLS_CONFIG",
     "the TLS context could not be built: a CA, certificate or key would not "
     "load"},
    {-53, "TIDE_EPEER_CLOSED", "the peer closed the connection"},
    {-54, "TIDE_ECONN_BROKEN", "the connection broke: reset or I/O error"},
    {-55, "TIDE_ETLS", "a TLS error on an established connection"},
    {-56, "TIDE_EIO_TIMEOUT", "a read or write on the connection timed out"},
    {-57, "TIDE_ENOSOCKET", "no socket at that path"},
    {-58, "TIDE_ESETUP", "the session setup failed"},
    {-59, "TIDE_ESETUP_TIMEOUT",
     "the session setup did not finish within setup_timeout"},
    {-60, "TIDE_EUPGRADE", "the upgrade to TLS (STARTTLS) failed"},
    {-61, "TIDE_EUPGRADE_UNOFFERED",
     "the server does not offer the upgrade to TLS (no STARTTLS)"},
    {-62, "TIDE_EUPGRADE_REFUSED", "the server refused the upgrade to TLS"},
    {-63, "TIDE_EUPGRADE_TIMEOUT",
     "the upgrade to TLS did not finish within upgrade_timeout"},
};

static const struct error_entry *find(int code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

const char *tide_strerror(int code)
{
    const struct error_entry *e = find(code);
    return e ? e->text : "unknown tidepool error code";
}

const char *tide_err_name(int code)
{
    const struct error_entry *e = find(code);
    return e ? e->name : "TIDE_E?";
}
