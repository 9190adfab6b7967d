package org.schedbridge.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * The wire protocol to a policy host over TCP: one JSON object per line, bounded, after a mutual
 * HMAC handshake on the token ({@code bridge/protocol/auth.py}), played here by a fake host.
 */
class TcpTransportTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "secret-token-of-the-daemon";

    /** {@code bridge.protocol.auth.proof}: HMAC-SHA256 of {@code role|first|second} under the token, hex. */
    private static String proof(String token, String role, String first, String second) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return HexFormat.of().formatHex(mac.doFinal((role + "|" + first + "|" + second).getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void theProofIsPythonsHmac() throws Exception {
        // bridge.protocol.auth.proof("secret-token", "host", "aa", "bb"), computed by the Python side.
        assertEquals("08de6ac14d729e30a971d4f3ea2907fd0e751c0e66e1c3bd35cf55e805860d49",
                proof("secret-token", "host", "aa", "bb"));
    }

    @Test
    void aLineIsReadUpToItsNewlineAndNoFurther() throws IOException {
        BufferedReader in = new BufferedReader(new StringReader("{\"a\":1}\n{\"b\":2}\n"));
        assertEquals("{\"a\":1}", TcpTransport.readBoundedLine(in, 7));
        assertEquals("{\"b\":2}", TcpTransport.readBoundedLine(in, 7));
    }

    @Test
    void aLineOverTheBoundIsRefusedNotSplit() {
        BufferedReader in = new BufferedReader(new StringReader("12345678\n"));
        IOException e = assertThrows(IOException.class, () -> TcpTransport.readBoundedLine(in, 7));
        assertEquals("reply over the 7-character limit", e.getMessage());
    }

    @Test
    void aConnectionClosedMidLineIsAnError() {
        BufferedReader in = new BufferedReader(new StringReader("{\"v\": 2"));
        IOException e = assertThrows(IOException.class, () -> TcpTransport.readBoundedLine(in, 100));
        assertEquals("daemon closed the connection", e.getMessage());
    }

    @Test
    void anEndpointThatIsNotTcpHostPortNamesTheKey() {
        for (String endpoint : new String[] {"tcp://host", "http://host:1", "host:1", "tcp:/x"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new TcpTransport(endpoint, TOKEN, "app", conf(), null));
            assertTrue(e.getMessage().startsWith("schedbridge: spark.schedbridge.endpoint must be"), e.getMessage());
            assertTrue(e.getMessage().endsWith("got '" + endpoint + "'"), e.getMessage());
        }
    }

    @Test
    void handshakeThenOneLinePerCall() throws Exception {
        try (ServerSocket server = listen()) {
            CompletableFuture<List<JsonNode>> host = CompletableFuture.supplyAsync(() -> serve(server, TOKEN));
            TcpTransport transport = new TcpTransport(endpoint(server), TOKEN, "my-app", conf(), null);
            try {
                assertEquals(1, transport.connect());
                assertEquals(1, transport.connect());  // still the same connection
                assertEquals("{\"v\":2,\"echo\":{\"kind\":\"round\"}}", transport.call("{\"kind\":\"round\"}"));
            } finally {
                transport.close();
            }
            List<JsonNode> seen = host.get(10, TimeUnit.SECONDS);
            JsonNode hello = seen.get(0);
            assertEquals(Protocol.VERSION, hello.get("v").asInt());
            assertEquals("hello", hello.get("kind").asText());
            assertEquals("my-app", hello.get("app").asText());
            JsonNode auth = seen.get(1);
            assertEquals("auth", auth.get("kind").asText());
            assertTrue(auth.get("app_key").asText().matches("[0-9a-f]{64}"), auth.toString());
            assertEquals(3, seen.size());
        }
    }

    @Test
    void aHostThatCannotProveTheTokenGetsNothing() throws Exception {
        try (ServerSocket server = listen()) {
            CompletableFuture<List<JsonNode>> host =
                    CompletableFuture.supplyAsync(() -> serve(server, "another-token-altogether"));
            TcpTransport transport = new TcpTransport(endpoint(server), TOKEN, "my-app", conf(), null);
            IOException e = assertThrows(IOException.class, transport::connect);
            assertTrue(e.getMessage().contains("could not prove it knows the token"), e.getMessage());
            List<JsonNode> seen = host.get(10, TimeUnit.SECONDS);
            assertEquals(1, seen.size(), "only the hello reached the fake host: " + seen);
        }
    }

    @Test
    void atStartAFailedConnectionIsRetriedWithinTheStartTimeout() throws Exception {
        try (ServerSocket server = listen()) {
            CompletableFuture<List<JsonNode>> host = CompletableFuture.supplyAsync(() -> {
                try {
                    server.accept().close();  // the first connection fails, as under a loaded host's start
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
                return serve(server, TOKEN);
            });
            BridgeConf conf = BridgeConf.from(new SparkConf(false).set(BridgeConf.PREFIX + "endpoint", endpoint(server))
                    .set(BridgeConf.PREFIX + "token", TOKEN).set(BridgeConf.PREFIX + "retry.wait", "100ms")
                    .set(BridgeConf.PREFIX + "start.timeout", "20s"));
            BridgeStats stats = BridgeStats.reset(conf.policy, conf.endpoint);
            try (PolicyClient client = new PolicyClient("my-app", PolicyEndpoint.open(conf, "my-app"),
                    new ClusterMirror(), conf, stats)) {
                client.start();  // without the retry: "did not answer at start: ...: daemon closed the connection"
            }
            List<JsonNode> seen = host.get(10, TimeUnit.SECONDS);
            assertEquals(List.of("hello", "auth", "attach"), seen.stream().map(m -> m.get("kind").asText()).toList());
        }
    }

    static BridgeConf conf() {
        return BridgeConf.from(new SparkConf(false));
    }

    static ServerSocket listen() throws IOException {
        return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    }

    static String endpoint(ServerSocket server) {
        return "tcp://127.0.0.1:" + server.getLocalPort();
    }

    /**
     * A fake host for one connection: answers the hello with a proof under {@code token}, accepts
     * a correct plugin proof, then echoes each request; returns every message it read.
     */
    static List<JsonNode> serve(ServerSocket server, String token) {
        List<JsonNode> seen = new ArrayList<>();
        try (Socket s = server.accept()) {
            s.setSoTimeout(10_000);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8);
            String mine = "00112233445566778899aabbccddeeff";
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                JsonNode msg = JSON.readTree(line);
                seen.add(msg);
                switch (msg.path("kind").asText()) {
                    case "hello" -> out.println(JSON.createObjectNode().put("v", Protocol.VERSION).put("nonce", mine)
                            .put("proof", proof(token, "host", msg.get("nonce").asText(), mine)));
                    case "auth" -> out.println(JSON.createObjectNode().put("v", Protocol.VERSION)
                            .put("ok", msg.get("proof").asText().equals(proof(token, "plugin", mine, seen.get(0).get("nonce").asText()))));
                    case "attach" -> out.println(JSON.createObjectNode().put("v", Protocol.VERSION).put("attached", true));
                    default -> out.println(JSON.createObjectNode().put("v", Protocol.VERSION).set("echo", msg));
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return seen;
    }
}
