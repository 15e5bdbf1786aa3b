//! [`ResponseBody`]: the inner service's body for admitted requests, or the layer's own body
//! for rejections.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// The body of a response that passed through the layer: the inner service's, or the
    /// rejection's (a complete, in-memory body; empty for gRPC).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ResponseBody;
    /// use http_body::Body;
    ///
    /// let body: ResponseBody<String> = ResponseBody::full("rate limited");
    /// assert_eq!(body.size_hint().exact(), Some(12));
    /// ```
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = Proj]
    enum Kind<B> {
        // The inner service's body.
        Inner {
            #[pin]
            body: B,
        },
        // A rejection's body; `None` once sent.
        Full {
            data: Option<Bytes>,
        },
    }
}

impl<B> ResponseBody<B> {
    /// A complete body of `data` (empty data: an empty body).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ResponseBody;
    /// use http_body::Body;
    ///
    /// assert!(ResponseBody::<String>::full("").is_end_stream());
    /// ```
    pub fn full(data: impl Into<Bytes>) -> Self {
        let data: Bytes = data.into();
        ResponseBody {
            kind: Kind::Full {
                data: (!data.is_empty()).then_some(data),
            },
        }
    }

    /// The inner service's `body`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ResponseBody;
    /// use http_body::Body;
    ///
    /// assert_eq!(ResponseBody::inner(String::from("hi")).size_hint().exact(), Some(2));
    /// ```
    pub fn inner(body: B) -> Self {
        ResponseBody {
            kind: Kind::Inner { body },
        }
    }
}

impl<B> std::fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Inner { .. } => f.write_str("ResponseBody::Inner"),
            Kind::Full { data } => f.debug_tuple("ResponseBody::Full").field(data).finish(),
        }
    }
}

impl<B> Body for ResponseBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            Proj::Inner { body } => body.poll_frame(cx),
            Proj::Full { data } => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Full { data } => data.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Full { data } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
        }
    }
}
