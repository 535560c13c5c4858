//! The epoch every session the CLI produces takes (AEP-0001 §7.2): the next one of the
//! user's epoch store (`$AEP_STATE_DIR/epochs.json`, else the platform's per-user state
//! directory), so a second run into a session writes after every position of the first.

use std::time::{SystemTime, UNIX_EPOCH};

use aep::emit::EpochStore;
use aep::EmitterBuilder;

/// `builder` with the user's epoch store; without a per-user directory, one fixed epoch
/// from the clock (the Unix time in milliseconds), said on stderr.
pub fn from_store(builder: EmitterBuilder) -> EmitterBuilder {
    match EpochStore::user() {
        Ok(store) => builder.epoch_store(store),
        Err(e) => {
            crate::term::warn(format!(
                "{e}; sessions take the Unix time in milliseconds as their epoch"
            ));
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0);
            builder.epoch(now)
        }
    }
}
