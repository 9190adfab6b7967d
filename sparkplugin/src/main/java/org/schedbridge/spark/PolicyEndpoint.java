package org.schedbridge.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the policy is hosted, from {@code spark.schedbridge.endpoint}: {@code local} (default) starts a
 * {@link LocalPolicyHost} beside the driver and talks to it over loopback TCP with its token;
 * {@code inprocess} is the PySpark driver's own host (py4j); {@code tcp://host:port} (or
 * {@code tls://host:port}, verified against {@code spark.schedbridge.tls.ca}) is a shared
 * {@code schedbridge serve} daemon. Closing it closes the connection and stops a host it started.
 */
final class PolicyEndpoint implements AutoCloseable {
    final Transport transport;
    /** For logs and the end-of-application summary. */
    final String description;
    private final LocalPolicyHost host;

    private PolicyEndpoint(Transport transport, String description, LocalPolicyHost host) {
        this.transport = transport;
        this.description = description;
        this.host = host;
    }

    /** Opens the configured endpoint; a malformed one, or a local host that cannot start, is an error. */
    static PolicyEndpoint open(BridgeConf conf, String app) {
        if (conf.endpoint.equals(BridgeConf.INPROCESS)) {
            return new PolicyEndpoint(new InProcessChannel(), "the PySpark driver (in-process)", null);
        }
        if (conf.endpoint.equals(BridgeConf.LOCAL)) {
            LocalPolicyHost host;
            try {
                host = LocalPolicyHost.start(conf);
            } catch (IllegalStateException e) {
                if (!conf.fallback) {
                    throw e;
                }
                return new PolicyEndpoint(unreachable(e.getMessage()), "no policy host (it did not start)", null);
            }
            return new PolicyEndpoint(new TcpTransport(host.endpoint, host.token, app, conf, null),
                    "a host beside the driver (" + host.endpoint + ")", host);
        }
        String where = "the daemon at " + conf.endpoint;
        boolean tls = conf.endpoint.startsWith("tls:");
        if (!tls && !conf.tlsCa.isEmpty()) {
            throw new IllegalArgumentException("schedbridge: " + TlsTrust.KEY + " is set but " + BridgeConf.PREFIX
                    + "endpoint is '" + conf.endpoint + "': use tls://host:port for a daemon serving TLS");
        }
        String token;
        try {
            token = conf.token.isEmpty() ? Files.readString(Path.of(conf.tokenFile), StandardCharsets.UTF_8).strip() : conf.token;
        } catch (IOException e) {
            String why = "no token for " + where + ": set " + BridgeConf.PREFIX + "token, or " + BridgeConf.PREFIX
                    + "token.file (default ~/.schedbridge/serve-token, written by schedbridge serve): " + e;
            if (!conf.fallback) {
                throw new IllegalArgumentException("schedbridge: " + why);
            }
            return new PolicyEndpoint(unreachable(why), where, null);
        }
        return new PolicyEndpoint(new TcpTransport(conf.endpoint, token, app, conf,
                tls ? TlsTrust.factory(conf.tlsCa) : null), where, null);
    }

    /** A transport that never connects (fallback=true and the local host would not start). */
    private static Transport unreachable(String reason) {
        return new Transport() {
            @Override
            public long connect() throws IOException {
                throw new IOException(reason);
            }

            @Override
            public String call(String request) throws IOException {
                throw new IOException(reason);
            }

            @Override
            public void close() {
                // nothing was opened
            }
        };
    }

    @Override
    public void close() {
        transport.close();
        if (host != null) {
            host.close();
        }
    }
}
