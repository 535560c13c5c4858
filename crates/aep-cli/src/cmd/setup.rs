//! `aep setup AGENT`: registers `aep hook AGENT` in the agent's own configuration, by
//! merging, never clobbering; idempotent; `--dry-run` prints the change, `--remove`
//! takes out what it wrote and nothing else.
//!
//! | agent | `--project` (in `--dir`) | `--user` (in the home directory) | how |
//! |---|---|---|---|
//! | claude-code | `.claude/settings.json` | `~/.claude/settings.json` | hook entries |
//! | codex | `.codex/hooks.json` | `~/.codex/hooks.json` | hook entries |
//! | gemini-cli | `.gemini/settings.json` | `~/.gemini/settings.json` | hook entries (`AfterModel`, per streamed chunk, left out) |
//! | qwen-code | `.qwen/settings.json` | `~/.qwen/settings.json` | hook entries (`MessageDisplay` left out) |
//! | vscode | `.github/hooks/aep.json` | — | hook entries |
//! | antigravity | `.agents/hooks.json` | `~/.gemini/config/hooks.json` | hook entries, the hook name passed on the command line |
//! | kimi-code | — | `$KIMI_CODE_HOME/config.toml` (`~/.kimi-code`) | a fenced `[[hooks]]` block at the end |
//! | hermes | — | `~/.hermes/config.yaml` | a fenced `hooks:` block (refused, with the block to merge by hand, where the file has its own `hooks:`) |
//! | cline | `.cline/hooks/` | `~/.cline/hooks/` | one script per hook file name (`TaskStart`, `PreToolUse`, ...) |
//! | opencode | `.opencode/plugins/aep.js` | `~/.config/opencode/plugins/aep.js` | the plugin |
//! | kilocode | `.kilo/plugins/aep.js` | `~/.config/kilo/plugins/aep.js` | the plugin |
//! | pi | `.pi/extensions/aep.ts` | `~/.pi/agent/extensions/aep.ts` | the extension |
//!
//! The plugins are data inside this binary (`src/plugins/`): each hands every moment to
//! `aep hook AGENT`, one process at a time, in order, and never throws.
//!
//! Where each shape comes from (checked against the agents' own documentation):
//! - **Claude Code**: the hooks reference (<https://code.claude.com/docs/en/hooks>):
//!   `hooks.{Event}: [{matcher?, hooks: [{type: "command", command, timeout?}]}]`,
//!   `timeout` in seconds. Every event it documents is registered but three whose hook
//!   is not an observer: `WorktreeCreate` and `WorktreeRemove` replace Claude Code's own
//!   git worktree handling (the hook must create the worktree and print its path), and
//!   `FileChanged`'s matcher names the files to watch. The held moments
//!   (`PermissionRequest`, `Elicitation`) get `timeout: 60`, above `aep hook`'s 55 s
//!   `--hold`.
//! - **Codex**: its hooks documentation (`hooks.md` of openai/codex): `hooks.json` in
//!   `~/.codex/` and in a trusted project's `.codex/`, the same group shape, `timeout`
//!   in seconds (hooks are on by default; older builds want `[features] codex_hooks =
//!   true` in `config.toml`). `PermissionRequest` gets `timeout: 60`.
//! - **Gemini CLI**: its hooks reference (`docs/hooks/reference.md` of
//!   google-gemini/gemini-cli): `settings.json`'s `hooks` object, the group shape,
//!   matchers on tool names.
//! - **Qwen Code**: its hooks documentation, the Claude Code contract in `settings.json`.
//!   No `timeout` is written: its unit is not documented where we could check it, so the
//!   agent's default stands (keep `--hold` below it).
//! - **VS Code**: "Agent hooks in Visual Studio Code (Preview)"
//!   (<https://code.visualstudio.com/docs/copilot/customization/hooks>): every `*.json` in
//!   `.github/hooks/`, `hooks.{Event}: [{type: "command", command}]`, no matcher.
//! - **Cline**: the hook file names and search paths of `@cline/core` /
//!   `@cline/shared` 0.0.86 (`hooks/hook-file-config`, `storage/paths`): files named
//!   `TaskStart`, `TaskResume`, `TaskCancel`, `TaskComplete`, `TaskError`,
//!   `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `SessionShutdown` (mapped to the
//!   subprocess events `agent_start` ... `session_shutdown` the adapter reads), found in
//!   `~/Documents/Cline/Hooks`, `~/.cline/hooks`, and a workspace's `.clinerules/hooks`
//!   and `.cline/hooks`. `PreCompact` has no subprocess event there and is not written.
//! - **Kilo Code**: its plugin documentation (<https://kilo.ai/docs/automate/extending/plugins>):
//!   every `.js`/`.ts` in a `plugin/` or `plugins/` folder of a config directory
//!   (`~/.config/kilo/`, a project's `.kilo/`, `.kilocode/`, `.opencode/`) is loaded at
//!   start-up, so the plugin is not also listed in `kilo.json`'s `plugin` array (it
//!   would load twice). `--remove` still takes out an entry an earlier setup listed.
//! - **OpenCode**: its plugin documentation: `.opencode/plugins/` and
//!   `~/.config/opencode/plugins/`, loaded at start-up.
//! - **Hermes**: its hooks guide (`website/docs/user-guide/features/hooks.md` of
//!   NousResearch/hermes-agent): `hooks: {event: [{matcher?, command, timeout?}]}` in
//!   `~/.hermes/config.yaml`, run without a shell (`shlex.split`); Hermes asks consent
//!   for each new command once (or `hooks_auto_accept: true`, `HERMES_ACCEPT_HOOKS=1`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::confedit::{self, Hook, Shape};
use crate::exit::{Exit, Failure, Outcome};
use crate::hookstore::write_atomic;

