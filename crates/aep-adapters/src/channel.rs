//! The two modes of an observation channel that runs beside a hook or plugin adapter
//! (the OTel-inbound sidecars, the OpenCode and Kilo Code SSE bridges, the Kimi web
//! channel), never guessed at runtime.

/// Which events a channel emits.
///
/// ```
/// use aep_adapters::ChannelMode;
/// assert_eq!(ChannelMode::default(), ChannelMode::Companion);
/// assert_eq!("primary".parse::<ChannelMode>(), Ok(ChannelMode::Primary));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ChannelMode {
    /// The default: a hook or plugin adapter observes the same agent and is the only
    /// authority for core types, so the channel emits only its own vendor family
    /// (`x.{vendor}.otel.*`, `x.{vendor}.web.*`, ...).
    #[default]
    Companion,
    /// A deployment with no hook adapter: the channel emits the core subset its
    /// vocabulary supports, read-only (no answer affordance on any ask).
    Primary,
}

impl std::str::FromStr for ChannelMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "companion" => Ok(ChannelMode::Companion),
            "primary" => Ok(ChannelMode::Primary),
            other => Err(format!(
                "unknown channel mode `{other}`; use `companion` or `primary`"
            )),
        }
    }
}
