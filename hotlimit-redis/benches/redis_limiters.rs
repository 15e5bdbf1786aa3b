//! Benchmark of the Redis limiters (written in a later commit).
fn main() {}
