"""The CLI never loses a user's file, never hangs on one and never prints a wall of text.

Rules under test: engine/files.py's [Note: output rules].
"""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine import read_csv
from engine.cli import main
from engine.files import check_output, output_file, quoted, read_regular_file, shown, write_text
from engine.ir import parse_slot

FIXTURE = Path("tests/fixtures/pytorch_1f1b_2ranks_3mb.csv")
MIB = 1024 * 1024


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


class Hung(BaseException):
    """Raised by the watchdog: a BaseException, so that no ``except Exception`` (or the CLI) swallows it."""


@contextmanager
def watchdog(seconds: float, what: str):
    """Fail, instead of hanging the test run, when the block takes longer than ``seconds``."""

    def expire(*_):
        raise Hung(f"{what} still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


SIMULATE = ("simulate", "--schedule", "1f1b", "--ranks", "2", "--microbatches", "3")


# -- an output is never an input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("link", ["same path", "symbolic link", "hard link"])
def test_a_trace_never_replaces_the_csv_it_simulates(capsys, tmp_path, link):
    schedule = tmp_path / "s.csv"
    schedule.write_bytes(FIXTURE.read_bytes())
    trace = {"same path": schedule, "symbolic link": tmp_path / "link.csv", "hard link": tmp_path / "hard.csv"}[link]
    if link == "symbolic link":
        trace.symlink_to(schedule.name)
    elif link == "hard link":
        os.link(schedule, trace)
    code, out, err = run_cli(capsys, "simulate", "--from-csv", str(schedule), "--trace", str(trace))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"cannot write the trace to {trace}: it is the same file as the input {schedule}" in err
    assert schedule.read_bytes() == FIXTURE.read_bytes()  # the schedule is still there, byte for byte
    assert leftovers(tmp_path) == []


def test_a_trace_through_a_symbolic_link_replaces_the_file_and_keeps_the_link(capsys, tmp_path):
    (tmp_path / "traces").mkdir()
    target = tmp_path / "traces" / "t.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "t.json"
    link.symlink_to(target)
    code, _, _ = run_cli(capsys, *SIMULATE, "--trace", str(link))
    assert code == 0 and link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["traceEvents"]  # written where the link points
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # and the file kept its permissions
    assert leftovers(tmp_path / "traces") == []


def test_a_new_output_gets_the_permissions_open_would_give(tmp_path):
    umask = os.umask(0o022)
    try:
        write_text(str(tmp_path / "new.txt"), "text")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644  # not mkstemp's 0o600


# -- a failed or interrupted write leaves the old file whole ------------------------------------------------------
@pytest.mark.parametrize("failure", [RuntimeError("failed half-way"), KeyboardInterrupt()])
def test_a_failed_write_keeps_the_old_file_and_no_temporary_file(tmp_path, failure):
    path = tmp_path / "trace.json"
    path.write_text("the old trace")
    with pytest.raises(type(failure)):
        with output_file(str(path), what="trace") as handle:
            handle.write("the first half of a new tra")
            assert leftovers(tmp_path)  # the text goes to a temporary file next to the output...
            raise failure
    assert path.read_text() == "the old trace"  # ...and the old one is untouched
    assert leftovers(tmp_path) == []


def test_a_trace_to_a_full_device_is_one_line_and_no_temporary_file(capsys):
    code, out, err = run_cli(capsys, *SIMULATE, "--trace", "/dev/full")
    assert code == 2 and out == ""
    assert err == "error: cannot write the trace to /dev/full: No space left on device\n"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and leftovers(Path("/dev")) == []


def test_a_trace_to_dev_null_is_written_in_place(capsys):
    code, out, _ = run_cli(capsys, *SIMULATE, "--trace", "/dev/null")
    assert code == 0 and "trace written to /dev/null" in out
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # a device, not replaced by a regular file


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only file")
def test_a_read_only_output_is_refused_not_replaced(tmp_path):
    path = tmp_path / "kept.json"
    path.write_text("kept")
    path.chmod(0o444)
    with pytest.raises(ValueError, match="Permission denied"):
        write_text(str(path), "new")
    assert path.read_text() == "kept"


# -- a FIFO (or any file that is not a regular file) is refused at once --------------------------------------------
@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "--from-csv", "{fifo}"], "cannot read {fifo}: it is a pipe (FIFO), not a regular file"),
        ([*SIMULATE, "--trace", "{fifo}"], "cannot write the trace to {fifo}: it is a pipe (FIFO)"),
        (["run", "--trace", "{fifo}"], "cannot write the trace to {fifo}: it is a pipe (FIFO)"),
        (["simulate", "--from-csv", "{folder}"], "cannot read {folder}: it is a folder, not a regular file"),
        ([*SIMULATE, "--trace", "{folder}"], "cannot write the trace to {folder}: it is a folder"),
    ],
)
def test_a_fifo_or_folder_is_refused_at_once(capsys, tmp_path, args, message):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    names = {"fifo": fifo, "folder": tmp_path}
    with watchdog(10, "opening a FIFO nobody writes to or reads"):  # open() on a FIFO blocks until a writer comes
        code, out, err = run_cli(capsys, *(arg.format(**names) for arg in args))
    assert code == 2 and out == "" and err.startswith(f"error: {message.format(**names)}")
    assert err.count("\n") == 1 and stat.S_ISFIFO(fifo.stat().st_mode)


