//! What the examples share: the quickstart, blocking and subscriptions examples' command
//! line, and reading flags and reporting a bad command line for the others.
// Each example uses its own share of this module.
#![allow(dead_code)]

/// Command-line options: `[--url URL] [--token T]`.
#[derive(Debug, Default)]
pub struct Args {
    /// A relay to use instead of the embedded one.
    pub url: Option<String>,
    /// Its bearer token.
    pub token: Option<String>,
}

/// Reads `[--url URL] [--token T]`; `example` names the program in the usage line.
pub fn parse_args(example: &str) -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.url = Some(value()?),
            "--token" => args.token = Some(value()?),
            "-h" | "--help" => return Err(format!("usage: {example} [--url URL] [--token T]")),
            other => return Err(format!("unknown argument {other}; try --help")),
        }
    }
    Ok(args)
}

/// The command line after the program name as `(flag, value)` pairs: a flag takes the
/// argument after it as its value, except the `switches`, which take none (their value
/// is empty).
pub fn flags(switches: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = if switches.contains(&flag.as_str()) {
            String::new()
        } else {
            it.next().ok_or_else(|| format!("{flag} needs a value"))?
        };
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// The parsed command line, or `None` once the error (and `usage`, if any) is on
/// stderr: the example then exits with status 2.
pub fn or_usage<T>(example: &str, usage: &str, parsed: Result<T, String>) -> Option<T> {
    match parsed {
        Ok(args) => Some(args),
        Err(e) if usage.is_empty() => {
            eprintln!("{example}: {e}");
            None
        }
        Err(e) => {
            eprintln!("{example}: {e}\n{usage}");
            None
        }
    }
}
