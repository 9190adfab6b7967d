"""Command-line tools that launch Spark applications on the plugin: submit, the launcher, preflight."""
