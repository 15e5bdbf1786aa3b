//! hotlimit-sim: replays traffic through hotlimit's limiters. Work in progress.

fn main() {}
