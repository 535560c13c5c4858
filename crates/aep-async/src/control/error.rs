//! What a control call can fail with.

use aep_core::control::{SendError, TargetError};

use crate::error::{EmitError, TransportError};

/// A command that was not accepted: a `control.rejected` ack, a relay's
/// `cause`-correlated `error` frame, or the `timeout` the sender synthesizes (AEP-0004
/// §3, §4.2). Its [`reason`](aep_core::control::Nack::reason) is one of the
/// [`NackReason`](aep_core::control::NackReason)s; unknown wire reasons and relay codes
/// read as `invalid` with the original spelling kept in the detail;
/// [`is_synthesized`](aep_core::control::Nack::is_synthesized) tells the local timeout
/// from a wire answer.
///
/// ```
/// use aep_async::control::{NackError, NackReason};
/// let e = NackError::timeout("no ack within 10000 ms x 3");
/// assert_eq!(e.reason(), NackReason::Timeout);
/// assert!(e.is_synthesized());
/// ```
pub type NackError = aep_core::control::Nack;

/// Why a control call did not produce its answer.
///
/// ```
/// use aep_async::control::{ControlError, NackError, NackReason};
/// let e = ControlError::from(NackError::timeout("duplex closed"));
/// assert_eq!(e.nack().map(|n| n.reason()), Some(NackReason::Timeout));
/// assert!(ControlError::Closed.nack().is_none());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The command (or roster request) was answered with a refusal, or timed out.
    #[error(transparent)]
    Nack(#[from] NackError),
    /// The command was never sent: it breaks a rule of AEP-0004 §2 (not a command type,
    /// no session, carries `seq`, already pending).
    #[error(transparent)]
    Command(#[from] SendError),
    /// The endpoint did not advertise `capabilities.roster` in its `hello`, so a
    /// `roster` frame would be ignored (AEP-0003 §2, §4.1 rule 1).
    #[error("the endpoint does not advertise capabilities.roster; it would ignore a roster request (AEP-0003 §4.1)")]
    RosterUnsupported,
    /// The connection failed below the protocol.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A target-side rule refused the call (one decision per command, AEP-0004 §3).
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The ack or outcome could not be handed to the session's sink.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// The command's session is not attached to the target, so there is no
    /// `SessionEmitter` to ack through (attach it with `ControlTarget::attach`).
    #[error("session `{0}` is not attached to this ControlTarget; attach its SessionEmitter")]
    UnknownSession(String),
    /// The client or sender was closed; open a new one.
    #[error("the control client is closed; connect a new one")]
    Closed,
}

impl ControlError {
    /// The nack, when the command was answered with one (or timed out).
    pub fn nack(&self) -> Option<&NackError> {
        match self {
            ControlError::Nack(n) => Some(n),
            _ => None,
        }
    }
}
