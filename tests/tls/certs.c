#include "certs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#define GOOD_NAMES "DNS:localhost,IP:127.0.0.1,IP:::1"
#define HOUR       3600L

static long serial = 1;

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* issuer NULL: self-signed with key. Validity from `from` to `to` seconds
 * around now. */
static X509 *make_cert(EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key,
                       const char *cn, const char *san, bool ca, long from,
                       long to, bool client)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from);
    X509_gmtime_adj(X509_getm_notAfter(x), to);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    bool ok = add_ext(x, &v3, NID_basic_constraints,
                      ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
              add_ext(x, &v3, NID_key_usage,
                      ca ? "critical,keyCertSign,cRLSign"
                         : "critical,digitalSignature") &&
              add_ext(x, &v3, NID_subject_key_identifier, "hash") &&
              (ca || add_ext(x, &v3, NID_ext_key_usage,
                             client ? "clientAuth" : "serverAuth")) &&
              (!san || add_ext(x, &v3, NID_subject_alt_name, san)) &&
              (!issuer ||
               add_ext(x, &v3, NID_authority_key_identifier, "keyid:always"));
    if (!ok || X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) <= 0) {
        X509_free(x);
        return NULL;
    }
    return x;
}

bool pki_make(struct pki *p)
{
    memset(p, 0, sizeof *p);
    p->ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    p->other_ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    p->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!p->ca_key || !p->other_ca_key || !p->key)
        return false;
    p->ca = make_cert(p->ca_key, NULL, NULL, "tidepool test CA", NULL, true,
                      -HOUR, 24 * HOUR, false);
    p->other_ca = make_cert(p->other_ca_key, NULL, NULL, "stranger CA", NULL,
                            true, -HOUR, 24 * HOUR, false);
    if (!p->ca || !p->other_ca)
        return false;
    p->good = make_cert(p->key, p->ca, p->ca_key, "localhost", GOOD_NAMES,
                        false, -60, HOUR, false);
    p->other = make_cert(p->key, p->ca, p->ca_key, "other.example",
                         "DNS:other.example", false, -60, HOUR, false);
    p->expired = make_cert(p->key, p->ca, p->ca_key, "localhost", GOOD_NAMES,
                           false, -2 * HOUR, -HOUR, false);
    p->self = make_cert(p->key, NULL, NULL, "localhost", GOOD_NAMES, false, -60,
                        HOUR, false);
    p->stranger = make_cert(p->key, p->other_ca, p->other_ca_key, "localhost",
                            GOOD_NAMES, false, -60, HOUR, false);
    p->client = make_cert(p->key, p->ca, p->ca_key, "tidepool client", NULL,
                          false, -60, HOUR, true);
    p->no_san = make_cert(p->key, p->ca, p->ca_key, "localhost", NULL, false,
                          -60, HOUR, false);
    p->ip_san = make_cert(p->key, p->ca, p->ca_key, "localhost", "IP:127.0.0.1",
                          false, -60, HOUR, false);
    return p->good && p->other && p->expired && p->self && p->stranger &&
           p->client && p->no_san && p->ip_san;
}

void pki_free(struct pki *p)
{
    X509 *certs[] = {p->ca,   p->other_ca, p->good,   p->other,  p->expired,
                     p->self, p->stranger, p->client, p->no_san, p->ip_san};
    for (size_t i = 0; i < sizeof certs / sizeof certs[0]; i++)
        X509_free(certs[i]);
    EVP_PKEY_free(p->ca_key);
    EVP_PKEY_free(p->other_ca_key);
    EVP_PKEY_free(p->key);
    memset(p, 0, sizeof *p);
}

char *pki_pem(X509 *cert)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio || PEM_write_bio_X509(bio, cert) != 1) {
        BIO_free(bio);
        return NULL;
    }
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    char *out = malloc((size_t)n + 1);
    if (out) {
        memcpy(out, data, (size_t)n);
        out[n] = '\0';
    }
    BIO_free(bio);
    return out;
}

bool pki_write(X509 *cert, EVP_PKEY *key, char *path)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, PATH_MAX, "%s/tidepool-test-XXXXXX.pem",
             dir && *dir ? dir : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(path);
        return false;
    }
    bool ok =
        PEM_write_X509(f, cert) == 1 &&
        (!key || PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1);
    ok = fclose(f) == 0 && ok;
    if (!ok)
        unlink(path);
    return ok;
}
