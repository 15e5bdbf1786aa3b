//! The command line of the `harness = false` bench targets, without the `--bench` flag that
//! `cargo bench` passes to every bench binary.

/// The arguments after the program name, `--bench` left out.
pub(crate) fn args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect()
}