/// The agents `aep setup` knows: aep-adapters' hook agents.
fn agents() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        aep_adapters::Source::HOOK_AGENTS.map(aep_adapters::Source::name),
    )
}

/// The `timeout` (seconds) of a held hook's entry: above `aep hook`'s default `--hold`.
const HELD_TIMEOUT_S: u64 = 60;

/// Register `aep hook AGENT` in an agent's configuration (merged, never clobbering the
/// hooks already there; running it again changes nothing).
///
/// Where a plugin is the agent's only way in (OpenCode, Kilo Code, pi), writes the
/// smallest plugin that hands each moment to `aep hook`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent.
    #[arg(value_name = "AGENT", value_parser = agents())]
    agent: String,
    /// Write the project's configuration (in --dir).
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// Write the user's configuration (the default where the agent has one).
    #[arg(long)]
    user: bool,
    /// The project directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Print the change instead of writing it.
    #[arg(long)]
    dry_run: bool,
    /// Take out what setup wrote.
    #[arg(long)]
    remove: bool,
    /// The aep executable the agent runs (default: this one).
    #[arg(long, value_name = "PATH")]
    aep: Option<PathBuf>,
}

/// Where: the project or the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Project,
    User,
}

/// One file setup writes.
#[derive(Debug)]
enum Edit {
    /// Hook entries merged into a JSON settings file.
    Hooks {
        path: PathBuf,
        shape: Shape,
        hooks: Vec<Hook>,
    },
    /// A fenced block in a TOML (`#`) or YAML file.
    Fenced {
        path: PathBuf,
        block: String,
        yaml_key: Option<&'static str>,
    },
    /// A whole file of ours (a plugin, a hook script).
    File {
        path: PathBuf,
        text: String,
        executable: bool,
    },
    /// A path in a JSON config's `plugin` array.
    PluginEntry { path: PathBuf, entry: String },
}

