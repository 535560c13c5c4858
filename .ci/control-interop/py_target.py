"""A Python ControlTarget holding SESSION over the reference relay's WebSocket.

usage: py_target.py URL TOKEN SESSION
Declares control.resume (accepted through the SDK's ControlTarget), control.cancel
(rejected with reason `refused` and a detail), and x.interop.control.ignore (never
answered); control.pause is undeclared. Prints `ready` once it holds the session and
runs until killed.
"""
import sys
import threading

from aep_sdk import ControlTarget, Emitter, open_duplex

url, token, session = sys.argv[1:4]
ACCEPTS = ["control.resume", "control.cancel", "x.interop.control.ignore"]

duplex = open_duplex(url, token=token, connect_timeout_ms=10_000)
duplex.send_json({
    "type": "hello", "versions": ["0.1"], "role": "emitter",
    "identity": {"agent": "py-interop-target", "instance": "ci"},
    "capabilities": {"control": {"accepts": ACCEPTS}},
})
hello = duplex.recv_json()
assert hello and hello.get("type") == "hello", hello

lock = threading.Lock()


def sink(ev):
    with lock:
        duplex.send_json(ev)


emitter = Emitter("py-interop-target", "ci", sink)
se = emitter.session(session)
# The SDK's helper acks what it accepts; cancel is answered by hand with a reason.
target = ControlTarget(se, accepts=["control.resume"])
rejected = {}
se.emit("session.started", {"cwd": "."})
print("ready", flush=True)

while True:
    msg = duplex.recv_json()
    if msg is None:
        break
    ty = msg.get("type", "")
    if ty == "x.interop.control.ignore":
        continue
    if ty == "control.cancel":
        key = (msg.get("source"), msg.get("id"))
        if key in rejected:
            se.redeliver(rejected[key])
        else:
            rejected[key] = se.emit("control.rejected",
                                    {"reason": "refused", "detail": "python target refuses cancels"},
                                    cause=msg.get("id"))
        continue
    if ty.startswith("control.") and ty not in ("control.accepted", "control.rejected"):
        target.handle(msg, lambda cmd: None)
