//! [`Field`]: one named quota of a layer, as the evaluator keeps it: its name checked and
//! quoted, the quota it had when the layer was built, its pre-encoded header text, its
//! counters. A [`Policy`](crate::Policy) has one field, a [`PolicyPair`](crate::PolicyPair)
//! two.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use hotlimit::{ConfigError, Quota};

use crate::counters::{Counted, Counters};
use crate::field_text::FieldText;
use crate::key::Refusal;

/// One named quota of a layer.
pub(crate) struct Field {
    pub(crate) name: String,
    /// The quota when the layer was built (a per-key override may report another).
    pub(crate) quota: Quota,
    /// Its header text, encoded once.
    pub(crate) text: FieldText,
    pub(crate) counters: Counters,
    /// Whether a refusal was logged at `error` already (later ones go to `debug`).
    warned: AtomicBool,
}

impl Field {
    /// The field `name` with `quota`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `name` when it is empty or not printable ASCII.
    pub(crate) fn new(name: &str, quota: Quota) -> Result<Field, ConfigError> {
        let quoted = quote_name(name)?;
        Ok(Field {
            name: name.to_owned(),
            quota,
            text: FieldText::new(&quoted, quota),
            counters: Counters::new(name),
            warned: AtomicBool::new(false),
        })
    }

    /// Counts and logs a request whose key extractor refused to choose a key.
    #[cold]
    pub(crate) fn refused(&self, why: Refusal) {
        self.counters.count(Counted::Refused);
        let name = &self.name;
        // Relaxed (both): only whether this field has logged once; nothing is published.
        if !self.warned.load(Ordering::Relaxed) && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::error!(
                policy = %name,
                "hotlimit-tower refused a request (500): {why}; every such request is refused \
                 and counted (PolicyCounts::refused)"
            );
        } else {
            tracing::debug!(policy = %name, "hotlimit-tower refused a request (500): {why}");
        }
    }
}

impl fmt::Debug for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Field")
            .field("name", &self.name)
            .field("quota", &self.quota)
            .finish_non_exhaustive()
    }
}

/// Checks a policy name and quotes it as a structured-field string.
pub(crate) fn quote_name(name: &str) -> Result<String, ConfigError> {
    if name.is_empty() {
        return Err(ConfigError::invalid("name", name, "a policy needs a name"));
    }
    if !name.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(ConfigError::invalid(
            "name",
            name,
            "must be printable ASCII (it is sent in the RateLimit headers)",
        ));
    }
    let mut q = String::with_capacity(name.len() + 2);
    q.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    Ok(q)
}
