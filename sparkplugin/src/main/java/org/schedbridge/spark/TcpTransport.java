package org.schedbridge.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * A policy host over TCP (the daemon, or the host beside the driver): one JSON object per line,
 * at most {@link Protocol#MAX_MESSAGE} each. A new connection opens with a mutual HMAC handshake
 * on the token; every socket operation has a timeout; a broken connection is dropped and re-opened
 * at most once per retry interval. A {@code tls://} endpoint is reached over TLS, its certificate
 * and host name verified ({@link TlsTrust}) before anything is sent.
 */
final class TcpTransport implements Transport {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final InetSocketAddress address;
    /** {@code host:port} as configured, for messages. */
    private final String where;
    /** TLS for a {@code tls://} endpoint; null for {@code tcp://}. */
    private final SSLSocketFactory tls;
    private final String token;
    private final String app;
    /** This SparkContext's own secret: the host binds the application to it at its first round. */
    private final String appKey = randomHex(32);
    private final int connectTimeoutMs;
    private final int ioTimeoutMs;
    private final int retryMs;
    private Socket socket;
    private BufferedReader in;
    private BufferedWriter out;
    private long epoch;
    private long lastAttemptMs = Long.MIN_VALUE / 2;

    /** {@code tls}: the sockets a {@code tls://} endpoint needs (null: a {@code tcp://} one). */
    TcpTransport(String endpoint, String token, String app, BridgeConf conf, SSLSocketFactory tls) {
        URI uri;
        try {
            uri = new URI(endpoint);
        } catch (URISyntaxException e) {
            uri = URI.create("invalid:/");
        }
        if (!(tls == null ? "tcp" : "tls").equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("schedbridge: " + BridgeConf.PREFIX + "endpoint must be '"
                    + BridgeConf.LOCAL + "' (a policy host beside the driver, the default), '" + BridgeConf.INPROCESS
                    + "' (the PySpark driver hosts it), tcp://host:port or tls://host:port (schedbridge serve), got '"
                    + endpoint + "'");
        }
        this.tls = tls;
        this.address = InetSocketAddress.createUnresolved(uri.getHost(), uri.getPort());
        this.where = uri.getHost() + ":" + uri.getPort();
        this.token = token;
        this.app = app;
        this.connectTimeoutMs = Math.max(conf.deadlineMs, 100);
        this.ioTimeoutMs = conf.ioTimeoutMs;
        this.retryMs = conf.retryMs;
    }

    @Override
    public synchronized long connect() throws IOException {
        if (socket != null) {
            return epoch;
        }
        long now = System.currentTimeMillis();
        if (now - lastAttemptMs < retryMs) {
            throw new IOException("daemon " + where + " unreachable (retrying every " + retryMs + " ms)");
        }
        lastAttemptMs = now;
        Socket s = new Socket();
        socket = s;
        try {
            s.connect(new InetSocketAddress(address.getHostString(), address.getPort()), connectTimeoutMs);
            s.setSoTimeout(ioTimeoutMs);
            s.setTcpNoDelay(true);
            if (tls != null) {
                s = secure(s);
                socket = s;
            }
            in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            out = new BufferedWriter(new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8));
            hello();
        } catch (IOException | RuntimeException e) {
            close();
            throw new IOException(where + ": " + (e.getMessage() == null ? e.toString() : e.getMessage()), e);
        }
        return ++epoch;
    }

    /** The TLS handshake over {@code plain}, verifying the certificate and that it names the endpoint's host. */
    private Socket secure(Socket plain) throws IOException {
        SSLSocket s = (SSLSocket) tls.createSocket(plain, address.getHostString(), address.getPort(), true);
        SSLParameters params = s.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        s.setSSLParameters(params);
        try {
            s.startHandshake();  // within the socket's read timeout
        } catch (IOException e) {
            s.close();
            throw new IOException("TLS handshake failed (is " + TlsTrust.KEY + " the certificate schedbridge serve "
                    + "was given, and does it name " + address.getHostString() + "?): " + e.getMessage(), e);
        }
        return s;
    }

    /**
     * Mutual authentication ({@code bridge/protocol/auth.py}): the host must prove it knows the
     * token before this side proves it and sends the application key; the token never crosses.
     */
    private void hello() throws IOException {
        String mine = randomHex(16);
        ObjectNode hello = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "hello").put("app", app)
                .put("nonce", mine);
        JsonNode challenge = JSON.readTree(exchange(JSON.writeValueAsString(hello)));
        String theirs = challenge.path("nonce").asText("");
        if (theirs.isEmpty() || !MessageDigest.isEqual(proof("host", mine, theirs).getBytes(StandardCharsets.UTF_8),
                challenge.path("proof").asText("").getBytes(StandardCharsets.UTF_8))) {
            throw new IOException("the policy host could not prove it knows the token ("
                    + challenge.path("error").asText("no proof") + "); nothing sent to it");
        }
        ObjectNode auth = JSON.createObjectNode().put("v", Protocol.VERSION).put("kind", "auth")
                .put("proof", proof("plugin", theirs, mine)).put("app_key", appKey);
        JsonNode reply = JSON.readTree(exchange(JSON.writeValueAsString(auth)));
        if (!reply.path("ok").asBoolean(false)) {
            throw new IOException("the policy host refused the connection: " + reply.path("error").asText("no reason"));
        }
    }

    private String proof(String role, String first, String second) throws IOException {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal((role + "|" + first + "|" + second).getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IOException("HMAC-SHA256 unavailable: " + e.getMessage(), e);
        }
    }

    static String randomHex(int bytes) {
        byte[] b = new byte[bytes];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    @Override
    public synchronized String call(String request) throws IOException {
        if (socket == null) {
            throw new IOException(where + " not connected");
        }
        try {
            return exchange(request);
        } catch (IOException e) {
            close();
            throw e;
        }
    }

    private String exchange(String line) throws IOException {
        if (line.length() > Protocol.MAX_MESSAGE) {
            throw new IOException("request of " + line.length() + " characters over the " + Protocol.MAX_MESSAGE + " limit");
        }
        out.write(line);
        out.write('\n');
        out.flush();
        return readBoundedLine(in, Protocol.MAX_MESSAGE);
    }

    /** One line of at most {@code max} characters; a longer one, or the end of the stream, is an error. */
    static String readBoundedLine(BufferedReader reader, int max) throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = reader.read()) != '\n') {
            if (c < 0) {
                throw new IOException("daemon closed the connection");
            }
            if (line.length() == max) {
                throw new IOException("reply over the " + max + "-character limit");
            }
            line.append((char) c);
        }
        return line.toString();
    }

    @Override
    public synchronized void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // already broken; nothing to release
            }
        }
        socket = null;
        in = null;
        out = null;
    }
}
