// A Kafka Streams application for the real-broker tests: it copies every record of one topic to another with its
// value in upper case. Stateless on purpose (no local state store to set up), so what the broker writes for it is
// the streams group itself: members, their tasks, the topology, and the offsets the application commits.
//
// Usage: java -cp <kafka jars>:<classes> UppercaseStreams <properties file> <input topic> <output topic>
// The properties file holds the Streams settings (application.id, bootstrap.servers, group.protocol, ...).
// It runs until it is sent SIGTERM or SIGINT, then closes cleanly (the member leaves the group).

import java.io.FileInputStream;
import java.io.IOException;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public final class UppercaseStreams {
    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: UppercaseStreams <properties file> <input topic> <output topic>");
            System.exit(2);
        }
        Properties settings = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            settings.load(in);
        }
        settings.putIfAbsent(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        settings.putIfAbsent(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], String>stream(args[1])
               .mapValues(value -> value == null ? null : value.toUpperCase(Locale.ROOT))
               .to(args[2]);

        KafkaStreams streams = new KafkaStreams(builder.build(), settings);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            closed.countDown();
        }));
        streams.start();
        System.out.println("started");
        closed.await();
    }
}
