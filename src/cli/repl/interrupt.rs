//! Ctrl-C while a statement runs at the prompt: a request that it stop at its next safe point
//! (`dpq::sys::interrupt`), never a kill that could cut a release in half or lose the session.
//!
//! While rustyline reads a line the terminal sends Ctrl-C to it as a key (the prompt then
//! drops the line being typed); while a statement runs the terminal raises SIGINT, which a
//! thread of its own turns into the request. Once listened for, SIGINT no longer ends dpq:
//! between statements it is ignored, and Ctrl-\ (SIGQUIT) still ends dpq at once.

use dpq::sys::interrupt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Whether a statement is running, so that Ctrl-C asks it to stop.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Starts listening for SIGINT (once per process); returns whether dpq listens. Only an
/// interactive prompt listens: a script or a pipe is still ended by Ctrl-C.
pub fn listen() -> bool {
    static LISTENING: OnceLock<bool> = OnceLock::new();
    *LISTENING.get_or_init(|| {
        let (ready, started) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("dpq-ctrl-c".into())
            .spawn(move || watch(ready));
        spawned.is_ok() && started.recv().unwrap_or(false)
    })
}

/// Waits for SIGINT for the rest of the process, after saying on `ready` whether it can.
fn watch(ready: std::sync::mpsc::Sender<bool>) {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(r) => r,
        Err(_) => {
            let _ = ready.send(false);
            return;
        }
    };
    runtime.block_on(async move {
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ready.send(false);
                return;
            }
        };
        let _ = ready.send(true);
        while sigint.recv().await.is_some() {
            if !RUNNING.load(Ordering::SeqCst) {
                continue;
            }
            if interrupt::requested() {
                // Asked again: the statement has not reached a safe point yet.
                eprintln!(
                    "\n(stopping as soon as it is safe: a statement recording a release finishes \
                     it first; Ctrl-\\ ends dpq at once)"
                );
            } else {
                interrupt::request();
            }
        }
    });
}

/// A statement running at the prompt: until it is dropped, Ctrl-C asks it to stop.
pub struct Running(());

impl Running {
    /// A statement starts: no earlier Ctrl-C counts against it.
    pub fn start() -> Running {
        interrupt::clear();
        RUNNING.store(true, Ordering::SeqCst);
        Running(())
    }

    /// Whether Ctrl-C was pressed while it ran.
    pub fn interrupted(&self) -> bool {
        interrupt::requested()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::SeqCst);
        interrupt::clear();
    }
}
