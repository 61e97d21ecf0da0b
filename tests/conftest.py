"""Session-wide checks for the whole suite."""

pytest_plugins = ["tests.leakcheck"]
