//! `aep setup AGENT`: the agents' own configuration merged, never clobbered,
//! idempotent, `--dry-run` and `--remove`; and the plugins it writes, loaded the way
//! their agent loads them where the agent's runtime is here (Node), handing real hooks
//! to `aep hook` against the embedded relay.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{history, relay, run_with, scratch, Run, TOKEN};
use serde_json::{json, Value};

fn setup(home: &Path, args: &[&str]) -> Run {
    let mut cmd = common::aep();
    cmd.env("HOME", home)
        .env_remove("KIMI_CODE_HOME")
        .arg("setup")
        .args(args);
    common::finish(common::spawn(cmd), b"", Duration::from_secs(30))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every command registered under `hooks`, either shape.
fn commands(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (event, list) in doc["hooks"].as_object().into_iter().flatten() {
        for item in list.as_array().into_iter().flatten() {
            let handlers: Vec<&Value> = match item.get("hooks") {
                Some(h) => h.as_array().unwrap().iter().collect(),
                None => vec![item],
            };
            for h in handlers {
                out.push((event.clone(), h["command"].as_str().unwrap().to_owned()));
            }
        }
    }
    out
}

#[test]
fn json_settings_are_merged_idempotently_and_removed_cleanly() {
    for (agent, scope, rel, event) in [
        (
            "claude-code",
            "--user",
            ".claude/settings.json",
            "PreToolUse",
        ),
        (
            "claude-code",
            "--project",
            ".claude/settings.json",
            "PreToolUse",
        ),
        ("codex", "--user", ".codex/hooks.json", "PreToolUse"),
        (
            "gemini-cli",
            "--user",
            ".gemini/settings.json",
            "BeforeTool",
        ),
        (
            "qwen-code",
            "--project",
            ".qwen/settings.json",
            "PreToolUse",
        ),
        (
            "antigravity",
            "--user",
            ".gemini/config/hooks.json",
            "PreToolUse",
        ),
    ] {
        let home = scratch();
        let project = scratch();
        let base = if scope == "--user" {
            home.path()
        } else {
            project.path()
        };
        let file = base.join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let mine = json!({"theme": "dark", "hooks": {event: [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./my-lint.sh", "timeout": 5}]}
        ]}});
        std::fs::write(&file, serde_json::to_string_pretty(&mine).unwrap()).unwrap();
        let dir = project.path().to_str().unwrap();
        let args = [agent, scope, "--dir", dir, "--aep", "/opt/bin/aep"];
        setup(home.path(), &args).expect(0).stdout_has("updated");
        let doc = read_json(&file);
        assert_eq!(doc["theme"], "dark", "{agent}");
        let cmds = commands(&doc);
        assert!(
            cmds.iter().any(|(e, c)| e == event && c == "./my-lint.sh"),
            "{agent}: {doc}"
        );
        let ours: Vec<_> = cmds
            .iter()
            .filter(|(_, c)| c.starts_with("/opt/bin/aep hook"))
            .collect();
        assert!(ours.len() >= 5, "{agent}: {ours:?}");
        if agent == "antigravity" {
            assert!(
                ours.iter()
                    .any(|(e, c)| e == "PreToolUse"
                        && c == "/opt/bin/aep hook antigravity PreToolUse")
            );
        }
        // Again: nothing changes.
        let before = std::fs::read(&file).unwrap();
        setup(home.path(), &args).expect(0).stdout_has("unchanged");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{agent}");
        // Removed: the user's own settings stay, as they were.
        let mut remove = args.to_vec();
        remove.push("--remove");
        setup(home.path(), &remove).expect(0);
        assert_eq!(read_json(&file), mine, "{agent}");
    }
}

#[test]
fn claude_code_gets_every_observer_hook_it_documents_and_the_held_ones_outlast_the_hold() {
    let home = scratch();
    setup(
        home.path(),
        &["claude-code", "--user", "--aep", "/opt/bin/aep"],
    )
    .expect(0);
    let doc = read_json(&home.path().join(".claude/settings.json"));
    let events: Vec<String> = commands(&doc).into_iter().map(|(e, _)| e).collect();
    for want in [
        "PermissionRequest",
        "PermissionDenied",
        "Elicitation",
        "ElicitationResult",
        "StopFailure",
        "TaskCreated",
        "TeammateIdle",
        "CwdChanged",
    ] {
        assert!(events.iter().any(|e| e == want), "{want}: {events:?}");
    }
    // Hooks that replace what Claude Code does, or watch files they name: never ours.
    for never in ["WorktreeCreate", "WorktreeRemove", "FileChanged"] {
        assert!(!events.iter().any(|e| e == never), "{never}");
    }
    let handler = |event: &str| doc["hooks"][event][0]["hooks"][0].clone();
    assert_eq!(handler("PermissionRequest")["timeout"], 60);
    assert_eq!(handler("PermissionRequest")["type"], "command");
    assert_eq!(handler("Elicitation")["timeout"], 60);
    assert!(handler("PreToolUse").get("timeout").is_none());
    // Codex's held hook too.
    setup(home.path(), &["codex", "--user", "--aep", "/opt/bin/aep"]).expect(0);
    let codex = read_json(&home.path().join(".codex/hooks.json"));
    assert_eq!(
        codex["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"],
        60
    );
}

#[test]
fn cline_s_scripts_carry_the_file_names_cline_looks_for() {
    let home = scratch();
    setup(home.path(), &["cline", "--user", "--aep", "/opt/bin/aep"]).expect(0);
    let dir = home.path().join(".cline/hooks");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "PostToolUse",
            "PreToolUse",
            "SessionShutdown",
            "TaskCancel",
            "TaskComplete",
            "TaskError",
            "TaskResume",
            "TaskStart",
            "UserPromptSubmit"
        ]
    );
}

