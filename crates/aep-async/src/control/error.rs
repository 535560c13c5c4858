//! What a control call can fail with.

use aep_core::control::{Nack, NackReason, SendError, TargetError};

use crate::error::{EmitError, TransportError};

/// Why a control call did not produce its answer.
///
/// A nack is [`aep_core::control::Nack`] (re-exported as [`Nack`](crate::control::Nack)):
/// a `control.rejected` ack, a relay's `cause`-correlated `error` frame, or the
/// `timeout` the sender synthesizes (AEP-0004 §3, §4.2); unknown wire reasons and relay
/// codes read as `invalid` with the original spelling kept in the detail.
///
/// ```
/// use aep_async::control::{ControlError, Nack, NackReason};
/// let e = ControlError::from(Nack::timeout("duplex closed"));
/// assert_eq!(e.nack().map(|n| n.reason()), Some(NackReason::Timeout));
/// assert!(ControlError::Closed.nack().is_none());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The command (or roster request) was answered with a refusal, or timed out.
    #[error(transparent)]
    Nack(#[from] Nack),
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
    pub fn nack(&self) -> Option<&Nack> {
        match self {
            ControlError::Nack(n) => Some(n),
            _ => None,
        }
    }

    /// The transport failure underneath, when there is one: what the `is_*` checks
    /// below look through to.
    ///
    /// ```
    /// use aep_async::control::ControlError;
    /// let e = ControlError::from(aep_async::TransportError::http(401, "upgrade refused"));
    /// assert_eq!(e.transport().and_then(|t| t.status()), Some(401));
    /// assert!(ControlError::Closed.transport().is_none());
    /// ```
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            ControlError::Transport(e) => Some(e),
            _ => None,
        }
    }

    /// Whether a deadline passed: a transport timeout, or no ack within the window on
    /// any attempt (the `timeout` nack the sender synthesizes, AEP-0004 §3).
    ///
    /// ```
    /// use aep_async::control::{ControlError, Nack};
    /// assert!(ControlError::from(Nack::timeout("no ack")).is_timeout());
    /// assert!(ControlError::from(aep_async::TransportError::timeout("no hello")).is_timeout());
    /// assert!(!ControlError::Closed.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        self.nack()
            .is_some_and(|n| n.reason() == NackReason::Timeout)
            || self.transport().is_some_and(TransportError::is_timeout)
    }
}
