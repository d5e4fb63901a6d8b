/* The client SSL_CTX a TLS factory builds when it is not given one: TLS 1.2
 * at least, the trust anchors asked for (or the system's), an optional
 * client certificate, and peer verification on. Everything per connection
 * (host name, SNI, ALPN, session) is set on each SSL instead, so a context
 * given by the caller gets the same treatment. */
#include <errno.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tls_internal.h"

/* Every certificate of a PEM text into the store; false when none. */
static bool add_pem(X509_STORE *store, const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (!bio)
        return false;
    int added = 0;
    X509 *cert;
    while ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(store, cert) == 1)
            added++;
        X509_free(cert);
    }
    BIO_free(bio);
    if (added > 0) /* the read that ended the loop left "no start line" */
        ERR_clear_error();
    return added > 0;
}

/* A step that failed: the option and its file go with OpenSSL's reason on
 * top of the error queue, so whoever prints the queue (ERR_print_errors)
 * learns which of the files to fix, not only that one would not load. */
static bool named(bool ok, const char *option, const char *path,
                  const char *what)
{
    if (!ok)
        ERR_add_error_data(5, option, " ", path, ": ", what);
    return ok;
}

/* OpenSSL takes any string as a hashed directory and looks in it only at
 * handshake time, so a directory that is not there would fail every
 * handshake as untrusted: it is refused here instead. */
static bool is_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        ERR_raise_data(ERR_LIB_SYS, errno, "ca_dir %s: cannot be read", path);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        ERR_raise_data(ERR_LIB_SYS, ENOTDIR, "ca_dir %s: not a directory",
                       path);
        return false;
    }
    return true;
}

static bool trust(SSL_CTX *ctx, const struct tide_tls_options *o)
{
    if (!o->ca_pem && !o->ca_file && !o->ca_dir)
        return SSL_CTX_set_default_verify_paths(ctx) == 1;
    if (o->ca_pem && !add_pem(SSL_CTX_get_cert_store(ctx), o->ca_pem)) {
        ERR_add_error_data(1, "ca_pem: no certificate could be read from it");
        return false;
    }
    if (o->ca_file &&
        !named(SSL_CTX_load_verify_file(ctx, o->ca_file) == 1, "ca_file",
               o->ca_file, "no CA certificate could be loaded"))
        return false;
    if (o->ca_dir && (!is_dir(o->ca_dir) ||
                      !named(SSL_CTX_load_verify_dir(ctx, o->ca_dir) == 1,
                             "ca_dir", o->ca_dir, "could not be used")))
        return false;
    return true;
}

static bool identity(SSL_CTX *ctx, const struct tide_tls_options *o)
{
    if (!o->cert_file)
        return true;
    const char *key = o->key_file ? o->key_file : o->cert_file;
    return named(SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) == 1,
                 "cert_file", o->cert_file,
                 "no certificate chain could be loaded") &&
           named(SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1,
                 o->key_file ? "key_file" : "cert_file", key,
                 o->key_file ? "no private key matching cert_file could be "
                               "loaded"
                             : "no private key matching its certificate "
                               "could be loaded (and no key_file given)") &&
           named(SSL_CTX_check_private_key(ctx) == 1, "key_file", key,
                 "the key does not match cert_file");
}

int tide__tls_context(const struct tide_tls_options *o, SSL_CTX **out)
{
    *out = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return TIDE_ENOMEM;
    int min = o->min_version ? o->min_version : TLS1_2_VERSION;
    bool ok = SSL_CTX_set_min_proto_version(ctx, min) == 1 &&
              (o->max_version == 0 ||
               SSL_CTX_set_max_proto_version(ctx, o->max_version) == 1) &&
              trust(ctx, o) && identity(ctx, o);
    if (!ok) {
        SSL_CTX_free(ctx);
        return TIDE_ETLS_CONFIG;
    }
    SSL_CTX_set_verify(
        ctx, o->insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    *out = ctx;
    return 0;
}