def test_reading_refuses_devices_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match="cannot read /dev/null: it is a character device, not a regular file"):
        read_regular_file("/dev/null", 10)
    with pytest.raises(ValueError, match="No such file or directory"):
        read_regular_file(str(tmp_path / "missing.csv"), 10)
    (tmp_path / "ok.csv").write_bytes(b"0123456789abc")
    assert read_regular_file(str(tmp_path / "ok.csv"), 10) == b"0123456789a"  # limit + 1 bytes at most
    check_output(str(tmp_path / "new.json"))
    assert not (tmp_path / "new.json").exists() and leftovers(tmp_path) == []  # the check writes nothing


# -- standard output on a full disk ------------------------------------------------------------------------------
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered: fails at the flush", "unbuffered: at print"])
@pytest.mark.slow
def test_stdout_on_a_full_disk_is_one_line_and_exit_2(buffered):
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "engine", *SIMULATE, "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    # left to Python: a traceback (unbuffered), or "Exception ignored in: <_io.TextIOWrapper name='<stdout>' ...>"
    # at the interpreter's exit and exit status 120 (buffered)
    assert result.stderr == "error: cannot write the output: No space left on device\n"
    assert result.returncode == 2


def test_a_long_stdout_on_a_full_disk_fails_in_the_middle_of_printing(capsys, monkeypatch):
    with open("/dev/full", "w", buffering=1) as full:  # line-buffered: the first print() already fails
        monkeypatch.setattr(sys, "stdout", full)
        code = main([*SIMULATE, "--grid"])
        monkeypatch.undo()
    assert code == 2 and capsys.readouterr().err == "error: cannot write the output: No space left on device\n"


def test_a_closed_stdout_prints_nothing_and_is_no_error(monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets when stdout is closed (>&-)
    assert main([*SIMULATE]) == 0 and sys.stdout is None


# -- bounded error messages ---------------------------------------------------------------------------------------
LONG = "1," * 60_025  # 120,050 characters: a value far past any message's quote limit


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "--partition", LONG], "got '1,1,1,"),
        (["run", "--partition", "x" + LONG], "got 'x1,1,1,"),
        ([*SIMULATE, "--stage-scale", "x" + LONG], "--stage-scale takes numbers separated by commas, got 'x1,1,"),
        (["simulate", "--schedule", "1f1b", "--ranks", LONG, "--microbatches", "2"], "--ranks: expected a whole"),
        (["simulate", "--schedule", LONG, "--ranks", "2", "--microbatches", "2"], "invalid choice: '1,1,1,"),
        (["simulate", "--from-csv", LONG], "cannot read '1,1,1,"),
        ([*SIMULATE, "--costs", "F=" + "1" * 120_000 + "x"], "cannot read cost 'F=111"),
        ([*SIMULATE, "--costs", "F=1, " + "F=1 , " * 20_000], "cost F is given twice"),
    ],
)
def test_an_error_quotes_at_most_200_characters_of_a_long_value(capsys, args, expected):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1
    assert len(err) < 1100  # quoted whole, the --partition line would be 120,106 characters