#[test]
fn dry_run_prints_the_change_and_writes_nothing() {
    let home = scratch();
    let r = setup(
        home.path(),
        &["codex", "--dry-run", "--aep", "/opt/bin/aep"],
    );
    r.expect(0)
        .stdout_has("+++ ")
        .stdout_has("+            \"command\": \"/opt/bin/aep hook codex\"");
    assert!(!home.path().join(".codex").exists());
    // A file that is not JSON is left alone, and said so.
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/hooks.json"), "{ // a comment\n}").unwrap();
    setup(home.path(), &["codex"])
        .expect(6)
        .stderr_has("not JSON");
    assert_eq!(
        std::fs::read_to_string(home.path().join(".codex/hooks.json")).unwrap(),
        "{ // a comment\n}"
    );
}

#[test]
fn toml_and_yaml_get_a_fenced_block_at_the_end() {
    let home = scratch();
    let config = home.path().join(".kimi-code/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let mine = "default_model = \"k2\"\n\n[[hooks]]\nevent = \"Stop\"\nmatcher = \"\"\ncommand = \"notify-send done\"\ntimeout = 5\n";
    std::fs::write(&config, mine).unwrap();
    setup(home.path(), &["kimi-code", "--aep", "/opt/bin/aep"]).expect(0);
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with(mine));
    assert_eq!(
        text.matches("command = \"/opt/bin/aep hook kimi-code\"")
            .count(),
        16
    );
    setup(home.path(), &["kimi-code", "--aep", "/opt/bin/aep"])
        .expect(0)
        .stdout_has("unchanged");
    setup(home.path(), &["kimi-code", "--remove"]).expect(0);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), mine);
    setup(home.path(), &["kimi-code", "--project"])
        .expect(2)
        .stderr_has("--user");

    let yaml = home.path().join(".hermes/config.yaml");
    std::fs::create_dir_all(yaml.parent().unwrap()).unwrap();
    std::fs::write(&yaml, "model: hermes-4\n").unwrap();
    setup(home.path(), &["hermes", "--aep", "/opt/bin/aep"]).expect(0);
    let text = std::fs::read_to_string(&yaml).unwrap();
    assert!(
        text.contains("hooks:\n  on_session_start:\n    - command: \"/opt/bin/aep hook hermes\""),
        "{text}"
    );
    setup(home.path(), &["hermes", "--remove"]).expect(0);
    assert_eq!(std::fs::read_to_string(&yaml).unwrap(), "model: hermes-4\n");
    // A file with hooks of its own is never edited: the block to merge is printed.
    std::fs::write(
        &yaml,
        "hooks:\n  pre_tool_call:\n    - command: ./audit.sh\n",
    )
    .unwrap();
    setup(home.path(), &["hermes"])
        .expect(1)
        .stderr_has("Merge these entries into it by hand");
    assert_eq!(
        std::fs::read_to_string(&yaml).unwrap(),
        "hooks:\n  pre_tool_call:\n    - command: ./audit.sh\n"
    );
}

