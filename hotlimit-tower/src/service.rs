//! [`RateLimit`]: the service the layer wraps around the inner one, and its [`ResponseFuture`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use pin_project_lite::pin_project;
use tower_service::Service;

use crate::body::ResponseBody;
use crate::counters::PolicyCounts;
use crate::evaluator::{finish, is_grpc, Evaluator, Verdict};
use crate::headers::HeaderBlock;

/// Rate-limits the requests to `S`: built by [`RateLimitLayer`](crate::RateLimitLayer). Every
/// clone shares the layer's limiters and counters (one `Arc`).
///
/// `poll_ready` is the inner service's. A request is decided in `call`; a rejection is a ready
/// response, never a wait; an admitted request is passed on and its response gets the
/// rate-limit headers.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, ManualClock, Rate};
/// use hotlimit_tower::{Global, Policy, RateLimitLayer};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
/// let layer = RateLimitLayer::new(Policy::new("global", limiter, Global))?;
/// let svc = layer.layer(service_fn(|_req: http::Request<String>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("hello")))
/// }));
/// let ok = svc.clone().oneshot(http::Request::new(String::new())).await?;
/// assert_eq!(ok.status(), 200);
/// assert_eq!(ok.headers()["ratelimit"], r#""global";r=0;t=1"#);
/// let no = svc.oneshot(http::Request::new(String::new())).await?;
/// assert_eq!(no.status(), 429);
/// assert_eq!(no.headers()["retry-after"], "1");
/// # Ok(()) }
/// ```
pub struct RateLimit<S> {
    inner: S,
    evaluator: Arc<Evaluator>,
}

impl<S> RateLimit<S> {
    pub(crate) fn new(inner: S, evaluator: Arc<Evaluator>) -> Self {
        RateLimit { inner, evaluator }
    }

    /// What each policy has decided so far (shared with the layer and every clone).
    ///
    /// # Examples
    ///
    /// See [`RateLimitLayer::counters`](crate::RateLimitLayer::counters).
    pub fn counters(&self) -> Vec<PolicyCounts> {
        self.evaluator.counters()
    }

    /// The inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    /// use tower::Layer;
    ///
    /// let layer = RateLimitLayer::new(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))?;
    /// let svc = layer.layer(7u8);
    /// assert_eq!(*svc.get_ref(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    /// use tower::Layer;
    ///
    /// let layer = RateLimitLayer::new(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))?;
    /// let mut svc = layer.layer(7u8);
    /// *svc.get_mut() += 1;
    /// assert_eq!(*svc.get_ref(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, without the layer (the limiters stay with the layer and its other
    /// services).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    /// use tower::Layer;
    ///
    /// let layer = RateLimitLayer::new(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))?;
    /// assert_eq!(layer.layer(7u8).into_inner(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Clone> Clone for RateLimit<S> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            evaluator: Arc::clone(&self.evaluator),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for RateLimit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("evaluator", &self.evaluator)
            .finish()
    }
}

/// The evaluation of a request that waits for a networked limiter.
type Waiting = Pin<Box<dyn Future<Output = (Parts, Verdict)> + Send>>;

pin_project! {
    /// The response future of [`RateLimit`]: the inner service's response with the rate-limit
    /// headers added, or the rejection.
    ///
    /// # Examples
    ///
    /// See [`RateLimit`].
    pub struct ResponseFuture<S, ReqB>
    where
        S: Service<Request<ReqB>>,
    {
        #[pin]
        state: State<S, ReqB>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S, ReqB>
    where
        S: Service<Request<ReqB>>,
    {
        /// A limiter is still deciding; the ready inner service and the body wait for it.
        Waiting {
            fut: Waiting,
            svc: Option<S>,
            body: Option<ReqB>,
            evaluator: Arc<Evaluator>,
        },
        /// Admitted: the inner service's response, then the headers.
        Calling {
            #[pin]
            fut: S::Future,
            headers: Option<HeaderBlock>,
        },
        /// Rejected, headers included.
        Rejected {
            resp: Option<Response<Bytes>>,
        },
    }
}

impl<S, ReqB> fmt::Debug for ResponseFuture<S, ReqB>
where
    S: Service<Request<ReqB>>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseFuture")
    }
}

/// The state once `verdict` is known: rejected, or the inner call.
#[inline]
fn decided<S, ReqB>(
    evaluator: &Evaluator,
    svc: &mut S,
    mut parts: Parts,
    body: ReqB,
    verdict: &Verdict,
) -> State<S, ReqB>
where
    S: Service<Request<ReqB>>,
{
    let mut headers = Some(evaluator.headers(verdict));
    if !verdict.admitted() {
        if let Some(resp) = evaluator.rejection(verdict, is_grpc(&parts), &mut headers) {
            return State::Rejected { resp: Some(resp) };
        }
    }
    if evaluator.extends() {
        if let Some(ext) = evaluator.extension(verdict) {
            parts.extensions.insert(ext);
        }
    }
    State::Calling {
        fut: svc.call(Request::from_parts(parts, body)),
        headers,
    }
}

impl<S, ReqB, ResB> Service<Request<ReqB>> for RateLimit<S>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    ReqB: Send + 'static,
{
    type Response = Response<ResponseBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqB>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let (parts, body) = req.into_parts();
        let mut verdict = Verdict::new(self.evaluator.fields.len());
        let state = match self.evaluator.evaluate(&parts, &mut verdict) {
            None => decided(&self.evaluator, &mut self.inner, parts, body, &verdict),
            Some(pending) => {
                // The inner service was made ready for this request: take it with us, and
                // leave a clone for the next poll_ready (tower's usual move).
                let clone = self.inner.clone();
                let svc = std::mem::replace(&mut self.inner, clone);
                State::Waiting {
                    fut: Box::pin(finish(Arc::clone(&self.evaluator), parts, verdict, pending)),
                    svc: Some(svc),
                    body: Some(body),
                    evaluator: Arc::clone(&self.evaluator),
                }
            }
        };
        ResponseFuture { state }
    }
}

impl<S, ReqB, ResB> Future for ResponseFuture<S, ReqB>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
{
    type Output = Result<Response<ResponseBody<ResB>>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Waiting {
                    fut,
                    svc,
                    body,
                    evaluator,
                } => {
                    let (parts, verdict) = ready!(fut.as_mut().poll(cx));
                    let (Some(mut svc), Some(body)) = (svc.take(), body.take()) else {
                        panic!("ResponseFuture polled after completion");
                    };
                    let next = decided(evaluator, &mut svc, parts, body, &verdict);
                    this.state.set(next);
                }
                StateProj::Calling { fut, headers } => {
                    let mut resp = ready!(fut.poll(cx))?;
                    if let Some(h) = headers.take() {
                        h.apply(resp.headers_mut(), false);
                    }
                    return Poll::Ready(Ok(resp.map(ResponseBody::inner)));
                }
                StateProj::Rejected { resp } => {
                    let Some(resp) = resp.take() else {
                        panic!("ResponseFuture polled after completion");
                    };
                    return Poll::Ready(Ok(resp.map(ResponseBody::full)));
                }
            }
        }
    }
}
