"""The Python SDK's asyncio ControlClient: sequential round trips (p50/p99) and
commands/s in bursts of N in flight (the median burst, and the 10th and 90th percentile
ones).

usage: py_bench.py URL TOKEN SESSION SEQUENTIAL CONCURRENT ROUNDS
       py_bench.py URL TOKEN SESSION SEQUENTIAL CONCURRENT --paired

The first runs one uncounted and ROUNDS counted bursts back to back and prints one
JSON object. With --paired (how examples/control_bench.rs drives it), it
prints {"p50_us", "p99_us"} after the sequential round trips, then runs one burst per
"burst" line read from stdin and prints {"rate"} for each, until stdin closes: the
bench interleaves these bursts with the Rust client's, so that a slow moment of the
machine falls on both clients alike.
"""
import asyncio
import json
import sys
import time

from aep_sdk import aio

url, token, session = sys.argv[1:4]
sequential, concurrent = int(sys.argv[4]), int(sys.argv[5])
paired = sys.argv[6] == "--paired"
rounds = 0 if paired else int(sys.argv[6])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def emit(obj):
    print(json.dumps(obj), flush=True)


async def burst(client):
    t = time.perf_counter()
    await asyncio.gather(*(client.send("control.pause", session) for _ in range(concurrent)))
    return concurrent / (time.perf_counter() - t)


async def main():
    client = aio.ControlClient(url, agent="py-bench", host="bench", token=token)
    await client.connect()
    for _ in range(100):
        await client.send("control.pause", session)
    lat = []
    for _ in range(sequential):
        t = time.perf_counter()
        await client.send("control.pause", session)
        lat.append(time.perf_counter() - t)
    latency = {"p50_us": pct(lat, 0.5) * 1e6, "p99_us": pct(lat, 0.99) * 1e6}
    if paired:
        emit(latency)
        loop = asyncio.get_running_loop()
        # read off the loop, so the client's connection is served while it waits
        while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "burst":
            emit({"rate": await burst(client)})
        await client.close()
        return
    rates = []
    # One burst first, not counted, as control_bench.rs does for the Rust client.
    for round in range(rounds + 1):
        rate = await burst(client)
        if round > 0:
            rates.append(rate)
    await client.close()
    emit({**latency, "cmds_per_s": pct(rates, 0.5), "p10": pct(rates, 0.1),
          "p90": pct(rates, 0.9)})


asyncio.run(main())
