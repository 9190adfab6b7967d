package org.schedbridge.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The policy host process the plugin starts beside the driver (endpoint {@code local}):
 * {@code PYTHON -m bridge.plugin.local_host}, listening on loopback, with a fresh random token
 * handed over in its environment (never on its command line). It exits when its standard input
 * closes, which {@link #close} does when the application stops and the operating system does if
 * the driver dies. Its log goes to {@code spark.schedbridge.host.log}, else to an owner-only
 * temporary file removed at the end. {@code spark.schedbridge.agents} reaches it as
 * {@code $SCHEDBRIDGE_AGENTS} (a preempting policy's node agents).
 */
final class LocalPolicyHost implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LocalPolicyHost.class);
    static final String MODULE = "bridge.plugin.local_host";
    private static final String READY = "READY ";
    private static final int LOG_TAIL = 2000;
    private static final long STOP_WAIT_S = 5;

    private final Process process;
    private final Path log;
    private final boolean tempLog;
    final String endpoint;
    final String token;

    private LocalPolicyHost(Process process, Path log, boolean tempLog, String endpoint, String token) {
        this.process = process;
        this.log = log;
        this.tempLog = tempLog;
        this.endpoint = endpoint;
        this.token = token;
    }

    /** Starts the host and waits (at most the start timeout) for its address; a clear error if it cannot. */
    static LocalPolicyHost start(BridgeConf conf) {
        String token = TcpTransport.randomHex(32);
        List<String> command = List.of(conf.python, "-m", MODULE);
        Path log;
        boolean tempLog = conf.hostLog.isEmpty();
        try {
            log = tempLog ? Files.createTempFile("schedbridge-host-", ".log") : Path.of(conf.hostLog);
        } catch (IOException e) {
            throw new IllegalStateException("schedbridge: cannot create the policy host's log file: " + e.getMessage(), e);
        }
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        pb.environment().put("SCHEDBRIDGE_HOST_TOKEN", token);
        pb.environment().put("SCHEDBRIDGE_HOST_LOG_LEVEL", tempLog ? "WARNING" : "INFO");
        if (!conf.agents.isEmpty()) { // a preempting policy's node agents (bridge.nodes.cluster_agents)
            pb.environment().put("SCHEDBRIDGE_AGENTS", conf.agents);
        }
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IllegalStateException("schedbridge: cannot start the policy host with '" + conf.python + "': "
                    + e.getMessage() + "; " + pythonHint(), e);
        }
        String line = firstLine(process, conf.startTimeoutMs);
        if (line == null || !line.startsWith(READY)) {
            String why = line == null ? "" : line;
            LocalPolicyHost dead = new LocalPolicyHost(process, log, tempLog, "", token);
            String tail = dead.logTail();
            dead.close();
            throw new IllegalStateException("schedbridge: the policy host (" + String.join(" ", command)
                    + ") did not start within " + conf.startTimeoutMs + " ms: " + why + tail + "; " + pythonHint());
        }
        String endpoint = line.substring(READY.length()).trim();
        LOG.info("schedbridge: policy host started beside the driver (pid {}, {}, log {})", process.pid(), endpoint, log);
        return new LocalPolicyHost(process, log, tempLog, endpoint, token);
    }

    private static String pythonHint() {
        return "set " + BridgeConf.PREFIX + "python to a Python with schedbridge installed (default: "
                + "spark.pyspark.driver.python, spark.pyspark.python, $PYSPARK_DRIVER_PYTHON, $PYSPARK_PYTHON, python3)";
    }

    /** The host's first stdout line, or null if it exits or stays silent past {@code timeoutMs}. */
    private static String firstLine(Process process, int timeoutMs) {
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = new CompletableFuture<>();
        Thread reader = DaemonThreads.named("schedbridge-host-start").newThread(() -> {
            try {
                line.complete(out.readLine());
            } catch (IOException e) {
                line.complete(null);
            }
        });
        reader.start();
        try {
            return line.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private String logTail() {
        try {
            String text = Files.readString(log, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "" : " [its log: " + text.substring(Math.max(0, text.length() - LOG_TAIL)) + "]";
        } catch (IOException e) {
            return "";
        }
    }

    /** Closes the host's stdin (it exits), then terminates it if it lingers; removes a temporary log. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(STOP_WAIT_S, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(STOP_WAIT_S, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
        } catch (IOException e) {
            process.destroy();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        if (tempLog) {
            try {
                Files.deleteIfExists(log);
            } catch (IOException ignored) {
                // a temporary file; the OS cleans its temp directory
            }
        }
    }
}
