"""The Python SDK's ControlClient commands a Rust ControlTarget (examples/target).

usage: py_client.py URL TOKEN SESSION
The target holds SESSION, accepts control.resume, rejects control.cancel with reason
`refused`, does not declare control.pause, and declares but never answers
x.interop.control.ignore. Prints one line per scenario; exits 1 on any mismatch.
"""
import asyncio
import sys

from aep_sdk import aio
from aep_sdk.control import NackError

url, token, session = sys.argv[1:4]


async def main() -> int:
    client = aio.ControlClient(url, agent="py-interop-client", host="ci", token=token)
    await client.connect(connect_timeout_ms=10_000)
    failures = 0

    def check(name: str, ok: bool, what: object) -> None:
        nonlocal failures
        print(f"{'PASS' if ok else 'FAIL'}  python->rust {name}: {what}")
        failures += 0 if ok else 1

    ack = await client.send("control.resume", session, ack_window_ms=5_000)
    check("accepted", ack.get("type") == "control.accepted", ack.get("type"))
    for name, ty, kwargs, want in [
        ("unsupported", "control.pause", {"ack_window_ms": 5_000}, ("unsupported", False)),
        ("rejected", "control.cancel", {"ack_window_ms": 5_000, "run": "r1"}, ("refused", False)),
        ("timeout", "x.interop.control.ignore", {"ack_window_ms": 300, "retries": 1}, ("timeout", True)),
    ]:
        try:
            ev = await client.send(ty, session, **kwargs)
            check(name, False, f"accepted: {ev.get('type')}")
        except NackError as e:
            ok = (e.reason, e.synthesized) == want and (name != "rejected" or bool(e.detail))
            check(name, ok, f"reason={e.reason} detail={e.detail!r} synthesized={e.synthesized}")
    await client.close()
    return 1 if failures else 0


sys.exit(asyncio.run(main()))
