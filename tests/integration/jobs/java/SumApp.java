import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * A JVM Spark application for the plugin's tests: an RDD job (sum of squares) and a SQL job (a
 * filtered count), written as "SUM COUNT" to the file named by the third argument.
 * Usage: SumApp N PARTITIONS OUT
 */
public final class SumApp {
    private SumApp() {
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        int partitions = Integer.parseInt(args[1]);
        SparkSession spark = SparkSession.builder().appName("schedbridge-java-sum").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        List<Integer> xs = IntStream.range(0, n).boxed().collect(Collectors.toList());
        long sum = sc.parallelize(xs, partitions).map(x -> (long) x * x).reduce(Long::sum);
        long count = spark.range(0, n, 1, partitions).filter("id % 3 = 0").count();
        Files.writeString(Path.of(args[2]), sum + " " + count + "\n");
        spark.stop();
    }
}
