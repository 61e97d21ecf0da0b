import java.io.ByteArrayOutputStream;
import java.io.ObjectOutputStream;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;

/**
 * The Spark race of tests/reliability/spark_race_repro.py, forced: the envVars map Spark builds for
 * a discovered Python data source (PythonUtils.createPythonFunction), the four puts of
 * PythonStreamingSourceRunner.init() run by several query threads released at once, then Java
 * serialization of the map as in a job closure. Arguments: trials, queries, optionally "guard"
 * (rs_spark's workaround: a ConcurrentHashMap). Needs only scala-library on the class path.
 */
public class EnvMapRace {
    static Map<String, String> sparkMap(boolean concurrent) {
        // PythonUtils.createPythonFunction: mutable.Map("PYTHONPATH" -> pythonPath).asJava
        // (mutable.Map.apply of one pair = new mutable.HashMap(2, 0.75) with that pair: a table of 8)
        scala.collection.mutable.HashMap<String, String> m = new scala.collection.mutable.HashMap<>(2, 0.75);
        m.put("PYTHONPATH", "/opt/spark/python");
        Map<String, String> env = scala.jdk.javaapi.CollectionConverters.asJava(m);
        return concurrent ? new ConcurrentHashMap<>(env) : env;
    }

    static void init(Map<String, String> envVars) {  // PythonStreamingSourceRunner.init(), its four puts
        envVars.put("SPARK_LOCAL_DIRS", "/tmp/spark-local");
        envVars.put("SPARK_AUTH_SOCKET_TIMEOUT", "15");
        envVars.put("SPARK_BUFFER_SIZE", "65536");
        envVars.put("SPARK_PYTHON_RUNTIME", "PYTHON_WORKER");
    }

    public static void main(String[] args) throws Exception {
        int trials = Integer.parseInt(args[0]), queries = Integer.parseInt(args[1]);
        boolean concurrent = args.length > 2 && args[2].equals("guard");
        TreeMap<String, Integer> outcomes = new TreeMap<>();
        for (int t = 0; t < trials; t++) {
            Map<String, String> env = sparkMap(concurrent);
            CyclicBarrier start = new CyclicBarrier(queries);
            Thread[] threads = new Thread[queries];
            for (int q = 0; q < queries; q++) {
                threads[q] = new Thread(() -> {
                    try { start.await(); } catch (Exception e) { throw new RuntimeException(e); }
                    init(env);
                });
                threads[q].start();
            }
            for (Thread th : threads) th.join();
            String outcome;
            try {  // what ClosureCleaner / DAGScheduler do with a job closure holding the map
                new ObjectOutputStream(new ByteArrayOutputStream()).writeObject(env);
                outcome = "serialized, size " + env.size();
            } catch (IllegalStateException e) {
                outcome = e.getMessage();
            }
            outcomes.merge(outcome, 1, Integer::sum);
        }
        System.out.println((concurrent ? "ConcurrentHashMap" : "Spark's map") + ", " + queries + " queries starting at once, "
            + trials + " trials: " + outcomes);
    }
}
