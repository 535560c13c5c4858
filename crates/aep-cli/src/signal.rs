//! The end a person asks for: Ctrl-C, or SIGTERM from a supervisor.

/// Resolves on SIGINT or SIGTERM (SIGINT alone where there is no SIGTERM).
pub async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
