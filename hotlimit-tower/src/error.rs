//! [`ConfigError`]: a layer, policy or key extractor configured with a value that cannot work.

use std::fmt;

/// A layer, policy or key extractor was configured with a value that cannot work. The message
/// names the setting and the value; reported when the layer is built, never at request time.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::ForwardedIp;
///
/// let err = ForwardedIp::trusted_proxies(["10.0.0.0/33"]).unwrap_err();
/// assert_eq!(err.field(), "trusted_proxies");
/// assert_eq!(
///     err.to_string(),
///     "invalid trusted_proxies = \"10.0.0.0/33\": the prefix length must be at most 32 for IPv4"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    field: &'static str,
    value: String,
    reason: &'static str,
}

impl ConfigError {
    pub(crate) fn new(field: &'static str, value: impl fmt::Debug, reason: &'static str) -> Self {
        ConfigError {
            field,
            value: format!("{value:?}"),
            reason,
        }
    }

    /// The name of the setting that was rejected (`"policies"`, `"name"`, `"status"`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::RateLimitLayer;
    ///
    /// let err = RateLimitLayer::builder().build().unwrap_err();
    /// assert_eq!(err.field(), "policies");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// Why the value was rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::RateLimitLayer;
    ///
    /// let err = RateLimitLayer::builder().build().unwrap_err();
    /// assert_eq!(err.reason(), "at least one policy is needed");
    /// ```
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} = {}: {}",
            self.field, self.value, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}