/// Runs the subcommand.
pub fn run(args: Args) -> Outcome {
    let aep = match &args.aep {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| {
            Failure::input(format!(
                "cannot tell where this aep is ({e}); pass --aep PATH"
            ))
        })?,
    };
    let home = dirs::home_dir();
    let scope = match (args.project, args.user) {
        (true, _) => Scope::Project,
        (_, true) => Scope::User,
        _ if matches!(args.agent.as_str(), "vscode") => Scope::Project,
        _ => Scope::User,
    };
    let base = match scope {
        Scope::Project => args.dir.clone(),
        Scope::User => home.ok_or_else(|| Failure::usage("no home directory; use --project"))?,
    };
    let edits = plan(&args.agent, scope, &base, &aep, args.remove)?;
    let mut out = String::new();
    for edit in &edits {
        out.push_str(&apply(edit, &args)?);
    }
    print!("{out}");
    Ok(Exit::Success)
}

/// The command an agent runs: `AEP hook AGENT[ HOOK]`, the path quoted when a shell
/// would split it.
fn command(aep: &Path, agent: &str, hook: Option<&str>) -> String {
    let path = aep.display().to_string();
    let quoted = if path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        path
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    };
    match hook {
        Some(h) => format!("{quoted} hook {agent} {h}"),
        None => format!("{quoted} hook {agent}"),
    }
}

/// The argv a plugin spawns, as a JSON array.
fn argv(aep: &Path, agent: &str) -> String {
    serde_json::json!([aep.display().to_string(), "hook", agent]).to_string()
}