def test_an_8_mib_csv_cell_is_quoted_short(capsys, tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("x" * (8 * MIB - 300))
    code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    assert code == 2 and err.count("\n") == 1
    assert "cannot read action 'xxxx" in err and f"…' ({8 * MIB - 300:,} characters)" in err
    assert len(err) < 600  # quoted whole, the cell would make a line of 8,388,869 characters


def test_quoted_shows_the_start_escapes_and_the_length():
    assert quoted("0F0") == "'0F0'" and quoted("it's") == "'it\\'s'"
    assert quoted("0F\u200b3") == "'0F\\u200b3'"
    assert quoted("(" * 1000) == "'" + "(" * 200 + "…' (1,000 characters)"
    escaped = quoted("\u200b" * 1000)  # escapes count against the budget: still short
    assert len(escaped) < 250 and escaped.endswith("…' (1,000 characters)")
    assert shown("/tmp/s.csv") == "/tmp/s.csv" and shown("a\nb") == "'a\\nb'" and shown(" x") == "' x'"


# -- the overlap parser is linear ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cell",
    [
        "(" * (8 * MIB - 16),  # 8 MiB of "(": the largest CSV the lab reads
        "(;" * (4 * MIB - 8),  # what a backtracking \((.+);(.+)\)OVERLAP_F_B would take quadratic time on
        "(" + ";" * (8 * MIB - 16),  # the same, one "(" and the rest ";"
        "(" + ";" * (8 * MIB - 32) + ")OVERLAP_F_B",
    ],
    ids=["brackets", "bracket-semicolon pairs", "one bracket then semicolons", "semicolons inside a pair"],
)
def test_an_8_mib_overlap_like_cell_is_refused_in_seconds_not_hours(capsys, tmp_path, cell):
    path = tmp_path / "worst.csv"
    path.write_text(cell)
    started = time.perf_counter()
    with watchdog(60, "parsing an 8 MiB overlap-like cell"):  # quadratic parsing would take hours
        code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    elapsed = time.perf_counter() - started
    assert code == 2 and "cannot read action '" in err and len(err) < 600
    assert elapsed < 3, f"{elapsed:.1f} s to refuse one 8 MiB cell: the parser is not linear"


def test_overlapped_pairs_still_read():
    assert str(parse_slot(" (0F7;7B3)OVERLAP_F_B ")) == "(0F7;7B3)OVERLAP_F_B"
    for bad in ["(0F7)OVERLAP_F_B", "(0F7;;7B3)OVERLAP_F_B", "(;7B3)OVERLAP_F_B", "0F7;7B3)OVERLAP_F_B"]:
        with pytest.raises(ValueError, match="cannot read action"):
            parse_slot(bad)


