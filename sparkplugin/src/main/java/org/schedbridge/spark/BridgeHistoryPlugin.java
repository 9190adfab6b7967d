package org.schedbridge.spark;

import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVStore;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code schedbridge} tab in Spark's History Server (found through META-INF/services, with the
 * plugin's jar on the server's classpath): the server replays an application's event log into
 * {@link BridgeUiListener}, then gives the application's UI the tab if the log held the plugin's events.
 */
public final class BridgeHistoryPlugin implements AppHistoryServerPlugin {
    private static final Logger LOG = LoggerFactory.getLogger(BridgeHistoryPlugin.class);

    @Override
    public Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
        return CollectionConverters.asScala(List.<SparkListener>of(new BridgeUiListener(store, false))).toSeq();
    }

    @Override
    public void setupUI(SparkUI ui) {
        KVStore store = ui.store().store();
        if (ranUnderThePlugin(store)) {
            ui.attachTab(new BridgeUiTab(ui, store));
        }
    }

    private static boolean ranUnderThePlugin(KVStore store) {
        try {
            return store.count(BridgeUiSummary.class) > 0;
        } catch (Exception e) {  // KVStore.count declares Exception
            LOG.warn("schedbridge: no schedbridge tab for {}: its store cannot be read: {}", store, e.toString());
            return false;
        }
    }
}