/// What setup writes for `agent` in `scope`.
fn plan(
    agent: &str,
    scope: Scope,
    base: &Path,
    aep: &Path,
    remove: bool,
) -> Result<Vec<Edit>, Failure> {
    let hooks = |events: &[&str], tools: &[&str]| -> Vec<Hook> {
        events
            .iter()
            .map(|e| Hook {
                event: (*e).to_owned(),
                matcher: tools.contains(e).then(|| "*".to_owned()),
                command: command(aep, agent, None),
                // The held moments: the agent waits up to `aep hook --hold` (55 s) on
                // them, so their timeout is above it (seconds, as both agents read it).
                timeout: (matches!(agent, "claude-code" | "codex")
                    && matches!(*e, "PermissionRequest" | "Elicitation"))
                .then_some(HELD_TIMEOUT_S),
            })
            .collect()
    };
    let only = |want: Scope, what: &str| -> Result<(), Failure> {
        if scope == want {
            Ok(())
        } else {
            Err(Failure::usage(format!("{agent} {what}")))
        }
    };
    let json = |project: &str, user: &str, shape: Shape, hooks: Vec<Hook>| {
        let rel = if scope == Scope::Project {
            project
        } else {
            user
        };
        vec![Edit::Hooks {
            path: base.join(rel),
            shape,
            hooks,
        }]
    };
    Ok(match agent {
        "claude-code" => json(
            ".claude/settings.json",
            ".claude/settings.json",
            Shape::Groups,
            hooks(
                &[
                    "SessionStart",
                    "SessionEnd",
                    "Setup",
                    "UserPromptSubmit",
                    "Stop",
                    "StopFailure",
                    "PreToolUse",
                    "PostToolUse",
                    "PostToolUseFailure",
                    "PermissionRequest",
                    "PermissionDenied",
                    "Notification",
                    "SubagentStart",
                    "SubagentStop",
                    "TaskCreated",
                    "TaskCompleted",
                    "TeammateIdle",
                    "PreCompact",
                    "PostCompact",
                    "Elicitation",
                    "ElicitationResult",
                    "ConfigChange",
                    "InstructionsLoaded",
                    "CwdChanged",
                ],
                &[
                    "PreToolUse",
                    "PostToolUse",
                    "PostToolUseFailure",
                    "PermissionRequest",
                    "PermissionDenied",
                ],
            ),
        ),
        "codex" => json(
            ".codex/hooks.json",
            ".codex/hooks.json",
            Shape::Groups,
            hooks(
                &[
                    "SessionStart",
                    "UserPromptSubmit",
                    "PreToolUse",
                    "PermissionRequest",
                    "PostToolUse",
                    "SubagentStart",
                    "SubagentStop",
                    "PreCompact",
                    "PostCompact",
                    "Stop",
                ],
                &["PreToolUse", "PermissionRequest", "PostToolUse"],
            ),
        ),
        "gemini-cli" => json(
            ".gemini/settings.json",
            ".gemini/settings.json",
            Shape::Groups,
            hooks(
                &[
                    "SessionStart",
                    "SessionEnd",
                    "BeforeAgent",
                    "AfterAgent",
                    "BeforeModel",
                    "BeforeToolSelection",
                    "BeforeTool",
                    "AfterTool",
                    "PreCompress",
                    "Notification",
                ],
                &["BeforeTool", "AfterTool"],
            ),
        ),
        "qwen-code" => json(
            ".qwen/settings.json",
            ".qwen/settings.json",
            Shape::Groups,
            hooks(
                &[
                    "SessionStart",
                    "SessionEnd",
                    "UserPromptSubmit",
                    "Stop",
                    "StopFailure",
                    "PreToolUse",
                    "PostToolUse",
                    "PostToolUseFailure",
                    "PermissionRequest",
                    "SubagentStart",
                    "SubagentStop",
                    "PreCompact",
                    "PostCompact",
                    "Notification",
                    "TodoCreated",
                    "TodoCompleted",
                ],
                &[
                    "PreToolUse",
                    "PostToolUse",
                    "PostToolUseFailure",
                    "PermissionRequest",
                ],
            ),
        ),
        "vscode" => {
            only(
                Scope::Project,
                "hooks are workspace files (.github/hooks/): use --project",
            )?;
            json(
                ".github/hooks/aep.json",
                ".github/hooks/aep.json",
                Shape::Flat,
                hooks(&aep_adapters::sources::vscode::HOOKS, &[]),
            )
        }
        "antigravity" => {
            let events = [
                "PreToolUse",
                "PostToolUse",
                "PreInvocation",
                "PostInvocation",
                "Stop",
            ];
            let hooks = events
                .iter()
                .map(|e| Hook {
                    event: (*e).to_owned(),
                    matcher: matches!(*e, "PreToolUse" | "PostToolUse").then(|| "*".to_owned()),
                    command: command(aep, agent, Some(e)),
                    timeout: None,
                })
                .collect();
            json(
                ".agents/hooks.json",
                ".gemini/config/hooks.json",
                Shape::Groups,
                hooks,
            )
        }
        "kimi-code" => {
            only(
                Scope::User,
                "registers hooks in its one global config.toml only: use --user",
            )?;
            let home = std::env::var_os("KIMI_CODE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| base.join(".kimi-code"));
            let events = aep_adapters::sources::kimi_code::HOOKS;
            let cmd = toml_string(&command(aep, agent, None));
            let block: String = events
                .iter()
                .map(|e| format!("[[hooks]]\nevent = \"{e}\"\nmatcher = \"\"\ncommand = {cmd}\ntimeout = 30\n"))
                .collect::<Vec<_>>()
                .join("\n");
            vec![Edit::Fenced {
                path: home.join("config.toml"),
                block,
                yaml_key: None,
            }]
        }
        "hermes" => {
            only(
                Scope::User,
                "registers shell hooks in ~/.hermes/config.yaml only: use --user",
            )?;
            let events = [
                "on_session_start",
                "pre_llm_call",
                "pre_tool_call",
                "post_tool_call",
                "pre_approval_request",
                "post_approval_response",
                "on_session_end",
                "subagent_start",
                "subagent_stop",
                "api_request_error",
                "on_session_finalize",
                "on_session_reset",
            ];
            let cmd = serde_json::to_string(&command(aep, agent, None)).unwrap_or_default();
            let mut block = String::from("hooks:\n");
            for e in events {
                block.push_str(&format!(
                    "  {e}:\n    - command: {cmd}\n      timeout: 30\n"
                ));
            }
            vec![Edit::Fenced {
                path: base.join(".hermes/config.yaml"),
                block,
                yaml_key: Some("hooks"),
            }]
        }
        "cline" => {
            let dir = base.join(".cline/hooks");
            // The file names Cline looks for, each its subprocess event: TaskStart
            // agent_start, TaskResume agent_resume, TaskCancel agent_abort, TaskComplete
            // agent_end, TaskError agent_error, PreToolUse tool_call, PostToolUse
            // tool_result, UserPromptSubmit prompt_submit, SessionShutdown
            // session_shutdown.
            let events = [
                "TaskStart",
                "TaskResume",
                "TaskCancel",
                "TaskComplete",
                "TaskError",
                "PreToolUse",
                "PostToolUse",
                "UserPromptSubmit",
                "SessionShutdown",
            ];
            let cmd = command(aep, agent, None);
            events
                .iter()
                .map(|e| Edit::File {
                    path: dir.join(e),
                    text: format!("#!/bin/sh\n# aep: hands this Cline hook to `aep hook cline` (written by aep setup).\nexec {cmd}\n"),
                    executable: true,
                })
                .collect()
        }
        "opencode" | "kilocode" => {
            let (dir, name, export) = match (agent, scope) {
                ("opencode", Scope::Project) => {
                    (".opencode/plugins", "OpenCode", "export default AepPlugin;")
                }
                ("opencode", Scope::User) => (
                    ".config/opencode/plugins",
                    "OpenCode",
                    "export default AepPlugin;",
                ),
                ("kilocode", Scope::Project) => (
                    ".kilo/plugins",
                    "Kilo Code",
                    "export const server = AepPlugin;\nexport default { server };",
                ),
                _ => (
                    ".config/kilo/plugins",
                    "Kilo Code",
                    "export const server = AepPlugin;\nexport default { server };",
                ),
            };
            let path = base.join(dir).join("aep.js");
            let text = include_str!("../plugins/opencode.js")
                .replace("__AGENT_NAME__", name)
                .replace("__AGENT__", agent)
                .replace("__AEP_COMMAND__", &argv(aep, agent))
                .replace("__EXPORT__", export);
            let mut edits = vec![Edit::File {
                path: path.clone(),
                text,
                executable: false,
            }];
            if agent == "kilocode" && remove {
                // The plugin folder loads it: an entry in `plugin` (what an earlier setup
                // wrote, the plugin then in `.kilocode/plugins/`) would load it twice.
                let (config, old) = match scope {
                    Scope::Project => (
                        base.join("kilo.json"),
                        base.join(".kilocode/plugins/aep.js"),
                    ),
                    Scope::User => (base.join(".config/kilo/kilo.json"), path.clone()),
                };
                edits.push(Edit::PluginEntry {
                    path: config,
                    entry: format!("file://{}", absolute(&old).display()),
                });
            }
            edits
        }
        "pi" => {
            let dir = match scope {
                Scope::Project => ".pi/extensions",
                Scope::User => ".pi/agent/extensions",
            };
            let text =
                include_str!("../plugins/pi.ts").replace("__AEP_COMMAND__", &argv(aep, agent));
            vec![Edit::File {
                path: base.join(dir).join("aep.ts"),
                text,
                executable: false,
            }]
        }
        other => {
            return Err(Failure::usage(format!(
                "`{other}` is not an agent aep setup knows"
            )))
        }
    })
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Reads a file that may not exist yet.
fn read(path: &Path) -> Result<String, Failure> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Failure::input(format!("{}: {e}", path.display()))),
    }
}

