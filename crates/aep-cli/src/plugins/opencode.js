// aep: the Agent Event Protocol adapter for __AGENT_NAME__, written by `aep setup __AGENT__`.
// It hands every moment to `aep hook __AGENT__` (one process per moment, in order) and
// never throws: a missing or failing aep never breaks __AGENT_NAME__. Remove it with
// `aep setup __AGENT__ --remove`.
const AEP = __AEP_COMMAND__;
const TIMEOUT_MS = 5000;

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

// In order, never awaited by the agent: the hooks return at once.
function send(moment) {
  chain = chain.then(
    () => run(moment),
    () => run(moment),
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
  "permission.ask": async (permission) => {
    send({ kind: "permission.ask", permission });
  },
});

__EXPORT__
