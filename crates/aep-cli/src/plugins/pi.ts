// aep: the Agent Event Protocol adapter for pi, written by `aep setup pi`.
// It hands the observation events to `aep hook pi` (one process per event, in order),
// with the session read from ctx.sessionManager, and never throws: a missing or
// failing aep never breaks pi. Observe-only by non-subscription: it registers no
// interception surface (no tool_call, tool_result, context, input, before_provider_*
// or session_before_*). Remove it with `aep setup pi --remove`.
const AEP = __AEP_COMMAND__;
const TIMEOUT_MS = 5000;
const EVENTS = [
  "session_start",
  "session_shutdown",
  "session_compact",
  "session_info_changed",
  "session_tree",
  "agent_start",
  "agent_end",
  "agent_settled",
  "turn_start",
  "turn_end",
  "message_start",
  "message_end",
  "tool_execution_start",
  "tool_execution_end",
  "model_select",
  "thinking_level_select",
];

let chain = Promise.resolve();

function run(moment) {
  let text;
  try {
    text = JSON.stringify(moment);
  } catch {
    return Promise.resolve();
  }
  return import("node:child_process").then(
    ({ spawn }) =>
      new Promise((resolve) => {
        let child;
        try {
          child = spawn(AEP[0], AEP.slice(1), { stdio: ["pipe", "ignore", "ignore"] });
        } catch {
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          try {
            child.kill();
          } catch {}
          resolve();
        }, TIMEOUT_MS);
        child.on("error", () => {
          clearTimeout(timer);
          resolve();
        });
        child.on("close", () => {
          clearTimeout(timer);
          resolve();
        });
        try {
          child.stdin.on("error", () => {});
          child.stdin.end(text);
        } catch {}
      }),
    () => undefined,
  );
}

function send(moment) {
  chain = chain.then(
    () => run(moment),
    () => run(moment),
  );
  return chain;
}

function sessionOf(ctx) {
  const session = {};
  try {
    const sm = ctx && ctx.sessionManager;
    if (sm) {
      session.id = sm.getSessionId();
      session.file = sm.getSessionFile();
      session.cwd = sm.getCwd();
    }
  } catch {}
  return session;
}

export default function aep(pi) {
  for (const name of EVENTS) {
    try {
      pi.on(name, (event, ctx) => {
        const moment = { session: sessionOf(ctx), event: Object.assign({ type: name }, event) };
        send(moment);
      });
    } catch {}
  }
}
