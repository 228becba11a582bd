package mnemo;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.io.ByteUnit;

/**
 * Starts a real Neo4j 5.26 (community, in-process, via neo4j-harness) with Bolt on 127.0.0.1 for Mnemo's
 * Python tests.
 *
 * <pre>
 * java -Xmx512m -jar neo4j-harness-launcher.jar [--port N] [--dir PATH] [--password PW] [--ignore-stdin]
 * </pre>
 *
 * <ul>
 *   <li>--port: Bolt port (else env NEO4J_HARNESS_PORT, else 7688). Always bound to 127.0.0.1.</li>
 *   <li>--dir: folder under which the harness creates its own random data folder (else env
 *       NEO4J_HARNESS_DIR, else a fresh temp dir). The data folder is deleted on clean shutdown.</li>
 *   <li>--password: enable auth with user "neo4j" and this password (else env NEO4J_HARNESS_PASSWORD).
 *       Without it, auth is disabled (connect with auth=None).</li>
 *   <li>--ignore-stdin: do not shut down when stdin closes (for background use with a pidfile).</li>
 * </ul>
 *
 * Prints exactly one line "NEO4J_READY bolt://127.0.0.1:PORT" to stdout once a Bolt handshake succeeds,
 * then blocks until stdin reaches EOF (unless --ignore-stdin) or the JVM gets SIGTERM/SIGINT, and shuts
 * Neo4j down cleanly ("NEO4J_STOPPED" on stdout). Exit code 1 on a failed start.
 */
public final class Neo4jLauncher {
    private static final String HOST = "127.0.0.1";

    private Neo4jLauncher() {}

    public static void main(String[] args) throws Exception {
        Integer port = null;
        String dir = null;
        String password = null;
        boolean watchStdin = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--dir" -> dir = args[++i];
                case "--password" -> password = args[++i];
                case "--ignore-stdin" -> watchStdin = false;
                case "-h", "--help" -> {
                    System.out.println("usage: Neo4jLauncher [--port N] [--dir PATH] [--password PW] [--ignore-stdin]");
                    return;
                }
                default -> {
                    System.err.println("unknown argument: " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (port == null) {
            String env = System.getenv("NEO4J_HARNESS_PORT");
            port = (env == null || env.isBlank()) ? 7688 : Integer.parseInt(env.trim());
        }
        if (dir == null) {
            String env = System.getenv("NEO4J_HARNESS_DIR");
            dir = (env == null || env.isBlank()) ? null : env;
        }
        if (password == null) {
            String env = System.getenv("NEO4J_HARNESS_PASSWORD");
            password = (env == null || env.isEmpty()) ? null : env;
        }
        if (password != null && password.length() < 8) {
            System.err.println("NEO4J_FAILED: Neo4j 5 requires a password of at least 8 characters");
            System.exit(2);
        }

        Path workDir = dir != null ? Path.of(dir).toAbsolutePath() : Files.createTempDirectory("mnemo-neo4j-");
        Files.createDirectories(workDir);

        Neo4jBuilder builder = Neo4jBuilders.newInProcessBuilder(workDir)
                .withDisabledServer() // no Jetty: Bolt only
                .withConfig(HttpConnector.enabled, false)
                .withConfig(HttpsConnector.enabled, false)
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                .withConfig(BoltConnector.advertised_address, new SocketAddress(HOST, port))
                .withConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .withConfig(BoltConnector.thread_pool_max_size, 64)
                .withConfig(GraphDatabaseSettings.auth_enabled, password != null)
                .withConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(64))
                .withConfig(GraphDatabaseSettings.pagecache_warmup_enabled, false)
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .withConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(16))
                .withConfig(GraphDatabaseSettings.udc_enabled, false)
                // internal settings: Bolt waits 2 x 5 s on shutdown by default; a test server need not
                .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
                .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500))
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(2));

        long t0 = System.nanoTime();
        final Neo4j neo4j;
        try {
            neo4j = builder.build();
        } catch (Throwable e) {
            System.err.println("NEO4J_FAILED: " + e);
            e.printStackTrace(System.err);
            System.out.flush();
            System.exit(1);
            return;
        }

        AtomicBoolean closed = new AtomicBoolean(false);
        CountDownLatch stop = new CountDownLatch(1);
        // synchronized: a second caller (signal hook vs. main thread) waits until the first has closed Neo4j,
        // so the JVM never halts halfway through a shutdown.
        Runnable shutdown = () -> {
            synchronized (closed) {
                if (closed.compareAndSet(false, true)) {
                    try {
                        neo4j.close();
                    } catch (Throwable e) {
                        System.err.println("error during Neo4j shutdown: " + e);
                    }
                    System.out.println("NEO4J_STOPPED");
                    System.out.flush();
                }
            }
        };
        // SIGTERM / SIGINT run shutdown hooks: close Neo4j cleanly (checkpoint, delete the data folder).
        Thread hook = new Thread(() -> {
            stop.countDown();
            shutdown.run();
        }, "mnemo-neo4j-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        try {
            if (password != null) {
                neo4j.databaseManagementService()
                        .database("system")
                        .executeTransactionally(
                                "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED",
                                java.util.Map.of("pw", password));
            }
            waitForBolt(port, 60_000);
        } catch (Throwable e) {
            System.err.println("NEO4J_FAILED: " + e);
            e.printStackTrace(System.err);
            neo4j.printLogs(System.err);
            System.exit(1); // the hook closes Neo4j
            return;
        }

        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.err.printf("Neo4j %s started in %d ms; data under %s; auth %s%n",
                org.neo4j.kernel.internal.Version.getNeo4jVersion(), ms, workDir,
                password != null ? "enabled (user neo4j)" : "disabled");
        System.out.println("NEO4J_READY bolt://" + HOST + ":" + port);
        System.out.flush();

        if (watchStdin) {
            Thread watcher = new Thread(() -> {
                try {
                    InputStream in = System.in;
                    byte[] buf = new byte[256];
                    while (in.read(buf) >= 0) {
                        // discard
                    }
                } catch (IOException ignored) {
                    // treat as closed
                }
                System.err.println("stdin closed: shutting down Neo4j");
                stop.countDown();
            }, "mnemo-neo4j-stdin");
            watcher.setDaemon(true);
            watcher.start();
        }

        stop.await();
        // Shut down here rather than only in the hook, then exit normally.
        shutdown.run();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException ignored) {
            return; // already shutting down via a signal: the hook finishes the exit
        }
        System.exit(0);
    }

    /** Waits until a Bolt handshake on HOST:port succeeds (the server answers with a version). */
    private static void waitForBolt(int port, long timeoutMs) throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        IOException last = null;
        while (System.currentTimeMillis() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(HOST, port), 2_000);
                s.setSoTimeout(5_000);
                OutputStream out = s.getOutputStream();
                // magic preamble + 4 proposed versions: 5.0, 4.4, none, none
                out.write(new byte[] {
                    (byte) 0x60, (byte) 0x60, (byte) 0xB0, (byte) 0x17,
                    0, 0, 0, 5,
                    0, 0, 4, 4,
                    0, 0, 0, 0,
                    0, 0, 0, 0
                });
                out.flush();
                int agreed = new DataInputStream(s.getInputStream()).readInt();
                if (agreed != 0) {
                    return;
                }
                last = new IOException("Bolt handshake: server agreed to no version");
            } catch (IOException e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw new IOException("Bolt did not accept connections on " + HOST + ":" + port + " within "
                + timeoutMs + " ms", last);
    }
}
