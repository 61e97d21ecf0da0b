package rsspark.rsocket;

import java.io.IOException;

/** The listener of a test connection that only sends: its frames and its close are not looked at. */
final class IgnoringListener implements Connection.Listener {
    static final Connection.Listener INSTANCE = new IgnoringListener();

    private IgnoringListener() {}

    @Override
    public void onFrame(Frame frame) {}

    @Override
    public void onClosed(IOException why) {}
}
