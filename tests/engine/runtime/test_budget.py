"""The memory a real run may use (engine/runtime/budget.py): the least of the machine's free memory, the
container's limit and the address-space limit (ulimit -v), each named in the refusal with its arithmetic."""

import resource
import subprocess
import sys

import pytest

from engine.runtime import budget

GiB = 2**30


@pytest.fixture
def no_address_limit(monkeypatch):
    monkeypatch.setattr(budget, "address_space_left", lambda: None)


def _cgroup(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"memory.max": str(4 * GiB), "memory.current": str(1 * GiB)}, (3 * GiB, 4 * GiB)),  # cgroup v2
        ({"memory.max": "max", "memory.current": str(GiB)}, None),  # v2 without a limit
        (
            {"memory/memory.limit_in_bytes": str(2 * GiB), "memory/memory.usage_in_bytes": str(GiB // 2)},
            (3 * GiB // 2, 2 * GiB),
        ),  # fmt: skip
        ({"memory/memory.limit_in_bytes": str(2**63 - 4096), "memory/memory.usage_in_bytes": "5"}, None),  # v1, none
        ({}, None),  # no cgroup files at all
    ],
)
def test_the_containers_room_is_its_limit_less_what_it_uses(monkeypatch, tmp_path, files, expected):
    _cgroup(tmp_path, files)
    monkeypatch.setattr(budget, "CGROUP_ROOT", tmp_path)
    assert budget.container_left() == expected


def test_the_smallest_room_decides_and_is_named(monkeypatch, tmp_path, no_address_limit):
    _cgroup(tmp_path, {"memory.max": str(4 * GiB), "memory.current": str(3 * GiB)})
    monkeypatch.setattr(budget, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(budget, "available_bytes", lambda: 20 * GiB)
    room = budget.allowance()
    assert room.allowed == GiB // 2  # 50% of the 1 GiB left under the container's 4 GiB
    assert room.reason == "50% of the 1.0 GiB left under this container's memory limit of 4.0 GiB"
    monkeypatch.setattr(budget, "available_bytes", lambda: GiB // 4)
    assert budget.allowance().reason == "50% of the 256.0 MiB this machine has free"


def test_the_address_space_limit_is_what_is_left_of_it(monkeypatch):
    import psutil

    # a limit 3 GiB above what this worker maps now (a worker that loaded Numba's compiler maps over 3 GiB)
    soft = int(psutil.Process().memory_info().vms) + 3 * GiB
    monkeypatch.setattr(resource, "getrlimit", lambda which: (soft, resource.RLIM_INFINITY))
    left, limit, mapped = budget.address_space_left()
    assert limit == soft and left == soft - mapped and 0 < mapped < soft


@pytest.mark.slow
def test_a_run_too_big_for_ulimit_v_is_refused_before_it_starts_and_says_so():
    """Under ulimit -v 3 GB a run that the machine's free memory would allow is refused with exit 2, naming
    the limit — not started to die in an allocation."""

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000 * 1024, resource.RLIM_INFINITY))

    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--hidden", "4096"],
        preexec_fn=limited,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "address-space limit (ulimit -v 2.9 GiB" in done.stderr and "Traceback" not in done.stderr
