//! hotlimit's limiters with their state in Redis. Work in progress.
