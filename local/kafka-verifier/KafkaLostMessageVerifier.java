// The lost-message verifier of a Kafka repetition with a fault (local/kafka-verifier.ts runs it): Java's single-file
// source launch (`java -cp '<kafka jars>/*' KafkaLostMessageVerifier.java ...`, JEP 330, Java 11+) with the Kafka
// client of the cluster's own release, so that nothing is built or downloaded for it.
//
// It produces sequence-numbered records to a topic of its own (one partition, the workload's replication factor) with
// the workload's acks, and counts a record confirmed when its send callback reports no error; a consumer assigned to
// the partition reads them from the beginning. Confirmed but never consumed = lost, consumed twice = duplicated
// (the counts of core/failover/failover.ts, as the RabbitMQ and NATS verifiers give them). A record whose send
// failed is not sent again (the producer's own retries stay on: they are Kafka's delivery semantics).
//
// Control: the file given by --control; local/kafka-verifier.ts appends one word per line: "fault" marks the fault
// (the time, and the sends then unacknowledged), "heal" the heal, "finish" stops producing, waits for the last
// callbacks (5 s at most), drains until every confirmed record arrived or none arrived for 3 s (30 s at most), then
// reads the partition once more from its start (a final read, as Jepsen's analyses end with): a confirmed record
// still in the log but never consumed counts as undelivered, not lost. Output: JSON lines on stdout, {"type":"ready"}
// once the topic's consumer and producer are ready, then one {"type":"counts",...} line.
//
// Cloud mode, --duration-seconds N: on a cloud load generator (lambdas/start-repetition/kafka-script.ts) nothing can
// write the control file, since the fault is applied by another process (the workflow's fault step) at a wall-clock
// time. The verifier then finishes by itself N seconds after its start, as if "finish" had been read then, and
// --control may be left out. So that the fault can be placed on its timeline afterwards (core/failover/
// cloud-verifier.ts, from the fault step's applied and healed times), the counts line always carries startedAtMs
// (the wall clock at the verifier's clock start) and unconfirmedPerSecond (the sends in flight at each whole second
// after it, as many as receivedPerSecond; a second the produce loop missed, a send blocking, takes the count when
// the loop came back). With --create-topic (and --replication-factor, --min-insync-replicas) it creates its topic
// itself once its clock runs, and deletes it when it ends: the fault step waits for that topic's leader, so it never
// acts before the verifier counts (lambdas/shared/broker-verifier-lines.ts).
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaLostMessageVerifier {
  private final Set<Long> confirmed = ConcurrentHashMap.newKeySet();
  private final Set<Long> consumed = ConcurrentHashMap.newKeySet();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final AtomicLong lastDeliveryNanos = new AtomicLong(System.nanoTime());
  private final List<Long> buckets = new ArrayList<>();
  private volatile boolean measuring = true;
  private volatile boolean producing = true;
  private volatile boolean consuming = true;
  private final long startNanos = System.nanoTime();
  private final long startedAtMs = System.currentTimeMillis();
  /** Sends in flight at whole second i after the start; the produce loop alone adds to it. */
  private final List<Long> unconfirmedPerSecond = new ArrayList<>();
  private Double faultAt;
  private Long unconfirmedAtFault;
  private Double healAt;

  private double seconds() {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  private static String arg(String[] args, String name, String fallback) {
    for (int i = 0; i + 1 < args.length; i++) if (args[i].equals(name)) return args[i + 1];
    if (fallback == null) throw new IllegalArgumentException("missing " + name);
    return fallback;
  }

  /** --duration-seconds (a whole number >= 1), or 0 when it is not given (then --control is required). */
  private static int durationSeconds(String[] args) {
    if (!List.of(args).contains("--duration-seconds")) return 0;
    String value = arg(args, "--duration-seconds", null);
    try {
      int seconds = Integer.parseInt(value);
      if (seconds >= 1) return seconds;
    } catch (NumberFormatException notANumber) {
      // Reported below.
    }
    throw new IllegalArgumentException("--duration-seconds must be a whole number of seconds >= 1, got " + value);
  }

  /** Samples the sends in flight for every whole second up to (not including) `seconds` not sampled yet. */
  private void sampleUnconfirmed(int seconds) {
    while (unconfirmedPerSecond.size() < seconds) unconfirmedPerSecond.add(inFlight.get());
  }

  private static double round3(double value) {
    return Math.round(value * 1000) / 1000.0;
  }

  public static void main(String[] args) throws Exception {
    new KafkaLostMessageVerifier().run(args);
  }

  private void run(String[] args) throws Exception {
    String bootstrap = arg(args, "--bootstrap-server", null);
    String topic = arg(args, "--topic", null);
    int durationSeconds = durationSeconds(args);
    // In cloud mode (--duration-seconds) nothing writes a control file: it is optional then.
    Path control =
        durationSeconds > 0 && !List.of(args).contains("--control") ? null : Path.of(arg(args, "--control", null));
    int rate = Integer.parseInt(arg(args, "--rate", "200"));
    TopicPartition partition = new TopicPartition(topic, 0);
    boolean ownsTopic = List.of(args).contains("--create-topic");
    if (ownsTopic) createTopic(bootstrap, topic, args);

    Properties producerProps = new Properties();
    producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    producerProps.put(ProducerConfig.ACKS_CONFIG, arg(args, "--acks", "all"));
    producerProps.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    // A send that is not acknowledged within 5 s fails (counted unconfirmed) instead of waiting 2 minutes.
    producerProps.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
    producerProps.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "5000");
    producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
    KafkaProducer<String, String> producer =
        new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer());
    KafkaConsumer<String, String> consumer = newConsumer(bootstrap);
    consumer.assign(List.of(partition));
    consumer.seekToBeginning(List.of(partition));

    Thread consumerThread = new Thread(() -> consume(consumer));
    consumerThread.start();
    System.out.println("{\"type\":\"ready\",\"topic\":\"" + topic + "\"}");
    System.out.flush();

    long intervalNanos = 1_000_000_000L / Math.max(1, rate);
    int controlLines = 0;
    int measured = 0;
    for (long seq = 0; producing; ) {
      if (durationSeconds > 0 && seconds() >= durationSeconds) {
        measured = durationSeconds;
        producing = false;
        break;
      }
      sampleUnconfirmed((int) Math.floor(seconds()) + 1);
      long due = startNanos + seq * intervalNanos;
      if (System.nanoTime() >= due) {
        send(producer, topic, seq++);
        continue;
      }
      List<String> lines = control != null && Files.exists(control) ? Files.readAllLines(control) : List.of();
      for (; controlLines < lines.size(); controlLines++) {
        String word = lines.get(controlLines).trim();
        if (word.equals("fault")) {
          faultAt = round3(seconds());
          unconfirmedAtFault = inFlight.get();
        } else if (word.equals("heal")) {
          healAt = round3(seconds());
        } else if (word.equals("finish")) {
          measured = (int) Math.floor(seconds());
          producing = false;
        }
      }
      Thread.sleep(Math.min(20, Math.max(1, (due - System.nanoTime()) / 1_000_000)));
    }
    finish(producer, measured);
    consuming = false;
    consumerThread.join(10_000);
    Set<Long> inLog = confirmed.stream().allMatch(consumed::contains) ? Set.of() : finalRead(bootstrap, partition);
    printCounts(inLog);
    if (ownsTopic) deleteTopic(bootstrap, topic);
    System.exit(0);
  }

  /**
   * --create-topic (cloud mode): the verifier creates its topic itself, one partition with --replication-factor and
   * --min-insync-replicas when given (Admin.createTopics; an existing topic of that name is used as it is), after its
   * clock started, so that the fault step, which waits for the topic to have a leader, never acts before the verifier
   * counts. A failure prints an error line and ends the verifier.
   */
  private static void createTopic(String bootstrap, String topic, String[] args) throws Exception {
    NewTopic newTopic = new NewTopic(topic, 1, Short.parseShort(arg(args, "--replication-factor", null)));
    String minInsync = arg(args, "--min-insync-replicas", "");
    if (!minInsync.isEmpty()) newTopic.configs(Map.of("min.insync.replicas", minInsync));
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(newTopic)).all().get(60, TimeUnit.SECONDS);
    } catch (ExecutionException error) {
      if (error.getCause() instanceof TopicExistsException) return;
      printError("could not create topic " + topic + ": " + error.getCause());
      System.exit(1);
    }
  }

  /** Deletes the topic --create-topic made (best effort: the cluster is the run's own and goes with it). */
  private static void deleteTopic(String bootstrap, String topic) {
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
    } catch (Exception error) {
      System.err.println("could not delete topic " + topic + ": " + error);
    }
  }

  private static void printError(String message) {
    String escaped = message.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\r\\n\\t]", " ");
    System.out.println("{\"type\":\"error\",\"message\":\"" + escaped + "\"}");
    System.out.flush();
  }

  private static KafkaConsumer<String, String> newConsumer(String bootstrap) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
  }

  private void send(KafkaProducer<String, String> producer, String topic, long seq) {
    published.incrementAndGet();
    inFlight.incrementAndGet();
    try {
      producer.send(
          new ProducerRecord<>(topic, 0, null, Long.toString(seq)),
          (metadata, error) -> {
            inFlight.decrementAndGet();
            if (error == null) confirmed.add(seq);
          });
    } catch (RuntimeException error) {
      // The send was refused at once (metadata not available within max.block.ms): unconfirmed.
      inFlight.decrementAndGet();
    }
  }

  private void consume(KafkaConsumer<String, String> consumer) {
    while (consuming) {
      for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
        long seq = Long.parseLong(record.value());
        if (!consumed.add(seq)) duplicates.incrementAndGet();
        synchronized (buckets) {
          if (measuring) {
            int second = (int) seconds();
            while (buckets.size() <= second) buckets.add(0L);
            buckets.set(second, buckets.get(second) + 1);
          }
        }
        lastDeliveryNanos.set(System.nanoTime());
      }
    }
    consumer.close();
  }

  private void finish(KafkaProducer<String, String> producer, int measured) throws InterruptedException {
    sampleUnconfirmed(measured);
    while (unconfirmedPerSecond.size() > measured) unconfirmedPerSecond.remove(unconfirmedPerSecond.size() - 1);
    synchronized (buckets) {
      measuring = false;
      while (buckets.size() < measured) buckets.add(0L);
      while (buckets.size() > measured) buckets.remove(buckets.size() - 1);
    }
    long settle = System.nanoTime() + 5_000_000_000L;
    while (inFlight.get() > 0 && System.nanoTime() < settle) Thread.sleep(50);
    producer.close(Duration.ofSeconds(1));
    long deadline = System.nanoTime() + 30_000_000_000L;
    lastDeliveryNanos.set(Math.max(lastDeliveryNanos.get(), System.nanoTime()));
    while (System.nanoTime() < deadline) {
      if (confirmed.stream().allMatch(consumed::contains)) return;
      if (System.nanoTime() - lastDeliveryNanos.get() > 3_000_000_000L) return;
      Thread.sleep(100);
    }
  }

  /** Every sequence number the partition holds, read from its start to its end offset now. */
  private static Set<Long> finalRead(String bootstrap, TopicPartition partition) {
    Set<Long> found = ConcurrentHashMap.newKeySet();
    try (KafkaConsumer<String, String> reader = newConsumer(bootstrap)) {
      reader.assign(List.of(partition));
      reader.seekToBeginning(List.of(partition));
      long end = reader.endOffsets(List.of(partition), Duration.ofSeconds(30)).get(partition);
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (reader.position(partition, Duration.ofSeconds(30)) < end && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> record : reader.poll(Duration.ofMillis(500)))
          found.add(Long.parseLong(record.value()));
      }
    } catch (RuntimeException error) {
      System.err.println("final read: " + error);
    }
    return found;
  }

  private void printCounts(Set<Long> inLog) {
    long lost = 0;
    long undelivered = 0;
    for (long seq : confirmed) {
      if (consumed.contains(seq)) continue;
      if (inLog.contains(seq)) undelivered++;
      else lost++;
    }
    String perSecond;
    synchronized (buckets) {
      perSecond = buckets.stream().map(String::valueOf).collect(Collectors.joining(","));
    }
    StringBuilder line = new StringBuilder("{\"type\":\"counts\"");
    Map<String, Object> fields = new java.util.LinkedHashMap<>();
    fields.put("published", published.get());
    fields.put("confirmed", confirmed.size());
    fields.put("consumed", consumed.size());
    fields.put("lostMessages", lost);
    fields.put("duplicatedMessages", duplicates.get());
    fields.put("undeliveredMessages", undelivered);
    fields.put("reconnects", 0);
    if (faultAt != null) {
      fields.put("faultAtSeconds", faultAt);
      fields.put("unconfirmedAtFault", unconfirmedAtFault);
    }
    if (healAt != null) fields.put("healAtSeconds", healAt);
    for (Map.Entry<String, Object> field : fields.entrySet())
      line.append(",\"").append(field.getKey()).append("\":").append(field.getValue());
    line.append(",\"startedAtMs\":").append(startedAtMs);
    line.append(",\"receivedPerSecond\":[").append(perSecond).append("]");
    String unconfirmed = unconfirmedPerSecond.stream().map(String::valueOf).collect(Collectors.joining(","));
    line.append(",\"unconfirmedPerSecond\":[").append(unconfirmed).append("]}");
    System.out.println(line);
    System.out.flush();
  }
}
