"""LangGraph's workload, in its own venv (`langgraph`, `langgraph-checkpoint-sqlite`).

A `StateGraph` of 8 nodes in a line, each returning a small dict under a key of its own,
compiled with the documented `SqliteSaver` on a file: every super-step is checkpointed
(a checkpoint row, and a row for each channel the step wrote). Each run is a new thread.
`--durability`: LangGraph's default `async` writes a step's checkpoint while the next step
runs (the run waits for all of them before it returns); `sync` before the next step starts.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    start: int
    s0: dict[str, Any]
    s1: dict[str, Any]
    s2: dict[str, Any]
    s3: dict[str, Any]
    s4: dict[str, Any]
    s5: dict[str, Any]
    s6: dict[str, Any]
    s7: dict[str, Any]


def node(index: int) -> Any:
    def step(state: State) -> dict[str, Any]:
        return {f"s{index}": timing.step_result(index)}

    return step


def main() -> None:
    parser = timing.arguments(__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLite file of the checkpoints")
    parser.add_argument("--durability", choices=["async", "sync"], default="async")
    ns = parser.parse_args()
    builder = StateGraph(State)
    previous = START
    for index in range(timing.STEPS):
        builder.add_node(f"n{index}", node(index))
        builder.add_edge(previous, f"n{index}")
        previous = f"n{index}"
    builder.add_edge(previous, END)
    with SqliteSaver.from_conn_string(ns.db) as saver:
        graph = builder.compile(checkpointer=saver)
        thread = [0]

        def run() -> None:
            thread[0] += 1
            config: Any = {"configurable": {"thread_id": f"t{thread[0]}"}}
            if ns.durability == "async":  # the default, as a user leaves it
                final = graph.invoke({"start": thread[0]}, config)
            else:
                final = graph.invoke({"start": thread[0]}, config, durability="sync")
            assert final[f"s{timing.STEPS - 1}"] == timing.step_result(timing.STEPS - 1)

        for _ in range(timing.WARM_UP_RUNS):
            run()
        clock = timing.Clock(ns.seconds)
        while clock.more():
            run()
    with sqlite3.connect(ns.db) as conn:
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        writes = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    conn.close()
    clock.report(checkpoints + writes, f"checkpoints {checkpoints} + writes {writes}")


if __name__ == "__main__":
    main()
