"""``python -m audit suite``, the real command: progress bars only on a terminal (and then one
suite bar), a full disk gives one ``error:`` line and exit status 3, and Ctrl-C stops it even
when the shell that started the tests ignores SIGINT."""

from __future__ import annotations

import errno
import os
import re
import select
import shutil
import signal
import struct
import time

import pytest

from tests.experiments.commands import FULL_DISK_ON_PDF, ROOT, audit, audit_patched, child, digests

RESULTS = ROOT / "results"


def test_piped_suite_draws_no_progress_bar_and_logs_each_step_once(tmp_path):
    # a real (small) run: the audits' own bars would be drawn too if progress were on
    out = audit("suite", "--only", "mar_mnar", "--results", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\r" not in out.stdout
    assert "%|" not in out.stderr  # no tqdm bar, not even a final one
    lines = out.stdout.splitlines()
    # the expected duration first, from the committed results' run time of mar_mnar
    assert re.fullmatch(r"\[suite\] 1 experiment at size default: expected about \d+ s \(their "
                        r"last recorded run times; a slower or loaded machine takes longer\)",
                        lines[0])
    assert re.fullmatch(r"\[suite\] 1/1 mar_mnar: running \(default, last run took \d+ s; "
                        r"0 s into the suite\)", lines[1])
    # every audit the experiment starts, labelled, in order
    audits = [line for line in lines if " audit " in line]
    assert [re.sub(r" \(\d+ s in\)$", "", a) for a in audits][:2] == [
        "[suite] 1/1 mar_mnar: audit 1 mar_mnar[mcar-row p*=0.5]",
        "[suite] 1/1 mar_mnar: audit 2 mar_mnar[mcar-iid p*=0.5]"]
    assert len(audits) == 8 and lines[2:10] == audits
    assert re.fullmatch(rf"\[suite\] 1/1 mar_mnar: \d+\.\d s -> {tmp_path}/mar_mnar\.json",
                        lines[10])
    assert lines[11:] == ["[report] 1/1 mar_mnar: drawn",
                          "[report] writing 1 figure (PNG and PDF) and REPORT.md",
                          f"[suite] report: {tmp_path}/REPORT.md"]


def _screen(text: str) -> list[str]:
    """What a terminal shows after ``text``: carriage returns overwrite, ESC[nA moves up."""
    rows, r, c = [[]], 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\x1b":
            m = re.match(r"\x1b\[(\d*)([A-Za-z])", text[i:])
            if m and m.group(2) == "A":
                r = max(0, r - int(m.group(1) or 1))
            i += m.end() if m else 1
            continue
        if ch == "\n":
            r, c = r + 1, 0
        elif ch == "\r":
            c = 0
        else:
            while len(rows) <= r:
                rows.append([])
            row = rows[r]
            row.extend(" " * (c + 1 - len(row)))
            row[c] = ch
            c += 1
        while len(rows) <= r:
            rows.append([])
        i += 1
    return ["".join(row).rstrip() for row in rows]


def _read_all(fd: int, proc, timeout: float) -> str:
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError as exc:  # EIO: the child closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    return data.decode(errors="replace")


def test_on_a_terminal_the_suite_bar_is_drawn_once_below_the_log_lines(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    pty = pytest.importorskip("pty")
    termios = pytest.importorskip("termios")
    shutil.copy(RESULTS / "mar_mnar.json", tmp_path)  # --resume keeps it: nothing to compute
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 110, 0, 0))
    try:
        with child(["-m", "audit", "suite", "--only", "mar_mnar", "--resume", "--results",
                    str(tmp_path)], stdin=slave, stdout=slave, stderr=slave) as proc:
            os.close(slave)
            slave = None
            text = _read_all(master, proc, timeout=120)
            assert proc.wait(timeout=60) == 0, text
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)
    screen = [line for line in _screen(text) if line]
    bars = [line for line in screen if re.search(r"suite: +\d+%\|", line)]
    assert len(bars) == 1, screen
    assert "100%" in bars[0] and "1/1" in bars[0]
    assert f"[suite] 1/1 mar_mnar: kept existing {tmp_path}/mar_mnar.json" in screen
    assert screen[-1] == f"[suite] report: {tmp_path}/REPORT.md"


def test_a_full_disk_while_drawing_is_exit_3_with_one_error_line(tmp_path):
    shutil.copy(RESULTS / "counterexample.json", tmp_path)
    before = digests(tmp_path)
    out = audit_patched(FULL_DISK_ON_PDF, "suite", "--only", "counterexample", "--resume",
                        "--results", str(tmp_path), "--no-progress")
    assert out.returncode == 3, out.stderr
    pdf = tmp_path / "figures" / "counterexample.pdf"
    assert out.stderr == (f"error: could not write {pdf}: No space left on device; the "
                          f"results JSON files are kept\n")
    after = digests(tmp_path)
    assert {k: v for k, v in after.items() if k.endswith(".json")} == before
    assert sorted(after) == ["counterexample.json", "figures/counterexample.png"]


def test_a_full_disk_while_saving_results_is_exit_3_naming_the_file(tmp_path):
    patch = ("import experiments.suite as _suite\n"
             "def _full(doc, path):\n"
             "    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
             "_suite.save_json = _full\n")
    out = audit_patched(patch, "suite", "--only", "mar_mnar", "--results", str(tmp_path),
                        "--no-progress")
    assert out.returncode == 3, out.stderr
    assert out.stderr == (f"error: could not write {tmp_path}/mar_mnar.json: No space left on "
                          f"device; finished experiments kept in {tmp_path}: none\n")


def test_a_reader_that_goes_away_is_exit_141_not_a_write_error(tmp_path):
    # ``suite | head``: the log line's write raises BrokenPipeError, an OSError the suite's
    # own write-error handler must not take for a full disk (it answered exit 3)
    patch = ("import experiments.suite as _suite\n"
             "def _closed(*a, **k):\n"
             "    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))\n"
             "_suite.run_suite = _closed\n"
             "import experiments.cli_suite as _cli\n"
             "_cli.run_suite = _closed\n")
    out = audit_patched(patch, "suite", "--only", "mar_mnar", "--results", str(tmp_path),
                        "--no-progress")
    assert out.returncode == 141, out.stderr
    assert "error" not in out.stderr and "Traceback" not in out.stderr


def test_ctrl_c_stops_the_suite_even_when_sigint_is_ignored_by_the_parent(tmp_path):
    """Under ``(trap '' INT; pytest ...)`` every child inherits SIG_IGN for SIGINT; the test
    helpers restore the default, so Ctrl-C reaches the suite, and kill its process group."""
    results = tmp_path / "results"
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with child(["-m", "audit", "suite", "--only", "mar_mnar", "amplification_vs_pstar",
                    "--results", str(results), "--no-progress"]) as proc:
            deadline = time.time() + 120
            while (time.time() < deadline and proc.poll() is None
                   and not (results / "mar_mnar.json").is_file()):
                time.sleep(0.1)
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            group = proc.pid
    finally:
        signal.signal(signal.SIGINT, old)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"interrupted: finished experiments kept in {results}: mar_mnar; rerun with --resume "
        "to skip them")
    with pytest.raises(ProcessLookupError):  # nothing of the child's group is left running
        os.killpg(group, 0)
