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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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

  private static double round3(double value) {
    return Math.round(value * 1000) / 1000.0;
  }

  public static void main(String[] args) throws Exception {
    new KafkaLostMessageVerifier().run(args);
  }

  private void run(String[] args) throws Exception {
    String bootstrap = arg(args, "--bootstrap-server", null);
    String topic = arg(args, "--topic", null);
    Path control = Path.of(arg(args, "--control", null));
    int rate = Integer.parseInt(arg(args, "--rate", "200"));
    TopicPartition partition = new TopicPartition(topic, 0);

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
      long due = startNanos + seq * intervalNanos;
      if (System.nanoTime() >= due) {
        send(producer, topic, seq++);
        continue;
      }
      List<String> lines = Files.exists(control) ? Files.readAllLines(control) : List.of();
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
    System.exit(0);
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
    line.append(",\"receivedPerSecond\":[").append(perSecond).append("]}");
    System.out.println(line);
    System.out.flush();
  }
}
