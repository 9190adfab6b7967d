package org.schedbridge.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * What a {@code tls://} endpoint's certificate is verified against: the PEM certificates of
 * {@code spark.schedbridge.tls.ca} (the CA, or {@code serve}'s self-signed certificate itself, as
 * given to {@code --tls-cert}), or the JVM's default trust store when that key is empty.
 */
final class TlsTrust {
    static final String KEY = BridgeConf.PREFIX + "tls.ca";

    private TlsTrust() {
    }

    /**
     * True if {@code e} (or a cause) is this side refusing the host's certificate: unsigned by a
     * trusted CA, or naming another host. Waiting does not change that, so it is not retried.
     */
    static boolean refused(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof CertificateException) {
                return true;
            }
        }
        return false;
    }

    /** Sockets that trust {@code caFile}'s certificates only (empty: the JVM's defaults); an unusable file names the key. */
    static SSLSocketFactory factory(String caFile) {
        try {
            if (caFile.isEmpty()) {
                return SSLContext.getDefault().getSocketFactory();
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store(Path.of(caFile)));
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, trust.getTrustManagers(), null);
            return context.getSocketFactory();
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("schedbridge: " + KEY + "=" + caFile + " is not a readable PEM "
                    + "certificate file: " + e.getMessage(), e);
        }
    }

    private static KeyStore store(Path pem) throws IOException, GeneralSecurityException {
        Collection<? extends Certificate> certs;
        try (InputStream in = Files.newInputStream(pem)) {
            certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certs.isEmpty()) {
            throw new GeneralSecurityException("no certificate in it");
        }
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        for (Certificate cert : certs) {
            store.setCertificateEntry("ca-" + i++, cert);
        }
        return store;
    }
}
