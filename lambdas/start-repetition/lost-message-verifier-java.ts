/**
 * The Java source of the load generator's lost-message verifier (a single-file program the JVM compiles in memory:
 * https://openjdk.org/jeps/330), kept as a string so that the Lambda bundle (esbuild) and the tests (jest) read the
 * same
 * text without a loader of their own: the run scripts write it to the load generator beside PerfTest's jars. What it
 * does and prints is described in its class comment; core/failover/cloud-verifier.ts turns its output into the stored
 * counts.
 */
export const LOST_MESSAGE_VERIFIER_CLASS = 'LostMessageVerifier';

export const LOST_MESSAGE_VERIFIER_JAVA =
  String.raw`import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * rmqbench's lost-message verifier for the load generator (Java single-file source program, run with
 * "java -cp '<perf-test home>/lib/*' LostMessageVerifier.java ...", which Java 11+ compiles in memory: JEP 330,
 * https://openjdk.org/jeps/330). The same semantics as local/lost-message-verifier.ts, with the RabbitMQ Java client
 * PerfTest brings (amqp-client 5.x):
 * sequence numbers as the body of persistent messages, publisher confirms with at most "window" in flight, a consumer
 * with manual acks and a prefetch, both reconnecting round-robin over the URIs with the client's automatic recovery off
 * (so that every recovery is ours and counted once, at the first confirm or delivery after it), heartbeat 5 s,
 * basic.cancel from the broker treated as a lost subscription, a drain at the end, duplicates, received per second.
 * Messages unconfirmed on a lost connection are not published again; they count as unconfirmed, never as lost.
 *
 * Input: the AMQP URIs (with credentials) in the environment variable RMQBENCH_VERIFIER_URIS, separated by spaces or
 * newlines, never in argv (a process list shows argv to every user). Arguments: --queue NAME --seconds N
 * [--rate 200] [--window 200] [--prefetch 200] [--queue-arg key=value]... (declares, on the first connection, the queue
 * durable with those arguments, e.g. x-queue-type=quorum, and a durable direct exchange of the same name bound to it,
 * through which it publishes).
 * Output: one JSON line on stdout {"startedAtMs":..., "published":..., "confirmed":..., "consumed":...,
 * "lostMessages":...,
 * "duplicatedMessages":..., "reconnects":..., "receivedPerSecond":[...], "unconfirmedPerSecond":[...]} where index i of
 * unconfirmedPerSecond is the number in flight at second i after startedAtMs (core/failover/cloud-verifier.ts reads
 * it). Errors
 * go to stderr, exit status 2; URIs are never printed (they hold the password).
 */
public class LostMessageVerifier {
  static final int TICK_MS = 50;
  static final long RECONNECT_DELAY_MS = 500;

  final List<String> uris;
  final String queue;
  final int rate;
  final int window;
  final int prefetch;
  final Map<String, Object> queueArguments;
  final long startedAtMs = System.currentTimeMillis();

  final Object lock = new Object();
  int publisherAttempts = 0;
  int consumerAttempts = 0;
  volatile boolean stopping = false;
  volatile boolean publishing = true;
  boolean measuring = true;
  int nextSeq = 0;
  /** Per publisher connection: publish sequence number (delivery tag) -> message sequence number. */
  NavigableMap<Long, Integer> outstanding = new TreeMap<>();
  final BitSet confirmed = new BitSet();
  final BitSet consumed = new BitSet();
  int duplicates = 0;
  int reconnects = 0;
  boolean publisherRecovering = false;
  boolean consumerRecovering = false;
  final List<Integer> buckets = new ArrayList<>();
  final List<Integer> unconfirmedPerSecond = new ArrayList<>();
  long lastDelivery = System.currentTimeMillis();
  Connection publisherConnection;
  Channel publisherChannel;
  int publisherEpoch = 0;
  Connection consumerConnection;
  int consumerEpoch = 0;
  Thread publisherReconnect;
  Thread consumerReconnect;

  LostMessageVerifier(List<String> uris, String queue, int rate, int window, int prefetch, ` +
  String.raw`Map<String, Object> queueArguments) {
    this.uris = uris;
    this.queue = queue;
    this.rate = rate;
    this.window = window;
    this.prefetch = prefetch;
    this.queueArguments = queueArguments;
  }

  double seconds() {
    return (System.currentTimeMillis() - startedAtMs) / 1000.0;
  }

  Connection connect(int attempt) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uris.get(attempt % uris.size()));
    // Off, so that a lost connection is this program's to reconnect and count (the client's recovery would hide it:
    // https://www.rabbitmq.com/client-libraries/java-api-guide#recovery).
    factory.setAutomaticRecoveryEnabled(false);
    factory.setTopologyRecoveryEnabled(false);
    // Heartbeats find a peer that died without closing the socket (https://www.rabbitmq.com/docs/heartbeats); 5 s as
    // locally.
    factory.setRequestedHeartbeat(5);
    factory.setConnectionTimeout(5000);
    factory.setHandshakeTimeout(5000);
    return factory.newConnection("rmqbench-verifier");
  }

  void connectConsumer(boolean declare) throws Exception {
    int attempt;
    synchronized (lock) {
      attempt = consumerAttempts++;
    }
    Connection connection = connect(attempt);
    final int epoch;
    synchronized (lock) {
      epoch = ++consumerEpoch;
      consumerConnection = connection;
    }
    try {
      Channel channel = connection.createChannel();
      if (declare) {
        // Published through a direct exchange of the same name rather than the default exchange: the per-run benchmark
        // user may write to rmqbench* resources only, and the broker checks a publish to the default exchange as a
        // write
        // to "amq.default" (rabbit_access_control:check_resource_access), which would let it publish to any queue.
        channel.exchangeDeclare(queue, "direct", true);
        channel.queueDeclare(queue, true, false, false, queueArguments);
        channel.queueBind(queue, queue, queue);
      }
      channel.basicQos(prefetch);
      connection.addShutdownListener(cause -> consumerLost(epoch));
      channel.basicConsume(queue, false, new DefaultConsumer(channel) {
        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
          onDelivery(channel, envelope, body);
        }

        // basic.cancel from the broker (the queue's node went down, or the queue was deleted): nothing more arrives on
        // this channel and no close follows, so the consumer reconnects
        // (https://www.rabbitmq.com/docs/consumer-cancel).
        @Override
        public void handleCancel(String tag) {
          consumerLost(epoch);
        }

        @Override
        public void handleShutdownSignal(String tag, ShutdownSignalException signal) {
          consumerLost(epoch);
        }
      });
    } catch (Exception error) {
      synchronized (lock) {
        if (consumerEpoch == epoch) consumerConnection = null;
      }
      connection.abort();
      throw error;
    }
  }

  void onDelivery(Channel channel, Envelope envelope, byte[] body) {
    int seq = Integer.parseInt(new String(body, StandardCharsets.UTF_8));
    synchronized (lock) {
      recovered(false);
      if (consumed.get(seq)) duplicates++;
      else consumed.set(seq);
      if (measuring) {
        int second = (int) Math.floor(seconds());
        while (buckets.size() <= second) buckets.add(0);
        buckets.set(second, buckets.get(second) + 1);
      }
      lastDelivery = System.currentTimeMillis();
    }
    try {
      channel.basicAck(envelope.getDeliveryTag(), false);
    } catch (Exception closed) {
      // The channel closed under us; the broker redelivers the message, which then counts as a duplicate.
    }
  }

  void recovered(boolean publisher) {
    if (publisher && publisherRecovering) {
      publisherRecovering = false;
      reconnects++;
    } else if (!publisher && consumerRecovering) {
      consumerRecovering = false;
      reconnects++;
    }
  }

  void consumerLost(int epoch) {
    Connection lost;
    synchronized (lock) {
      if (consumerEpoch != epoch || consumerConnection == null) return;
      lost = consumerConnection;
      consumerConnection = null;
      consumerRecovering = true;
      if (stopping) return;
      consumerReconnect = reconnectLoop(false, lost);
    }
  }

  void connectPublisher() throws Exception {
    int attempt;
    synchronized (lock) {
      attempt = publisherAttempts++;
    }
    Connection connection = connect(attempt);
    try {
      Channel channel = connection.createChannel();
      channel.confirmSelect();
      final int epoch;
      synchronized (lock) {
        epoch = ++publisherEpoch;
        outstanding = new TreeMap<>();
        publisherConnection = connection;
        publisherChannel = channel;
      }
      channel.addConfirmListener((tag, multiple) -> onConfirm(epoch, tag, multiple, true), ` +
  String.raw`(tag, multiple) -> onConfirm(epoch, tag, multiple, false));
      connection.addShutdownListener(cause -> publisherLost(epoch));
      channel.addShutdownListener(cause -> publisherLost(epoch));
    } catch (Exception error) {
      connection.abort();
      throw error;
    }
  }

  void onConfirm(int epoch, long tag, boolean multiple, boolean ack) {
    synchronized (lock) {
      if (epoch != publisherEpoch) return;
      NavigableMap<Long, Integer> settled = multiple ? outstanding.headMap(tag, true) ` +
  String.raw`: outstanding.subMap(tag, true, tag, true);
      if (ack && !settled.isEmpty()) {
        for (int seq : settled.values()) confirmed.set(seq);
        recovered(true);
      }
      settled.clear();
    }
  }

  void publisherLost(int epoch) {
    synchronized (lock) {
      if (epoch != publisherEpoch || publisherConnection == null) return;
      Connection lost = publisherConnection;
      publisherConnection = null;
      publisherChannel = null;
      publisherRecovering = true;
      // What was in flight on the lost connection stays unconfirmed.
      outstanding.clear();
      if (!stopping && publishing) publisherReconnect = reconnectLoop(true, lost);
    }
  }

  Thread reconnectLoop(boolean publisher, Connection lost) {
    Thread thread = new Thread(() -> {
      try {
        lost.abort();
      } catch (Exception ignored) {
        // Already gone.
      }
      while (!stopping && (!publisher || publishing)) {
        try {
          Thread.sleep(RECONNECT_DELAY_MS);
        } catch (InterruptedException interrupted) {
          return;
        }
        if (stopping) return;
        try {
          if (publisher) connectPublisher();
          else connectConsumer(false);
          return;
        } catch (Exception error) {
          // Node down, queue unavailable or refused: try the next URI.
        }
      }
    }, publisher ? "publisher-reconnect" : "consumer-reconnect");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /**
   * Publishes at "rate" per second with at most "window" unconfirmed, for "durationSeconds"; samples the unconfirmed
   * count each whole second.
   */
  void publishFor(int durationSeconds) throws InterruptedException {
    long end = startedAtMs + durationSeconds * 1000L;
    double credit = 0;
    int nextSample = 0;
    while (System.currentTimeMillis() < end) {
      synchronized (lock) {
        while (nextSample <= (int) Math.floor(seconds()) && nextSample < durationSeconds) {
          unconfirmedPerSecond.add(outstanding.size());
          nextSample++;
        }
        Channel channel = publisherChannel;
        // Credit accrues only while connected, as locally: a reconnect does not release a burst.
        if (channel != null) credit = Math.min(credit + rate * TICK_MS / 1000.0, rate);
        while (channel != null && credit >= 1 && outstanding.size() < window) {
          int seq = nextSeq++;
          credit--;
          long tag = channel.getNextPublishSeqNo();
          outstanding.put(tag, seq);
          try {
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()` +
  String.raw`.deliveryMode(2).messageId(Integer.toString(seq)).build();
            channel.basicPublish(queue, queue, properties, Integer.toString(seq).getBytes(StandardCharsets.UTF_8));
          } catch (Exception closing) {
            // The channel is closing: its shutdown listener reconnects.
            outstanding.remove(tag);
            break;
          }
        }
      }
      Thread.sleep(TICK_MS);
    }
  }

  String finish(long quietMs, long timeoutMs) throws InterruptedException {
    long deadline;
    synchronized (lock) {
      // Whole seconds only: the second under way is cut short (a partial count would read as a drop in the rate).
      int measured = (int) Math.floor(seconds());
      while (buckets.size() < measured) buckets.add(0);
      while (buckets.size() > measured) buckets.remove(buckets.size() - 1);
      measuring = false;
      publishing = false;
      deadline = System.currentTimeMillis() + timeoutMs;
    }
    long settle = System.currentTimeMillis() + Math.min(5000, timeoutMs);
    while (System.currentTimeMillis() < settle) {
      synchronized (lock) {
        if (outstanding.isEmpty()) break;
      }
      Thread.sleep(50);
    }
    Connection publisher;
    synchronized (lock) {
      publisher = publisherConnection;
      publisherConnection = null;
      publisherChannel = null;
      publisherEpoch++;
      lastDelivery = Math.max(lastDelivery, System.currentTimeMillis());
    }
    if (publisher != null) publisher.abort();
    while (System.currentTimeMillis() < deadline) {
      synchronized (lock) {
        BitSet missing = (BitSet) confirmed.clone();
        missing.andNot(consumed);
        if (missing.isEmpty() || System.currentTimeMillis() - lastDelivery > quietMs) break;
      }
      Thread.sleep(100);
    }
    Connection consumer;
    synchronized (lock) {
      stopping = true;
      consumer = consumerConnection;
      consumerConnection = null;
    }
    if (consumer != null) consumer.abort();
    synchronized (lock) {
      BitSet lost = (BitSet) confirmed.clone();
      lost.andNot(consumed);
      return "{\"startedAtMs\":" + startedAtMs + ",\"published\":" + nextSeq + ` +
  String.raw`",\"confirmed\":" + confirmed.cardinality()
          + ",\"consumed\":" + consumed.cardinality() + ",\"lostMessages\":" + lost.cardinality() ` +
  String.raw`+ ",\"duplicatedMessages\":" + duplicates
          + ",\"reconnects\":" + reconnects + ",\"receivedPerSecond\":" + buckets ` +
  String.raw`+ ",\"unconfirmedPerSecond\":" + unconfirmedPerSecond + "}";
    }
  }

  static String option(Map<String, List<String>> options, String name, String fallback) {
    List<String> values = options.get(name);
    if (values == null) {
      if (fallback == null) throw new IllegalArgumentException("missing --" + name);
      return fallback;
    }
    return values.get(values.size() - 1);
  }

  static int positive(Map<String, List<String>> options, String name, String fallback) {
    String text = option(options, name, fallback);
    try {
      int value = Integer.parseInt(text);
      if (value > 0) return value;
    } catch (NumberFormatException ignored) {
      // Reported below.
    }
    throw new IllegalArgumentException("--" + name + " must be a positive integer, got \"" + text + "\"");
  }

  /**
   * PerfTest's jars bring logback with no configuration for this program, whose default is DEBUG on the console (every
   * connection attempt logged, on stdout, https://logback.qos.ch/manual/configuration.html "Automatic configuration");
   * errors are
   * enough. Reflection, so that another binding on the class path leaves the defaults instead of failing the compile.
   */
  static void quietLogging() {
    try {
      Object root = org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
      Class<?> level = Class.forName("ch.qos.logback.classic.Level");
      root.getClass().getMethod("setLevel", level).invoke(root, level.getField("ERROR").get(null));
    } catch (Exception | LinkageError other) {
      // Not logback: its defaults stay.
    }
  }

  public static void main(String[] args) {
    quietLogging();
    try {
      Map<String, List<String>> options = new HashMap<>();
      for (int i = 0; i < args.length; i += 2) {
        if (!args[i].startsWith("--") || i + 1 >= args.length) ` +
  String.raw`throw new IllegalArgumentException("expected --name value pairs, got \"" + args[i] + "\"");
        options.computeIfAbsent(args[i].substring(2), key -> new ArrayList<>()).add(args[i + 1]);
      }
      String environment = System.getenv("RMQBENCH_VERIFIER_URIS");
      List<String> uris = new ArrayList<>();
      if (environment != null) for (String uri : environment.trim().split("\\s+")) if (!uri.isEmpty()) uris.add(uri);
      if (uris.isEmpty()) throw new IllegalArgumentException("RMQBENCH_VERIFIER_URIS holds no AMQP URI");
      Map<String, Object> queueArguments = new HashMap<>();
      for (String pair : options.getOrDefault("queue-arg", List.of())) {
        int equals = pair.indexOf('=');
        if (equals <= 0) throw new IllegalArgumentException("--queue-arg must be key=value, got \"" + pair + "\"");
        String value = pair.substring(equals + 1);
        queueArguments.put(pair.substring(0, equals), value.matches("-?\\d+") ? (Object) Long.valueOf(value) : value);
      }
      LostMessageVerifier verifier = new LostMessageVerifier(uris, option(options, "queue", null), ` +
  String.raw`positive(options, "rate", "200"),
          positive(options, "window", "200"), positive(options, "prefetch", "200"), queueArguments);
      int seconds = positive(options, "seconds", null);
      // The consumer first, so that nothing is published before it can be consumed.
      verifier.connectConsumer(true);
      verifier.connectPublisher();
      // A progress line on stderr (stdout holds the result only): the script's log shows when publishing began.
      System.err.println("rmqbench verifier: publishing to " + verifier.queue);
      verifier.publishFor(seconds);
      System.out.println(verifier.finish(3000, 30000));
      System.exit(0);
    } catch (Exception error) {
      // The client's messages name hosts and ports, never the URI's user information.
      System.err.println("rmqbench verifier: " + error.getClass().getSimpleName() + ": " + error.getMessage());
      System.exit(2);
    }
  }
}
`;
