// aep: the Agent Event Protocol adapter for __AGENT_NAME__, written by `aep setup __AGENT__`.
// It hands every moment to `aep hook __AGENT__` (one process per moment, in order) and
// never throws: a missing or failing aep never breaks __AGENT_NAME__. Remove it with
// `aep setup __AGENT__ --remove`.
const AEP = __AEP_COMMAND__;
const TIMEOUT_MS = 5000;
// A permission ask waits for its answer over AEP control: `aep hook` holds it up to
// its --hold (55 s by default), then answers nothing and __AGENT_NAME__ asks as usual.
const HELD_TIMEOUT_MS = 60000;

let chain = Promise.resolve();

// Runs `aep hook` on one moment; resolves with what it printed ("" on any failure).
function run(moment, held) {
  let text;
  try {
    text = JSON.stringify(moment);
  } catch {
    return Promise.resolve("");
  }
  return import("node:child_process").then(
    ({ spawn }) =>
      new Promise((resolve) => {
        let child;
        let out = "";
        try {
          child = spawn(AEP[0], AEP.slice(1), { stdio: ["pipe", held ? "pipe" : "ignore", "ignore"] });
        } catch {
          resolve("");
          return;
        }
        const timer = setTimeout(() => {
          try {
            child.kill();
          } catch {}
          resolve("");
        }, held ? HELD_TIMEOUT_MS : TIMEOUT_MS);
        if (held) {
          child.stdout.setEncoding("utf8");
          child.stdout.on("data", (chunk) => {
            if (out.length < 65536) out += chunk;
          });
        }
        child.on("error", () => {
          clearTimeout(timer);
          resolve("");
        });
        child.on("close", () => {
          clearTimeout(timer);
          resolve(out);
        });
        try {
          child.stdin.on("error", () => {});
          child.stdin.end(text);
        } catch {}
      }),
    () => "",
  );
}

// In order, never awaited by the agent: the hooks return at once.
function send(moment) {
  chain = chain.then(
    () => run(moment, false),
    () => run(moment, false),
  );
  return chain;
}

// In order too, awaited: the agent waits for the decision (or for none).
function held(moment) {
  chain = chain.then(
    () => run(moment, true),
    () => run(moment, true),
  );
  return chain;
}

export const AepPlugin = async () => ({
  event: async ({ event }) => {
    send({ kind: "bus", event });
  },
  "tool.execute.before": async (input, output) => {
    send({ kind: "tool.before", input, output: { args: output && output.args } });
  },
  "tool.execute.after": async (input, output) => {
    send({ kind: "tool.after", input, output });
  },
  "permission.ask": async (permission, output) => {
    const reply = await held({ kind: "permission.ask", permission });
    try {
      const decision = JSON.parse(reply);
      if (output && (decision.status === "allow" || decision.status === "deny")) {
        output.status = decision.status;
      }
    } catch {}
  },
});

__EXPORT__