# -- invisible characters -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "csv, message",
    [
        (
            "0F0,0B0\n1F0,0F\u200b3\n",
            "rank 1 (line 2), column 2: '0F\\u200b3' holds an invisible character, U+200B ZERO WIDTH SPACE, "
            "at position 3",
        ),
        ("0F0,\ufeff0B0\n", "column 2: '\\ufeff0B0' holds an invisible character, U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("0F0\u00a0,0B0\n", "column 1: '0F0\\xa0' holds an invisible character, U+00A0 NO-BREAK SPACE, at position 4"),
        ("0F0,0B0\u20281F0,1B0\n", "U+2028 LINE SEPARATOR, at position 4"),  # str.splitlines() splits there
        ("0F0,0B0\x1c1F0\n", "'0B0\\x1c1F0' holds an invisible character, U+001C, at position 4"),
        ("\n\n0F\u0663,0B0\n", "rank 0 (line 3), column 1: '0F٣' holds a character outside ASCII, U+0663 ARABIC-INDIC"),
        ("0F0,0B\uff10\n", "holds a character outside ASCII, U+FF10 FULLWIDTH DIGIT ZERO, at position 3"),
    ],
)
def test_a_character_outside_the_action_alphabet_is_refused_with_its_position(csv, message):
    with pytest.raises(ValueError) as refused:
        read_csv(csv)
    assert message in str(refused.value)


def test_a_zero_width_space_in_a_csv_file_is_one_line(capsys, tmp_path):
    path = tmp_path / "ziw.csv"
    path.write_text("0F0,0B0\n1F0,1\u200bB0\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: rank 1 (line 2), column 2: '1\\u200bB0' holds an invisible character, U+200B" in err
    path.write_bytes(b"\xef\xbb\xbf" + FIXTURE.read_bytes())  # a byte-order mark at the start stays accepted
    assert run_cli(capsys, "simulate", "--from-csv", str(path))[0] == 0
    assert read_csv("\ufeff" + FIXTURE.read_text()).schedule.num_ranks == 2


# -- Ctrl-C -------------------------------------------------------------------------------------------------------
READY = "imports done"
CHILD = (
    "import sys; from engine.cli import main; "
    f"print({READY!r}, file=sys.stderr, flush=True); sys.exit(main(sys.argv[1:]))"
)
"""``python -m engine`` as engine/__main__.py runs it, plus a line once the imports (1-2 s: pandas) are done:
a Ctrl-C during the imports happens before ``main`` and is not what these tests are about."""


def interrupt(args: list[str], *, started: str, after: float) -> tuple[subprocess.CompletedProcess, bool]:
    """Run the CLI, wait for ``started`` on its stderr, then ``after`` seconds, then send SIGINT.

    The pipe is read a byte at a time with ``os.read``: a buffered text reader would keep bytes past
    ``started`` that ``communicate`` then never sees.
    """
    child = subprocess.Popen([sys.executable, "-c", CHILD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    assert child.stderr is not None
    while started.encode() not in seen:
        byte = os.read(child.stderr.fileno(), 1)
        assert byte, f"the CLI ended before {started!r}: {seen!r}"
        seen += byte
    time.sleep(after)
    running = child.poll() is None
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, out.decode(), (seen + err).decode()), running


@pytest.mark.slow
def test_ctrl_c_during_simulate_is_one_line_and_exit_130(tmp_path):
    trace = tmp_path / "t.json"
    args = ["simulate", "--schedule", "zb-h2", "--ranks", "256", "--microbatches", "512", "--trace", str(trace)]
    result, running = interrupt(args, started=READY, after=0.3)  # imports done: main is running
    assert running, "the simulation ended before the Ctrl-C: choose a larger one"
    assert result.returncode == 130 and result.stdout == ""
    assert result.stderr == f"{READY}\ninterrupted\n"  # no traceback
    assert leftovers(tmp_path) == [] and not trace.exists()  # no half-written trace


@pytest.mark.slow
def test_ctrl_c_during_an_emulated_run_is_one_line_and_exit_130():
    args = ["run", "--ranks", "4", "--microbatches", "32", "--layers", "8", "--hidden", "256", "--repeats", "100"]
    result, running = interrupt(args, started="action", after=0.5)  # the progress bar's unit: the run is running
    assert running, "the run ended before the Ctrl-C"
    assert result.returncode == 130 and result.stdout == ""
    assert result.stderr.endswith("\ninterrupted\n") and "Traceback" not in result.stderr