/// What a plugin makes of a session with one tool call in it, in order.
const ONE_TOOL_RUN: [&str; 5] = [
    "session.started",
    "run.started",
    "tool.requested",
    "tool.completed",
    "run.finished",
];

/// The events' types, in order.
fn types(events: &[aep::protocol::Event]) -> Vec<&str> {
    events.iter().map(|e| e.event_type()).collect()
}

/// Waits for the relay at `url` to hold `n` events of `agent`.
fn held(url: &str, agent: &str, n: usize) -> Vec<aep::protocol::Event> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let events: Vec<_> = history(url)
            .into_iter()
            .filter(|e| e.agent() == agent)
            .collect();
        if events.len() >= n || Instant::now() > end {
            return events;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
#[test]
fn cline_s_hook_scripts_hand_the_payload_to_aep_hook() {
    let relay = relay();
    let home = scratch();
    let state = scratch();
    let aep = env!("CARGO_BIN_EXE_aep");
    setup(home.path(), &["cline", "--user", "--aep", aep]).expect(0);
    // Cline runs the file named for the hook (`TaskStart` is its `agent_start`).
    let script = home.path().join(".cline/hooks/TaskStart");
    let payload = json!({"hookName": "agent_start", "taskId": "task_1", "agent_id": "a", "parent_agent_id": null});
    let mut cmd = std::process::Command::new(&script);
    cmd.env("AEP_URL", relay.url())
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_HOOK_DIR", state.path())
        .env("AEP_HOOK_BUDGET_MS", "20000");
    let r = common::finish(
        common::spawn(cmd),
        payload.to_string().as_bytes(),
        Duration::from_secs(30),
    );
    r.expect(0);
    assert_eq!(r.stdout, "{}\n");
    let events = held(relay.url(), "cline", 1);
    assert_eq!(events[0].event_type(), "run.started");
}

/// `aep setup AGENT --project --dir PROJECT ARGS...`, with `HOME` at the project too.
fn in_project(project: &Path, agent: &str, args: &[&str]) -> Run {
    let dir = project.to_str().unwrap();
    let mut all = vec![agent, "--project", "--dir", dir];
    all.extend_from_slice(args);
    setup(project, &all)
}

/// Runs a Node ES module with the hook environment, or skips saying why.
fn node(script: &str, relay_url: &str, state: &Path) -> Option<Run> {
    if aep_test_support::external::skip_for(
        aep_test_support::external::program_missing("node").as_deref(),
    ) {
        return None;
    }
    let mut cmd = std::process::Command::new("node");
    cmd.args(["--input-type=module", "-e", script])
        .env("AEP_URL", relay_url)
        .env("AEP_TOKEN", TOKEN)
        .env("AEP_HOOK_DIR", state)
        // the budget only guards against a hang on a busy machine
        .env("AEP_HOOK_BUDGET_MS", "20000");
    Some(common::finish(
        common::spawn(cmd),
        b"",
        Duration::from_secs(60),
    ))
}

#[test]
fn the_opencode_and_kilo_plugins_run_under_node_and_hand_every_moment_to_aep_hook() {
    let aep = env!("CARGO_BIN_EXE_aep");
    for agent in ["opencode", "kilocode"] {
        let relay = relay();
        let project = scratch();
        let state = scratch();
        in_project(project.path(), agent, &["--aep", aep]).expect(0);
        let dirname = if agent == "opencode" {
            ".opencode"
        } else {
            ".kilo"
        };
        let plugin = project.path().join(dirname).join("plugins/aep.js");
        // Kilo Code loads every file of its plugin folder: no `plugin` entry (it would
        // load the plugin twice).
        assert!(!project.path().join("kilo.json").exists(), "{agent}");
        let factory = if agent == "opencode" {
            "m.AepPlugin"
        } else {
            "m.default.server"
        };
        let script = format!(
            r#"
            const m = await import({plugin:?});
            const hooks = await {factory}({{ directory: "/p" }});
            const s = "ses_1";
            await hooks.event({{ event: {{ type: "session.created", properties: {{ info: {{ id: s, version: "1.0.0" }} }} }} }});
            await hooks.event({{ event: {{ type: "message.updated", properties: {{ info: {{ id: "m1", sessionID: s, role: "user" }} }} }} }});
            await hooks["tool.execute.before"]({{ tool: "bash", sessionID: s, callID: "c1" }}, {{ args: {{ command: "npm test" }} }});
            await hooks["tool.execute.after"]({{ tool: "bash", sessionID: s, callID: "c1", args: {{}} }}, {{ title: "t", output: "ok", metadata: {{}} }});
            await hooks.event({{ event: {{ type: "session.idle", properties: {{ sessionID: s }} }} }});
            "#,
            plugin = plugin.to_str().unwrap(),
        );
        let Some(r) = node(&script, relay.url(), state.path()) else {
            return;
        };
        r.expect(0);
        let events = held(relay.url(), agent, 5);
        assert_eq!(types(&events), ONE_TOOL_RUN, "{agent}: in order");
        in_project(project.path(), agent, &["--remove"]).expect(0);
        assert!(!plugin.exists());
    }
}

#[test]
fn the_pi_extension_registers_observers_only_and_hands_events_to_aep_hook() {
    let aep = env!("CARGO_BIN_EXE_aep");
    let relay = relay();
    let home = scratch();
    let state = scratch();
    setup(home.path(), &["pi", "--user", "--aep", aep]).expect(0);
    // pi loads .ts through its own loader; Node 20 reads the same text as a module.
    let ts = home.path().join(".pi/agent/extensions/aep.ts");
    let mjs = home.path().join("aep.mjs");
    std::fs::copy(&ts, &mjs).unwrap();
    let script = format!(
        r#"
        const m = await import({mjs:?});
        const handlers = {{}};
        m.default({{ on: (name, h) => {{ handlers[name] = h; }} }});
        const forbidden = ["tool_call", "tool_result", "context", "input"].filter((n) => n in handlers);
        if (forbidden.length) {{ console.error("intercepts " + forbidden); process.exit(3); }}
        const ctx = {{ sessionManager: {{ getSessionId: () => "pi_1", getSessionFile: () => undefined, getCwd: () => "/p" }} }};
        handlers.session_start({{ type: "session_start", reason: "startup" }}, ctx);
        handlers.agent_start({{ type: "agent_start" }}, ctx);
        handlers.tool_execution_start({{ type: "tool_execution_start", toolCallId: "c1", toolName: "bash", args: {{}} }}, ctx);
        handlers.tool_execution_end({{ type: "tool_execution_end", toolCallId: "c1", toolName: "bash", result: {{}}, isError: false }}, ctx);
        handlers.agent_end({{ type: "agent_end", messages: [] }}, ctx);
        "#,
        mjs = mjs.to_str().unwrap(),
    );
    let Some(r) = node(&script, relay.url(), state.path()) else {
        return;
    };
    r.expect(0);
    let events = held(relay.url(), "pi", 5);
    assert_eq!(types(&events), ONE_TOOL_RUN);
    assert!(events.iter().all(|e| e.session() == Some("pi_1")));
    let _ = run_with(&["--version"], b"", Duration::from_secs(5));
}

#[test]
fn the_opencode_plugin_s_permission_ask_takes_its_answer_over_control() {
    let aep = env!("CARGO_BIN_EXE_aep");
    let relay = relay();
    let project = scratch();
    let state = scratch();
    in_project(project.path(), "opencode", &["--aep", aep]).expect(0);
    let plugin = project.path().join(".opencode/plugins/aep.js");
    let script = format!(
        r#"
        const m = await import({plugin:?});
        const hooks = await m.AepPlugin({{ directory: "/p" }});
        const output = {{ status: "ask" }};
        await hooks["permission.ask"]({{ id: "per_1", type: "bash", sessionID: "ses_p", title: "rm -rf build" }}, output);
        console.log(output.status);
        "#,
        plugin = plugin.to_str().unwrap(),
    );
    if aep_test_support::external::skip_for(
        aep_test_support::external::program_missing("node").as_deref(),
    ) {
        return;
    }
    let url = relay.url().to_owned();
    let state_dir = state.path().to_owned();
    let agent = std::thread::spawn(move || node(&script, &url, &state_dir));
    let request = crate::permission::requested(relay.url(), "ses_p");
    crate::permission::respond(relay.url(), "ses_p", request.id(), &["--option", "allow"])
        .expect(0);
    let r = agent.join().unwrap().unwrap();
    r.expect(0);
    assert_eq!(
        r.stdout, "allow\n",
        "the plugin set the hook's output.status"
    );
}
