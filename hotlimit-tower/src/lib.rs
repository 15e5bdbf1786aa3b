//! Rate limiting for `tower` servers (axum, tonic, hyper) with hotlimit. Work in progress.
