"""What the tests and the benchmarks (`bench/`) share: real servers to run against, and waiting on events."""