/// A JSON settings file, `{}` when missing; one that does not parse is left alone.
fn read_json(path: &Path, text: &str) -> Result<Value, Failure> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text).map_err(|e| {
        Failure::input(format!(
            "{}: not JSON ({e}); nothing was written: fix or move the file and run aep setup again",
            path.display()
        ))
    })
}

/// Applies (or, with `--dry-run`, describes) one edit; returns what to print.
fn apply(edit: &Edit, args: &Args) -> Result<String, Failure> {
    let agent = args.agent.as_str();
    let (path, old, new, executable) = match edit {
        Edit::Hooks { path, shape, hooks } => {
            let old = read(path)?;
            let mut doc = read_json(path, &old)?;
            let changed = if args.remove {
                confedit::remove_hooks(&mut doc, *shape, agent)
            } else {
                confedit::merge_hooks(&mut doc, *shape, agent, hooks).map_err(|e| {
                    Failure::input(format!("{}: {e}; nothing was written", path.display()))
                })?
            };
            let new = if changed {
                confedit::to_text(&doc)
            } else {
                old.clone()
            };
            (path, old, new, false)
        }
        Edit::Fenced {
            path,
            block,
            yaml_key,
        } => {
            let old = read(path)?;
            let marker = format!("aep setup {agent}");
            let comment = "#";
            let new = if args.remove {
                confedit::remove_fenced(&old, &marker, comment)
            } else {
                if let Some(key) = yaml_key {
                    let without = confedit::remove_fenced(&old, &marker, comment);
                    if without.lines().any(|l| l.starts_with(&format!("{key}:"))) {
                        return Err(Failure::new(
                            Exit::Findings,
                            format!(
                                "{}: has its own `{key}:` block; nothing was written. Merge these entries into it by hand:\n{block}",
                                path.display()
                            ),
                        ));
                    }
                }
                confedit::set_fenced(&old, &marker, comment, block)
            };
            (path, old, new, false)
        }
        Edit::File {
            path,
            text,
            executable,
        } => {
            let old = read(path)?;
            let ours = old.is_empty()
                || old.contains("written by aep setup")
                || old.contains("written by `aep setup");
            if !ours {
                return Err(Failure::input(format!(
                    "{}: a file of someone else's is there; nothing was written: move it and run aep setup again",
                    path.display()
                )));
            }
            let new = if args.remove {
                String::new()
            } else {
                text.clone()
            };
            (path, old, new, *executable)
        }
        Edit::PluginEntry { path, entry } => {
            let old = read(path)?;
            let mut doc = read_json(path, &old)?;
            let root = doc.as_object_mut().ok_or_else(|| {
                Failure::input(format!(
                    "{}: no JSON object at its top; nothing was written",
                    path.display()
                ))
            })?;
            let list = root
                .entry("plugin")
                .or_insert_with(|| Value::Array(Vec::new()));
            let list = list.as_array_mut().ok_or_else(|| {
                Failure::input(format!(
                    "{}: its `plugin` member is not an array; nothing was written",
                    path.display()
                ))
            })?;
            let present = list.iter().any(|v| v.as_str() == Some(entry));
            let changed = if args.remove {
                let n = list.len();
                list.retain(|v| v.as_str() != Some(entry));
                let gone = list.len() != n;
                if list.is_empty() {
                    root.remove("plugin");
                }
                gone
            } else if present {
                false
            } else {
                list.push(Value::String(entry.clone()));
                true
            };
            let new = if changed {
                confedit::to_text(&doc)
            } else {
                old.clone()
            };
            (path, old, new, false)
        }
    };
    let shown = path.display();
    if old == new {
        return Ok(format!("{shown}: unchanged\n"));
    }
    if args.dry_run {
        return Ok(format!(
            "--- {shown}\n+++ {shown}\n{}",
            confedit::diff(&old, &new)
        ));
    }
    if new.is_empty() && matches!(edit, Edit::File { .. }) {
        std::fs::remove_file(path).map_err(|e| Failure::input(format!("{shown}: {e}")))?;
        return Ok(format!("{shown}: removed\n"));
    }
    if !old.is_empty() {
        let mut backup = path.as_os_str().to_owned();
        backup.push(".aep-setup.bak");
        write_atomic(Path::new(&backup), old.as_bytes())
            .map_err(|e| Failure::input(format!("{}: {e}", Path::new(&backup).display())))?;
    }
    write_atomic(path, new.as_bytes()).map_err(|e| Failure::input(format!("{shown}: {e}")))?;
    if executable {
        make_executable(path).map_err(|e| Failure::input(format!("{shown}: {e}")))?;
    }
    Ok(format!(
        "{shown}: {}\n",
        if args.remove {
            "updated (aep's hooks taken out)"
        } else {
            "updated"
        }
    ))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}
