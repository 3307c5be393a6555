//! A connection's socket with a write timeout: a client that stops reading its answer gets its
//! connection closed after [`WRITE_TIMEOUT`] without progress, which frees its slot and the
//! answer held for it. hyper has no such timeout of its own.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Time a write may wait for the client to read before the connection is closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// `S`, whose writes fail with `TimedOut` after `timeout` without progress.
pub struct WriteTimeout<S> {
    inner: S,
    timeout: Duration,
    /// Running while a write waits; reset by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteTimeout<S> {
    /// `inner` with writes bounded by `timeout`.
    pub fn new(inner: S, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// `poll` as it is, except a `Pending` that lasted `timeout` becomes an error.
    fn guard<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client did not read its answer in time",
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.guard(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.guard(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.guard(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.guard(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_timeout_and_one_read_in_time_succeeds() {
        let (client, server) = tokio::io::duplex(1024);
        let mut server = WriteTimeout::new(server, Duration::from_millis(200));
        let big = vec![b'x'; 64 * 1024];
        let error = server.write_all(&big).await.expect_err("nobody reads");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);

        let (mut client2, server2) = tokio::io::duplex(1024);
        let mut server2 = WriteTimeout::new(server2, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut client2, &mut out)
                .await
                .map(|_| out.len())
        });
        server2.write_all(&big).await.expect("read in time");
        server2.shutdown().await.expect("shutdown");
        drop(server2);
        assert_eq!(reader.await.expect("join").expect("read"), big.len());
        drop(client);
    }
}
