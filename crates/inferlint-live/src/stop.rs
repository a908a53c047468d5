//! Stopping a recording from another thread or task: a flag whose [`Stop::stopped`]
//! future resolves once [`Stop::stop`] is called, on any thread, before or after the
//! future is first polled.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

/// A stop request shared by clones: every clone's [`Stop::stopped`] resolves once any
/// clone calls [`Stop::stop`].
#[derive(Debug, Clone, Default)]
pub struct Stop {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    stopped: bool,
    waiting: Vec<Waker>,
}

impl Stop {
    /// A stop not requested yet.
    pub fn new() -> Stop {
        Stop::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Requests the stop: every [`Stop::stopped`] future resolves.
    pub fn stop(&self) {
        let mut state = self.lock();
        state.stopped = true;
        for waker in state.waiting.drain(..) {
            waker.wake();
        }
    }

    /// Whether the stop was requested.
    pub fn is_stopped(&self) -> bool {
        self.lock().stopped
    }

    /// A future that resolves once the stop is requested (at once if it was already).
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let stop = self.clone();
        std::future::poll_fn(move |cx| {
            let mut state = stop.lock();
            if state.stopped {
                Poll::Ready(())
            } else {
                if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    state.waiting.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wait is registered (polled once, pending) before the other thread is told to
    /// stop, so the stop must wake it: no sleep decides which comes first.
    #[test]
    fn a_stop_from_another_thread_ends_the_wait() {
        let stop = Stop::new();
        let rt = crate::runtime().unwrap_or_else(|e| panic!("{e}"));
        let remote = stop.clone();
        let (waiting, told) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if told.recv().is_ok() {
                remote.stop();
            }
        });
        rt.block_on(async {
            let wait = stop.stopped();
            tokio::pin!(wait);
            std::future::poll_fn(|cx| {
                assert!(
                    wait.as_mut().poll(cx).is_pending(),
                    "stopped before the stop"
                );
                Poll::Ready(())
            })
            .await;
            waiting.send(()).unwrap_or_else(|e| panic!("{e}"));
            wait.await;
        });
        assert!(stop.is_stopped());
        let _ = thread.join();
        // Already stopped: resolves at once.
        rt.block_on(stop.stopped());
    }
}
