//! What can go wrong in a run, each case naming what it was given.

use std::{fmt, io, path::PathBuf};

use hotlimit::ConfigError;

/// Every failure of the simulator: reported on stderr, never a panic.
#[derive(Debug)]
pub(crate) enum SimError {
    /// Bad command line (exit status 2).
    Usage(String),
    /// A trace file line that cannot be read.
    TraceLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A file or folder that cannot be read or written.
    Io { path: PathBuf, source: io::Error },
    /// A limiter refused the parameters it was given.
    Config {
        limiter: String,
        source: ConfigError,
    },
    /// plotters failed to draw.
    Plot { path: PathBuf, message: String },
}

impl SimError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> SimError {
        SimError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Usage(m) => write!(f, "{m} (see --help)"),
            SimError::TraceLine {
                path,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
            SimError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            SimError::Config { limiter, source } => write!(f, "{limiter}: {source}"),
            SimError::Plot { path, message } => {
                write!(f, "drawing {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Io { source, .. } => Some(source),
            SimError::Config { source, .. } => Some(source),
            _ => None,
        }
    }
}
