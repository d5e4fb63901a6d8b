/* Certificates made at run time through OpenSSL's API, never files in the
 * tree: a CA, and leaves signed by it or by themselves. EC P-256 keys (fast,
 * and past Debian's security level 2). */
#ifndef TIDEPOOL_TEST_TLS_CERTS_H
#define TIDEPOOL_TEST_TLS_CERTS_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdbool.h>

struct pki {
    EVP_PKEY *ca_key;
    X509 *ca; /* CN=tidepool test CA */
    EVP_PKEY *other_ca_key;
    X509 *other_ca; /* a CA nobody trusts */
    EVP_PKEY *key;  /* every leaf's key */
    X509 *good;     /* by ca: DNS:localhost, IP:127.0.0.1, IP:::1 */
    X509 *other;    /* by ca: DNS:other.example only */
    X509 *expired;  /* by ca: the good names, expired an hour ago */
    X509 *self;     /* self-signed, the good names */
    X509 *stranger; /* by other_ca: the good names */
    X509 *client;   /* by ca: a client certificate, CN=tidepool client */
    X509 *no_san;   /* by ca: CN=localhost and no subjectAltName at all */
    X509 *ip_san;   /* by ca: CN=localhost, subjectAltName IP:127.0.0.1 only */
};

/* Fills p; false when OpenSSL failed. */
bool pki_make(struct pki *p);
void pki_free(struct pki *p);
/* A certificate as PEM text; free() it. */
char *pki_pem(X509 *cert);
/* Writes a PEM file of cert (and key, when not NULL) to a fresh temporary
 * path (PATH_MAX bytes in path). The caller unlinks it. */
bool pki_write(X509 *cert, EVP_PKEY *key, char *path);

#endif
