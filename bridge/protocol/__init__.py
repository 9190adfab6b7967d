"""The wire between the Spark plugin (JVM) and a policy host: message types and the handshake."""
