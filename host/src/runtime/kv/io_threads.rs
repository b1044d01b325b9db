//! The KV folder's blocking operations run on a fixed set of long-lived threads, not on
//! Tokio's blocking pool.
//!
//! Why: a chunk read allocates its bytes on the thread that reads it, and they are freed on
//! another (the request's). The allocator keeps such memory with the thread that allocated it
//! until that thread allocates again; Tokio's pool grows a new thread whenever none is idle
//! (up to 128 here) and each kept its share, so a long workspace pull grew the host's resident
//! set with the pull's length (measured: 1.24 GiB anonymous memory on 93 threads for a 2 GiB
//! pull, back to 45 MiB once the idle threads exited). A few threads that keep working keep
//! their memory in use: the resident set is bounded by [`IO_THREADS`], whatever the size.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};

/// Threads that run KV operations; more wait in line.
pub const IO_THREADS: usize = 16;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queue the threads take jobs from.
struct IoThreads {
    jobs: Mutex<mpsc::Sender<Job>>,
}

fn threads() -> &'static IoThreads {
    static THREADS: OnceLock<IoThreads> = OnceLock::new();
    THREADS.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for n in 0..IO_THREADS {
            let receiver = Arc::clone(&receiver);
            // A thread that cannot start leaves the others to do the work; with none, a job's
            // answer never comes and `run` reports it.
            let _ = std::thread::Builder::new()
                .name(format!("stasis-kv-{n}"))
                .spawn(move || {
                    loop {
                        let job = {
                            let receiver = receiver.lock().unwrap_or_else(PoisonError::into_inner);
                            receiver.recv()
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
        }
        IoThreads {
            jobs: Mutex::new(sender),
        }
    })
}

/// Runs `op` on one of the KV threads; `None` when it could not run (no thread, or it
/// panicked). The future holds only the answer's receiver (it is `Send` and `Sync`).
pub fn run<T: Send + 'static>(
    op: impl FnOnce() -> T + Send + 'static,
) -> impl std::future::Future<Output = Option<T>> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op));
        if let Ok(value) = outcome {
            let _ = answer.send(value);
        }
    });
    let sent = threads()
        .jobs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send(job)
        .is_ok();
    async move { if sent { answered.await.ok() } else { None } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_run_on_the_few_kv_threads_only() {
        let mut names = std::collections::HashSet::new();
        for _ in 0..(IO_THREADS * 8) {
            let name = run(|| std::thread::current().name().map(str::to_owned))
                .await
                .flatten()
                .expect("a named thread");
            names.insert(name);
        }
        assert!(names.len() <= IO_THREADS, "{names:?}");
        assert!(
            names.iter().all(|n| n.starts_with("stasis-kv-")),
            "{names:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_job_answers_none_and_the_threads_go_on() {
        assert_eq!(run(|| -> u32 { panic!("boom") }).await, None);
        assert_eq!(run(|| 7).await, Some(7));
    }
}
