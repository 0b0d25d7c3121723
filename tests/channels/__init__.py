"""The contract every channel passes, run against each platform over its loopback fake."""
