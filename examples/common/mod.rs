//! What the quickstart, blocking and subscriptions examples share: their command line.

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
