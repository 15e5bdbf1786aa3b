//! k rates enforced together, sequentially: k GCRA models; a request is granted iff every one
//! grants it, and only then is any of them advanced. A denial waits the longest of the waits
//! ("never" longest of all).

use super::gcra::{Decision, GcraModel};

#[derive(Debug, Clone)]
pub(crate) struct AllGcraModel {
    rates: Vec<GcraModel>,
}

impl AllGcraModel {
    /// One GCRA model per `(limit, period_ns, burst)`.
    pub(crate) fn new(rates: &[(u64, u64, u64)]) -> Self {
        AllGcraModel {
            rates: rates
                .iter()
                .map(|&(l, p, b)| GcraModel::new(l, p, b))
                .collect(),
        }
    }

    pub(crate) fn acquire(&mut self, n: u32, now: u64) -> Decision {
        let mut next = self.rates.clone();
        let mut verdict: Decision = Ok(());
        for m in &mut next {
            verdict = match (verdict, m.acquire(n, now)) {
                (Ok(()), d) | (d, Ok(())) => d,
                (Err(None), _) | (_, Err(None)) => Err(None),
                (Err(Some(a)), Err(Some(b))) => Err(Some(a.max(b))),
            };
        }
        if verdict.is_ok() {
            self.rates = next;
        }
        verdict
    }
}
