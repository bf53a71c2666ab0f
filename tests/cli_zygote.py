"""Start the CLI from a process that has already imported it: the tests' CLI runs, faster.

The end-to-end tests start `controlroom` hundreds of times, and each start spends
about half a second of CPU importing the same modules (pydantic models, the engine, the
tools, numpy): most of the suite's time on a two-core machine. Here one process per test
worker imports them once and then forks for each command. The child is a real process of
its own, as a fresh start would be: its own pid, environment, working directory, argv and
files for stdout and stderr; it runs `controlroom`'s entry point exactly as the console
script does, and leaves through the interpreter's normal shutdown (atexit, threads), so a
kill (`CONTROLROOM_CRASH_AFTER_COMMIT`), an exit code or a crash reads as it would.

What it does not give: a start's own cost and what a start imports. Tests of start-up
(`tests/test_startup.py`) and of installs start real processes, as do the tests that
bring up servers and workers. `CONTROLROOM_TEST_FORKED_CLI=0` turns it off for a run.

Protocol: the server listens on a Unix socket; each connection sends one JSON request
(args, env, cwd, stdout and stderr paths, timeout) and receives one JSON line back with
the return code (negative for a signal, as `subprocess` reports it). For each request the
server forks a runner, which forks the command's process, waits for it (killing it at the
timeout) and answers; the server itself never waits, so commands run side by side.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

#: What every command would import anyway: imported once, before any fork.
PRELOADED = (
    "controlroom.api.cli",
    "controlroom.api.cli_common",
    "controlroom.engine.service",
    "controlroom.engine.context",
    "controlroom.tools.builtin",
    "controlroom.projections.views",
)
TIMED_OUT = -1000


def _child(request: dict[str, Any]) -> None:
    """In the command's own process: become a fresh start of the console script."""
    os.setsid()  # its own process group, as a separate start has
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = [request["argv0"], *request["args"]]


def _runner(conn: socket.socket, request: dict[str, Any]) -> int:
    """Fork the command, wait for it (to its timeout), answer. Returns in the command's
    process only (with 0); the runner itself leaves by `os._exit`."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        _child(request)
        return 0
    deadline = time.monotonic() + float(request["timeout"])
    code: int | None = None
    while code is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = TIMED_OUT
            break
        time.sleep(0.005)
    conn.sendall((json.dumps({"returncode": code}) + "\n").encode())
    conn.close()
    os._exit(0)


def serve(path: str) -> None:
    """Import the CLI once, then fork a runner for each request. Returns only in a
    command's process."""
    import importlib

    for module in PRELOADED:
        importlib.import_module(module)
    # Runners are never waited for: the kernel reaps them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1.0)
    parent = os.getppid()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:
                os._exit(0)  # the test process is gone (killed): so is its server
            continue
        conn.settimeout(None)
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        if not data:
            conn.close()
            continue
        request = json.loads(data)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            # the runner waits for its command: it must see its exit status
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _runner(conn, request)
            return  # only the command's process gets here
        conn.close()


class ForkedCli:
    """The client: one server per test process, started on first use, stopped at exit."""

    def __init__(self) -> None:
        import atexit
        import tempfile

        self._dir = tempfile.mkdtemp(prefix="cr-cli-")
        self._socket = os.path.join(self._dir, "s")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self._server = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_zygote", self._socket],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._server.stdout is not None
        if self._server.stdout.readline().strip() != "ready":
            raise RuntimeError("the forked CLI's server did not start")
        self._count = 0
        atexit.register(self.close)

    def close(self) -> None:
        import shutil

        if self._server.poll() is None:
            self._server.kill()
            self._server.wait()
        shutil.rmtree(self._dir, ignore_errors=True)

    def run(
        self, argv0: str, args: list[str], env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        with _COUNT_LOCK:
            self._count += 1
            tag = f"{threading.get_ident()}-{self._count}"
        out, err = (os.path.join(self._dir, f"{tag}.{n}") for n in ("out", "err"))
        request = {
            "argv0": argv0,
            "args": args,
            "env": env,
            "cwd": os.getcwd(),
            "stdout": out,
            "stderr": err,
            "timeout": timeout,
        }
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self._socket)
            conn.sendall((json.dumps(request) + "\n").encode())
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    raise RuntimeError("the forked CLI's runner gave no answer")
                answer += chunk
        code = int(json.loads(answer)["returncode"])
        # as `subprocess.run(text=True)` reads them: the locale's encoding, universal newlines
        texts = []
        for path in (out, err):
            with open(path, encoding="utf-8", errors="strict", newline=None) as f:
                texts.append(f.read())
            os.unlink(path)
        if code == TIMED_OUT:
            raise subprocess.TimeoutExpired([argv0, *args], timeout, texts[0], texts[1])
        return subprocess.CompletedProcess([argv0, *args], code, texts[0], texts[1])


_COUNT_LOCK = threading.Lock()
_FORKED: ForkedCli | None = None


def forked_cli() -> ForkedCli | None:
    """The process's forked-CLI client, or None where it is turned off."""
    global _FORKED
    if os.environ.get("CONTROLROOM_TEST_FORKED_CLI", "1") == "0":
        return None
    with _COUNT_LOCK:
        if _FORKED is None:
            _FORKED = ForkedCli()
        return _FORKED


if __name__ == "__main__":
    serve(sys.argv[1])
    # The command's process: exactly what the console script does.
    from controlroom.api.cli import main

    sys.argv[0] = sys.argv[0].removesuffix(".exe")
    sys.exit(main())
