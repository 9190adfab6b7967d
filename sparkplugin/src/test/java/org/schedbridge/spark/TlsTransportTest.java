package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tls://} endpoint: the fake host of {@link TcpTransportTest} behind TLS with a
 * self-signed certificate (made by openssl, as {@code tests/certs.py} makes serve's).
 */
class TlsTransportTest {
    private static final String TOKEN = "secret-token-of-the-daemon";
    @TempDir
    static Path dir;

    @BeforeAll
    static void certificates() throws Exception {
        cert("localhost", "DNS:localhost,IP:127.0.0.1");
        cert("other", "DNS:other");
    }

    /** {@code NAME.crt} (PEM) and {@code NAME.p12} (its key, password "pw") for {@code subjectAltName}. */
    private static void cert(String name, String san) throws Exception {
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=" + name,
                "-addext", "subjectAltName=" + san, "-keyout", dir.resolve(name + ".key").toString(),
                "-out", dir.resolve(name + ".crt").toString());
        run("openssl", "pkcs12", "-export", "-in", dir.resolve(name + ".crt").toString(), "-inkey",
                dir.resolve(name + ".key").toString(), "-out", dir.resolve(name + ".p12").toString(), "-passout", "pass:pw");
    }

    private static void run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, String.join(" ", cmd) + ": " + out);
    }

    /** A TLS server socket on loopback presenting {@code name}'s certificate. */
    private static ServerSocket listen(String name) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".p12"))) {
            store.load(in, "pw".toCharArray());
        }
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, "pw".toCharArray());
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys.getKeyManagers(), null, null);
        return context.getServerSocketFactory().createServerSocket(0, 1, InetAddress.getLoopbackAddress());
    }

    private static TcpTransport client(String host, ServerSocket server, String ca) {
        return new TcpTransport("tls://" + host + ":" + server.getLocalPort(), TOKEN, "my-app", TcpTransportTest.conf(),
                TlsTrust.factory(dir.resolve(ca + ".crt").toString()));
    }

    @Test
    void aHostWithTheTrustedCertificateIsServedOverTls() throws Exception {
        try (ServerSocket server = listen("localhost")) {
            CompletableFuture<List<JsonNode>> host = CompletableFuture.supplyAsync(() -> TcpTransportTest.serve(server, TOKEN));
            TcpTransport transport = client("localhost", server, "localhost");
            try {
                assertEquals(1, transport.connect());
                assertEquals("{\"v\":2,\"echo\":{\"kind\":\"round\"}}", transport.call("{\"kind\":\"round\"}"));
            } finally {
                transport.close();
            }
            assertEquals(3, host.get(10, TimeUnit.SECONDS).size());
        }
    }

    @Test
    void aCertificateNotSignedByTheConfiguredCaIsRefusedBeforeAnythingIsSent() throws Exception {
        try (ServerSocket server = listen("localhost")) {
            CompletableFuture<List<JsonNode>> host = CompletableFuture.supplyAsync(() -> TcpTransportTest.serve(server, TOKEN));
            IOException e = assertThrows(IOException.class, client("localhost", server, "other")::connect);
            assertTrue(e.getMessage().contains("TLS handshake failed (is spark.schedbridge.tls.ca the certificate"),
                    e.getMessage());
            assertTrue(TlsTrust.refused(e), "not retried: waiting does not make the certificate trusted");
            assertThrows(Exception.class, () -> host.get(10, TimeUnit.SECONDS));  // its handshake failed too
        }
    }

    @Test
    void aCertificateForAnotherHostNameIsRefused() throws Exception {
        try (ServerSocket server = listen("other")) {  // trusted, but it names "other", not localhost
            CompletableFuture.runAsync(() -> TcpTransportTest.serve(server, TOKEN));
            IOException e = assertThrows(IOException.class, client("localhost", server, "other")::connect);
            assertTrue(e.getMessage().contains("does it name localhost?"), e.getMessage());
            assertTrue(TlsTrust.refused(e));
        }
    }

    @Test
    void aHostThatIsNotThereIsNotARefusedCertificate() throws Exception {
        int port;
        try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = closed.getLocalPort();
        }
        TcpTransport transport = new TcpTransport("tls://localhost:" + port, TOKEN, "my-app", TcpTransportTest.conf(),
                TlsTrust.factory(dir.resolve("localhost.crt").toString()));
        IOException e = assertThrows(IOException.class, transport::connect);
        assertFalse(TlsTrust.refused(e), "a host being restarted is retried: " + e);
    }

    @Test
    void anUnreadableCaFileNamesTheKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TlsTrust.factory(dir.resolve("missing.crt").toString()));
        assertTrue(e.getMessage().startsWith("schedbridge: spark.schedbridge.tls.ca=" + dir.resolve("missing.crt")
                + " is not a readable PEM certificate file"), e.getMessage());
    }
}
