package org.schedbridge.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.util.kvstore.KVStore;

/** The {@code schedbridge} tab of an application's UI, live or in the History Server: one page, {@link BridgeUiPage}. */
final class BridgeUiTab extends SparkUITab {
    static final String PREFIX = "schedbridge";

    BridgeUiTab(SparkUI ui, KVStore store) {
        super(ui, PREFIX);
        attachPage(new BridgeUiPage(this, store));
    }

    @Override
    public String name() {
        return PREFIX;
    }

    /**
     * The live driver's tab (unless {@code spark.ui.enabled=false}): the listener folds the
     * plugin's events into the application's status store, where the page reads them. Called before
     * the listener bus starts, so the listener sees every event.
     */
    static void attach(SparkContext sc) {
        if (sc.ui().isEmpty()) {
            return;
        }
        ElementTrackingStore store = (ElementTrackingStore) sc.statusStore().store();
        sc.listenerBus().addToStatusQueue(new BridgeUiListener(store, true));
        sc.ui().get().attachTab(new BridgeUiTab(sc.ui().get(), store));
    }
}
