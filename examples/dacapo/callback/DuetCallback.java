/*
 * DuetCallback: a DaCapo harness callback (`-c DuetCallback`) for duetbench.
 *
 * 1. Writes one CSV row per iteration, warm-ups included, in the format duetbench's
 *    `dacapo` / `scalabench` parsers read (docs/parsers.md):
 *
 *      iteration,start_unix,iteration_time_ns,total_ms,harness_warmup,benchmark
 *
 *    start_unix: wall clock (ms since the epoch) when the iteration started;
 *    iteration_time_ns: System.nanoTime() from start to stop; total_ms: the harness'
 *    own measurement of the same iteration. File: -Dduet.results=PATH
 *    (default results.csv in the working directory). Every row is flushed.
 *
 * 2. In synchronous duets, waits at duetbench's iteration barrier before each
 *    iteration, outside the timed region (docs/sync.md, "Protocol"): open
 *    $DUET_SYNC_DIR/go.$DUET_PAIR for reading, write "$DUET_PAIR\n" to
 *    $DUET_SYNC_DIR/ready, read "go\n". Without DUET_SYNC_DIR it does not wait,
 *    so one command serves seqn, aduet and sduet; but when DUET_METHOD is sduet a
 *    missing DUET_SYNC_DIR is an error rather than a silently unsynchronized run.
 *    The wait has no timeout of its own (Java cannot poll a FIFO); the run's
 *    timeout ends it.
 *
 * Written against the harness API of DaCapo 9.12-MR1 ("bach") and later:
 * Callback(CommandLineArgs), start(String), stop(long), complete(String, boolean).
 * The original 9.12 (2009) harness, also inside ScalaBench 0.1.0, may have
 * stop() without an argument: check with
 *   javap -cp dacapo.jar org.dacapo.harness.Callback
 * and if so rename stop(long duration) below to stop() and call super.stop().
 *
 * Build (against the jar you run):  javac -cp dacapo.jar -d . DuetCallback.java
 * Run:  java -Dduet.results=/duet/results.csv -cp dacapo.jar:. Harness -c DuetCallback ...
 */

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import org.dacapo.harness.Callback;
import org.dacapo.harness.CommandLineArgs;

public class DuetCallback extends Callback {

  private final Path resultsPath;
  private final String syncDir;
  private final String pair;
  private PrintWriter out;
  private int iteration;
  private long startUnixMs;
  private long startNanos;
  private boolean warmup;
  private String benchmark = "";

  public DuetCallback(CommandLineArgs args) {
    super(args);
    resultsPath = Paths.get(System.getProperty("duet.results", "results.csv"));
    String dir = System.getenv("DUET_SYNC_DIR");
    syncDir = dir == null || dir.isEmpty() ? null : dir;
    String p = System.getenv("DUET_PAIR");
    pair = p == null ? "" : p;
    if (syncDir == null && "sduet".equals(System.getenv("DUET_METHOD"))) {
      throw new IllegalStateException(
          "DuetCallback: DUET_METHOD is sduet but DUET_SYNC_DIR is not set: cannot synchronize");
    }
    if (syncDir != null && pair.isEmpty()) {
      throw new IllegalStateException("DuetCallback: DUET_SYNC_DIR is set but DUET_PAIR is not");
    }
  }

  @Override
  public void start(String benchmark) {
    if (syncDir != null) {
      awaitGo();
    }
    this.benchmark = benchmark;
    warmup = isWarmup();
    startUnixMs = System.currentTimeMillis();
    startNanos = System.nanoTime();
    super.start(benchmark);
  }

  @Override
  public void stop(long duration) {
    long elapsed = System.nanoTime() - startNanos;
    super.stop(duration);
    writeRow(elapsed, duration);
  }

  private void writeRow(long elapsedNanos, long harnessMillis) {
    try {
      if (out == null) {
        Path parent = resultsPath.toAbsolutePath().getParent();
        if (parent != null) {
          Files.createDirectories(parent);
        }
        out = new PrintWriter(Files.newBufferedWriter(resultsPath, StandardCharsets.UTF_8));
        out.print("iteration,start_unix,iteration_time_ns,total_ms,harness_warmup,benchmark\n");
      }
      out.print(iteration + "," + startUnixMs + "," + elapsedNanos + "," + harnessMillis + ","
          + warmup + "," + benchmark + "\n");
      out.flush();
      if (out.checkError()) {
        throw new IOException("write failed");
      }
      iteration++;
    } catch (IOException e) {
      throw new IllegalStateException("DuetCallback: cannot write " + resultsPath + ": " + e, e);
    }
  }

  /** One ready/go round trip with the duetbench coordinator. */
  private void awaitGo() {
    Path dir = Paths.get(syncDir);
    // open our go FIFO before saying ready, so the answer cannot be missed; the
    // coordinator holds both ends open, so neither open blocks while it lives
    try (InputStream go = new FileInputStream(dir.resolve("go." + pair).toFile())) {
      try (OutputStream ready = new FileOutputStream(dir.resolve("ready").toFile())) {
        ready.write((pair + "\n").getBytes(StandardCharsets.US_ASCII));  // one write < PIPE_BUF
      }
      StringBuilder line = new StringBuilder();
      int c;
      while ((c = go.read()) != '\n') {
        if (c < 0) {
          throw new IOException("the coordinator closed the barrier during a wait");
        }
        line.append((char) c);
      }
      if (!"go".contentEquals(line)) {
        throw new IOException("expected 'go' from the coordinator, got '" + line + "'");
      }
    } catch (IOException e) {
      throw new IllegalStateException("DuetCallback: iteration barrier in " + syncDir + ": "
          + e.getMessage(), e);
    }
  }
}
