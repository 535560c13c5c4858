//! One module per subcommand, each with its clap `Args` and its `run`.

pub mod completions;
pub mod conformance;
pub mod control;
pub mod doctor;
pub mod emit;
pub mod hook;
pub mod mcp;
pub mod project;
pub mod relay;
pub mod replay;
pub mod roster;
pub mod setup;
pub mod sink;
pub mod tail;
pub mod timeline;
pub mod validate;
