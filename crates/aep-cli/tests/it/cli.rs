//! The command line as a whole: help on every subcommand, the version, completions,
//! and colour only where it belongs.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::Duration;

use common::{aep, finish, line, run, scratch_jsonl, spawn};

const SUBCOMMANDS: [&str; 16] = [
    "relay",
    "tail",
    "emit",
    "validate",
    "project",
    "timeline",
    "send",
    "respond",
    "cancel",
    "roster",
    "sink",
    "replay",
    "doctor",
    "mcp",
    "conformance",
    "completions",
];

#[test]
fn help_lists_every_subcommand_and_the_exit_codes() {
    let r = run(&["--help"]);
    r.expect(0);
    for sub in SUBCOMMANDS {
        assert!(
            r.stdout.contains(&format!("\n  {sub} ")),
            "{sub} in --help:\n{}",
            r.stdout
        );
    }
    for code in [
        "0  success",
        "3  the command was nacked",
        "4  no ack",
        "5  the relay is unreachable",
        "6  an input that cannot be read",
    ] {
        assert!(r.stdout.contains(code), "{code}:\n{}", r.stdout);
    }
    for sub in SUBCOMMANDS {
        let h = run(&[sub, "--help"]);
        h.expect(0);
        assert!(
            h.stdout.contains(&format!("Usage: aep {sub}")),
            "{sub}:\n{}",
            h.stdout
        );
    }
}

#[test]
fn help_never_shows_the_token_from_the_environment() {
    for sub in SUBCOMMANDS {
        let mut cmd = aep();
        cmd.args([sub, "--help"])
            .env("AEP_TOKEN", "s3cret-from-env")
            .env("AEP_URL", "http://127.0.0.1:9");
        let h = finish(spawn(cmd), b"", Duration::from_secs(30));
        h.expect(0);
        assert!(!h.stdout.contains("s3cret"), "{sub}:\n{}", h.stdout);
    }
}

#[test]
fn version() {
    let r = run(&["--version"]);
    r.expect(0);
    assert_eq!(
        r.stdout.trim(),
        format!("aep {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = run(&["completions", shell]);
        r.expect(0);
        assert!(
            r.stdout.contains("timeline") && r.stdout.contains("ack-window"),
            "{shell}"
        );
    }
    run(&["completions", "tcsh"]).expect(2);
}

#[test]
fn colour_only_when_asked_and_never_under_no_color() {
    let (_dir, file) = scratch_jsonl(
        "bad.jsonl",
        &[
            "nope".to_owned(),
            line("A", "run.started", "s", 0, serde_json::json!({})),
        ],
    );
    let validate = |env: &[(&str, &str)]| {
        let mut cmd = aep();
        cmd.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["validate", file.to_str().unwrap()]);
        finish(spawn(cmd), b"", Duration::from_secs(30))
    };
    // not a terminal: plain text
    let r = validate(&[]);
    r.expect(1);
    assert!(!r.stderr.contains('\x1b'), "{:?}", r.stderr);
    // forced on, as a terminal would have it
    let r = validate(&[("CLICOLOR_FORCE", "1")]);
    assert!(r.stderr.contains("\x1b["), "{:?}", r.stderr);
    // NO_COLOR wins over everything
    let r = validate(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!r.stderr.contains('\x1b'), "{:?}", r.stderr);
}
